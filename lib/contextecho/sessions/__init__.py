"""Real Claude Code and Codex CLI transcripts in; snapshots at agent step t out.

    from contextecho.sessions import load_session, positions, snapshot_at, render_prefix
    s = load_session("data/corpus/entire/43/2b48f6b6e6/0/full.jsonl")
    for pos in positions(s, "compaction"):
        prefix = render_prefix(snapshot_at(s, pos.step))   # redacted, 30,000-char window
        prefix.messages, prefix.turns, prefix.n_chars
"""
from .errors import RedactionLeak, SessionError, SessionFormatError, StepOutOfRange
from .loader import load_session
from .model import Compaction, Entry, Microcompaction, ParseReport, Session, SessionCounts, Skip
from .positions import SCHEMES, Position, positions
from .redaction import RedactionReport, Redactor, redact
from .render import DEFAULT_WINDOW, Prefix, PrefixTurn, render_prefix
from .snapshot import Snapshot, snapshot_at

__all__ = [
    "load_session", "snapshot_at", "positions", "render_prefix", "redact",
    "Session", "Entry", "Compaction", "Microcompaction", "SessionCounts", "ParseReport", "Skip", "Snapshot", "Position",
    "Prefix", "PrefixTurn", "Redactor", "RedactionReport", "SCHEMES", "DEFAULT_WINDOW",
    "SessionError", "SessionFormatError", "StepOutOfRange", "RedactionLeak",
]
