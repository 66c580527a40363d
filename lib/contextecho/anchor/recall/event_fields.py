"""The fields every session event (:mod:`.events`, :mod:`.requests`) has: the agent step at
which it is acted on, and the text it is shown by as an option."""
from __future__ import annotations

from bisect import bisect_right

from contextecho.sessions import Session

MAX_CHARS = 160


def next_step_after(session: Session, entry_index: int) -> int | None:
    """The first agent step whose entry comes after ``entry_index``; None if none does."""
    k = bisect_right(session.step_index, entry_index)
    return k + 1 if k < len(session.step_index) else None


def display(text: str) -> str:
    """``text`` as an option shows it: whitespace collapsed, cut to :data:`MAX_CHARS`."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"
