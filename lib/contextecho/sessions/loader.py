"""``load_session(path)``: read, detect, parse; subagent files come along."""
from __future__ import annotations

import gc
from pathlib import Path

from .claude_code import parse_claude_code
from .codex_cli import parse_codex_cli
from .detect import detect_format, gemini_cli_reason, looks_like_gemini_cli
from .errors import SessionFormatError
from .jsonl import NotJSONL, read_jsonl
from .model import CLAUDE_CODE, Session


def subagent_files(path: Path) -> list[Path]:
    """Claude Code keeps a session's subagents in ``<session>/subagents/*.jsonl``."""
    folder = path.with_suffix("") / "subagents"
    try:
        return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    except OSError:  # an unreadable folder: the main transcript is still read
        return []


def load_session(path: str | Path, *, strict: bool = False, with_subagents: bool = True) -> Session:
    """Parse one transcript file.

    Unusable lines are skipped and listed in ``session.report.skipped`` (file and line
    numbers); with ``strict=True`` the first one raises :class:`SessionFormatError`
    instead, so nothing partially parsed is passed on. A subagent file that cannot be
    read is named in ``session.report.notes``; the main transcript is still returned.
    """
    path = Path(path)
    # The parser holds every decoded record until the session is built; the cyclic
    # garbage collector would rescan that growing graph again and again (nothing here
    # makes cycles), so it is paused for the duration — about a third of the time.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(path, strict, with_subagents)
    finally:
        if was_enabled:
            gc.enable()


def _load(path: Path, strict: bool, with_subagents: bool) -> Session:
    try:
        raw = read_jsonl(path)
    except NotJSONL as exc:
        if looks_like_gemini_cli(exc.document):
            raise SessionFormatError(path, 0, gemini_cli_reason("one JSON document")) from None
        raise
    fmt = detect_format(raw)
    if fmt == CLAUDE_CODE:
        subs, notes = [], []
        for sub in subagent_files(path) if with_subagents else ():
            try:
                subs.append(_load(sub, strict, False))
            except SessionFormatError as exc:
                notes.append(f"subagent file not read: {exc}")
        session = parse_claude_code(raw, subagent_files=tuple(subs), notes=tuple(notes))
    else:
        session = parse_codex_cli(raw)
    if not session.report.n_records:
        first = session.report.skipped[0]
        raise SessionFormatError(path, first.line, f"no usable record: all {session.report.n_skipped} "
                                 f"were skipped (line {first.line}: {first.reason})")
    if strict and session.report.skipped:
        first = session.report.skipped[0]
        raise SessionFormatError(path, first.line, f"{first.reason} "
                                 f"({session.report.n_skipped} unusable line(s) in total; strict mode)")
    return session
