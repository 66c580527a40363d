"""Reading a bank's JSONL files line by line, every problem a :class:`BankError` that
names the file and the 1-based line (``transcript.jsonl:3: not JSON``)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator


class BankError(ValueError):
    """A bank that cannot be scored; the message names the file (and line) at fault."""


def jsonl_rows(path: Path, data: bytes) -> Iterator[tuple[str, dict]]:
    """(``file:line`` , object) for each non-blank line of a JSONL file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BankError(f"{path}: not UTF-8 text: {exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{number}"
        if not line.strip():
            continue  # a trailing blank line is common and carries nothing
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BankError(f"{where}: not JSON: {exc.msg}") from None
        if not isinstance(row, dict):
            raise BankError(f"{where}: expected a JSON object, got {type(row).__name__}")
        yield where, row


def required_field(row: dict, key: str, where: str, kind: type = str) -> Any:
    """``row[key]``: a ``kind`` (a non-blank one for a string), else a :class:`BankError`."""
    value = row.get(key)
    # bool is an int to Python, never a session or turn number to a bank.
    if not isinstance(value, kind) or isinstance(value, bool) or (kind is str and not value.strip()):
        raise BankError(f"{where}: {key!r} must be a non-empty {kind.__name__}, got {value!r}")
    return value
