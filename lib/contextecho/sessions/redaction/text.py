"""Text helpers shared by the redaction rules: placeholders, runs of characters, randomness.

A rule module yields *findings*: ``(class, value)`` pairs (a value searched for wherever
it occurs) or ``(start, end, class, value)`` spans (a value known by its context, replaced
in that context). These helpers are what several rule modules need to produce them.
"""
from __future__ import annotations

import math
import re
from collections import Counter

# What the redactor writes: <SECRET_1>, <USER_2>, <HOST_3> ...
PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*_\d+>")
# Identifiers of harness records (tool calls, messages, requests), not credentials.
RECORD_ID = re.compile(r"(?:toolu|srvtoolu|msg|req|call|fc|resp|rs|chatcmpl|file|run|thread|asst|ws)[_-]")
Span = tuple[int, int, str, str]  # (start, end, class, value)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lower(text: str) -> str:
    """``text`` in lower case, same length (so match positions carry over)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def walk_back(text: str, end: int, chars: frozenset) -> int:
    """Start of the run of ``chars`` that ends at ``end``."""
    start = end
    while start > 0 and text[start - 1] in chars:
        start -= 1
    return start


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
