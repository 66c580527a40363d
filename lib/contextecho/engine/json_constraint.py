"""Constrained decoding to one JSON object: the embedded model's ``response_format``.

:class:`JsonObjectPrefix` reads text one character at a time and says whether it is still
the beginning of a valid JSON object (RFC 8259: objects, arrays, strings with their
escapes, numbers, ``true`` / ``false`` / ``null``; whitespace between tokens), and when that
object is complete. The embedded model's sampler (:mod:`.local_model`) offers it the
candidate tokens in order of the model's preference and takes the first (greedy) or samples
among the first few (temperature > 0) that keep the text valid, and stops at the object's
closing brace. Near the end of the token budget (:meth:`JsonObjectPrefix.closing_cost`
tokens or a few more left) only tokens that bring the object closer to its end are taken,
so a verdict asked with ``response_format={"type": "json_object"}`` is one valid JSON
object whatever the model meant to write, whenever the budget holds its opening.
"""
from __future__ import annotations

import re

#: The request option that asks a model for one JSON object (OpenAI's ``response_format``, which
#: LiteLLM passes on and the embedded model honours by the constraint below).
JSON_OBJECT = {"type": "json_object"}
WHITESPACE = " \t\n\r"
HEX = "0123456789abcdefABCDEF"
ESCAPES = '"\\/bfnrt'
# A number so far: a prefix of  -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
NUMBER_PREFIX = re.compile(r"-?(?:(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][+-]?\d*)?)?")
NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
LITERALS = {"t": "true", "f": "false", "n": "null"}
OBJECT, ARRAY = "object", "array"
# What an open container expects next.
KEY_OR_END, KEY, COLON, VALUE, VALUE_OR_END, COMMA_OR_END = (
    "key_or_end", "key", "colon", "value", "value_or_end", "comma_or_end")


#: Bounds that make a constrained object close within a token budget (a model may otherwise
#: write one string, or one member after another, until the budget runs out): a string holds
#: at most this many characters (the harness's parser keeps 300 of a reason), a container
#: at most this many members.
MAX_STRING_CHARS = 300
MAX_MEMBERS = 16
#: Whitespace between two tokens of the object: at most this many characters in a row.
MAX_WHITESPACE = 8


