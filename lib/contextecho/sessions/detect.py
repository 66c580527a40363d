"""Which harness wrote a transcript: look at its first records.

Claude Code and Codex CLI transcripts are read. A Gemini CLI session (one JSON document
with ``sessionId``, ``projectHash`` and ``messages`` whose ``type`` is ``user`` or
``gemini``) is recognised by name, and refused with that name, not read.
"""
from __future__ import annotations

from .claude_code import looks_like_claude_code
from .codex_cli import looks_like_codex
from .errors import SessionFormatError
from .jsonl import RawFile
from .model import CLAUDE_CODE, CODEX_CLI

_SNIFF_RECORDS = 50
GEMINI_CLI_MESSAGE_TYPES = frozenset({"user", "gemini"})


def looks_like_gemini_cli(document) -> bool:
    """A Gemini CLI chat session: ``{"sessionId", "projectHash", "messages": [...]}``."""
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        return False
    if not (isinstance(document.get("sessionId"), str) and isinstance(document.get("projectHash"), str)):
        return False
    types = {m.get("type") for m in document["messages"] if isinstance(m, dict)}
    return not document["messages"] or bool(types & GEMINI_CLI_MESSAGE_TYPES)


def gemini_cli_reason(how: str) -> str:
    return (f"a Gemini CLI session ({how}), not a Claude Code or Codex CLI transcript; "
            "Gemini CLI sessions are not read")


def detect_format(raw: RawFile) -> str:
    """``"claude_code"`` or ``"codex_cli"``; :class:`SessionFormatError` for anything else."""
    for _, record in raw.records[:_SNIFF_RECORDS]:
        if looks_like_codex(record):
            return CODEX_CLI
        if looks_like_claude_code(record):
            return CLAUDE_CODE
    no, first = raw.records[0]
    if looks_like_gemini_cli(first):
        raise SessionFormatError(raw.path, no, gemini_cli_reason("one JSON document on one line"))
    keys = ", ".join(sorted(first)[:8])
    raise SessionFormatError(raw.path, no, "not a Claude Code or Codex CLI transcript "
                             f"(no known record type in the first {_SNIFF_RECORDS} records; "
                             f"first record's keys: {keys})")
