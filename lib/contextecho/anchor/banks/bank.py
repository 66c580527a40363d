"""An externally authored ANCHOR bank, loaded and validated.

A bank directory holds ANCHOR's released layout:

- ``persona_card.json``: the assistant persona shown to the evaluated model (read with
  :func:`contextecho.anchor.persona.load_card`);
- ``transcript.jsonl``: one turn a line, ``{"session_id": int, "turn": int, "role":
  "user"|"assistant", "content": str}``; a session is one conversation of a long
  relationship, and the transcript is ordered by (session_id, turn) whatever the file order;
- ``items.jsonl``: one four-option question a line, each with the session it is asked
  after (read by :mod:`.bank_items`, which lists the aliases accepted).

Anything else is rejected with a :class:`BankError` naming the file and the 1-based line
(:mod:`.bank_jsonl`).
``user_profile.json`` (and ``scoring_results/``) are the simulator's and the author's
business: they are never opened, so nothing in them can reach a model. The sha256 of
each file read is kept, so a run names the exact bytes it scored.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from .items import BankItem, read_items
from .jsonl import BankError, jsonl_rows, required_field
# Item parsing moved to .bank_items; importable from here as before.
from .items import ANSWER_KEYS  # noqa: F401
from ..persona import PersonaCard, PersonaCardError, load_card

FILES = ("persona_card.json", "transcript.jsonl", "items.jsonl")
ROLES = ("user", "assistant")


@dataclass(frozen=True)
class Turn:
    session_id: int
    turn: int
    role: str  # "user" or "assistant"
    content: str


@dataclass(frozen=True)
class Bank:
    bank_id: str  # the directory's name
    path: Path
    card: PersonaCard
    turns: tuple[Turn, ...]  # sorted by (session_id, turn)
    items: tuple[BankItem, ...]  # file order
    file_sha256: dict[str, str]  # file name -> sha256 of its bytes

    @property
    def session_ids(self) -> tuple[int, ...]:
        return tuple(sorted({t.session_id for t in self.turns}))


def _turns(path: Path, data: bytes) -> tuple[Turn, ...]:
    turns, seen = [], {}
    for where, row in jsonl_rows(path, data):
        turn = Turn(required_field(row, "session_id", where, int), required_field(row, "turn", where, int),
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
