import nbformat
import pytest

from contextecho.notebooks import NOTEBOOKS, build, experiment, notebook_path
from contextecho.experiments.parameters import declared
from contextecho.notebooks.build import render
from contextecho.experiments.parameters import parameters_cell_names
from contextecho.notebooks.runner import parameters_source


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_is_current(name):
    assert notebook_path(name).read_text() == render(name), \
        f"notebooks/{name}.ipynb is stale: run `python -m contextecho notebook --build`"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_thin_and_declares_every_parameter(name):
    nb = build(name)
    nbformat.validate(nb)
    assert list(declared(experiment(name).Parameters)) == parameters_cell_names(parameters_source(notebook_path(name)))
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert len(code) == 5 and all(len(s.splitlines()) <= 3 for i, s in enumerate(code) if i != 1)
    assert "bind(" in code[2] and "experiment.run(params)" in code[3]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_module_documents_the_paper_scale(name):
    module = experiment(name)
    assert module.TITLE and set(module.PAPER_SCALE) <= set(declared(module.Parameters))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_papermill_can_read_every_parameter_line(name, caplog):
    """papermill's inspector skips a line with a second '=' (e.g. in its help comment)."""
    import papermill

    with caplog.at_level("WARNING", logger="papermill"):
        inferred = papermill.inspect_notebook(str(notebook_path(name)))
    assert not [r.message for r in caplog.records if "Unable to parse" in r.message]
    assert set(inferred) == set(declared(experiment(name).Parameters))
