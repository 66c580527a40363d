"""Which harness wrote a transcript: look at its first records."""
from __future__ import annotations

from .claude_code import looks_like_claude_code
from .codex_cli import looks_like_codex
from .errors import SessionFormatError
from .jsonl import RawFile
from .model import CLAUDE_CODE, CODEX_CLI

_SNIFF_RECORDS = 50


def detect_format(raw: RawFile) -> str:
    """``"claude_code"`` or ``"codex_cli"``; :class:`SessionFormatError` for anything else."""
    for _, record in raw.records[:_SNIFF_RECORDS]:
        if looks_like_codex(record):
            return CODEX_CLI
        if looks_like_claude_code(record):
            return CLAUDE_CODE
    no, first = raw.records[0]
    keys = ", ".join(sorted(first)[:8])
    raise SessionFormatError(raw.path, no, "not a Claude Code or Codex CLI transcript "
                             f"(no known record type in the first {_SNIFF_RECORDS} records; "
                             f"first record's keys: {keys})")
