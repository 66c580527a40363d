"""Every experiment declares what the manuscript reads from it: the manuscript uses only
declared keys, every declared table fits the page, and no experiment module formats a
number for the manuscript or builds a manuscript key by hand."""
import ast
from pathlib import Path

import pandas as pd
import pytest

from contextecho.experiments import spine
from contextecho.notebooks.build import NOTEBOOKS, experiment
from contextecho.paper import manuscript
from contextecho.paper.declared import Declared, undeclared_keys
from contextecho.paper.tables import COLUMNS, WIDTH, Model, widest

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "lib" / "contextecho" / "experiments"
SOURCES = manuscript.sources(ROOT / "paper")  # the article and its sections
#: What the writer's methods take as keys: keyword names (set), a template (put), templates (per_target).
WRITES = {"set", "put", "per_target", "default"}


def declarations() -> dict[str, Declared]:
    return {name: experiment(name).MANUSCRIPT for name in NOTEBOOKS}


def test_every_notebook_declares_its_variables_and_tables():
    for name, declared in declarations().items():
        assert declared.variables and declared.tables, name
        keys = sorted(v.template for v in declared.variables)
        assert keys, f"{name} declares no key"


def test_the_manuscript_uses_only_declared_keys():
    assert SOURCES, "no manuscript source under paper/"
    assert undeclared_keys(SOURCES, declarations()) == []


def test_a_planted_undeclared_key_is_found(tmp_path):
    planted = tmp_path / "index.qmd"
    planted.write_text(SOURCES[0].read_text() + "\nA planted {{< var panel.planted_number >}}.\n")
    problems = undeclared_keys([planted], declarations())
    assert len(problems) == 1 and "variable 'panel.planted_number' is not declared by the panel experiment" in problems[0]


def widest_frame(table) -> pd.DataFrame:
    """Two rows of the widest plausible values of every column of ``table`` (model strings,
    numbers at the edges of their scales, the declared widest text) and a note."""
    row = {}
    for column in table.columns:
        values = (column.widest,) * column.kind.arity if column.widest else widest(column.kind)
        row.update(dict(zip(column.sources, values)))
    frame = pd.DataFrame([row, {**row}])
    frame[table.notes] = ["not estimable: arm 'filler' has no valid verdict at any position", ""]
    if any(isinstance(c.kind, Model) for c in table.columns):  # two models of two providers
        first = next(c for c in table.columns if isinstance(c.kind, Model))
        frame.loc[1, first.source] = "anthropic/claude-sonnet-4-5"
    return frame


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_declared_table_fits_the_page_with_its_widest_values(name):
    for table in experiment(name).MANUSCRIPT.tables:
        frame = widest_frame(table)
        assert table.fits(frame) == [], table.stem
        layout = table.layout(frame)
        assert all(len(part) <= COLUMNS for part in layout.parts)
        # a table splits into at most three parts; most fit whole
        assert len(layout.parts) <= 3, (table.stem, [[layout.columns[i].title for i in p] for p in layout.parts])
        assert "note" not in [c.title.lower() for c in layout.columns]
        assert WIDTH >= 80


def _modules() -> list[Path]:
    return sorted(p for p in EXPERIMENTS.glob("*.py") if p.name != "__init__.py")


def _is_out_write(node: ast.AST) -> bool:
    """A call ``<...>.out.<set|put|per_target|default>(...)``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "out")


def _key_nodes(call: ast.Call) -> list[ast.AST]:
    """The parts of a write that name keys: a template, templates, the keys to default."""
    if call.func.attr == "put":
        return call.args[:1]
    if call.func.attr == "per_target":
        return call.args[:1]
    if call.func.attr == "default":
        return call.args[1:]
    return [k.value for k in call.keywords if k.arg is None]  # set(**expression)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.name)
def test_no_experiment_rounds_a_number_or_builds_a_key_by_hand(path):
    tree = ast.parse(path.read_text())
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round" \
                and len(node.args) + len(node.keywords) > 1:  # to n digits: a number for reading
            problems.append(f"line {node.lineno}: round(x, n) (the paper layer formats numbers)")
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None \
                and any(isinstance(v, ast.Constant) and "." in str(v.value) for v in node.format_spec.values) \
                and _inside_write(tree, node):
            problems.append(f"line {node.lineno}: a number formatted by hand for the manuscript")
        if _is_out_write(node):
            for part in _key_nodes(node):
                if any(isinstance(n, (ast.JoinedStr, ast.BinOp)) for n in ast.walk(part)) or isinstance(part, ast.Dict):
                    problems.append(f"line {node.lineno}: a key built by hand in {node.func.attr}()")
    assert problems == [], path.name


def _inside_write(tree: ast.AST, target: ast.AST) -> bool:
    """Whether ``target`` is inside the arguments of a write to the outputs."""
    return any(_is_out_write(node) and any(n is target for n in ast.walk(node)) for node in ast.walk(tree))


def _literal_keys(path: Path) -> set[str]:
    """Every key a module names literally in a write: set(key=...), put("template"),
    per_target(("template", ...)), default(reason, "key", ...)."""
    keys = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not _is_out_write(node):
            continue
        if node.func.attr == "set":
            keys |= {k.arg for k in node.keywords if k.arg is not None}
            continue
        for part in _key_nodes(node):
            items = part.elts if isinstance(part, (ast.Tuple, ast.List)) else [part]
            keys |= {n.value for n in items if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return keys


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_key_an_experiment_writes_by_name_is_declared(name):
    module = experiment(name)
    declared = {v.template for v in module.MANUSCRIPT.variables}
    written = _literal_keys(Path(module.__file__)) | _literal_keys(Path(spine.__file__))
    assert written - declared - {v.template for v in spine.CALIBRATION.variables} == set()
    assert _literal_keys(Path(module.__file__)) <= declared


def test_every_table_include_has_its_caption_on_the_line_before():
    """The caption precedes the include, so that the table's footnotes after it never part the
    table from its caption (and a continued part never takes the caption)."""
    for source in SOURCES:
        lines = source.read_text().splitlines()
        for number, line in enumerate(lines):
            if "{{< include" in line and "/tables/" in line:
                before = [text for text in lines[:number] if text.strip()][-1]
                assert before.startswith(": ") and "{#tbl-" in before, f"{source.name}:{number + 1}: {line}"
