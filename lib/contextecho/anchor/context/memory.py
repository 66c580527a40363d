"""Self-managed memory: the model keeps a compact JSON memory of the session as it runs.

The session is cut into *chunks* exactly as the hierarchical summary cuts its blocks
(:func:`.summary.history_blocks`: ``chunk_steps`` agent steps each, fixed by the session
alone). Walking chunk by chunk from the start, the memory model (a LiteLLM model string)
gets one request per chunk: :data:`MEMORY_INSTRUCTION`, and a user message holding its
memory so far (``{}`` at first) and the chunk's transcript as the summariser reads a block
(:func:`.summary.block_transcript`). It is asked for a JSON object
(``response_format`` ``json_object``, which the embedded model meets by constrained
decoding) within ``max_tokens``.

The reply must be a JSON object whose canonical JSON (sorted keys, no whitespace) is at
most ``memory_chars`` characters; it then *is* the memory. A reply that does not parse
(:data:`NOT_JSON`), is not an object (:data:`NOT_OBJECT`) or is longer (:data:`OVER_BUDGET`)
leaves the previous memory in place and is recorded as a rejected update with that
reason. A failed call ends the session's chain there: the memory after that chunk is
unknown, so no later chunk is asked and every item that needs it has no context
(:class:`.summary.ContextUnavailable` with the call's error type).

The chain is sequential, so :func:`run_memories` asks chunk 0 of every session as one
batch through the one call site (cached), then chunk 1, and so on; every item of a
session reuses the same chain::

    chain = MemoryChain(model="openai/gpt-4o-mini", chunk_steps=20)
    memories, counts = run_memories(chain, [(session, horizon_entry)], cache=cache)
    memories.after(session.session_id, chunk)   # the memory an item after that chunk reads
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from contextecho.engine.json_constraint import JSON_OBJECT
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.counts import Counts
from contextecho.engine.hashing import canonical_json, content_hash
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.record import CallRecord
from contextecho.sessions.model import Session

from .summary import Block, ContextUnavailable, block_transcript, history_blocks

MEMORY_INSTRUCTION = (
    "You keep a compact JSON memory of this coding session for yourself: what the user asked and "
    "decided, which files were edited, which commands were run, what failed, what is still open. "
    "You are given your memory so far and the next part of the session. Keep file paths and commands "
    "verbatim. Answer with the updated JSON object only.")
EMPTY_MEMORY = "{}"
NOT_JSON, NOT_OBJECT, OVER_BUDGET = "NotJSON", "NotObject", "OverBudget"
REJECTIONS = (NOT_JSON, NOT_OBJECT, OVER_BUDGET)


def memory_params(max_tokens: int) -> dict:
    """Greedy, within ``max_tokens``, asking for one JSON object."""
    return {"temperature": 0, "max_tokens": max_tokens, "response_format": dict(JSON_OBJECT)}


@dataclass(frozen=True)
class MemoryUpdate:
    """The memory of session ``session_id`` after chunk ``chunk`` (agent steps
    ``first_step``..``last_step``, entries up to ``last_entry``)."""

    session_id: str
    chunk: int
    first_step: int
    last_step: int
    last_entry: int
    accepted: bool
    reason: str  # "" when accepted; a rejection (REJECTIONS) or the failed call's error type
    call_failed: bool
    memory: str  # canonical JSON of the memory after this chunk (the previous one when not accepted)
    memory_chars: int
    keys: tuple[str, ...]
    sha256: str  # of the memory object
    request_key: str


@dataclass(frozen=True)
class MemoryChain:
    """How the memory is kept: the model, its chunks, the rendering and the budgets."""

    model: str
    chunk_steps: int = 20
    turn_chars: int = 1_200
    memory_chars: int = 600
    params: Mapping = field(default_factory=lambda: memory_params(400))
    redact: bool = True

    def chunks(self, session: Session) -> tuple[Block, ...]:
        return history_blocks(session, self.chunk_steps)

    def request(self, session: Session, chunk: Block, memory: str) -> ModelRequest:
        """The memory model's request for ``chunk`` given the memory after the chunk before."""
        transcript = block_transcript(session, chunk, turn_chars=self.turn_chars, redact=self.redact)
        task = f"Your memory so far:\n{memory}\n\n{transcript}"
        return ModelRequest(self.model, ({"role": "system", "content": MEMORY_INSTRUCTION},
                                         {"role": "user", "content": task}), dict(self.params))

    def update(self, session: Session, chunk: Block, previous: str, request: ModelRequest,
               record: CallRecord) -> MemoryUpdate:
        """The memory after ``chunk``: the reply when it is a JSON object within budget, else
        ``previous`` with the reason (module doc)."""
        if record.key != request.key:
            raise ValueError(f"record {record.key[:12]} does not answer request {request.key[:12]}")
        accepted, reason, memory = False, "", previous
        if not record.ok:
            reason = record.error_type or "Error"
        else:
            reason, parsed = _read(record.response_text or "", self.memory_chars)
            if not reason:
                accepted, memory = True, parsed
        value = json.loads(memory)
        return MemoryUpdate(session.session_id, chunk.number, chunk.first_step, chunk.last_step, chunk.last_entry,
                            accepted, reason, not record.ok, memory, len(memory), tuple(sorted(value)),
                            content_hash(value), request.key)


