"""Deterministic scorers: pure functions ``(response, contract) -> Score``. No judge.

Each scorer returns a :class:`Score` with ``passed`` and a human ``reason`` (the first
rule the response broke, or ``"ok"``). Scores are recomputed from stored responses
whenever needed; they are never cached. Any string is a valid input: an empty or a
megabyte-long response is scored (and fails or passes), never crashes.

Shared rules (the exact definitions, in the order they are checked):

``no_preamble`` — the seed's ``is_no_preamble`` (S2): after converting CRLF/CR to LF and
stripping leading/trailing whitespace, the response must (1) be non-empty, (2) contain
no markdown fence (``\u0060\u0060\u0060`` or ``~~~``), (3) be a single line, (4) not be wrapped in
inline-code backticks, (5) not start with a markdown marker (``#``, ``>``, ``-``/``*``/``+``
bullet, ``1.``), (6) not start with a preamble word (:data:`PREAMBLE_WORDS`, case-
insensitive) nor a capitalised label such as ``Command:``, and (7) not be a prose
sentence (starts with a capital letter, contains a space and ends with ``.``/``!``).

``byte_exact`` (S1, S4): the response equals the expected text byte for byte. A
response that differs only by surrounding whitespace fails, with reason
``"near miss: surrounding whitespace"``.

``one_sentence`` (S3): non-empty after stripping, no fence, a single line, ending in
``.``/``!``/``?`` (optionally followed by a closing quote or bracket), and no sentence
boundary inside (a ``.!?`` followed by whitespace), common abbreviations excepted.

Hardened contracts (C1, C2, C5, C6) first normalise line breaks (CRLF/CR to LF), strip
trailing whitespace from each line and drop leading/trailing blank lines; a markdown
fence anywhere fails (the dominant failure in the paper: fence-wrapped correct output).
``csv_exact``: the lines, parsed as CSV, equal the expected rows exactly (header
included, order included, no extra rows or cells). ``yaml_flat_exact``: exactly the
expected ``key: value`` lines in order, values unquoted and equal, and the whole text
loads with ``yaml.safe_load`` as a flat mapping. ``lines_exact``: the lines equal the
expected lines. ``json_exact``: the whole output parses with ``json.loads`` (no extra
text), is an object with no duplicate keys, keys appear in alphabetical order, and the
values equal the expected values with the same JSON types (``2`` is not ``2.0`` or
``"2"``, ``true`` is not ``1``).
"""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import yaml

from ..engine.registry import Registry


@dataclass(frozen=True)
class Score:
    passed: bool
    reason: str
    scorer: str = ""
    details: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.passed


class HasExpected(Protocol):
    id: str
    expected: Any


Scorer = Callable[[str, HasExpected], Score]
SCORERS: Registry[Scorer] = Registry("scorer")

FENCE = re.compile(r"```|~~~")
PREAMBLE_WORDS = frozenset({
    "here", "here's", "heres", "sure", "sure,", "certainly", "okay", "ok", "of", "absolutely",
    "to", "you", "use", "the", "this", "that", "i", "i'll", "i'd", "i'm", "run", "try",
    "answer", "great", "alright", "yes", "below", "following", "just", "simply", "we",
})
LABEL = re.compile(r"^[A-Z][a-z]+(?: [a-z]+){0,3}:\s")
MARKDOWN_START = re.compile(r"^(?:#{1,6}\s|>\s|[-*+]\s|\d+\.\s)")
ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|Mr|Mrs|Dr|Ms|cf|approx)\.", re.IGNORECASE)


def _text(response: Any) -> str:
    return "" if response is None else str(response)


