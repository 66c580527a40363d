"""One switch: a protocol is chosen once from its name, and no code outside the protocol
modules compares anything with a protocol's name (DESIGN.md, "Protocols").

The protocol modules are ``echo/protocol.py`` (the interface), ``echo/protocols.py`` (the
registry), ``echo/instruments.py`` (ours) and ``echo/reference/`` (the harness's). Anywhere
else, a comparison (``==``, ``!=``, ``in``, ``not in``, ``is``) one of whose operands is a
registered protocol's name, or a tuple/list/set holding one, is a violation."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from contextecho.echo.protocol import Protocol
from contextecho.echo.protocols import PROTOCOLS, protocol

LIB = Path(__file__).resolve().parents[2] / "lib" / "contextecho"
PROTOCOL_MODULES = ("echo/protocol.py", "echo/protocols.py", "echo/instruments.py", "echo/reference/")


def _names_in(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def name_comparisons(source: str, filename: str = "<source>") -> list[str]:
    """``file:line: text`` of every comparison with a protocol name in ``source``."""
    names = set(PROTOCOLS.names())
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_in(o) & names for o in operands):
                found.append(f"{filename}:{node.lineno}: {ast.get_source_segment(source, node)}")
    return found


def library_files() -> list[Path]:
    return [p for p in sorted(LIB.rglob("*.py"))
            if not str(p.relative_to(LIB)).startswith(PROTOCOL_MODULES)]


def test_no_protocol_name_comparison_outside_the_protocol_modules():
    found = [hit for path in library_files() for hit in name_comparisons(path.read_text(), str(path))]
    assert not found, "compare with the protocol object, not its name:\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    'if p.protocol == "reference":\n    pass\n',
    'x = "contextecho" != name\n',
    'ok = protocol in ("reference", "other")\n',
    'ok = proto.name not in ["contextecho"]\n',
])
def test_a_planted_comparison_is_found(source):
    assert len(name_comparisons(source)) == 1


def test_other_comparisons_are_not_violations():
    assert name_comparisons('if arm == "real":\n    pass\nx = OneOf(("contextecho",), "protocol")\n') == []


def test_the_scan_covers_the_library():
    files = {str(p.relative_to(LIB)) for p in library_files()}
    assert {"experiments/selection.py", "echo/runner.py", "experiments/spine.py", "experiments/compaction.py"} <= files
    assert not any(f.startswith("echo/reference/") for f in files)


def test_every_registered_protocol_implements_the_interface():
    for name in PROTOCOLS.names():
        proto = protocol(name)
        assert isinstance(proto, Protocol) and proto.name == name
        assert protocol(name) is proto  # one object per name: what a run carries
        assert set(proto.key()) == {"protocol", "protocol_version", "protocol_sha256"}
