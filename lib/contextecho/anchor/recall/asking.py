"""Asking recall items and reading the answers.

``ask_requests(items, model)`` builds one :class:`ModelRequest` per item for the one call
site (``contextecho.engine.calls.generate``): *blind* (the question alone, no history) when no
session is given, else with the item's context under a context condition
(:mod:`contextecho.anchor.context.conditions`; by default ``long_context``, the causal
window) before the question. Requests are redacted by default, the context and its
question with one redactor per item.

An answer is a response text, an option index, or ``None`` for a failed call
(:func:`answers_of`); :func:`choice_of` reads the option it names, if any.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Mapping, Sequence

from contextecho.engine.record import CallRecord
from contextecho.engine.model_request import ModelRequest
from contextecho.sessions.render import DEFAULT_WINDOW
from contextecho.sessions.redaction import Redactor
from contextecho.sessions.model import Session

from ..context.conditions import Condition, condition_for
from ..context.summary import ContextUnavailable
from .items import LETTERS, RecallItem, prompt_text

_LEAD = re.compile(r"^[\s(\[*]*(?:([A-D])(?![A-Za-z0-9'])|([a-d])[).\]])")
_STATED = re.compile(r"\b(?:answer|option)\s*(?:is|:)?\s*\(?([A-D])\b", re.IGNORECASE)
_LONE = re.compile(r"(?<![A-Za-z0-9])([A-D])(?![A-Za-z0-9])")


def parse_choice(text: str | None) -> int | None:
    """The option index a response names: a leading letter (``"B"``, ``"(b)"``, ``"C. ..."``),
    else a stated one (``"The answer is C."``), else the only lone capital A-D in the text;
    None when it names none, or several lone letters without saying which is the answer."""
    if not text or not text.strip():
        return None
    for pattern in (_LEAD, _STATED):
        m = pattern.search(text.strip())
        if m:
            return LETTERS.index(next(g for g in m.groups() if g).upper())
    lone = set(_LONE.findall(text))
    return LETTERS.index(lone.pop()) if len(lone) == 1 else None


def ask_requests(items: Sequence[RecallItem], model: str, session: Session | None = None, *,
                 condition: str | Condition = "long_context", window: int | None = DEFAULT_WINDOW,
                 redact: bool = True, params: Mapping | None = None,
                 replicate: int = 0, built: dict | None = None) -> list[ModelRequest]:
    """One request per item: blind without ``session``, else context + question. ``window``
    is the long-context limit when ``condition`` is given by that name. Raises
    :class:`ContextUnavailable` naming how many items have no context (see ``build_contexts``).

    ``built``: a dict the caller keeps for one condition and window (and blind or not), in
    which each item's messages, or the reason it has none, are kept, so asking the same items
    of several models, replicates or runs builds and redacts each context once."""
    chosen = condition_for(condition, window=window) if session is not None else None
    requests, unavailable = [], Counter()
    for item in items:
        if session is not None and item.session_id != session.session_id:
            raise ValueError(f"item {item.id} is from session {item.session_id}, not {session.session_id}")
        key = (redact, item.session_id, item.id)
        messages = built.get(key) if built is not None else None
        if messages is None:
            messages = _messages(item, session, chosen, redact)
            if built is not None:
                built[key] = messages
        if isinstance(messages, ContextUnavailable):
            unavailable[messages.reason] += 1
            continue
        requests.append(ModelRequest(model, messages, dict(params or {}), replicate))
    if unavailable:
        raise ContextUnavailable(f"{sum(unavailable.values())} of {len(items)} items have no context "
                                 f"under {chosen.name}: {dict(unavailable)}", "; ".join(sorted(unavailable)))
    return requests


def _messages(item: RecallItem, session: Session | None, chosen: Condition | None,
              redact: bool) -> tuple[dict, ...] | ContextUnavailable:
    """The messages of one item's request (its context, then its question, redacted with one
    redactor), or the :class:`ContextUnavailable` that says why it has no context."""
    redactor = Redactor() if redact else None
    messages: list[dict] = []
    if session is not None:
        try:
            messages += chosen.context(session, item, redact=redact, redactor=redactor).messages
        except ContextUnavailable as exc:
            return exc
    question = prompt_text(item)
    if redactor is not None:
        redactor.discover(question)
        question = redactor.apply(question)
        redactor.verify(question, where=f"recall item {item.id}")
    messages.append({"role": "user", "content": question})
    return tuple(messages)


def answers_of(records: Sequence[CallRecord]) -> list[str | None]:
    """Response texts of a batch, None for a failed call (kept as a failure, not a guess)."""
    return [r.response_text if r.ok else None for r in records]


def choice_of(answer: int | str | None) -> int | None:
    """The option index of an answer: a response text (read by :func:`parse_choice`), an
    index, or None for a failed call (None: no option named)."""
    if answer is None:
        return None
    return parse_choice(answer) if isinstance(answer, str) else int(answer)