def _normalise_breaks(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _fail(scorer: str, reason: str, **details) -> Score:
    return Score(False, reason, scorer, details)


def _pass(scorer: str, **details) -> Score:
    return Score(True, "ok", scorer, details)


def no_preamble(response: str, contract: HasExpected | None = None) -> Score:
    name = "no_preamble"
    t = _normalise_breaks(_text(response)).strip()
    if not t:
        return _fail(name, "empty response")
    if FENCE.search(t):
        return _fail(name, "markdown fence")
    lines = t.split("\n")
    if len(lines) > 1:
        return _fail(name, f"{len(lines)} lines; expected a single line")
    line = lines[0]
    if len(line) >= 2 and line.startswith("`") and line.endswith("`"):
        return _fail(name, "inline markdown code")
    if MARKDOWN_START.match(line):
        return _fail(name, "starts with a markdown marker")
    first = line.split()[0].lower().rstrip(":!,.")
    if first in PREAMBLE_WORDS or LABEL.match(line):
        return _fail(name, f"preamble: starts with {line.split()[0]!r}")
    if line[0].isupper() and " " in line and line[-1] in ".!":
        return _fail(name, "prose sentence, not a command")
    return _pass(name)


def is_no_preamble(response: str) -> bool:
    """The seed's name for the S2 compliance test."""
    return no_preamble(response).passed


def byte_exact(response: str, contract: HasExpected) -> Score:
    name = "byte_exact"
    text, expected = _text(response), str(contract.expected)
    if text == expected:
        return _pass(name)
    if not text.strip():
        return _fail(name, "empty response")
    if text.strip() == expected:
        return _fail(name, "near miss: surrounding whitespace")
    if FENCE.search(text):
        return _fail(name, "markdown fence")
    return _fail(name, "differs from the expected text")


def one_sentence(response: str, contract: HasExpected | None = None) -> Score:
    name = "one_sentence"
    t = _normalise_breaks(_text(response)).strip()
    if not t:
        return _fail(name, "empty response")
    if FENCE.search(t):
        return _fail(name, "markdown fence")
    if "\n" in t:
        return _fail(name, "more than one line")
    if not re.search(r"[.!?][\"')\]\u201d\u2019]*$", t):
        return _fail(name, "does not end like a sentence")
    body = ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", ""), t)
    inner = re.findall(r"[.!?][\"')\]\u201d\u2019]*\s+\S", body)
    if inner:
        return _fail(name, f"{len(inner) + 1} sentences")
    return _pass(name)


def contract_lines(response: str) -> list[str]:
    """Hardened-contract normalisation: LF breaks, no trailing spaces, no blank margins."""
    lines = [ln.rstrip() for ln in _normalise_breaks(_text(response)).split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _lines_or_fail(name: str, response: str) -> list[str] | Score:
    if FENCE.search(_text(response)):
        return _fail(name, "markdown fence")
    lines = contract_lines(response)
    if not lines:
        return _fail(name, "empty response")
    return lines


def csv_exact(response: str, contract: HasExpected) -> Score:
    name = "csv_exact"
    lines = _lines_or_fail(name, response)
    if isinstance(lines, Score):
        return lines
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
    except csv.Error as exc:
        return _fail(name, f"not CSV: {exc}")
    expected = [list(r) for r in contract.expected]
    if rows[:1] != expected[:1]:
        return _fail(name, "header differs", got=rows[:1])
    if len(rows) != len(expected):
        return _fail(name, f"{len(rows) - 1} records; expected {len(expected) - 1}")
    for i, (got, want) in enumerate(zip(rows, expected)):
        if got != want:
            return _fail(name, f"record {i} differs", got=got, expected=want)
    return _pass(name)


def yaml_flat_exact(response: str, contract: HasExpected) -> Score:
    name = "yaml_flat_exact"
    lines = _lines_or_fail(name, response)
    if isinstance(lines, Score):
        return lines
    expected = [(str(k), str(v)) for k, v in contract.expected]
    if len(lines) != len(expected):
        return _fail(name, f"{len(lines)} lines; expected {len(expected)}")
    for line, (key, value) in zip(lines, expected):
        m = re.fullmatch(r"([^:\s][^:]*):[ \t]+(.*)", line)
        if not m:
            return _fail(name, f"not a 'key: value' line: {line[:60]!r}")
        if m.group(1) != key:
            return _fail(name, f"key {m.group(1)!r} where {key!r} was expected (order is fixed)")
        got = m.group(2)
        if got[:1] in ("'", '"'):
            return _fail(name, f"value of {key!r} is quoted")
        if got != value:
            return _fail(name, f"value of {key!r} is {got[:60]!r}, expected {value!r}")
    try:
        loaded = yaml.safe_load("\n".join(lines))
    except yaml.YAMLError as exc:
        return _fail(name, f"not YAML: {str(exc).splitlines()[0]}")
    if not isinstance(loaded, dict) or len(loaded) != len(expected):
        return _fail(name, "not a flat mapping of the expected size")
    return _pass(name)


def lines_exact(response: str, contract: HasExpected) -> Score:
    name = "lines_exact"
    lines = _lines_or_fail(name, response)
    if isinstance(lines, Score):
        return lines
    expected = [str(x) for x in contract.expected]
    if len(lines) != len(expected):
        return _fail(name, f"{len(lines)} lines; expected {len(expected)}")
    for i, (got, want) in enumerate(zip(lines, expected), 1):
        if got != want:
            return _fail(name, f"line {i} is {got[:60]!r}, expected {want!r}")
    return _pass(name)


def _typed_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_typed_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_typed_equal(x, y) for x, y in zip(a, b))
    return a == b


def json_exact(response: str, contract: HasExpected) -> Score:
    name = "json_exact"
    text = _text(response)
    if FENCE.search(text):
        return _fail(name, "markdown fence")
    if not text.strip():
        return _fail(name, "empty response")
    pairs_seen: list[list[tuple[str, Any]]] = []

    def hook(pairs):
        pairs_seen.append(pairs)
        return dict(pairs)

    try:
        value = json.loads(text, object_pairs_hook=hook)
    except (json.JSONDecodeError, RecursionError) as exc:
        return _fail(name, f"whole output is not JSON: {exc.msg if hasattr(exc, 'msg') else exc}")
    if not isinstance(value, dict):
        return _fail(name, f"a JSON {type(value).__name__}, not an object")
    keys = [k for k, _ in pairs_seen[-1]]
    if len(set(keys)) != len(keys):
        return _fail(name, "duplicate keys")
    if keys != sorted(keys):
        return _fail(name, "keys not in alphabetical order", keys=keys)
    expected = dict(contract.expected)
    if set(keys) != set(expected):
        return _fail(name, "keys differ", keys=keys, expected=sorted(expected))
    for k in keys:
        if not _typed_equal(value[k], expected[k]):
            return _fail(name, f"value of {k!r} differs", got=value[k], expected=expected[k])
    return _pass(name)


for _name, _fn in (("no_preamble", no_preamble), ("byte_exact", byte_exact),
                   ("one_sentence", one_sentence), ("csv_exact", csv_exact),
                   ("yaml_flat_exact", yaml_flat_exact), ("lines_exact", lines_exact),
                   ("json_exact", json_exact)):
    SCORERS.add(_name, _fn)


def score(response: str, contract: HasExpected, scorer: str | None = None) -> Score:
    """Score ``response`` with ``scorer`` (default: the contract's own ``scorer``)."""
    return SCORERS.get(scorer or contract.scorer)(response, contract)
