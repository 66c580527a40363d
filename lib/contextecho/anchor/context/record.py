"""What a recall item is answered from, as a record; the parts every context condition
(:mod:`.conditions`) builds it from.

Every condition builds the messages that precede the question from the session's records
at or before the item's decision step (entry ``step_index[t-1]``) and nothing later, and
records what went in as an :class:`ItemContext`: the entry ranges whose text was used,
the character count, the sha256 of the canonical JSON of the messages, and provenance.

Summaries and retrieved turns go first, as one user note merged into the first message of
the verbatim part. Redaction (on by default) uses the item's one redactor throughout.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

from contextecho.engine.hashing import content_hash
from contextecho.sessions import Redactor, Session
from contextecho.sessions.render import JOINER

from ..recall.items import RecallItem
from .window import CausalWindow, causal_window


@dataclass(frozen=True)
class ItemContext:
    condition: str
    session_id: str
    item_id: str
    decision_step: int
    messages: tuple[dict, ...]
    entry_ranges: tuple[tuple[int, int], ...]  # (first, last) entry indices used, inclusive
    n_chars: int
    sha256: str
    provenance: Mapping = field(default_factory=dict)


class Condition(Protocol):
    name: str

    def context(self, session: Session, item: RecallItem, *, redact: bool = True,
                redactor: Redactor | None = None) -> ItemContext: ...


def sealed_context(name: str, session: Session, item: RecallItem, messages: Sequence[dict],
                   ranges: Sequence[tuple[int, int]], **provenance) -> ItemContext:
    """The record of ``messages`` built for ``item`` under condition ``name``."""
    messages = tuple(messages)
    return ItemContext(name, session.session_id, item.id, item.decision_step, messages,
                       tuple(ranges), sum(len(m["content"]) for m in messages),
                       content_hash(list(messages)), provenance)


def verbatim_window(session: Session, item: RecallItem, limit: int, redact: bool,
                    redactor: Redactor | None) -> CausalWindow:
    """The most recent history before ``item``'s decision step, as it was, up to ``limit``."""
    if item.session_id != session.session_id:
        raise ValueError(f"item {item.id} is from session {item.session_id}, not {session.session_id}")
    return causal_window(session, item.decision_step, limit=limit, redact=redact, redactor=redactor)


def with_note(header: str, parts: Sequence[str], recent: CausalWindow,
              redactor: Redactor | None) -> list[dict]:
    """A note of ``parts``, then the verbatim part; the note joins its first message when that
    is a user's. No parts, no note."""
    messages = [dict(m) for m in recent.messages]
    if not parts:
        return messages
    note = JOINER.join([header, *parts])
    if redactor is not None:
        note = redactor.redact(note)
    if messages and messages[0]["role"] == "user":
        messages[0]["content"] = note + JOINER + messages[0]["content"]
        return messages
    return [{"role": "user", "content": note}, *messages]


@dataclass(frozen=True)
class ContextBatch:
    contexts: Mapping[str, ItemContext]  # by item id
    failed: Mapping[str, str]  # item id -> why its context is unavailable (ContextUnavailable.reason)

    def usable(self, items: Sequence[RecallItem]) -> list[RecallItem]:
        return [i for i in items if i.id in self.contexts]

    @property
    def counts(self) -> dict[str, int]:
        reasons = Counter(self.failed.values())
        return {"items": len(self.contexts) + len(self.failed), "built": len(self.contexts),
                "failed": len(self.failed), **{f"failed_{k}": n for k, n in sorted(reasons.items())}}
