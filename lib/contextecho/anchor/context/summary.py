"""Summaries of a session's older history, in fixed blocks, through the one call site.

The history is cut into *blocks* of ``block_steps`` agent steps, counted from the start
of the session: block b holds every entry after the agent's action at step
``b * block_steps`` up to and including its action at step ``(b + 1) * block_steps``
(block 0 also holds what came before step 1). Only complete blocks exist. The cut
depends on the session alone, never on a question, so every item of a session asks for
the same summaries and the call cache answers them once.

A block becomes one request to the summariser (a LiteLLM model string): an instruction
and the block's transcript, each rendered entry as ``ROLE: text`` (cut to ``turn_chars``),
redacted with a redactor of its own (placeholders are numbered per block). What comes
back is kept in :class:`Summaries`: a failed call, or an empty answer, is a failure with
its error type, never an empty summary.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Sequence

from contextecho.engine.record import CallRecord
from contextecho.engine.model_request import ModelRequest
from contextecho.sessions.redaction import Redactor
from contextecho.sessions.model import Session
from contextecho.sessions.render import entry_turns

SUMMARY_INSTRUCTION = (
    "You keep the memory of a coding agent. Summarise this part of its session for the agent "
    "itself: what the user asked and decided, which files were edited, which commands were run "
    "and how they ended, errors met, what is still open. Keep file paths and commands verbatim. "
    "Be factual and brief; answer with the summary only.")


class ContextUnavailable(RuntimeError):
    """An item's context cannot be built under a condition (e.g. a summary call failed)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason  # an error type, "EmptySummary" or "NotRun": what counts group by


@dataclass(frozen=True)
class Block:
    number: int
    first_entry: int
    last_entry: int  # the entry of its last agent step
    first_step: int
    last_step: int


def history_blocks(session: Session, block_steps: int) -> tuple[Block, ...]:
    """The session's complete blocks of ``block_steps`` agent steps, oldest first."""
    if block_steps < 1:
        raise ValueError(f"block_steps must be at least 1, got {block_steps}")
    blocks = []
    for b in range(session.n_agent_steps // block_steps):
        first_step, last_step = b * block_steps + 1, (b + 1) * block_steps
        first_entry = 0 if b == 0 else session.step_index[first_step - 2] + 1
        blocks.append(Block(b, first_entry, session.step_index[last_step - 1], first_step, last_step))
    return tuple(blocks)


def block_transcript(session: Session, block: Block, *, turn_chars: int, redact: bool = True) -> str:
    """One block as a model reads it: each rendered entry as ``ROLE: text`` (cut to
    ``turn_chars``), redacted with a redactor of its own, under a line naming its steps."""
    lines = []
    for role, _, text in entry_turns(session.entries[block.first_entry:block.last_entry + 1]):
        lines.append(f"{role.upper()}: {text if len(text) <= turn_chars else text[:turn_chars] + ' …[cut]'}")
    transcript = "\n\n".join(lines)
    if redact:
        transcript = _redacted(transcript)
    return f"Agent steps {block.first_step}-{block.last_step} of the session:\n\n{transcript}"


def block_request(session: Session, block: Block, model: str, *, params: Mapping,
                  turn_chars: int, redact: bool = True) -> ModelRequest:
    """The summariser's request for one block: the same for every item of the session."""
    task = block_transcript(session, block, turn_chars=turn_chars, redact=redact)
    return ModelRequest(model, ({"role": "system", "content": SUMMARY_INSTRUCTION},
                                {"role": "user", "content": task}), dict(params))


@lru_cache(maxsize=512)
def _redacted(transcript: str) -> str:
    # Every item of a session rebuilds the same block requests; redaction is their cost.
    return Redactor().redact(transcript)


@dataclass(frozen=True)
class Summaries:
    """Summary texts by request key, and the failures, from one or more generate batches."""

    texts: Mapping[str, str] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)  # request key -> error type

    def add(self, requests: Sequence[ModelRequest], records: Sequence[CallRecord]) -> Summaries:
        """These summaries plus a batch's results (records in request order)."""
        if len(requests) != len(records):
            raise ValueError(f"{len(requests)} summary requests but {len(records)} records")
        texts, errors = dict(self.texts), dict(self.errors)
        for request, record in zip(requests, records):
            if record.key != request.key:
                raise ValueError(f"record {record.key[:12]} does not answer request {request.key[:12]}")
            if record.ok and (record.response_text or "").strip():
                texts[request.key] = record.response_text.strip()
                errors.pop(request.key, None)
            else:
                errors[request.key] = record.error_type if not record.ok else "EmptySummary"
        return Summaries(texts, errors)

    def text(self, request: ModelRequest) -> str:
        """The summary for ``request``; :class:`ContextUnavailable` when it failed or never ran."""
        if request.key in self.texts:
            return self.texts[request.key]
        reason = self.errors.get(request.key, "NotRun")
        raise ContextUnavailable(f"summary {request.key[:12]} unavailable: {reason}", reason)

    @property
    def counts(self) -> dict[str, int]:
        return {"summaries": len(self.texts), "failed": len(self.errors),
                **{f"failed_{k}": n for k, n in sorted(Counter(self.errors.values()).items())}}
