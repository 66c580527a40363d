"""``snapshot_at(session, t)``: the main agent's context at agent step *t*.

The snapshot holds every timeline entry up to and including step *t* (the action the
agent took at step *t*), minus what the harness discarded before it:

- a compaction before step *t*: the context starts at that compaction's summary,
  followed by what came after it;
- a microcompaction before step *t* (Claude Code 2.1.x ``microcompact_boundary``): the
  tool results it lists are left out (the transcripts record no placeholder text for
  them), and ``n_results_microcompacted`` says how many were.

That is exactly what the model was conditioned on when the session was forked. The
harness's own system prompt is not in transcripts; the rendering step takes a preamble
for it. ``microcompactions=False`` keeps the dropped results, as a protocol that ignores
microcompactions (the authors' reference harness) renders them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import StepOutOfRange
from .model import COMPACTION_SUMMARY, TOOL_RESULT, Entry, Session


@dataclass(frozen=True)
class Snapshot:
    session_id: str
    path: Path
    format: str
    step: int  # 1-based agent step the context ends at
    entries: tuple[Entry, ...]
    n_compactions_before: int  # compactions that happened before this step
    n_steps_total: int  # agent steps in the whole session
    n_microcompactions_before: int = 0  # microcompactions that happened before this step
    n_results_microcompacted: int = 0  # tool results left out because of them
    microcompactions_applied: bool = True  # False: the dropped results were kept on request

    @property
    def after_compaction(self) -> bool:
        """True when the context starts with a compaction summary."""
        return bool(self.entries) and self.entries[0].kind == COMPACTION_SUMMARY

    def __repr__(self) -> str:
        return (f"Snapshot({self.path.name!r}, step={self.step}/{self.n_steps_total}, "
                f"entries={len(self.entries)}, compactions_before={self.n_compactions_before}, "
                f"microcompacted_results={self.n_results_microcompacted})")


def snapshot_at(session: Session, t: int, *, microcompactions: bool = True) -> Snapshot:
    """The context at agent step ``t`` (1-based); :class:`StepOutOfRange` outside 1..n.

    ``microcompactions=False`` keeps the tool results microcompactions dropped.
    """
    n = session.n_agent_steps
    if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= n:
        raise StepOutOfRange(session.path, t, n)
    end = session.step_index[t - 1]
    before = [c for c in session.compactions if c.entry_index < end]
    start = before[-1].entry_index if before else 0
    entries = session.entries[start:end + 1]
    micro = [m for m in session.microcompactions if m.entry_index <= end]
    n_removed = 0
    if microcompactions and micro:
        entries, n_removed = _drop_results(entries, start, micro)
    return Snapshot(session_id=session.session_id, path=session.path, format=session.format,
                    step=t, entries=entries, n_compactions_before=len(before), n_steps_total=n,
                    n_microcompactions_before=len(micro), n_results_microcompacted=n_removed,
                    microcompactions_applied=microcompactions)


def _drop_results(entries: tuple[Entry, ...], start: int, micro) -> tuple[tuple[Entry, ...], int]:
    """``entries`` (session indices from ``start``) without the tool results each
    microcompaction dropped (those before it), and how many were left out."""
    dropped_before: dict[str, int] = {}  # tool-use id -> the last boundary that lists it
    for m in micro:
        for cid in m.tool_ids:
            dropped_before[cid] = max(dropped_before.get(cid, 0), m.entry_index)
    kept = tuple(e for i, e in enumerate(entries, start)
                 if not (e.kind == TOOL_RESULT and i < dropped_before.get(e.call_id, -1)))
    return kept, len(entries) - len(kept)
