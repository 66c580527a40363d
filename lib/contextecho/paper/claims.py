"""Claims the manuscript's own words make about its numbers, checked against them.

Words that depend on a value ("close to zero", "larger than", "with one session") are
generated from it where they can be (:mod:`.sentences`). Where the prose says them itself,
it marks them as a claim, a span whose condition names the values they depend on:

    [With this few events the test has almost no power]{claim="compaction.n_events < 10"}

Quarto prints the words (an attribute it does not know is kept on the span, and Typst drops
it), and ``paper-check`` (:func:`check`) evaluates the condition on the generated variables:
a claim whose condition is false, names a variable that is not there or cannot be read is a
problem at its file and line, so a build whose numbers contradict its words does not pass.

A condition is comparisons joined by ``and`` / ``or`` (``and`` binds first), each one of

- ``A OP B``, OP one of ``< <= > >= == !=``, each side a number (``0.1``), a quoted text
  (``"reference"``), a variable (``notebook.key``: its value as a number where it reads as one,
  ``−0.50``, ``41.7%``, the estimate of ``0.36 [0.12, 0.83]``; else as text), or ``abs(key)``,
  ``low(key)``, ``high(key)`` (an interval's or an estimate's bounds);
- ``key is estimable`` / ``key is not estimable`` (:func:`~.formats.not_estimable`).
"""
from __future__ import annotations

import operator
import re
from typing import Any, Callable, Mapping

from .formats import MINUS, is_not_estimable

#: A claim span's condition in the manuscript: ``]{claim="..."}`` (one line, other attributes beside it).
CLAIM = re.compile(r"""\]\{[^}]*?\bclaim=(?:"([^"]*)"|'([^']*)')[^}]*\}""")
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt}
_COMPARISON = re.compile(r"^(.+?)\s*(<=|>=|==|!=|<|>)\s*(.+)$")
_ESTIMABLE = re.compile(r"^([\w.]+)\s+is\s+(not\s+)?estimable$")
_FUNCTION = re.compile(r"^(abs|low|high)\(\s*([\w.]+)\s*\)$")
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_INTERVAL = re.compile(rf"^(?:({_NUMBER})\s*)?\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]$")


class ClaimError(ValueError):
    """A condition that cannot be read or evaluated (its message says why)."""


def _lookup(variables: Mapping[str, Any], dotted: str) -> Any:
    node: Any = variables
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ClaimError(f"variable {dotted!r} is not generated")
        node = node[part]
    return node


def numbers(value: Any) -> tuple[float | None, float | None, float | None]:
    """A manuscript value as (number, low, high): ``0.36`` -> (0.36, None, None),
    ``[0.12, 0.83]`` -> (None, 0.12, 0.83), ``0.36 [0.12, 0.83]`` -> all three, ``41.7%``
    -> 41.7; text that is no number -> (None, None, None)."""
    if isinstance(value, bool):
        return None, None, None
    if isinstance(value, (int, float)):
        return float(value), None, None
    text = str(value).replace(MINUS, "-").strip().removesuffix("%")
    if re.fullmatch(_NUMBER, text):
        return float(text), None, None
    found = _INTERVAL.match(text)
    if found:
        return (float(found.group(1)) if found.group(1) else None), float(found.group(2)), float(found.group(3))
    return None, None, None


def _operand(text: str, variables: Mapping[str, Any]) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if re.fullmatch(_NUMBER, text):
        return float(text)
    function = _FUNCTION.match(text)
    key = function.group(2) if function else text
    if not re.fullmatch(r"[A-Za-z_][\w]*(?:\.[\w]+)+", key):
        raise ClaimError(f"{text!r} is neither a number, a quoted text nor a variable (notebook.key)")
    value = _lookup(variables, key)
    number, low, high = numbers(value)
    if function is None:
        return number if number is not None else str(value)
    chosen = {"abs": None if number is None else abs(number), "low": low, "high": high}[function.group(1)]
    if chosen is None:
        raise ClaimError(f"{function.group(1)}({key}) needs {'a number' if function.group(1) == 'abs' else 'an interval'}"
                         f", and {key} is {value!r}")
    return chosen


def _atom(text: str, variables: Mapping[str, Any]) -> bool:
    text = text.strip()
    estimable = _ESTIMABLE.match(text)
    if estimable:
        missing = is_not_estimable(_lookup(variables, estimable.group(1)))
        return missing if estimable.group(2) else not missing
    comparison = _COMPARISON.match(text)
    if not comparison:
        raise ClaimError(f"{text!r} is no comparison (A < B, ...) nor 'key is [not] estimable'")
    left, right = (_operand(comparison.group(i), variables) for i in (1, 3))
    op = comparison.group(2)
    if isinstance(left, str) != isinstance(right, str) or (isinstance(left, str) and op not in ("==", "!=")):
        raise ClaimError(f"{text!r} compares {left!r} with {right!r}")
    return _OPERATORS[op](left, right)


def holds(condition: str, variables: Mapping[str, Any]) -> bool:
    """Whether ``condition`` (module doc) holds for ``variables`` (the generated
    ``_variables.yml``, one mapping per notebook); a :class:`ClaimError` where it cannot be read."""
    if not condition.strip():
        raise ClaimError("an empty condition")
    return any(all(_atom(a, variables) for a in re.split(r"\s+and\s+", alternative))
               for alternative in re.split(r"\s+or\s+", condition.strip()))


def check(where: str, line: str, variables: Mapping[str, Any]) -> list[str]:
    """The problems of the claims on one manuscript line (``where``: its ``file:line``)."""
    problems = []
    for found in CLAIM.finditer(line):
        condition = found.group(1) if found.group(1) is not None else found.group(2)
        try:
            if not holds(condition, variables):
                problems.append(f"{where}: claim {condition!r} is false for this build's numbers; "
                                "write the words from the values (paper.sentences) or change them")
        except ClaimError as exc:
            problems.append(f"{where}: claim {condition!r} cannot be checked: {exc}")
    return problems
