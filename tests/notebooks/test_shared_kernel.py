"""One kernel for several notebooks (``contextecho paper``): each notebook finds it as a new
kernel (no name of the previous one, execution counts from 1, a new input history), the
modules it imported stay loaded, and a kernel that died is replaced."""
import os
import signal
import time

import nbformat
import papermill
from jupyter_client.manager import KernelManager
import pytest
import yaml

from contextecho.engine.paths import REPO_ROOT, shared_dir
from contextecho.notebooks import run_notebook
from contextecho.notebooks.kernel import ENGINE, SharedKernel, kernel_config

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def notebook(path, *sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def run(kernel, source, executed):
    papermill.execute_notebook(str(source), str(executed), engine_name=ENGINE, km=kernel.ready(),
                               kernel_name="python3", progress_bar=False)
    return nbformat.read(executed, as_version=4)


def text(cell):
    return "".join(o.get("text", "") for o in cell.outputs)


def test_kernels_started_at_once_never_share_a_socket(tmp_path, monkeypatch):
    """Two kernels set up before either binds its sockets (two test workers, or a run beside
    an author's JupyterLab) name different socket files, absolute ones: jupyter_client alone
    numbers IPC sockets ``kernel-ipc-1`` to ``-5`` in the working folder by what exists yet, so
    both took the same five and read each other's messages ("Invalid Signature", then "Kernel
    didn't respond in 60 seconds")."""
    monkeypatch.chdir(tmp_path)
    managers = [KernelManager(kernel_name="python3", config=kernel_config()) for _ in range(2)]
    sockets = []
    for km in managers:  # as nbclient starts one: no connection file named yet
        km.write_connection_file()
        ports = (km.shell_port, km.iopub_port, km.stdin_port, km.control_port, km.hb_port)
        km.cleanup_connection_file()
        assert km.transport == "ipc" and os.path.isabs(km.ip), km.ip
        sockets.append({f"{km.ip}-{port}" for port in ports})
    assert len(sockets[0]) == len(sockets[1]) == 5 and not sockets[0] & sockets[1]


def test_each_notebook_finds_a_new_namespace_in_the_same_process(tmp_path):
    first = notebook(tmp_path / "first.ipynb",
                     "import os, json\nleft_over = 1\nprint(os.getpid())",
                     "import matplotlib.pyplot as plt\nplt.figure(); print(len(plt.get_fignums()))")
    second = notebook(tmp_path / "second.ipynb",
                      "import os, sys\nprint(os.getpid(), 'left_over' in globals(), 'json' in sys.modules)",
                      "print(len(get_ipython().history_manager.input_hist_raw))",
                      "import matplotlib.pyplot as plt\nprint(len(plt.get_fignums()))")
    with SharedKernel(tmp_path) as kernel:
        a = run(kernel, first, tmp_path / "a.ipynb")
        b = run(kernel, second, tmp_path / "b.ipynb")
        assert kernel.started == 1
    pid = text(a.cells[0]).strip()
    assert text(b.cells[0]).split() == [pid, "False", "True"]  # same process, names gone, modules kept
    assert [c.execution_count for c in b.cells] == [1, 2, 3]  # counts from 1, as in a new kernel
    assert text(b.cells[1]).strip() == "3"  # the history holds this notebook's cells only ('', 2 cells)
    assert text(b.cells[2]).strip() == "0"  # the first notebook's figure was closed


def test_a_kernel_that_died_is_replaced(tmp_path):
    pid = notebook(tmp_path / "pid.ipynb", "import os\nprint(os.getpid())")
    with SharedKernel(tmp_path) as kernel:
        before = text(run(kernel, pid, tmp_path / "a.ipynb").cells[0]).strip()
        os.kill(int(before), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while kernel.km.is_alive() and time.monotonic() < deadline:  # until its manager sees it gone
            pass
        after = text(run(kernel, pid, tmp_path / "b.ipynb").cells[0]).strip()
        assert kernel.started == 2 and before != after
    assert kernel.km is None  # shut down on leaving


def test_the_kernel_has_its_environment_and_folder(tmp_path):
    probe = notebook(tmp_path / "env.ipynb", "import os\nprint(os.environ['PLANTED_FOR_KERNEL'], os.getcwd())")
    with SharedKernel(tmp_path, {"PLANTED_FOR_KERNEL": "yes"}) as kernel:
        assert text(run(kernel, probe, tmp_path / "out.ipynb").cells[0]).split() == ["yes", str(tmp_path)]


def test_a_real_notebook_gives_the_same_outputs_in_a_shared_kernel(tmp_path):
    """The panel on the fake model, run alone and then after another notebook in one kernel:
    the same variables, and the same cells recorded."""
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")
    tiny = {"targets": "fake/echo", "judges": "fake/echo", "n_sessions": 1, "n_positions": 2,
            "probes": "C01,C02", "stressors": "S2#01", "n_resamples": 200, "max_tokens": 16, "window": 3000}
    alone = run_notebook("panel", tiny, output_dir=tmp_path / "alone", log_output=False)
    with SharedKernel(REPO_ROOT, {"CONTEXTECHO_CACHE": str(tmp_path / "cache")}) as kernel:  # computed again
        run_notebook("cross_judge", {"targets": "fake/echo", "judges": "fake/echo", "n_sessions": 1,
                                     "n_positions": 2, "probes": "C03", "n_resamples": 200, "max_tokens": 16,
                                     "window": 3000}, output_dir=tmp_path / "other", log_output=False, kernel=kernel)
        shared = run_notebook("panel", tiny, output_dir=tmp_path / "shared", log_output=False, kernel=kernel)
        assert kernel.started == 1
    a, b = (yaml.safe_load(r.variables_file.read_text())["panel"] for r in (alone, shared))
    assert {k: (v, b.get(k)) for k, v in a.items() if b.get(k) != v} == {}
    counts = [c.execution_count for c in nbformat.read(shared.executed, as_version=4).cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1))


def test_the_preload_is_loaded_binds_no_name_and_a_failed_one_is_the_notebooks_to_report(tmp_path):
    probe = notebook(tmp_path / "probe.ipynb",
                     "import sys\nprint('colorsys' in sys.modules, 'importlib' in globals(), 'gc' in globals())",
                     "import gc\nprint(gc.get_freeze_count() > 0)")
    with SharedKernel(tmp_path, preload=["colorsys", "no_such_module_planted"]) as kernel:
        kernel.start()
        out = run(kernel, probe, tmp_path / "out.ipynb")
        assert kernel.started == 1
    assert text(out.cells[0]).split() == ["True", "False", "False"] and out.cells[0].execution_count == 1
    assert text(out.cells[1]).strip() == "True"  # what the preload built is frozen, even after a failed import


def test_the_executed_copy_is_written_sparsely_and_always_at_the_end(tmp_path, monkeypatch):
    """Between cells the copy is written at most every SAVE_EVERY_S seconds; the finished
    notebook, and one that failed, is written whole."""
    from papermill import iorw

    from contextecho.notebooks import kernel as kernel_module
    writes = []
    real = iorw.write_ipynb
    monkeypatch.setattr("papermill.engines.write_ipynb", lambda nb, path: (writes.append(path), real(nb, path)))
    cells = [f"x{i} = {i}" for i in range(6)]
    source = notebook(tmp_path / "many.ipynb", *cells, "print('last')")
    failing = notebook(tmp_path / "fails.ipynb", "a = 1", "raise ValueError('boom')", "b = 2")
    with SharedKernel(tmp_path) as kernel:
        done = run(kernel, source, tmp_path / "done.ipynb")
        assert text(done.cells[-1]).strip() == "last"  # the final save holds every output
        assert 1 <= len(writes) <= 3  # papermill's own manager writes 2 per cell and 2 more: 16
        monkeypatch.setattr(kernel_module, "SAVE_EVERY_S", 0.0)  # every step due: papermill's behaviour
        writes.clear()
        run(kernel, source, tmp_path / "again.ipynb")
        assert len(writes) == 2 * len(done.cells) + 2
        monkeypatch.setattr(kernel_module, "SAVE_EVERY_S", 3600.0)
        with pytest.raises(papermill.PapermillExecutionError):
            run(kernel, failing, tmp_path / "failed.ipynb")
    failed = nbformat.read(tmp_path / "failed.ipynb", as_version=4)
    bad = [c for c in failed.cells if c.get("metadata", {}).get("papermill", {}).get("status") == "failed"]
    assert [c.source for c in bad] == ["raise ValueError('boom')"]
    assert any(o.get("ename") == "ValueError" for o in bad[0].outputs)
