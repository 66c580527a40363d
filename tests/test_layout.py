"""The package's shape (../shared/DESIGN.md, "Layout"): layers import downwards only, the
three designs never import each other, no experiment imports another, no import cycle
(counting modules named in ``importlib`` strings), and every library import takes a name
from the module that defines it.

Every ``import`` and ``from … import`` counts, at module level or inside a function."""
from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

import pytest

from contextecho.notebooks.build import NOTEBOOKS

LIB = Path(__file__).resolve().parents[1] / "lib"
PACKAGE = "contextecho"

# What each top-level package may import (besides itself). The engine and the statistics are
# the bottom; sessions sit on the engine; the designs (echo = ContextEcho, cape, anchor) on
# those, never on each other; the experiments run the designs; conformance runs the
# experiments on the harness's fixtures (nothing below it imports it); the notebooks run the
# experiments; the paper side never imports an experiment; the command line sits on top.
ALLOWED = {
    "engine": set(),
    "stats": set(),
    "sessions": {"engine"},
    "echo": {"engine", "sessions", "stats"},
    "cape": {"engine", "sessions", "stats"},
    "anchor": {"engine", "sessions", "stats"},
    "paper": {"engine"},
    "experiments": {"engine", "sessions", "stats", "echo", "cape", "anchor", "paper"},
    "conformance": {"engine", "sessions", "stats", "echo", "paper", "experiments"},
    "notebooks": {"engine", "experiments", "paper"},
    "cli": {"engine", "sessions", "stats", "echo", "cape", "anchor", "paper", "experiments", "conformance", "notebooks"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((LIB / PACKAGE).rglob("*.py"))}


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text(), filename=str(modules()[module]))


def absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an ``ImportFrom`` in ``module`` names, made absolute."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if modules()[module].name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import in ``module``, and every module named whole
    in a string (what ``importlib.import_module`` takes)."""
    known = modules()
    out = []
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.ImportFrom):
            base = absolute(module, node)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((full if full in known else base, node.lineno))
        elif isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and re.fullmatch(rf"{PACKAGE}(\.\w+)+", node.value):
            out.append((node.value, node.lineno))
    return [(name, line) for name, line in out if name in known and name != module]


def top(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_every_package_is_placed_in_the_layers():
    packages = {top(m) for m in modules() if m.count(".") and (LIB / m.replace(".", "/")).is_dir()}
    assert packages == set(ALLOWED), "a new package needs its place in ALLOWED"


def test_layers_import_downwards_only_and_designs_never_each_other():
    wrong = [f"{modules()[m].relative_to(LIB)}:{line}: {top(m)} imports {name}"
             for m in modules() if top(m) in ALLOWED
             for name, line in imports(m)
             if top(name) not in ALLOWED[top(m)] | {top(m), ""}]
    assert not wrong, "\n".join(wrong)


#: The experiments: the modules of ``experiments/`` that have a notebook, and the audit's and
#: the session check's; the others are the helpers they share (the spine, parameters,
#: selection, scores ...).
EXPERIMENTS = {f"{PACKAGE}.experiments.{name}" for name in (*NOTEBOOKS, "audit", "compare", "session_validation")}


def experiment_imports(module: str) -> list[tuple[str, int]]:
    return [(name, line) for name, line in imports(module) if name in EXPERIMENTS and name != module]


def test_no_experiment_imports_another():
    """An experiment's module imports helpers only, never another experiment, and no helper
    imports an experiment: what two experiments share lives in a helper."""
    assert EXPERIMENTS <= set(modules())
    wrong = [f"{modules()[m].relative_to(LIB)}:{line}: imports the experiment {name}"
             for m in modules() if top(m) == "experiments" for name, line in experiment_imports(m)]
    assert not wrong, "\n".join(wrong)


def test_only_the_command_line_imports_conformance():
    """Conformance sits above the experiments and runs them; nothing but the command line imports it."""
    assert [layer for layer, allowed in ALLOWED.items() if "conformance" in allowed] == ["cli"]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_strongly_connected_finds_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    graph = {m: {name for name, _ in imports(m)} for m in modules()}
    assert strongly_connected(graph) == []


@cache
def bindings(module: str) -> tuple[frozenset[str], dict[str, tuple[str, str]]]:
    """The names ``module`` defines at top level, and those it imports (name -> (module, name))."""
    defined, imported = set(), {}
    for node in tree(module).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imported[alias.asname or alias.name] = (absolute(module, node), alias.name)
    return frozenset(defined), imported


@pytest.mark.parametrize("module", sorted(modules()))
def test_every_import_takes_a_name_from_the_module_that_defines_it(module):
    """A package's own ``__init__`` may gather its submodules' names for outside callers;
    inside the library nobody imports through it (or through any other re-export)."""
    wrong = []
    for node in ast.walk(tree(module)):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = absolute(module, node)
        own_package = modules()[module].name == "__init__.py" and source.startswith(module)
        if source not in modules() or own_package:
            continue
        defined, imported = bindings(source)
        for alias in node.names:
            if alias.name in defined or alias.name not in imported:
                continue  # defined there, or a submodule the package does not shadow
            origin = ".".join(imported[alias.name])
            if origin != f"{source}.{alias.name}":  # not the package's own `from . import sub`
                wrong.append(f"line {node.lineno}: {alias.name} from {source}, which imports it ({origin})")
    assert not wrong, "\n".join(wrong)
