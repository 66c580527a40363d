"""The reference harness's view of a Claude Code session: rows, turns, and the prefix.

Rules (``PROTOCOL.md`` §1-2, harness ``experiments/e08_cross_compaction/run.py``):

* **Rows**: the file is read as text (UTF-8, universal newlines) line by line; each
  line is JSON-decoded, and a line that does not decode is kept as ``None`` so that
  list index = line index (0-based). A decoded value that is not a JSON object is
  treated like an undecodable line (the harness would fail on it).
* **Turns**: a row counts when its ``type`` is ``assistant`` (always), or ``user`` with
  string content non-blank after stripping, or ``user`` with list content holding a
  non-blank ``text`` block and no ``tool_result`` block. Turns are numbered 1, 2, ... in
  file order; the index maps turn -> row, plus ``0 -> 0``.
* **Resolution**: turn *t* maps to its row, else to the row of the largest indexed
  turn <= *t*; no such turn (negative *t*) gives the empty prefix.
* **Compaction**: scanning back from the end row (inclusive) the nearest
  ``system``/``compact_boundary`` row *b* counts, and its summary is the first of rows
  *b*+1..*b*+4 of type ``user`` with string content containing ``summary``
  (case-insensitive). ``isCompactSummary`` is not consulted.
* **Rendering**: an optional ``--- COMPACTION SUMMARY (resumed session) ---`` block,
  then every ``user``/``assistant`` row from *b*+2 (or row 0) through the end row as
  ``--- USER ---``/``--- ASSISTANT ---`` + newline + text; list content renders text
  blocks, ``[tool_use NAME: JSON]`` and ``[tool_result: X]`` (each payload cut to 200
  characters), joined by newlines; blank renderings are dropped; blocks are joined by
  a blank line and only the last ``window`` characters are kept.

A run under the reference protocol reads each session once, in this module's reader
(:func:`read_session`: the rows, the format and the session's id, :class:`HarnessSession`);
our parser (:mod:`contextecho.sessions`) never reads it. The harness's other two renderers
(e18, run_crosssession) write content blocks their own way (:class:`BlockStyle`; :mod:`.role_rows`). Microcompactions and our own snapshot rules
play no part here: this is the reference's rendering, kept separate from
:mod:`contextecho.sessions` on purpose.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ...sessions.claude_code import own_session_id
from ...sessions.detect import detect_format
from ...sessions.errors import SessionFormatError
from ...sessions.jsonl import RawFile
from ...sessions.model import CLAUDE_CODE

SUMMARY_HEADER = "--- COMPACTION SUMMARY (resumed session) ---"
BLOCK_JOINER = "\n\n"
PART_JOINER = "\n"
PAYLOAD_CHARS = 200
SUMMARY_LOOKAHEAD = 4
#: The window every reference probe and stressor runner uses.
DEFAULT_WINDOW = 30_000

Row = dict | None


def read_rows(path: str | Path) -> list[Row]:
    """One entry per line of ``path``: the decoded object, or ``None``."""
    path = Path(path)
    rows: list[Row] = []
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    value = json.loads(line)
                except json.JSONDecodeError:
                    value = None
                rows.append(value if isinstance(value, dict) else None)
    except FileNotFoundError:
        raise SessionFormatError(path, 0, "file not found") from None
    except UnicodeDecodeError as exc:
        raise SessionFormatError(path, 0, f"not UTF-8 text: {exc.reason}") from None
    return rows


@dataclass(frozen=True)
class HarnessSession:
    """A session as the reference protocol reads it, once: one decoded row per line of the
    file (:func:`read_rows`), its format and its id. The harness's renderers and position
    schemes work on :attr:`rows`; nothing reads the file again."""

    path: Path
    format: str
    session_id: str
    rows: tuple[Row, ...] = field(repr=False)


def read_session(path: str | Path) -> HarnessSession:
    """Read ``path`` the harness's way (:func:`read_rows`) and name it: its format (Claude
    Code or Codex CLI, told by the records as our reader tells them) and its id (a Claude
    Code session's own ``sessionId``; a Codex CLI session's ``session_meta`` id; else the
    file's stem). A file with no JSON record is a :class:`SessionFormatError`."""
    path = Path(path)
    rows = read_rows(path)
    records = [(no, row) for no, row in enumerate(rows, 1) if row is not None]
    if not records:
        raise SessionFormatError(path, 0, "no JSON record in the file")
    fmt = detect_format(RawFile(path, records, [], len(rows), 0))
    if fmt == CLAUDE_CODE:
        session_id = own_session_id(records)[0]
    else:
        session_id = next((r["payload"].get("id") for _, r in records if r.get("type") == "session_meta"
                           and isinstance(r.get("payload"), dict) and isinstance(r["payload"].get("id"), str)), None)
    return HarnessSession(path, fmt, session_id or path.stem, tuple(rows))


def _content(row: dict):
    return (row.get("message") or {}).get("content")


def is_turn(row: Row) -> bool:
    """Whether the harness counts ``row`` as a turn."""
    if not row:
        return False
    kind = row.get("type")
    if kind == "assistant":
        return True
    if kind != "user":
        return False
    content = _content(row)
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        blocks = [c for c in content if isinstance(c, dict)]
        has_text = any(c.get("type") == "text" and c.get("text", "").strip() for c in blocks)
        has_result = any(c.get("type") == "tool_result" for c in blocks)
        return has_text and not has_result
    return False


def turn_index(rows: list[Row]) -> dict[int, int]:
    """Turn number -> row index, with the sentinel ``0 -> 0``."""
    index = {0: 0}
    turn = 0
    for line, row in enumerate(rows):
        if is_turn(row):
            turn += 1
            index[turn] = line
    return index


def resolve_turn(index: dict[int, int], target_turn: int) -> int | None:
    """The indexed turn that ``target_turn`` stands for (``None``: no prefix)."""
    if target_turn in index:
        return target_turn
    below = [t for t in index if t <= target_turn]
    return max(below) if below else None


@dataclass(frozen=True)
class Compaction:
    boundary_line: int
    summary_line: int | None
    summary: str | None


def last_compaction(rows: list[Row], end_line: int) -> Compaction | None:
    """The nearest ``compact_boundary`` at or before ``end_line`` and its summary."""
    for i in range(min(end_line, len(rows) - 1), -1, -1):
        row = rows[i]
        if row and row.get("type") == "system" and row.get("subtype") == "compact_boundary":
            for j in range(i + 1, min(i + 1 + SUMMARY_LOOKAHEAD, len(rows))):
                nxt = rows[j]
                if nxt and nxt.get("type") == "user":
                    content = _content(nxt)
                    if isinstance(content, str) and "summary" in content.lower():
                        return Compaction(i, j, content)
            return Compaction(i, None, None)
    return None


@dataclass(frozen=True)
class BlockStyle:
    """How one of the harness's renderers writes a record's content blocks (``runs/README.md``,
    "Three different renderers"): which block types are text, whether an empty text block
    still counts, the payload cut, how ``json.dumps`` writes a tool input, what joins a
    tool result's list items (and whether each is ``str()``-ed), the name of a tool without
    one, and whether blank parts are dropped before the parts are joined by newlines."""

    text_types: tuple[str, ...] = ("text",)
    keep_empty_text: bool = True
    payload_chars: int | None = None  # None: e08's :data:`PAYLOAD_CHARS`, read when rendering
    ensure_ascii: bool = True
    result_joiner: str = ""
    str_results: bool = False
    unnamed_tool: str | None = None
    drop_blank_parts: bool = False


#: e08's ``extract_prefix_at_turn`` (the module doc's rendering).
E08_BLOCKS = BlockStyle()


def render_content(content, style: BlockStyle = E08_BLOCKS) -> str:
    """The text of one record's ``message.content`` as the harness renders it (``style``:
    which of its renderers; e08's by default)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    cut = PAYLOAD_CHARS if style.payload_chars is None else style.payload_chars
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in style.text_types:
            text = block.get("text", "")
            if style.keep_empty_text:
                parts.append(text)
            elif text:
                parts.append(str(text))
        elif kind == "tool_use":
            payload = json.dumps(block.get("input", {}), ensure_ascii=style.ensure_ascii)[:cut]
            parts.append(f"[tool_use {block.get('name', style.unnamed_tool)}: {payload}]")
        elif kind == "tool_result":
            result = block.get("content", "")
            if isinstance(result, list):
                result = style.result_joiner.join(str(x.get("text", "")) if style.str_results else x.get("text", "")
                                                  for x in result if isinstance(x, dict))
            parts.append(f"[tool_result: {str(result)[:cut]}]")
    if style.drop_blank_parts:
        parts = [part for part in parts if part.strip()]
    return PART_JOINER.join(parts)


@dataclass(frozen=True)
class ReferencePrefix:
    """The rendered prefix and where it came from (row indices are 0-based lines)."""

    text: str
    target_turn: int
    resolved_turn: int | None
    end_line: int | None
    compaction: Compaction | None
    n_turns: int
    window: int

    @property
    def n_chars(self) -> int:
        return len(self.text)


def render_prefix(rows: list[Row], index: dict[int, int], target_turn: int,
                  window: int = DEFAULT_WINDOW) -> ReferencePrefix:
    """The harness's prefix at ``target_turn`` (``extract_prefix_at_turn``)."""
    n_turns = max(index)
    resolved = resolve_turn(index, target_turn)
    if resolved is None:
        return ReferencePrefix("", target_turn, None, None, None, n_turns, window)
    end_line = index[resolved]
    compaction = last_compaction(rows, end_line)
    full = joined(_blocks(rows, end_line, compaction), window)
    return ReferencePrefix(full, target_turn, resolved, end_line, compaction, n_turns, window)


@dataclass(frozen=True)
class Block:
    """One block of a rendered prefix: whose it is (``USER``, ``ASSISTANT``, or ``SUMMARY`` for
    the compaction summary) and its text, header included."""

    role: str
    text: str


def _blocks(rows: list[Row], end_line: int, compaction: Compaction | None) -> list[Block]:
    blocks: list[Block] = []
    if compaction is not None and compaction.summary:
        blocks.append(Block("SUMMARY", f"{SUMMARY_HEADER}\n{compaction.summary}"))
    start = compaction.boundary_line + 2 if compaction is not None else 0
    for row in rows[start:end_line + 1]:
        if not row or row.get("type") not in ("user", "assistant"):
            continue
        text = render_content(_content(row))
        if not text.strip():
            continue
        role = "USER" if row.get("type") == "user" else "ASSISTANT"
        blocks.append(Block(role, f"--- {role} ---\n{text}"))
    return blocks


def prefix_blocks(rows: list[Row], index: dict[int, int], target_turn: int) -> tuple[Block, ...]:
    """The blocks :func:`render_prefix` joins at ``target_turn``, in order, before the window
    (none where the turn resolves to no prefix)."""
    resolved = resolve_turn(index, target_turn)
    if resolved is None:
        return ()
    end_line = index[resolved]
    return tuple(_blocks(rows, end_line, last_compaction(rows, end_line)))


def joined(blocks: Sequence[Block], window: int) -> str:
    """``blocks`` joined by a blank line, only the last ``window`` characters kept."""
    full = BLOCK_JOINER.join(b.text for b in blocks)
    return full[-window:] if len(full) > window else full


def session_prefix(path: str | Path, target_turn: int,
                   window: int = DEFAULT_WINDOW) -> ReferencePrefix:
    """Read ``path`` and render its prefix at ``target_turn``."""
    rows = read_rows(path)
    return render_prefix(rows, turn_index(rows), target_turn, window)
