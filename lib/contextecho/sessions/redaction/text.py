"""Text helpers shared by the redaction rules: placeholders, runs of characters, randomness.

A rule module yields *findings*: ``(class, value)`` pairs (a value searched for wherever
it occurs) or ``(start, end, class, value)`` spans (a value known by its context, replaced
in that context). These helpers are what several rule modules need to produce them.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterator

# What the redactor writes: <SECRET_1>, <USER_2>, <HOST_3> ...
PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*_\d+>")
# Identifiers of harness records (tool calls, messages, requests), not credentials.
RECORD_ID = re.compile(r"(?:toolu|srvtoolu|msg|req|call|fc|resp|rs|chatcmpl|file|run|thread|asst|ws)[_-]")
Span = tuple[int, int, str, str]  # (start, end, class, value)
# What a tool writes before each line of a file's body, so that a rule anchored at a line's
# start reads the body as the file holds it: a diff's ``+`` / ``-`` (an ``apply_patch``
# body, ``++`` in a patch that adds a patch; not ``--``), a line number (``cat -n``, Claude Code's Read:
# ``    12→``), quote marks (``> ``).
GUTTER = r"(?:[ \t]*\d{1,7}(?:\u2192|\t|\\u2192|\\t)|\++|-(?!-)|(?:>[ \t]?)+)"
# A line-anchored rule starts so, and is matched at the start of a line (:func:`at_line_starts`).
LINE_BODY = rf"(?:{GUTTER})?"
# The end of a line: a newline or a JSON string's escaped one.
EOL = r"(?:\r?\n|\\r?\\n)"
_GUTTER_AT = re.compile(GUTTER)
_VALUE_OPENERS = ('"', "'", "=", "?", "&", "/")
_VALUE_REACH = 200  # characters back from a hit to the opening of the value holding it
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lower(text: str) -> str:
    """``text`` in lower case, same length (so match positions carry over)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def walk_back(text: str, end: int, chars: frozenset, limit: int) -> int:
    """Start of the run of ``chars`` that ends at ``end``; -1 when the run is longer than
    ``limit`` (no value of the kind sought is; and a rule walking back over a long run
    from each of its hits would take time quadratic in the run)."""
    start, floor = end, max(0, end - limit)
    while start > floor and text[start - 1] in chars:
        start -= 1
    return -1 if start == floor and start > 0 and text[start - 1] in chars else start


def gutter_at(text: str, pos: int) -> str:
    """The :data:`GUTTER` of the line starting at ``pos`` ('' if none)."""
    m = _GUTTER_AT.match(text, pos)
    return m.group(0) if m else ""


def line_start(text: str, pos: int) -> int:
    """Where the line holding ``pos`` starts: after a newline or a JSON string's ``\\n``."""
    start = text.rfind("\n", 0, pos) + 1
    escaped = text.rfind("\\n", start, pos)
    return escaped + 2 if escaped >= 0 else start


def at_line_starts(rule: re.Pattern, text: str, hits: Iterator[re.Match]) -> Iterator[re.Match]:
    """Matches of ``rule`` (a pattern that starts with :data:`LINE_BODY`) at the start of
    each line holding one of ``hits`` (a cheap search for a word the rule needs: a
    line-anchored pattern tried at every position of a long text costs far more), and at
    the start of the value holding the hit, where a file's body starts inside a line: after
    the opening quote of a JSON string (``"content": "Thanks,\\nAnna"``), after the ``=``
    of a query parameter (``?msg=Signed-off-by: ...``), after a path's ``/``."""
    last, seen, tried = -1, 0, -1
    for hit in hits:
        pos = hit.start()
        # a line break since the last hit's? (looked for from there: not from each hit
        # back to the start of a line megabytes long)
        between = text[seen:pos]
        start = line_start(text, pos) if last < 0 or "\n" in between or "\\n" in between else last
        seen = pos
        if start != last:
            last = start
            m = rule.match(text, start)
            if m is not None:
                yield m
        floor = max(start, pos - _VALUE_REACH)
        opened = max(text.rfind(c, floor, pos) for c in _VALUE_OPENERS) + 1
        if opened > start and opened != tried:
            tried = opened
            m = rule.match(text, opened)
            if m is not None:
                yield m


def starts_word(text: str, i: int) -> bool:
    """Nothing word-like before ``i`` (an escape such as a literal ``\\n`` counts as a break)."""
    if i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"):
        return True
    return i >= 2 and text[i - 2] == "\\" and text[i - 1] in "nrt"


def entropy(s: str) -> float:
    """Shannon entropy of ``s`` in bits per character."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def high_entropy(token: str) -> bool:
    """Random-looking: digits, upper and lower case letters, high entropy, few separators.

    From 32 characters: > 4 bits/char; 20-31 characters (where camelCase names with a digit
    also reach 4 bits) also at least a quarter of the letters in each case and two digits.
    """
    if RECORD_ID.match(token):
        return False  # harness record ids
    token = token[:256]  # a long random token is random in its first 256 characters too
    if sum(ch in "_-/" for ch in token) > len(token) // 8:
        return False  # snake_case / kebab-case identifiers, paths
    upper = sum(map(str.isupper, token))
    low = sum(map(str.islower, token))
    digits = sum(map(str.isdigit, token))
    if not (upper and low and digits):
        return False
    if len(token) >= 32:
        return entropy(token) > 4.0
    letters = upper + low
    return digits >= 2 and min(upper, low) >= letters / 4 and entropy(token) > 3.9
