"""One switch: a protocol is chosen once from its name, and no code outside the protocol
modules asks which protocol it is running (DESIGN.md, "Protocols").

The protocol modules are ``echo/protocol.py`` (the interface), ``echo/protocols.py`` (the
registry), ``echo/instruments.py`` (ours) and ``echo/reference/`` (the harness's); beside
them, the reference protocol's conformance checks (``conformance/``)
read the harness's own columns by design. Anywhere else, each of three forms of a switch is a
violation:

* a comparison (``==``, ``!=``, ``in``, ``not in``, ``is``) one of whose operands is a
  registered protocol's name, or a tuple/list/set holding one, written as a string;
* the same comparison with a name or attribute bound to a protocol's name (a module-level
  constant of the module, or one it imports, such as ``PROTOCOL`` of
  ``echo/reference/cells.py``): module-level names are resolved to their values;
* a membership test (``in``, ``not in``) of a protocol's own result column
  (:attr:`~contextecho.echo.protocol.Protocol.result_columns`, ``"reference_score" in frame``),
  written as a string or through a name or attribute bound to one: a table asks the protocol
  which columns it writes (:attr:`~contextecho.echo.protocol.Protocol.stored_score`, ...).
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any, Mapping

import pytest

from contextecho.echo.protocol import Protocol
from contextecho.echo.protocols import PROTOCOLS, protocol

LIB = Path(__file__).resolve().parents[2] / "lib" / "contextecho"
PROTOCOL_MODULES = ("echo/protocol.py", "echo/protocols.py", "echo/instruments.py", "echo/reference/")
CONFORMANCE_MODULES = ("conformance/",)
NAMES = set(PROTOCOLS.names())
COLUMNS = {c for name in PROTOCOLS.names() for c in protocol(name).result_columns}


def _value(node: ast.AST, namespace: Mapping[str, Any]) -> Any:
    """The value ``node`` stands for: a constant, or a module-level name (or an attribute of
    one) looked up in ``namespace``; ``None`` when it is neither."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _value(node.value, namespace)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def _strings(node: ast.AST, namespace: Mapping[str, Any]) -> set[str]:
    """The strings an operand stands for (one, or those of a tuple/list/set)."""
    nodes = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    found = set()
    for n in nodes:
        value = _value(n, namespace)
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, (tuple, list, set, frozenset)) and n is node:
            found |= {v for v in value if isinstance(v, str)}
    return found


def _namespace(source: str, filename: str) -> dict[str, Any]:
    """The module-level names of ``source`` that its imports and constant assignments bind."""
    namespace: dict[str, Any] = {}
    for node in ast.parse(source, filename=filename).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            exec(compile(ast.Module([node], []), filename, "exec"), namespace)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    namespace[target.id] = node.value.value
    return namespace


def switches(source: str, filename: str = "<source>", namespace: Mapping[str, Any] | None = None) -> list[str]:
    """``file:line: text`` of every switch on a protocol (module doc) in ``source``, its
    module-level names resolved in ``namespace`` (default: the source's own imports and
    constants)."""
    names = _namespace(source, filename) if namespace is None else namespace
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        by_name = any(_strings(o, names) & NAMES for o in operands)
        membership = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and \
            bool(_strings(node.left, names) & COLUMNS)
        if by_name or membership:
            found.append(f"{filename}:{node.lineno}: {ast.get_source_segment(source, node)}")
    return found


def library_files() -> list[Path]:
    return [p for p in sorted(LIB.rglob("*.py"))
            if not str(p.relative_to(LIB)).startswith(PROTOCOL_MODULES + CONFORMANCE_MODULES)]


def _module_namespace(path: Path) -> dict[str, Any]:
    dotted = ".".join(("contextecho", *path.relative_to(LIB).with_suffix("").parts))
    return vars(importlib.import_module(dotted.removesuffix(".__init__")))


def test_no_protocol_switch_outside_the_protocol_modules():
    found = [hit for path in library_files()
             for hit in switches(path.read_text(), str(path), _module_namespace(path))]
    assert not found, "ask the protocol object, not its name or its columns:\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    # a protocol's name, written as a string
    'if p.protocol == "reference":\n    pass\n',
    'x = "contextecho" != name\n',
    'ok = protocol in ("reference", "other")\n',
    'ok = proto.name not in ["contextecho"]\n',
    # a name or an attribute bound to a protocol's name
    'from contextecho.echo.reference.cells import PROTOCOL as REFERENCE_PROTOCOL\n'
    'ours = p.protocol != REFERENCE_PROTOCOL\n',
    'from contextecho.echo.reference import cells\nif run.protocol.name == cells.PROTOCOL:\n    pass\n',
    'OURS = "contextecho"\nok = proto.name is OURS\n',
    # a membership test of a protocol's own result column
    'if "reference_score" in frame:\n    pass\n',
    'ok = "contextecho_score" not in row\n',
    'from contextecho.echo.reference.protocol import ReferenceProtocol\nok = ReferenceProtocol.stored_score in frame\n',
    'STORED = "reference_label"\nkeep = STORED in frame.columns\n',
])
def test_a_planted_switch_is_found(source):
    assert len(switches(source)) == 1


def test_other_comparisons_are_not_violations():
    assert switches('if arm == "real":\n    pass\nx = OneOf(("contextecho",), "protocol")\n'
                    'y = frame["reference_score"]\nz = "score" in frame\nw = column in frame\n'
                    'NAME = "panel"\nv = scheme == NAME\n') == []


def test_the_scan_covers_the_library():
    files = {str(p.relative_to(LIB)) for p in library_files()}
    assert {"experiments/selection.py", "echo/runner.py", "experiments/spine.py", "experiments/compaction.py",
            "experiments/panel.py", "experiments/onset.py", "experiments/session_validation.py",
            "experiments/audit.py"} <= files
    assert not any(f.startswith("echo/reference/") for f in files)
    assert COLUMNS >= {"reference_score", "contextecho_score"}


def test_every_registered_protocol_implements_the_interface():
    for name in PROTOCOLS.names():
        proto = protocol(name)
        assert isinstance(proto, Protocol) and proto.name == name
        assert protocol(name) is proto  # one object per name: what a run carries
        assert set(proto.key()) == {"protocol", "protocol_version", "protocol_sha256"}
