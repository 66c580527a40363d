"""Which assistant turns the behavioural-axes judge sees: real ones and forked ones.

A *judgeable turn* is an assistant TEXT entry (tool calls are actions, not turns to a
user) that directly follows user-side input — the user's text or a tool result — which
is its context. Checkpoints are the judgeable turns nearest to ``k`` uniform positions
(:func:`contextecho.sessions.positions`; ties to the earlier turn, duplicates dropped).

- :func:`real_turns`: the recorded turn at each checkpoint, redacted (it leaves the
  machine in the judge's request), with its session and step.
- :func:`fork_requests`: for the same checkpoints, the context *before* that turn —
  everything up to the entry preceding it, rendered by ``render_prefix`` with the
  persona card as the system message — and one request for the target to write the
  turn itself. Nothing at or after the turn's step is in the request.
- :func:`forked_turns`: the generated texts as turns, judged like real ones; a failed
  target call is a turn without text whose ``error`` says why (judged as an error row).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from contextecho.engine.record import CallRecord
from contextecho.engine.model_request import ModelRequest
from contextecho.sessions.render import DEFAULT_WINDOW, render_prefix, entry_text
from contextecho.sessions.redaction import Redactor
from contextecho.sessions.model import Session, REASONING, TEXT
from contextecho.sessions.positions import positions
from contextecho.sessions.snapshot import snapshot_at

from ..persona import CODING_ASSISTANT, PersonaCard

REAL, FORK = "real", "fork"
RECORDED = "recorded"  # the target of a real turn: whichever model wrote the transcript
DEFAULT_K = 4
DEFAULT_FORK_PARAMS: Mapping[str, Any] = {"temperature": 0.0, "max_tokens": 512}


@dataclass(frozen=True)
class JudgedTurn:
    source: str  # REAL | FORK
    session_id: str
    step: int  # agent step of the assistant turn (for a fork: the step it rewrites)
    checkpoint: str  # the position label the turn was chosen for (u1..uk)
    target: str  # RECORDED, or the model that generated the fork
    context: str | None  # the user text or tool result just before the turn
    text: str | None  # the turn; None when the target call failed
    replicate: int = 0
    source_key: str | None = None  # request key of the fork's target call
    error: str | None = None  # why a fork has no text

    @property
    def id(self) -> str:
        return f"{self.source}|{self.session_id}|{self.step}|{self.target}|{self.replicate}"


def _rendered(entry) -> bool:
    return entry.kind != REASONING and not entry.meta and not (entry.kind == TEXT and not entry.text.strip())


def judgeable(session: Session) -> list[tuple[int, int, int]]:
    """(step, entry index, context entry index) of every judgeable assistant turn."""
    out, previous = [], None
    for i, e in enumerate(session.entries):
        if not _rendered(e):
            continue
        if (e.role == "assistant" and e.kind == TEXT and e.step is not None and previous is not None
                and session.entries[previous].role != "assistant"):
            out.append((e.step, i, previous))
        previous = i
    return out


def checkpoints(session: Session, k: int = DEFAULT_K) -> list[tuple[str, int, int, int]]:
    """(label, step, entry index, context index) of the turn nearest each uniform position."""
    turns = judgeable(session)
    if not turns:
        return []
    chosen, seen = [], set()
    for pos in positions(session, "uniform", k=k):
        step, index, context = min(turns, key=lambda t: (abs(t[0] - pos.step), t[0]))
        if step not in seen:
            seen.add(step)
            chosen.append((pos.label, step, index, context))
    return chosen


def real_turns(session: Session, k: int = DEFAULT_K, *, redact: bool = True) -> list[JudgedTurn]:
    """The recorded assistant turns at ``k`` checkpoints of ``session``, with their context."""
    out = []
    for label, step, index, context_index in checkpoints(session, k):
        context = entry_text(session.entries[context_index])
        text = session.entries[index].text
        if redact:
            redactor = Redactor()  # one per turn: context and turn share placeholders
            redactor.discover(context + "\n\n" + text)
            context, text = redactor.apply(context), redactor.apply(text)
            for part in (context, text):
                redactor.verify(part, where=f"turn at step {step} of {session.session_id}")
        out.append(JudgedTurn(REAL, session.session_id, step, label, RECORDED, context, text))
    return out


@dataclass(frozen=True)
class Fork:
    turn: JudgedTurn  # the turn to be generated (text None until forked_turns)
    request: ModelRequest
    prefix_chars: int
    truncated: bool


def fork_requests(session: Session, target: str, card: PersonaCard = CODING_ASSISTANT, *,
                  k: int = DEFAULT_K, window: int | None = DEFAULT_WINDOW,
                  params: Mapping[str, Any] = DEFAULT_FORK_PARAMS, replicate: int = 0,
                  redact: bool = True) -> list[Fork]:
    """One request per checkpoint: card as system message, the context before the turn."""
    real = {t.step: t for t in real_turns(session, k, redact=redact)}
    forks = []
    for _, step, _, _ in checkpoints(session, k):
        snapshot = snapshot_at(session, step)
        before = replace(snapshot, entries=snapshot.entries[:-1])  # the turn itself is what we ask for
        prefix = render_prefix(before, window=window, preamble=card.system_prompt(), redact=redact)
        request = ModelRequest(target, prefix.messages, dict(params), replicate)
        turn = replace(real[step], source=FORK, target=target, text=None, replicate=replicate,
                       source_key=request.key)
        forks.append(Fork(turn, request, prefix.n_chars, prefix.truncated))
    return forks


def forked_turns(forks: Sequence[Fork], records: Sequence[CallRecord]) -> list[JudgedTurn]:
    """The forks' generated turns, from the target records (matched by request key)."""
    by_key = {r.key: r for r in records}
    out = []
    for fork in forks:
        record = by_key.get(fork.request.key)
        if record is None:
            raise ValueError(f"no target record for the fork at step {fork.turn.step} "
                             f"of {fork.turn.session_id}")
        if record.ok:
            out.append(replace(fork.turn, text=record.response_text or ""))
        else:
            out.append(replace(fork.turn, error=f"target call failed: {record.error_type}"))
    return out