def _read(reply: str, limit: int) -> tuple[str, str]:
    """(rejection reason or "", the reply's canonical JSON)."""
    try:
        value = json.loads(reply)
    except ValueError:
        return NOT_JSON, ""
    if not isinstance(value, dict):
        return NOT_OBJECT, ""
    text = canonical_json(value)
    return (OVER_BUDGET, "") if len(text) > limit else ("", text)


@dataclass(frozen=True)
class Memories:
    """Each session's chain of updates, in chunk order."""

    chains: Mapping[str, tuple[MemoryUpdate, ...]] = field(default_factory=dict)

    def current(self, session_id: str) -> str:
        chain = self.chains.get(session_id, ())
        return chain[-1].memory if chain else EMPTY_MEMORY

    def broken(self, session_id: str) -> bool:
        chain = self.chains.get(session_id, ())
        return bool(chain) and chain[-1].call_failed

    def extended(self, updates: Sequence[MemoryUpdate]) -> Memories:
        chains = dict(self.chains)
        for u in updates:
            have = chains.get(u.session_id, ())
            if u.chunk != len(have) or self.broken(u.session_id):
                raise ValueError(f"update of chunk {u.chunk} of {u.session_id} does not follow its "
                                 f"{len(have)} update(s)")
            chains[u.session_id] = (*have, u)
        return Memories(chains)

    def after(self, session_id: str, chunk: int) -> MemoryUpdate:
        """The update of ``chunk``; :class:`ContextUnavailable` when its call, or an earlier
        one of the chain, failed (its error type) or it never ran (``NotRun``)."""
        chain = self.chains.get(session_id, ())
        failed = next((u for u in chain[:chunk + 1] if u.call_failed), None)
        if failed is not None:
            raise ContextUnavailable(f"memory of {session_id} after chunk {chunk} unavailable: chunk "
                                     f"{failed.chunk} failed ({failed.reason})", failed.reason)
        if chunk >= len(chain):
            raise ContextUnavailable(f"memory of {session_id} after chunk {chunk} was never kept", "NotRun")
        return chain[chunk]

    @property
    def updates(self) -> list[MemoryUpdate]:
        return [u for chain in self.chains.values() for u in chain]

    @property
    def counts(self) -> dict[str, int]:
        updates = self.updates
        reasons = Counter(u.reason for u in updates if not u.accepted)
        return {"updates": len(updates), "accepted": sum(u.accepted for u in updates),
                **{f"rejected_{k}" if k in REJECTIONS else f"failed_{k}": n for k, n in sorted(reasons.items())}}


def run_memories(chain: MemoryChain, needs: Sequence[tuple[Session, int]], *, cache: CallCache | None = None,
                 transport: Transport = Transport(), progress: bool = False,
                 name: str = "memory") -> tuple[Memories, Counts]:
    """Each session's memory over its chunks that end at or before its horizon (the last
    entry any of its items may read), chunk by chunk, each chunk of every session one
    batch; the batches' counts (rejected replies counted ``invalid``)."""
    todo = {s.session_id: (s, [c for c in chain.chunks(s) if c.last_entry <= horizon]) for s, horizon in needs}
    memories, counts = Memories(), Counts()
    for b in range(max((len(chunks) for _, chunks in todo.values()), default=0)):
        asked = [(s, chunks[b]) for s, chunks in todo.values()
                 if b < len(chunks) and not memories.broken(s.session_id)]
        if not asked:
            break
        requests = [chain.request(s, c, memories.current(s.session_id)) for s, c in asked]
        result = generate(requests, cache=cache, transport=transport, progress=progress, name=f"{name}:chunk {b}")
        updates = [chain.update(s, c, memories.current(s.session_id), r, rec)
                   for (s, c), r, rec in zip(asked, requests, result.records)]
        counts = counts + result.counts(invalid=sum(u.reason in REJECTIONS for u in updates))
        memories = memories.extended(updates)
    return memories, counts
