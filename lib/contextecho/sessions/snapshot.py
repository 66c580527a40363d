"""``snapshot_at(session, t)``: the main agent's context at agent step *t*.

The snapshot holds every timeline entry up to and including step *t* (the action the
agent took at step *t*), minus what a compaction discarded: when a compaction happened
before step *t*, the context starts at that compaction's summary, followed by what came
after it — exactly what the model was conditioned on when the session was forked.
(The harness's own system prompt is not in transcripts; the rendering step takes a
preamble for it.)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import StepOutOfRange
from .model import COMPACTION_SUMMARY, Entry, Session


@dataclass(frozen=True)
class Snapshot:
    session_id: str
    path: Path
    format: str
    step: int  # 1-based agent step the context ends at
    entries: tuple[Entry, ...]
    n_compactions_before: int  # compactions that happened before this step
    n_steps_total: int  # agent steps in the whole session

    @property
    def after_compaction(self) -> bool:
        """True when the context starts with a compaction summary."""
        return bool(self.entries) and self.entries[0].kind == COMPACTION_SUMMARY

    def __repr__(self) -> str:
        return (f"Snapshot({self.path.name!r}, step={self.step}/{self.n_steps_total}, "
                f"entries={len(self.entries)}, compactions_before={self.n_compactions_before})")


def snapshot_at(session: Session, t: int) -> Snapshot:
    """The context at agent step ``t`` (1-based); :class:`StepOutOfRange` outside 1..n."""
    n = session.n_agent_steps
    if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= n:
        raise StepOutOfRange(session.path, t, n)
    end = session.step_index[t - 1]
    before = [c for c in session.compactions if c.entry_index < end]
    start = before[-1].entry_index if before else 0
    return Snapshot(session_id=session.session_id, path=session.path, format=session.format,
                    step=t, entries=session.entries[start:end + 1],
                    n_compactions_before=len(before), n_steps_total=n)
