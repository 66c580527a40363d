"""Render a snapshot as the chat prefix a target model is conditioned on.

Each timeline entry becomes a *turn* of plain text in OpenAI chat format:

=====================  =========  ==============================================
entry                  role       content
=====================  =========  ==============================================
user text              user       the text as typed
assistant text         assistant  the text as written
tool call              assistant  ``[tool_call NAME] ARGS`` (ARGS: the call's JSON
                                  arguments, or raw input for free-form tools)
tool result            user       ``[tool_result NAME] OUTPUT`` (``[error]`` marks
                                  a failed call; NAME omitted when unknown)
compaction summary     user       the summary text as the harness injected it
                                  (``[context compacted]`` when none was recorded)
harness text (meta)    user       only with ``include_harness=True``
reasoning / thinking   —          never rendered
=====================  =========  ==============================================

Chat templates want user/assistant alternation, so by default (``merge=True``)
consecutive same-role turns are joined into one message with a blank line between them
(a response that writes text and calls two tools is one assistant message; the results
one user message). ``Prefix.turns`` keeps the unmerged structure — (role, kind,
n_chars, message index) per turn — which is what a matched filler must mirror.

Window: the most recent ``window`` characters (default 30,000, the paper's) on a
message boundary: whole messages are kept from the end while they fit, then a leading
assistant message is dropped so the prefix starts with a user message. If the last
message alone exceeds the window, only its last ``window`` characters are kept.
``window=None`` renders untruncated. A snapshot ends with the agent's action, so the
prefix ends with an assistant message and a probe can follow as a user message.

``preamble`` (the harness's system prompt, or any text) becomes a leading system
message; it is not part of ``n_chars`` / ``turns``, which describe the session content.
Redaction (on by default: prefixes usually leave the machine) runs per turn before
windowing, so counts describe what is sent.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

from .model import COMPACTION_SUMMARY, REASONING, TEXT, TOOL_CALL, TOOL_RESULT, Entry
from .redaction import RedactionReport, Redactor
from .snapshot import Snapshot

DEFAULT_WINDOW = 30_000
JOINER = "\n\n"


class PrefixTurn(NamedTuple):
    role: str  # "user" | "assistant"
    kind: str  # text | tool_call | tool_result | compaction_summary
    n_chars: int
    message: int  # index into Prefix.messages (after the preamble, if any)


@dataclass(frozen=True)
class Prefix:
    messages: tuple[dict, ...]  # {"role", "content"}; messages[0] is the preamble if given
    turns: tuple[PrefixTurn, ...]
    n_chars: int  # characters of session content sent (body messages, joiners included)
    n_chars_full: int  # the same before windowing (counted before redaction when windowed)
    truncated: bool
    session_id: str
    step: int
    window: int | None
    preamble: str | None = None
    redacted: bool = False
    redaction: RedactionReport | None = None
    texts: tuple[str, ...] = field(default=(), repr=False)  # per turn, for re-rendering

    @property
    def body(self) -> tuple[dict, ...]:
        return self.messages[1:] if self.preamble is not None else self.messages


def entry_text(e: Entry) -> str:
    if e.kind == TOOL_CALL:
        return f"[tool_call {e.tool_name or 'tool'}] {e.text}"
    if e.kind == TOOL_RESULT:
        return f"[tool_result {e.tool_name}] {e.text}" if e.tool_name else f"[tool_result] {e.text}"
    if e.kind == COMPACTION_SUMMARY:
        return e.text or "[context compacted]"
    return e.text


def entry_turns(entries, include_harness: bool = False) -> list[tuple[str, str, str]]:
    """(role, kind, text) per rendered entry, in order."""
    out = []
    for e in entries:
        if e.kind == REASONING or (e.meta and not include_harness):
            continue
        text = entry_text(e)
        if e.kind == TEXT and not text.strip():
            continue
        role = "assistant" if e.role == "assistant" else "user"
        out.append((role, e.kind, text))
    return out


def layout(parts: list[tuple[str, str, str]], *, window: int | None, merge: bool):
    """Group parts into messages, then window. Returns (groups, truncated, n_full)."""
    groups: list[list[tuple[str, str, str]]] = []
    for p in parts:
        if merge and groups and groups[-1][0][0] == p[0]:
            groups[-1].append(p)
        else:
            groups.append([p])

    def size(g):
        return sum(len(t) for _, _, t in g) + len(JOINER) * (len(g) - 1)

    n_full = sum(size(g) for g in groups)
    if window is None or n_full <= window:
        return groups, False, n_full
    kept: list = []
    total = 0
    for g in reversed(groups):
        s = size(g)
        if total + s > window:
            break
        kept.append(g)
        total += s
    kept.reverse()
    while len(kept) > 1 and kept[0][0][0] == "assistant":
        kept.pop(0)
    if not kept:  # the last message alone is longer than the window: keep its tail
        last = groups[-1]
        text = JOINER.join(t for _, _, t in last)[-window:]
        kept = [[(last[-1][0], last[-1][1], text)]]
    return kept, True, n_full


def build_prefix(parts, *, session_id: str, step: int, window: int | None, merge: bool,
                 preamble: str | None, redactor: Redactor | None) -> Prefix:
    if redactor is not None:
        redactor.discover("\n\n".join([preamble or ""] + [t for _, _, t in parts]))
        parts = [(r, k, redactor.apply(t)) for r, k, t in parts]
        preamble = redactor.apply(preamble) if preamble else preamble
    groups, truncated, n_full = layout(parts, window=window, merge=merge)
    messages = [{"role": "system", "content": preamble}] if preamble is not None else []
    turns, texts = [], []
    for i, g in enumerate(groups):
        messages.append({"role": g[0][0], "content": JOINER.join(t for _, _, t in g)})
        for role, kind, text in g:
            turns.append(PrefixTurn(role, kind, len(text), i))
            texts.append(text)
    n_chars = sum(len(m["content"]) for m in messages[1 if preamble is not None else 0:])
    if redactor is not None:
        for m in messages:
            redactor.verify(m["content"], where=f"prefix of {session_id} at step {step}")
    return Prefix(messages=tuple(messages), turns=tuple(turns), n_chars=n_chars,
                  n_chars_full=n_full, truncated=truncated, session_id=session_id, step=step,
                  window=window, preamble=preamble, redacted=redactor is not None,
                  redaction=redactor.report() if redactor is not None else None,
                  texts=tuple(texts))


def render_prefix(snapshot: Snapshot, *, window: int | None = DEFAULT_WINDOW,
                  preamble: str | None = None, merge: bool = True,
                  include_harness: bool = False, redact: bool = True,
                  redactor: Redactor | None = None) -> Prefix:
    """The chat prefix for ``snapshot``; see the module doc for the format.

    ``redact=True`` (default) redacts with ``redactor`` (pass one per session for
    placeholders that agree across positions) or a fresh one, and verifies the result.
    """
    if window is not None and window < 1:
        raise ValueError(f"window must be a positive number of characters or None, got {window}")
    parts = entry_turns(snapshot.entries, include_harness)
    if not redact:
        return build_prefix(parts, session_id=snapshot.session_id, step=snapshot.step,
                            window=window, merge=merge, preamble=preamble, redactor=None)
    redactor = redactor or Redactor()
    n_full = _size_unredacted(parts, merge)
    # Redacting megabytes to keep 30,000 characters is wasteful: redact a generous tail
    # of the snapshot, and widen it until the window no longer reaches its start.
    budget = None if window is None else 2 * window + 4096
    while True:
        tail, start = _tail(parts, budget)
        prefix = build_prefix(tail, session_id=snapshot.session_id, step=snapshot.step,
                              window=window, merge=merge, preamble=preamble, redactor=redactor)
        first_group = 1
        while merge and first_group < len(tail) and tail[first_group][0] == tail[0][0]:
            first_group += 1
        if start == 0 or (prefix.truncated and len(prefix.turns) <= len(tail) - first_group):
            return replace(prefix, n_chars_full=n_full) if start else prefix
        budget *= 4


def _tail(parts, budget):
    """The shortest suffix of ``parts`` holding at least ``budget`` characters."""
    if budget is None:
        return parts, 0
    total = 0
    for i in range(len(parts) - 1, -1, -1):
        total += len(parts[i][2])
        if total >= budget:
            return parts[i:], i
    return parts, 0


def _size_unredacted(parts, merge):
    return layout(parts, window=None, merge=merge)[2]
