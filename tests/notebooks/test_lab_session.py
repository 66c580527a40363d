"""A notebook explored as an author explores it in JupyterLab: one kernel, a parameter edited
between runs, "Run All" again and "Run Selected Cell and All Below" from the parameters
cell, each run using the edited values; every batch's summary line shown once; tqdm's bars
as widgets, without the IProgress warning. The kernel runs as Lab starts it (its file
descriptors watched, which ipykernel skips under pytest), on the fake model."""
import json
import os
import re

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from contextecho.engine.paths import REPO_ROOT
from contextecho.notebooks import notebook_path

pytestmark = pytest.mark.timeout(400)

TINY = {"targets": ["fake/echo"], "judges": ["fake/echo"], "n_sessions": 1, "n_positions": 2,
        "probes": ["C01", "C02"], "stressors": ["S2#01"], "n_resamples": 200, "max_tokens": 16}
BATCH = re.compile(r"^\[panel:[\w:/.-]+\] calls=", re.M)


def edit(cell, **values) -> None:
    """Set ``values`` in the parameters cell's source, as an author types them."""
    lines = cell.source.splitlines()
    for name, value in values.items():
        index = next(i for i, line in enumerate(lines) if line.startswith(f"{name} = "))
        lines[index] = f"{name} = {value!r}  # edited"
    cell.source = "\n".join(lines)


def texts(cells) -> tuple[str, str, list[dict]]:
    """stdout, stderr and the other outputs of ``cells``."""
    outputs = [o for c in cells if c.cell_type == "code" for o in c.get("outputs", [])]
    stream = lambda name: "".join(o["text"] for o in outputs if o.get("name") == name)  # noqa: E731
    return stream("stdout"), stream("stderr"), [o for o in outputs if o["output_type"] != "stream"]


def run_cells(client, nb, start: int = 0) -> None:
    for index in range(start, len(nb.cells)):
        if nb.cells[index].cell_type == "code":
            client.execute_cell(nb.cells[index], index)


def shown_params(nb) -> str:
    cell = next(c for c in nb.cells if c.source.startswith("params = bind("))
    return cell.outputs[0]["data"]["text/plain"]


def test_an_edited_parameter_is_honoured_by_run_all_and_run_below_in_one_kernel(tmp_path, corpus_dir):
    nb = nbformat.read(notebook_path("panel"), as_version=4)
    parameters = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    out = tmp_path / "panel"
    edit(nb.cells[parameters], output_dir=str(out), **TINY)
    manifest = lambda: json.loads((out / "manifest.json").read_text())  # noqa: E731
    client = NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(REPO_ROOT)}})
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # the kernel as Lab starts it
    with client.setup_kernel(env=env):
        run_cells(client, nb)  # Run All
        assert manifest()["parameters"]["n_sessions"] == 1 and "n_sessions=1" in shown_params(nb)
        stdout, stderr, others = texts(nb.cells)
        batches = BATCH.findall(stdout + stderr)
        assert batches and len(batches) == len(set(batches)) == len(manifest()["batches"]), batches  # each once
        assert not BATCH.search(stderr) and "IProgress" not in stderr
        assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in others)  # tqdm widgets

        edit(nb.cells[parameters], n_sessions=2)
        run_cells(client, nb)  # Run All again, no restart
        assert manifest()["parameters"]["n_sessions"] == 2 and "n_sessions=2" in shown_params(nb)
        assert manifest()["status"] == "complete"
        assert yaml.safe_load((out / "variables.yml").read_text())["panel"]["n_sessions"] == 2  # two were asked
        stdout, stderr, _ = texts(nb.cells)
        assert len(BATCH.findall(stdout)) == len(set(BATCH.findall(stdout))) and not BATCH.search(stderr)

        edit(nb.cells[parameters], n_positions=3)
        run_cells(client, nb, start=parameters)  # Run Selected Cell and All Below, beside the results of two runs
        assert manifest()["parameters"]["n_positions"] == 3 and manifest()["parameters"]["n_sessions"] == 2
        assert "n_positions=3" in shown_params(nb) and manifest()["status"] == "complete"
