"""The causal window: what a recall item may be answered from.

The window of an item is rendered from the session's records **at or before** its
decision step — the entries ``session.entries[0 : step_index[t-1] + 1]``, ending with
the agent's action at step ``t`` — and never from any later record. It is the
long-context condition: the full history, compacted parts included (a compaction
summary appears where the harness inserted it). It is rendered as chat text by
:func:`contextecho.sessions.render_prefix` (same turn format, redaction on by default),
keeping the most recent messages when the character limit is hit.

The record says exactly what went in: the first and last entry index rendered (the
range is contiguous; reasoning and harness entries inside it are never rendered; when the
last message alone overflows the limit, its tail is kept and its first entry counted), the
character counts, and the sha256 of the canonical JSON of the messages.
"""
from __future__ import annotations

from dataclasses import dataclass

from contextecho.engine.hashing import content_hash
from contextecho.sessions.render import DEFAULT_WINDOW, render_prefix
from contextecho.sessions.redaction import Redactor
from contextecho.sessions.model import Session, REASONING, TEXT
from contextecho.sessions.snapshot import Snapshot


@dataclass(frozen=True)
class CausalWindow:
    session_id: str
    decision_step: int
    messages: tuple[dict, ...]  # chat messages, oldest first; ends with the step's action
    first_entry: int  # index in session.entries of the oldest entry rendered
    last_entry: int  # index of the decision step's entry: nothing later is ever included
    n_chars: int
    n_chars_full: int  # the whole causal history, before the limit
    truncated: bool
    limit: int | None
    sha256: str


def _rendered(session: Session, end: int) -> list[int]:
    """Indices of the entries up to ``end`` that render (as render.entry_turns decides)."""
    return [i for i, e in enumerate(session.entries[:end + 1])
            if e.kind != REASONING and not e.meta and not (e.kind == TEXT and not e.text.strip())]


def causal_window(session: Session, decision_step: int, *, limit: int | None = DEFAULT_WINDOW,
                  redact: bool = True, redactor: Redactor | None = None) -> CausalWindow:
    """The context for a question asked at ``decision_step`` (1-based agent step)."""
    if not 1 <= decision_step <= session.n_agent_steps:
        raise ValueError(f"decision step {decision_step} outside 1..{session.n_agent_steps} "
                         f"of session {session.session_id}")
    end = session.step_index[decision_step - 1]
    history = Snapshot(session_id=session.session_id, path=session.path, format=session.format,
                       step=decision_step, entries=session.entries[:end + 1],
                       n_compactions_before=sum(c.entry_index < end for c in session.compactions),
                       n_steps_total=session.n_agent_steps)
    prefix = render_prefix(history, window=limit, redact=redact, redactor=redactor)
    rendered = _rendered(session, end)
    first = rendered[-len(prefix.turns)]
    if len(prefix.turns) == 1:
        # One turn out of a multi-entry last message means that message alone overflowed
        # the limit and only its tail was kept: count the whole message (a superset).
        while first > 0 and rendered.index(first) > 0 and \
                _role(session, rendered[rendered.index(first) - 1]) == _role(session, first):
            first = rendered[rendered.index(first) - 1]
    messages = tuple(prefix.messages)
    return CausalWindow(session_id=session.session_id, decision_step=decision_step,
                        messages=messages, first_entry=first, last_entry=end,
                        n_chars=prefix.n_chars, n_chars_full=prefix.n_chars_full,
                        truncated=prefix.truncated, limit=limit,
                        sha256=content_hash(list(messages)))


def _role(session: Session, index: int) -> str:
    return "assistant" if session.entries[index].role == "assistant" else "user"