class JsonObjectPrefix:
    """The state of a JSON object read so far (module doc). ``feed`` returns False (and
    leaves the state unusable) on the first character that cannot continue it. Strings of
    more than ``max_string`` characters, containers of more than ``max_members`` members
    and more than :data:`MAX_WHITESPACE` whitespace characters in a row are refused, so
    that a constrained object closes within a token budget."""

    __slots__ = ("stack", "scalar", "started", "complete", "max_string", "max_members", "blank")

    def __init__(self, max_string: int = MAX_STRING_CHARS, max_members: int = MAX_MEMBERS) -> None:
        self.stack: list[list] = []  # [container kind, what it expects next, members so far]
        self.scalar: list | None = None  # the string, number or literal being read
        self.started = False
        self.complete = False
        self.max_string, self.max_members = max_string, max_members
        self.blank = 0  # whitespace characters in a row

    def copy(self) -> "JsonObjectPrefix":
        other = JsonObjectPrefix.__new__(JsonObjectPrefix)
        other.stack = [list(frame) for frame in self.stack]
        other.scalar = list(self.scalar) if self.scalar is not None else None
        other.started, other.complete = self.started, self.complete
        other.max_string, other.max_members = self.max_string, self.max_members
        other.blank = self.blank
        return other

    def closing_cost(self) -> int:
        """The fewest characters that complete the object from here (a key needs its colon
        and a one-character value, each open container its bracket)."""
        if self.complete:
            return 0
        if not self.started:
            return 2  # {}
        cost = len(self.stack)
        if self.scalar is not None:
            kind = self.scalar[0]
            if kind == "string":
                _, escaped, hex_left, is_key, _ = self.scalar
                cost += 1 + hex_left + int(escaped) + (2 if is_key else 0)
            elif kind == "literal":
                cost += len(self.scalar[1]) - self.scalar[2]
            elif not NUMBER.fullmatch(self.scalar[1]):
                cost += 1
            return cost
        kind, expect, _ = self.stack[-1]
        if expect == COLON:
            cost += 2
        elif expect == VALUE:
            cost += 1
        elif expect == KEY:
            cost += 5  # "k":0
        return cost

    def in_plain_string(self) -> bool:
        """Whether a string is open with no escape pending: then every character but ``"`` and
        ``\\`` either lengthens it or fails, and so leaves :meth:`closing_cost` as it is."""
        return self.scalar is not None and self.scalar[0] == "string" and not self.scalar[1] and not self.scalar[2]

    def feed_text(self, text: str) -> bool:
        return all(self.feed(ch) for ch in text)

    # ------------------------------------------------------------- one character
    def feed(self, ch: str) -> bool:
        if self.scalar is not None:
            kind = self.scalar[0]
            if kind == "string":
                return self._string(ch)
            if kind == "literal":
                return self._literal(ch)
            if kind == "number":
                if NUMBER_PREFIX.fullmatch(self.scalar[1] + ch):
                    self.scalar[1] += ch
                    return True
                if not NUMBER.fullmatch(self.scalar[1]):
                    return False
                self.scalar = None
                self._value_done()  # the number ended; ch is read as structure
        return self._structure(ch)

    def _structure(self, ch: str) -> bool:
        if ch in WHITESPACE:
            self.blank += 1
            return self.blank <= MAX_WHITESPACE
        self.blank = 0
        if self.complete:
            return False
        if not self.started:
            if ch != "{":
                return False
            self.started = True
            self.stack.append([OBJECT, KEY_OR_END, 0])
            return True
        kind, expect, members = self.stack[-1]
        if expect in (KEY_OR_END, KEY):
            if ch == '"':
                self.scalar = ["string", False, 0, True, 0]
                return True
            if ch == "}" and expect == KEY_OR_END:
                return self._close()
            return False
        if expect == COLON:
            if ch == ":":
                self.stack[-1][1] = VALUE
                return True
            return False
        if expect in (VALUE, VALUE_OR_END):
            if ch == "]" and expect == VALUE_OR_END:
                return self._close()
            return self._start_value(ch)
        # COMMA_OR_END
        if ch == ",":
            if members >= self.max_members:
                return False
            self.stack[-1][1] = KEY if kind == OBJECT else VALUE
            return True
        if (ch == "}" and kind == OBJECT) or (ch == "]" and kind == ARRAY):
            return self._close()
        return False

    def _start_value(self, ch: str) -> bool:
        if ch == '"':
            self.scalar = ["string", False, 0, False, 0]
        elif ch == "{":
            self.stack.append([OBJECT, KEY_OR_END, 0])
        elif ch == "[":
            self.stack.append([ARRAY, VALUE_OR_END, 0])
        elif ch == "-" or ch.isdigit() and ch.isascii():
            self.scalar = ["number", ch]
        elif ch in LITERALS:
            self.scalar = ["literal", LITERALS[ch], 1]
        else:
            return False
        return True

    def _string(self, ch: str) -> bool:
        _, escaped, hex_left, is_key, length = self.scalar
        if ch != '"' or escaped or hex_left:
            if length >= self.max_string:
                return False  # only the closing quote may follow a string this long
            if not escaped and not hex_left:
                self.scalar[4] += 1
        if hex_left:
            if ch not in HEX:
                return False
            self.scalar[2] -= 1
            return True
        if escaped:
            if ch == "u":
                self.scalar[1], self.scalar[2] = False, 4
                return True
            if ch not in ESCAPES:
                return False
            self.scalar[1] = False
            return True
        if ch == "\\":
            self.scalar[1] = True
            return True
        if ch == '"':
            self.scalar = None
            if is_key:
                self.stack[-1][1] = COLON
            else:
                self._value_done()
            return True
        return ord(ch) >= 0x20  # control characters must be escaped

    def _literal(self, ch: str) -> bool:
        _, word, at = self.scalar
        if ch != word[at]:
            return False
        self.scalar[2] += 1
        if self.scalar[2] == len(word):
            self.scalar = None
            self._value_done()
        return True

    def _close(self) -> bool:
        self.stack.pop()
        self._value_done()
        return True

    def _value_done(self) -> None:
        if self.stack:
            self.stack[-1][1] = COMMA_OR_END
            self.stack[-1][2] += 1
        else:
            self.complete = True
