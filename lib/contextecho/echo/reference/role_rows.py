"""The harness's ``[role] text`` transcripts: the rows e18 and run_crosssession render, and
the positions each of them plans over its rows.

Two of the harness's runners do not use e08's ``extract_prefix_at_turn`` (:mod:`.transcript`):
each reads a session into its own list of ``{role, content}`` rows, plans positions as
indices into that list, and renders a prefix from it (``runs/README.md``, "Three different
renderers" and "Positions family"). These are the only position schemes of the harness
computed from the session itself.

* **e18** (``experiments/e18_session_validation/run.py``, the session-validation intake):
  rows (``load_transcript_lines``, ``:94-114``): the file is read as UTF-8 with undecodable
  bytes replaced, line by line; a blank line or one that is not JSON is skipped; a Codex CLI
  ``response_item`` whose payload is a ``message`` gives the payload's role and content; any
  other record's role is its ``message.role``, else its ``type`` (else its ``role``), and
  its content ``message.content`` (else ``content``); only ``user`` and ``assistant`` rows
  count. Content blocks render as :data:`E18_BLOCKS`: non-empty ``text``/``input_text``/
  ``output_text``, ``[tool_use NAME: JSON]`` (``json.dumps(..., ensure_ascii=False)``) and
  ``[tool_result: X]`` (a list's items' text joined by a space), payloads cut to 500
  characters, blank parts dropped, joined by newlines. A row is kept when its text is not
  blank, and stored stripped. Plan (``position_plan``, ``:117-124``, :func:`validation_plan`):
  ``N`` positions ``P00``, ``P01``, ... at rows ``round(i·(n−1)/(N−1))`` (Python's round,
  half to even), so ``P00`` is the first row and the last position the last row; fewer than
  two positions, or fewer rows than positions, raise :class:`ShortSession` (a
  ``ValueError``) with the harness's message.
* **run_crosssession** (``experiments/e15_probes_at_crosscompaction/run_crosssession.py``):
  rows (``:49-86``): UTF-8, records whose ``type`` is ``user`` or ``assistant`` and that hold
  a ``message`` object (so no Codex CLI record counts); no compaction handling. Blocks render
  as :data:`CROSSSESSION_BLOCKS`: non-empty ``text``, tool inputs as ASCII ``json.dumps``,
  a tool result list's items joined by a space, payloads cut to 200 characters, every part
  kept. Plan (``:116-121``, :func:`crosssession_plan`): 12 positions at rows
  ``min(n−1, i·max(1, n//12))``; a session of fewer than 12 rows is refused with the
  runner's message (the runner exits, ``sys.exit``; here :class:`ShortSession` is raised).
* **Prefix** (both runners' ``extract_prefix_at_line``, :func:`line_prefix`): rows 0..end
  as ``[role] content``, joined by a blank line, the last ``window`` characters kept.

A decoded line that is not a JSON object fails the harness's readers; here it is a
:class:`~contextecho.sessions.errors.SessionFormatError` naming the line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ...sessions.errors import SessionFormatError
from .transcript import BLOCK_JOINER, DEFAULT_WINDOW, BlockStyle, render_content

#: The reference position scheme of e18's plan (:mod:`.cells`).
VALIDATION = "validation"
#: e18's default number of positions, and ``--quick``'s.
VALIDATION_POSITIONS = 12
QUICK_POSITIONS = 3
#: The reference position scheme of run_crosssession's plan (:mod:`.cells`).
CROSSSESSION = "crosssession"
#: run_crosssession's fixed number of positions.
CROSSSESSION_POSITIONS = 12
ROLES = ("user", "assistant")

E18_BLOCKS = BlockStyle(text_types=("text", "input_text", "output_text"), keep_empty_text=False,
                        payload_chars=500, ensure_ascii=False, result_joiner=" ", str_results=True,
                        unnamed_tool="?", drop_blank_parts=True)
CROSSSESSION_BLOCKS = BlockStyle(keep_empty_text=False, result_joiner=" ", unnamed_tool="?")


@dataclass(frozen=True)
class RoleRow:
    """One row of a ``[role] text`` transcript."""

    role: str
    content: str

    def rendered(self) -> str:
        return f"[{self.role}] {self.content}"


class ShortSession(ValueError):
    """A session with too few rows for a plan (the message is the harness's)."""


def _records(path: str | Path, errors: str) -> Iterator[dict]:
    path = Path(path)
    try:
        with path.open(encoding="utf-8", errors=errors) as handle:
            for number, line in enumerate(handle, start=1):
                line = line.strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(record, dict):
                    raise SessionFormatError(path, number, "a line is JSON but not an object "
                                             "(the harness's reader fails on it)")
                yield record
    except FileNotFoundError:
        raise SessionFormatError(path, 0, "file not found") from None
    except UnicodeDecodeError as exc:
        raise SessionFormatError(path, 0, f"not UTF-8 text: {exc.reason}") from None


def _role_and_content(record: dict) -> tuple[object, object]:
    """e18's role and content of a record (module doc)."""
    payload = record.get("payload")
    if record.get("type") == "response_item" and isinstance(payload, dict):
        return (payload.get("role"), payload.get("content")) if payload.get("type") == "message" else (None, None)
    role = record.get("type") or record.get("role")
    content = record.get("content")
    message = record.get("message")
    if isinstance(message, dict):
        role = message.get("role") or role
        content = message.get("content", content)
    return role, content


def e18_rows(path: str | Path) -> list[RoleRow]:
    """e18's rows of a Claude Code or Codex CLI session (module doc)."""
    rows = []
    for record in _records(path, errors="replace"):
        role, content = _role_and_content(record)
        if role not in ROLES:
            continue
        text = render_content(content, E18_BLOCKS)
        if text.strip():
            rows.append(RoleRow(str(role), text.strip()))
    return rows


def crosssession_rows(path: str | Path) -> list[RoleRow]:
    """run_crosssession's rows of a Claude Code session (module doc)."""
    rows = []
    for record in _records(path, errors="strict"):
        role, message = record.get("type"), record.get("message")
        if role not in ROLES or not isinstance(message, dict):
            continue
        text = render_content(message.get("content"), CROSSSESSION_BLOCKS)
        if text.strip():
            rows.append(RoleRow(role, text.strip()))
    return rows


def line_prefix(rows: list[RoleRow], end_line: int, window: int = DEFAULT_WINDOW) -> str:
    """The prefix through row ``end_line`` (inclusive), its last ``window`` characters."""
    full = BLOCK_JOINER.join(row.rendered() for row in rows[:end_line + 1])
    return full[-window:] if len(full) > window else full


def position_label(i: int) -> str:
    return f"P{i:02d}"


def validation_plan(n_rows: int, n_positions: int = VALIDATION_POSITIONS) -> tuple[tuple[str, int], ...]:
    """e18's ``(label, row)`` positions (module doc)."""
    if n_positions < 2:
        raise ShortSession("--positions must be at least 2")
    if n_rows < n_positions:
        raise ShortSession(f"session has only {n_rows} usable turns; need {n_positions}")
    return tuple((position_label(i), int(round(i * (n_rows - 1) / (n_positions - 1))))
                 for i in range(n_positions))


def crosssession_step(n_rows: int) -> int:
    return max(1, n_rows // CROSSSESSION_POSITIONS)


def crosssession_plan(n_rows: int) -> tuple[tuple[str, int], ...]:
    """run_crosssession's ``(label, row)`` positions (module doc)."""
    if n_rows < CROSSSESSION_POSITIONS:
        raise ShortSession(f"Session has only {n_rows} turns, need at least {CROSSSESSION_POSITIONS}")
    step = crosssession_step(n_rows)
    return tuple((position_label(i), min(n_rows - 1, i * step)) for i in range(CROSSSESSION_POSITIONS))


@dataclass(frozen=True)
class Snapshot:
    """One planned position of a session and the prefix rendered there."""

    label: str
    row: int
    text: str


#: The ``[role] text`` schemes: each plans over its own rows and renders them its own way.
ROW_SCHEMES = (VALIDATION, CROSSSESSION)


def scheme_rows(scheme: str, path: str | Path) -> list[RoleRow] | None:
    """The rows the ``[role] text`` scheme ``scheme`` plans over and renders (e18's for
    ``validation``, run_crosssession's for ``crosssession``); None for any other scheme."""
    reader = dict(zip(ROW_SCHEMES, (e18_rows, crosssession_rows))).get(scheme)
    return reader(path) if reader else None


def scheme_plan(scheme: str, n_rows: int, n_positions: int = 0) -> tuple[tuple[str, int], ...]:
    """The ``(label, row)`` positions of ``scheme`` over ``n_rows`` rows (``n_positions``:
    e18's count, 0 for its default; run_crosssession's is fixed)."""
    if scheme == CROSSSESSION:
        return crosssession_plan(n_rows)
    return validation_plan(n_rows, n_positions or VALIDATION_POSITIONS)


def validation_snapshots(path: str | Path, n_positions: int = VALIDATION_POSITIONS,
                         window: int = DEFAULT_WINDOW) -> tuple[Snapshot, ...]:
    """e18's positions of the session at ``path`` and its prefix at each (``ShortSession``
    when the session has fewer rows than positions)."""
    rows = e18_rows(path)
    return tuple(Snapshot(label, row, line_prefix(rows, row, window))
                 for label, row in validation_plan(len(rows), n_positions))
