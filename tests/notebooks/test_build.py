import ast
import subprocess
import sys

import nbformat
import pytest

from contextecho.notebooks import NOTEBOOKS, build, experiment, notebook_path
from contextecho.experiments.parameters import declared, ignored, parameter_help, protocols_of
from contextecho.notebooks.build import render
from contextecho.experiments.parameters import parameters_cell_names
from contextecho.notebooks.runner import parameters_source


def as_git_stores_it(path) -> str:
    """The notebook at ``path`` as git's clean filter stores it (nbstripout with the extra key
    the Makefile's notebook-filter target configures): outputs an author saved are not part
    of what is committed, so they do not make the notebook stale."""
    result = subprocess.run([sys.executable, "-m", "nbstripout", "-t", "--extra-keys", "metadata.language_info",
                             str(path)], capture_output=True, text=True, check=True)
    return result.stdout


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_is_current(name):
    assert as_git_stores_it(notebook_path(name)) == render(name), \
        f"notebooks/{name}.ipynb is stale: run `python -m contextecho notebook --build`"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameters_cell_is_commented_for_the_default_protocol(name):
    spec = experiment(name).Parameters
    source = parameters_source(notebook_path(name))
    protocol = declared(spec).get("protocol")
    lines = source.splitlines()
    if protocol is None:
        assert not lines[0].startswith("#")
        return
    assert lines[0].startswith(f"# The comments hold under protocol {protocol!r}, this notebook's ")
    for other in set(protocols_of(spec)) - {protocol}:
        assert f"; {other!r} " in lines[0]
    comments = {line.split(" = ", 1)[0]: line.partition("  # ")[2] for line in lines[1:]}
    for field, why in ignored(spec, protocol).items():
        assert comments[field] == f"ignored under {protocol}: {why}"
    for field, text in parameter_help(spec, protocol).items():
        if field not in ignored(spec, protocol):
            assert comments[field] == text


def test_the_comments_follow_the_protocol():
    """A notebook whose default protocol is contextecho shows contextecho's help; no
    reference budget is shown beside a contextecho default (the issue's stale comment)."""
    a_anchor = parameters_source(notebook_path("a_anchor"))
    assert "judge_max_tokens = 8  # the judge's budget, greedy (the rubric asks for one line, Score: n)" in a_anchor
    assert "harness's 400" not in a_anchor and "only one." in a_anchor.splitlines()[0]
    panel = parameters_source(notebook_path("panel")).splitlines()
    assert panel[0] == ("# The comments hold under protocol 'reference', this notebook's default; 'contextecho' "
                        "reads temperature and ignores s2_requests, stressor_max_tokens.")
    assert next(line for line in panel if line.startswith("temperature = ")).startswith(
        "temperature = 0.0  # ignored under reference: ")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_declares_every_parameter_then_one_short_cell_per_stage(name):
    nb = build(name)
    nbformat.validate(nb)
    module = experiment(name)
    assert list(declared(module.Parameters)) == parameters_cell_names(parameters_source(notebook_path(name)))
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", [])]
    assert tagged == [1] and code[0].source.startswith("from contextecho.experiments import")
    assert code[2].source.startswith("params = bind(experiment.Parameters")
    stages = code[3:]
    assert len(stages) == len(module.STAGES) >= 4
    assert stages[0].source.startswith("run = experiment.start(params)")
    assert stages[-1].source.startswith("variables = run.step('variables', experiment.variables, run")
    for number, (cell, stage) in enumerate(zip(stages, module.STAGES)):
        assignment, shown = cell.source.splitlines()
        call, arguments = f"experiment.{stage.function.__name__}", ", ".join(stage.arguments)
        # the first opens the run; each later one is a step of it (a plan's placeholders, a failed run log)
        assert assignment == (f"{stage.name} = {call}({arguments})" if number == 0
                              else f"{stage.name} = run.step({stage.name!r}, {call}, {arguments})")
        assert shown == stage.name  # the cell shows its result inline
    # each stage reads only what an earlier cell defined
    defined = {"params"}
    for stage in module.STAGES:
        assert set(stage.arguments) <= defined, (stage.name, stage.arguments)
        defined.add(stage.name)
    # the text before each stage cell is the stage's own
    cells = nb.cells
    for cell, stage in zip([c for c in cells if c.cell_type == "code"][3:], module.STAGES):
        before = cells[cells.index(cell) - 1]
        assert before.cell_type == "markdown" and before.source.strip()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_function_class_or_loop_is_defined_in_a_notebook(name):
    for cell in build(name).cells:
        if cell.cell_type != "code" or "parameters" in cell.metadata.get("tags", []):
            continue
        tree = ast.parse(cell.source)
        banned = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While,
                  ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        assert not [type(n).__name__ for n in ast.walk(tree) if isinstance(n, banned)], cell.source
    for number, cell in enumerate([c for c in build(name).cells if c.cell_type == "code"][3:]):  # the stages
        calls = [n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Call)]
        assert len(calls) == 1, cell.source
        called = calls[0].func if number == 0 else calls[0].args[1]  # a later stage: run.step(name, experiment.f, ...)
        assert (number == 0 or ast.unparse(calls[0].func) == "run.step") and \
            ast.unparse(called).startswith("experiment."), cell.source


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
