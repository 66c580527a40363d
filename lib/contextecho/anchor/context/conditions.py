"""Context conditions: what a recall item is answered from (ANCHOR's four conditions).

Every condition builds the messages that precede the question from the session's records
at or before the item's decision step (entry ``step_index[t-1]``) and nothing later, and
records what went in as an :class:`ItemContext`: the entry ranges whose text was used,
the character count, the sha256 of the canonical JSON of the messages, and provenance.
The conditions are registered by name in :data:`CONTEXT_CONDITIONS`:

- ``long_context``: the causal window (:mod:`.window`): the most recent history up to
  ``limit`` characters.
- ``hierarchical_summary``: the most recent ``recent_chars`` of history verbatim (the
  causal window at that limit), preceded by summaries of every complete block of history
  that ends at or before the decision step (:mod:`.summary`). A block may overlap the
  verbatim part (told twice rather than not at all); history after the last complete
  block that the verbatim part cannot hold is in neither, and its range is recorded as
  ``gap``. Two stages, so all summaries run as one cached batch::

      cond = HierarchicalSummary(model="openai/gpt-4o-mini")
      reqs = cond.summary_requests(session, items)
      cond = cond.with_summaries(reqs, generate(reqs, cache=cache).records)
      contexts = build_contexts(cond, session, items)   # failures counted, never empty

- ``self_managed``: the compact JSON memory the model kept of the session chunk by chunk
  (:mod:`.memory`), as it stood after the last complete chunk that ends at or before the
  decision step, then the most recent ``recent_chars`` verbatim. Before the first chunk is
  complete the note says the memory is empty; a chain whose call failed leaves the items
  that need it without context (counted like a failed summary). The chain runs first::

      cond = SelfManaged(MemoryChain(model="openai/gpt-4o-mini"))
      memories, _ = run_memories(cond.chain, [(session, horizon(session, items))], cache=cache)
      contexts = build_contexts(cond.with_memories(memories), session, items)
- ``retrieval``: the ``k`` earlier turns most relevant to the question and its options
  (:mod:`.retrieval`), in their original order, then the most recent ``recent_chars``
  verbatim. Only turns that end before the verbatim part are candidates.

Summaries, the memory and retrieved turns go first, as one user note merged into the first message of
the verbatim part. Redaction (on by default) uses the item's one redactor throughout.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Mapping, Protocol, Sequence

from contextecho.engine.hashing import content_hash
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.registry import Registry
from contextecho.sessions.render import DEFAULT_WINDOW, JOINER
from contextecho.sessions.redaction import Redactor
from contextecho.sessions.model import Session

from ..recall.items import RecallItem
from .memory import Memories, MemoryChain
from .retrieval import chat_turns, most_relevant
from .summary import ContextUnavailable, Summaries, block_request, history_blocks
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


def horizon(session: Session, items: Sequence[RecallItem]) -> int:
    """The last entry any of ``items`` may read (-1 for none): what a stage runs up to."""
    if any(i.session_id != session.session_id for i in items):
        raise ValueError(f"items of another session than {session.session_id}")
    return max((session.step_index[i.decision_step - 1] for i in items), default=-1)


SUMMARY_NOTE = "Summaries of the earlier part of this session, oldest first:"
MEMORY_NOTE = "Your own memory of the earlier part of this session (JSON), as you kept it:"
EMPTY_MEMORY_NOTE = "(empty: no part of the session was complete before this point)"
RETRIEVAL_NOTE = "Earlier turns of this session relevant to what follows, in their original order:"
CONTEXT_CONDITIONS: Registry[type[Condition]] = Registry("context condition", keep_order=True)


@CONTEXT_CONDITIONS.register("long_context")
@dataclass(frozen=True)
class LongContext:
    limit: int | None = DEFAULT_WINDOW
    name: str = "long_context"

    def context(self, session, item, *, redact=True, redactor=None) -> ItemContext:
        w = verbatim_window(session, item, self.limit, redact, redactor)
        return sealed_context(self.name, session, item, w.messages, [(w.first_entry, w.last_entry)],
                              limit=self.limit, truncated=w.truncated, n_chars_full=w.n_chars_full)


@CONTEXT_CONDITIONS.register("hierarchical_summary")
@dataclass(frozen=True)
class HierarchicalSummary:
    model: str  # the summariser, a LiteLLM model string
    recent_chars: int = 8_000
    block_steps: int = 20
    turn_chars: int = 1_200
    params: Mapping = field(default_factory=lambda: {"temperature": 0, "max_tokens": 400})
    redact_blocks: bool = True
    summaries: Summaries = field(default_factory=Summaries)
    name: str = "hierarchical_summary"

    def _request(self, session, block) -> ModelRequest:
        return block_request(session, block, self.model, params=self.params,
                             turn_chars=self.turn_chars, redact=self.redact_blocks)

    def summary_requests(self, session: Session, items: Sequence[RecallItem]) -> list[ModelRequest]:
        """Stage 1: one request per block any of ``items`` may need (before its decision)."""
        last = horizon(session, items)
        return [self._request(session, b) for b in history_blocks(session, self.block_steps)
                if b.last_entry <= last]

    def with_summaries(self, requests: Sequence[ModelRequest], records) -> HierarchicalSummary:
        """Stage 2: this condition holding a batch's summaries (added to those it has)."""
        return replace(self, summaries=self.summaries.add(requests, records))

    def context(self, session, item, *, redact=True, redactor=None) -> ItemContext:
        recent = verbatim_window(session, item, self.recent_chars, redact, redactor)
        blocks = [b for b in history_blocks(session, self.block_steps) if b.last_entry <= recent.last_entry]
        summarised_to = blocks[-1].last_entry if blocks else -1
        gap = (summarised_to + 1, recent.first_entry - 1) if summarised_to + 1 < recent.first_entry else None
        requests = [self._request(session, b) for b in blocks]
        texts = [self.summaries.text(r) for r in requests]  # ContextUnavailable if one failed
        notes = [f"[agent steps {b.first_step}-{b.last_step}] {t}" for b, t in zip(blocks, texts)]
        ranges = [(b.first_entry, b.last_entry) for b in blocks] + [(recent.first_entry, recent.last_entry)]
        return sealed_context(self.name, session, item, with_note(SUMMARY_NOTE, notes, recent, redactor), ranges,
                              model=self.model, blocks=tuple((b.first_step, b.last_step) for b in blocks),
                              summary_keys=tuple(r.key for r in requests), gap=gap, recent_chars=self.recent_chars)


