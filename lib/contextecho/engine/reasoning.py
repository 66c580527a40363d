"""A reasoning model's reasoning, kept apart from its answer.

A thinking model's reply carries its reasoning one of two ways: in a separate field of the
message (LiteLLM's ``reasoning_content``, filled from a provider's thinking blocks or a
server's reasoning parser), or inline, as a ``<think>…</think>`` block opening the reply
(a server without a reasoning parser; a chat template that writes ``<think>`` into the
prompt sends only the closing ``</think>``). :func:`split_reasoning` takes the inline
block out: the reply's *answer* is what follows it (leading whitespace dropped), and the
block is reasoning (LiteLLM takes such a block out itself for some providers, into
``reasoning_content``: the answer is then the content without its leading whitespace). A
block never closed (the budget ran out while thinking) is reasoning whole, and the answer
is empty. A ``<think>`` anywhere but at the start of the reply is text like any other. A
closing ``</think>`` with no opening one is the end of a block the template opened only
where the request turned the model's reasoning on (its options,
:func:`~.request_options.reasoning_on`); any other reply that holds one (an answer about
the tags) is text like any other, whole.

The record of the call (:class:`~contextecho.engine.record.CallRecord`) stores the answer
as ``response_text`` (what every parser reads: an option letter, a verdict) and the
reasoning as ``reasoning``; its ``completion_tokens`` are the provider's count, reasoning
included (what it cost and what the budget allowed).
"""
from __future__ import annotations

from typing import Any

OPEN, CLOSE = "<think>", "</think>"


def split_reasoning(text: str, *, thinking: bool = False) -> tuple[str, str | None]:
    """``(answer, reasoning)`` of a reply (module doc); ``(text, None)`` when it has no block.
    ``thinking``: the request turned the model's reasoning on, so a lone ``</think>`` closes a
    block its chat template opened."""
    body = text.lstrip()
    if body.startswith(OPEN):
        reasoning, closed, answer = body[len(OPEN):].partition(CLOSE)
        return (answer.lstrip() if closed else ""), reasoning.strip()
    before, closed, answer = text.partition(CLOSE)
    if thinking and closed and OPEN not in before:  # the opening tag was the chat template's
        return answer.lstrip(), before.strip()
    return text, None


def reasoning_of(message: Any) -> str | None:
    """The reasoning a provider sent beside the answer (``reasoning_content``), or None."""
    value = message.get("reasoning_content") if isinstance(message, dict) else \
        getattr(message, "reasoning_content", None)
    return value if isinstance(value, str) and value.strip() else None


def joined(*parts: str | None) -> str | None:
    """The reasoning parts that hold text, one after the other; None when none does."""
    kept = [p for p in parts if p]
    return "\n\n".join(kept) if kept else None
