"""The questions of an ANCHOR bank (``items.jsonl``), read and validated.

One four-option question a line, ``{"item_id", "family", "stem", "options": [4 strings],
"correct_index": int, "source": {"session_id": int}}``. Unambiguous aliases are accepted:
``question`` for ``stem``; ``answer``, ``answer_index`` or ``gold`` for ``correct_index``,
as an index or a letter A-D. Anything else is a :class:`.bank_jsonl.BankError` naming the
line.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .jsonl import BankError, jsonl_rows, required_field
from ..recall.items import LETTERS, N_OPTIONS

ANSWER_KEYS = ("correct_index", "answer", "answer_index", "gold")


@dataclass(frozen=True)
class BankItem:
    item_id: str
    family: str  # ANCHOR's family code, e.g. "U-EVO"
    stem: str
    options: tuple[str, ...]  # exactly four, distinct
    answer: int  # index of the correct option
    source_session: int  # the question is asked at the end of this session

    @property
    def letter(self) -> str:
        return LETTERS[self.answer]

    @property
    def question(self) -> str:
        """The stem under the name :func:`contextecho.anchor.recall.items.prompt_text` reads, so a
        bank item is asked in exactly the layout of our own recall items."""
        return self.stem


def _one_of(row: dict, keys: tuple[str, ...], where: str, read) -> Any:
    """The value under the one key of ``keys`` given (or several that agree once read)."""
    given = {k: read(row, k, where) for k in keys if k in row}
    if not given:
        raise BankError(f"{where}: missing {keys[0]!r} (or one of {', '.join(keys[1:])})")
    if len(set(given.values())) > 1:
        raise BankError(f"{where}: {', '.join(given)} disagree: {given}")
    return next(iter(given.values()))


def _answer(row: dict, key: str, where: str) -> int:
    value = row[key]
    if isinstance(value, str) and value.strip().upper() in LETTERS:
        return LETTERS.index(value.strip().upper())
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < N_OPTIONS:
        return value
    raise BankError(f"{where}: {key!r} must be an index 0-{N_OPTIONS - 1} or a letter "
                    f"{LETTERS[0]}-{LETTERS[-1]}, got {value!r}")


def _item(where: str, row: dict, sessions: set[int]) -> BankItem:
    item_id = row.get("item_id")
    if not isinstance(item_id, (str, int)) or isinstance(item_id, bool) or not str(item_id).strip():
        raise BankError(f"{where}: 'item_id' must be a non-empty string, got {item_id!r}")
    options = row.get("options")
    if not isinstance(options, list) or len(options) != N_OPTIONS or \
            not all(isinstance(o, str) and o.strip() for o in options):
        raise BankError(f"{where}: 'options' must be {N_OPTIONS} non-empty strings, got {options!r}")
    if len(set(options)) != N_OPTIONS:
        raise BankError(f"{where}: 'options' repeat an option, so the answer is ambiguous")
    source = row.get("source")
    if not isinstance(source, dict):
        raise BankError(f"{where}: 'source' must be an object with a session_id, got {source!r}")
    session = required_field(source, "session_id", f"{where}: source", int)
    if session not in sessions:
        raise BankError(f"{where}: source session {session} is not in the transcript")
    return BankItem(item_id=str(item_id), family=required_field(row, "family", where),
                    stem=_one_of(row, ("stem", "question"), where, required_field), options=tuple(options),
                    answer=_one_of(row, ANSWER_KEYS, where, _answer), source_session=session)


def read_items(path: Path, data: bytes, sessions: set[int]) -> tuple[BankItem, ...]:
    """The items of ``items.jsonl`` (its bytes ``data``), in file order; every source session
    must be one of ``sessions``."""
    items, seen = [], {}
    for where, row in jsonl_rows(path, data):
        item = _item(where, row, sessions)
        if item.item_id in seen:
            raise BankError(f"{where}: duplicate item_id {item.item_id!r} (first at {seen[item.item_id]})")
        seen[item.item_id] = where
        items.append(item)
    if not items:
        raise BankError(f"{path}: no items")
    return tuple(items)
