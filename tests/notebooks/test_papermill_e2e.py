"""Notebooks executed for real by papermill (a kernel, the injected parameters cell), on
the fake model with tiny parameters; outputs exist and every variable is a number or text."""
import json
import numbers
import os
import subprocess
import sys

import nbformat
import pytest
import yaml

from contextecho.experiments.parameters import ParameterError
from contextecho.notebooks import notebook_path, run_notebook
from contextecho.engine.paths import REPO_ROOT, shared_dir

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

TINY = {"targets": "fake/echo", "judges": "fake/echo", "n_sessions": 1, "n_positions": 2,
        "probes": "C01,C02", "stressors": "S2#01", "n_resamples": 200, "max_tokens": 16,
        "window": 3000}


def needs_corpus():
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


def test_panel_runs_end_to_end_and_writes_its_outputs(tmp_path):
    needs_corpus()
    done = run_notebook("panel", TINY, output_dir=tmp_path / "panel", log_output=False)
    root = done.output_dir
    for rel in ("panel.ipynb", "manifest.json", "variables.yml", "results/cells.parquet",
                "figures/forest.png", "figures/forest.pdf", "figures/trajectory.png",
                "tables/drift_gaps.md", "tables/s2.md"):
        assert (root / rel).is_file(), rel
    variables = yaml.safe_load((root / "variables.yml").read_text())["panel"]
    for key in ("n_cells", "n_sessions", "n_positions", "n_failed", "n_cached"):
        assert isinstance(variables[key], numbers.Number) and not isinstance(variables[key], bool), key
    assert variables["s2_real_rate_pct"].endswith("%")  # a percentage as the manuscript writes it
    assert variables["n_cells"] == 1 * 2 * 2 * 3 and variables["n_failed"] == 0
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["models"] == ["fake/echo"] and manifest["parameters"]["n_positions"] == 2
    assert manifest["status"] == "complete" and manifest["batches"]["panel:targets"]["computed"] == 12
    executed = json.loads(done.executed.read_text())
    tags = [c["metadata"].get("tags", []) for c in executed["cells"]]
    assert ["injected-parameters"] in tags  # papermill recorded the run's parameters
    # Every stage showed its result inline: the grid, its counts, tables and figures.
    cells = nbformat.read(done.executed, as_version=4).cells
    outputs = {c.source.splitlines()[0]: c.get("outputs", []) for c in cells if c.cell_type == "code"}
    assert "[panel:targets] calls=12" in "".join(o.get("text", "") for o in outputs["frame = run.step('frame', experiment.grid, run)"])
    assert "text/html" in outputs["gaps = run.step('gaps', experiment.drift_gaps, run, primary)"][0]["data"]
    assert "image/png" in outputs["trajectory = run.step('trajectory', experiment.trajectory, run, primary)"][0]["data"]
    assert "text/html" in outputs["variables = run.step('variables', experiment.variables, run, frame, primary)"][0]["data"]
    # A second run answers every call from the cache.
    again = run_notebook("panel", TINY, output_dir=tmp_path / "panel", log_output=False)
    manifest = json.loads((again.output_dir / "manifest.json").read_text())
    assert manifest["batches"]["panel:targets"]["computed"] == 0 and manifest["batches"]["panel:targets"]["cached"] == 12


def test_runner_rejects_a_misspelled_parameter_before_the_kernel_starts(tmp_path):
    with pytest.raises(ParameterError, match=r"n_sesions.*did you mean 'n_sessions'"):
        run_notebook("panel", {"n_sesions": 1}, output_dir=tmp_path)
    with pytest.raises(ParameterError, match="n_positions"):
        run_notebook("panel", {"n_positions": "many"}, output_dir=tmp_path)
    assert not (tmp_path / "panel.ipynb").exists()


def test_plain_papermill_fails_on_a_misspelled_parameter(tmp_path):
    """papermill itself only warns; the notebook's own bind cell fails."""
    result = subprocess.run(
        [sys.executable, "-m", "papermill", str(notebook_path("panel")), str(tmp_path / "out.ipynb"),
         "-p", "tyop", "1", "--no-progress-bar"], capture_output=True, text=True, timeout=240)
    assert result.returncode != 0
    assert "ParameterError" in result.stderr + result.stdout and "tyop" in result.stderr + result.stdout


@pytest.mark.parametrize("how", ["parameter", "argument"])
def test_output_dir_given_as_a_parameter_or_an_argument_is_where_outputs_go(how, tmp_path, monkeypatch):
    import papermill

    seen = {}
    monkeypatch.setattr(papermill, "execute_notebook", lambda src, dst, parameters, **kw: seen.update(
        dst=dst, parameters=parameters))
    target = tmp_path / "out"
    if how == "parameter":
        done = run_notebook("panel", {"output_dir": str(target)})
    else:
        done = run_notebook("panel", {}, output_dir=target)
    assert done.output_dir == target and seen["parameters"]["output_dir"] == str(target)
    assert seen["dst"] == str(target / "panel.ipynb")


def test_two_different_output_dirs_are_an_error(tmp_path):
    with pytest.raises(ParameterError, match="output_dir given twice"):
        run_notebook("panel", {"output_dir": str(tmp_path / "a")}, output_dir=tmp_path / "b")


def test_the_console_log_and_the_executed_notebook_show_each_batch_line_once(tmp_path):
    """``contextecho notebook`` (and ``make paper``) copy the kernel's stdout to the console;
    the kernel runs as outside pytest (its file descriptors watched), so a line also
    written to the process's stderr would show twice in both places."""
    needs_corpus()
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    args = [a for k, v in TINY.items() for a in ("-p", k, str(v))]
    result = subprocess.run([sys.executable, "-m", "contextecho", "notebook", "panel", *args,
                             "--output-dir", str(tmp_path / "panel")], capture_output=True, text=True,
                            timeout=280, env=env, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    batches = json.loads((tmp_path / "panel" / "manifest.json").read_text())["batches"]
    console = result.stdout + result.stderr
    executed = nbformat.read(tmp_path / "panel" / "panel.ipynb", as_version=4)
    shown = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", []))
    for batch in batches:
        assert console.count(f"[{batch}] calls=") == 1, (batch, console[-3000:])
        assert shown.count(f"[{batch}] calls=") == 1, batch
    assert "IProgress" not in console
