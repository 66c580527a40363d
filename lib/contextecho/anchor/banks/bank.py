"""An externally authored ANCHOR bank, loaded and validated.

A bank directory holds ANCHOR's released layout:

- ``persona_card.json``: the assistant persona shown to the evaluated model (read with
  :func:`contextecho.anchor.persona.load_card`);
- ``transcript.jsonl``: one turn a line, ``{"session_id": int, "turn": int, "role":
  "user"|"assistant", "content": str}``; a session is one conversation of a long
  relationship, and the transcript is ordered by (session_id, turn) whatever the file order;
- ``items.jsonl``: one four-option question a line, ``{"item_id", "family", "stem",
  "options": [4 strings], "correct_index": int, "source": {"session_id": int}}``, each
  asked after its source session. Unambiguous aliases are accepted: ``question`` for
  ``stem``; ``answer``, ``answer_index`` or ``gold`` for ``correct_index``, as an index or
  a letter A-D.

Anything else is rejected with a :class:`BankError` naming the file and the 1-based line
(``transcript.jsonl:3: not JSON``).
``user_profile.json`` (and ``scoring_results/``) are the simulator's and the author's
business: they are never opened, so nothing in them can reach a model. The sha256 of
each file read is kept, so a run names the exact bytes it scored.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..persona import PersonaCard, PersonaCardError, load_card
from ..recall.items import LETTERS, N_OPTIONS
from ...engine.usage import UsageError

FILES = ("persona_card.json", "transcript.jsonl", "items.jsonl")
ROLES = ("user", "assistant")


class BankError(UsageError, ValueError):
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


@dataclass(frozen=True)
class BankTurn:
    session_id: int
    turn: int
    role: str  # "user" or "assistant"
    content: str


@dataclass(frozen=True)
class Bank:
    bank_id: str  # the directory's name
    path: Path
    card: PersonaCard
    turns: tuple[BankTurn, ...]  # sorted by (session_id, turn)
    items: tuple[BankItem, ...]  # file order
    file_sha256: dict[str, str]  # file name -> sha256 of its bytes

    @property
    def session_ids(self) -> tuple[int, ...]:
        return tuple(sorted({t.session_id for t in self.turns}))


def _turns(path: Path, data: bytes) -> tuple[BankTurn, ...]:
    turns, seen = [], {}
    for where, row in jsonl_rows(path, data):
        turn = BankTurn(required_field(row, "session_id", where, int), required_field(row, "turn", where, int),
                    row.get("role"), row.get("content"))
        if turn.role not in ROLES:
            raise BankError(f"{where}: role must be one of {ROLES}, got {turn.role!r}")
        if not isinstance(turn.content, str):
            raise BankError(f"{where}: 'content' must be a string, got {turn.content!r}")
        key = (turn.session_id, turn.turn)
        if key in seen:
            raise BankError(f"{where}: session {key[0]} turn {key[1]} already given at {seen[key]}")
        seen[key] = where
        turns.append(turn)
    if not turns:
        raise BankError(f"{path}: no turns")
    return tuple(sorted(turns, key=lambda t: (t.session_id, t.turn)))


def load_bank(path: str | Path) -> Bank:
    """Read and validate one bank directory; the first problem raises :class:`BankError`."""
    path = Path(path)
    missing = [name for name in FILES if not (path / name).is_file()]
    if missing:
        raise BankError(f"{path}: not an ANCHOR bank, missing {', '.join(missing)}")
    data = {name: (path / name).read_bytes() for name in FILES}
    try:
        card = load_card(path / "persona_card.json")
    except PersonaCardError as exc:
        raise BankError(str(exc)) from None
    turns = _turns(path / "transcript.jsonl", data["transcript.jsonl"])
    items = read_items(path / "items.jsonl", data["items.jsonl"], {t.session_id for t in turns})
    return Bank(bank_id=path.resolve().name, path=path, card=card, turns=turns, items=items,
                file_sha256={name: hashlib.sha256(raw).hexdigest() for name, raw in data.items()})


def bank_dirs(path: str | Path) -> list[Path]:
    """The banks under ``path``: a bank itself, ANCHOR's release root (``data/examples/*``),
    or a folder of banks; anything else raises :class:`BankError`."""
    path = Path(path)
    if not path.is_dir():
        raise BankError(f"{path}: no such directory")
    if any((path / name).exists() for name in FILES):
        return [path]  # a bank (load_bank names any missing file)
    for folder in (path / "data" / "examples", path):
        found = sorted(p for p in folder.iterdir() if (p / "items.jsonl").is_file()) \
            if folder.is_dir() else []
        if found:
            return found
    raise BankError(f"{path}: neither a bank ({', '.join(FILES)}) nor a folder of banks "
                    "(such as ANCHOR's release root with data/examples/<bank>/)")