@CONTEXT_CONDITIONS.register("self_managed")
@dataclass(frozen=True)
class SelfManaged:
    chain: MemoryChain  # the memory model (the recall target), its chunks and budgets
    recent_chars: int = 8_000
    memories: Memories = field(default_factory=Memories)
    name: str = "self_managed"

    def with_memories(self, memories: Memories) -> SelfManaged:
        """This condition reading ``memories`` (:func:`.memory.run_memories`)."""
        return replace(self, memories=memories)

    def context(self, session, item, *, redact=True, redactor=None) -> ItemContext:
        recent = verbatim_window(session, item, self.recent_chars, redact, redactor)
        chunks = [c for c in self.chain.chunks(session) if c.last_entry <= recent.last_entry]
        update = self.memories.after(session.session_id, chunks[-1].number) if chunks else None
        note = f"[agent steps 1-{update.last_step}] {update.memory}" if update else EMPTY_MEMORY_NOTE
        ranges = ([(0, update.last_entry)] if update else []) + [(recent.first_entry, recent.last_entry)]
        return sealed_context(self.name, session, item, with_note(MEMORY_NOTE, [note], recent, redactor), ranges,
                              model=self.chain.model, memory_chunk=update.chunk if update else None,
                              memory_steps=(1, update.last_step) if update else None,
                              memory_sha256=update.sha256 if update else None,
                              memory_request_key=update.request_key if update else None,
                              memory_accepted=update.accepted if update else None, recent_chars=self.recent_chars)


@CONTEXT_CONDITIONS.register("retrieval")
@dataclass(frozen=True)
class Retrieval:
    k: int = 5
    recent_chars: int = 4_000
    turn_chars: int = 2_000
    name: str = "retrieval"

    def context(self, session, item, *, redact=True, redactor=None) -> ItemContext:
        recent = verbatim_window(session, item, self.recent_chars, redact, redactor)
        candidates = chat_turns(session, recent.first_entry - 1, turn_chars=self.turn_chars)
        query = "\n".join([item.question, *item.options])
        picked = most_relevant([t.text for t in candidates], query, self.k)
        turns = [candidates[i] for i, _ in picked]
        ranges = [(t.first_entry, t.last_entry) for t in turns] + [(recent.first_entry, recent.last_entry)]
        messages = with_note(RETRIEVAL_NOTE, [f"[{t.role}] {t.text}" for t in turns], recent, redactor)
        return sealed_context(self.name, session, item, messages, ranges, k=self.k,
                              scores=tuple(score for _, score in picked), recent_chars=self.recent_chars)


def condition_for(condition: str | Condition, *, window: int | None = DEFAULT_WINDOW) -> Condition:
    """A condition by name (defaults; ``long_context`` at ``window``) or the one given."""
    if not isinstance(condition, str):
        return condition
    if condition == "long_context":
        return LongContext(limit=window)
    if condition == "hierarchical_summary":
        raise ValueError("hierarchical_summary needs its summaries: pass "
                         "HierarchicalSummary(model=...).with_summaries(requests, records)")
    if condition == "self_managed":
        raise ValueError("self_managed needs its memories: pass "
                         "SelfManaged(MemoryChain(model=...)).with_memories(run_memories(...)[0])")
    return CONTEXT_CONDITIONS.get(condition)()


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


def build_contexts(condition: str | Condition, session: Session, items: Sequence[RecallItem], *,
                   redact: bool = True) -> ContextBatch:
    """Every item's context under ``condition``; an unavailable one is counted, not dropped silently."""
    condition = condition_for(condition)
    built, failed = {}, {}
    for item in items:
        try:
            built[item.id] = condition.context(session, item, redact=redact,
                                               redactor=Redactor() if redact else None)
        except ContextUnavailable as exc:
            failed[item.id] = exc.reason
    return ContextBatch(built, failed)
