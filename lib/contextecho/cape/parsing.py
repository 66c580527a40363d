"""Answer parsing and scoring: the model's reply → option letter → item score.

Accepted (case-insensitive, after leading whitespace, quotes, ``*`` and ``_``):

- ``(B)`` at the start, whatever follows;
- ``B)``, ``B.`` or ``B:`` at the start, whatever follows;
- a bare letter: ``B`` alone, or followed by the option's own wording (``B Agree``);
- the wording of one option alone (``Moderately Accurate``), for the option set asked.

A letter followed by the wording of a *different* option (``B. Very Inaccurate``)
is ``conflict``; an empty reply is ``empty``; anything else ``unrecognised``; a
failed call ``error``. Invalid answers get no score and are counted, never guessed.

Scoring (CAPE §2): A→5, B→4, C→3, D→2, E→1 for a +1 key, reversed (A→1 … E→5) for -1.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .prompts import LETTERS, PAPER_OPTIONS, Options

OK = "ok"
EMPTY = "empty"
UNRECOGNISED = "unrecognised"
CONFLICT = "conflict"
ERROR = "error"
STATUSES = (OK, EMPTY, UNRECOGNISED, CONFLICT, ERROR)

_LEAD = re.compile(r"^[\s\"'`*_]+")
_PAREN = re.compile(r"^\(([a-e])\)(.*)$", re.IGNORECASE | re.DOTALL)
_DELIM = re.compile(r"^([a-e])[\).:](.*)$", re.IGNORECASE | re.DOTALL)
_BARE = re.compile(r"^([a-e])(?:\s+(.*))?$", re.IGNORECASE | re.DOTALL)
_TRAIL = " \t\r\n.,;:!\"'`*_)"


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    letter: str | None  # "A".."E" when status is OK
    status: str  # one of STATUSES

    @property
    def valid(self) -> bool:
        return self.status == OK


def _norm(text: str) -> str:
    return " ".join(text.strip(_TRAIL).lower().split())


def _wording_of(rest: str, options: Options) -> str | None:
    """The letter whose wording ``rest`` starts with (longest match wins), if any."""
    rest = _norm(rest)
    best = None
    for letter in LETTERS:
        wording = options.text(letter).lower()
        if rest.startswith(wording) and (len(rest) == len(wording) or not rest[len(wording)].isalnum()):
            if best is None or len(wording) > len(options.text(best)):
                best = letter
    return best


def parse_answer(text: str | None, options: Options = PAPER_OPTIONS) -> ParsedAnswer:
    """The option a reply chose; see the module doc for what is accepted."""
    if text is None:
        return ParsedAnswer(None, ERROR)
    body = _LEAD.sub("", text).strip()
    if not body:
        return ParsedAnswer(None, EMPTY)
    for pattern in (_PAREN, _DELIM):
        match = pattern.match(body)
        if match:
            return _checked(match.group(1).upper(), match.group(2) or "", options)
    if len(body.rstrip(_TRAIL)) == 1 and body[0].upper() in LETTERS:  # "B", "**C**", "b."
        return ParsedAnswer(body[0].upper(), OK)
    match = _BARE.match(body)
    if match:
        letter, rest = match.group(1).upper(), match.group(2) or ""
        if not _norm(rest):
            return ParsedAnswer(letter, OK)
        named = _wording_of(rest, options)
        if named == letter:
            return ParsedAnswer(letter, OK)
        if named is not None:
            return ParsedAnswer(None, CONFLICT)
    named = _wording_of(body, options)
    if named is not None and _norm(body) == options.text(named).lower():
        return ParsedAnswer(named, OK)
    return ParsedAnswer(None, UNRECOGNISED)


def _checked(letter: str, rest: str, options: Options) -> ParsedAnswer:
    named = _wording_of(rest, options)
    if named is not None and named != letter:
        return ParsedAnswer(None, CONFLICT)
    return ParsedAnswer(letter, OK)


def item_score(letter: str | None, key: int) -> float:
    """The item score of an option (NaN for no valid option)."""
    if letter is None:
        return float("nan")
    raw = 5 - LETTERS.index(letter)
    if key == 1:
        return float(raw)
    if key == -1:
        return float(6 - raw)
    raise ValueError(f"item key must be +1 or -1, got {key!r}")
