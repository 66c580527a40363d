"""Arms: what the target is conditioned on before the probe. ``arm(snapshot, ctx) -> ArmPrefix``.

- ``real``: the rendered session prefix at step t (``sessions.render_prefix``: redacted,
  windowed to ``ctx.window`` characters). The seed calls it ``claude`` for Claude Code
  traces; we use one name for both harnesses.
- ``filler``: lorem-ipsum filler with the real prefix's exact turn skeleton and
  character counts (:mod:`.filler`), seeded from (instrument seed, session, step, window).
- ``shuffled_real``: the real prefix's turns in a seeded shuffled order. Turns are
  permuted *within each role* and put back into the role slots of the original
  skeleton, so user/assistant alternation, the number of turns and messages and the
  total character count are kept while the order of content is destroyed.
- ``unrelated_session``: a real prefix of another session (``ctx.others``, chosen by the
  seeded generator), snapshotted at the same relative position (or its last step when
  that is too short) and windowed to the real prefix's character count, so it is never
  longer and usually within a few percent (``ArmPrefix.reference_n_chars`` records the
  target).
- ``scratch``: no session content (only the preamble, if one is given).

An :class:`ArmPrefix` is never mutated: interventions return a new one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, TypeVar

from ..sessions.render import DEFAULT_WINDOW, Prefix, PrefixTurn, render_prefix, JOINER
from ..sessions.model import Session
from ..sessions.snapshot import Snapshot, snapshot_at
from .filler import filler_like
from ..engine.registry import Registry
from ..engine.hashing import rng_for, seed_for

INSTRUMENT_SEED = 20260501  # the default instrument seed of every filler, shuffle and choice


@dataclass(frozen=True)
class Insertion:
    """Messages an intervention inserted, where, and their approximate token count."""

    intervention: str
    at: int  # index in the body (session messages) before which they were inserted
    messages: tuple[dict, ...]
    tokens: int
    chars: int


@dataclass(frozen=True)
class ArmPrefix:
    """The conditioning context of a cell: messages (preamble first, if any) and skeleton.

    ``turns`` and ``n_chars`` describe the session-like content the arm produced,
    before any intervention; ``inserted`` lists what interventions added.
    """

    arm: str
    messages: tuple[dict, ...]
    turns: tuple[PrefixTurn, ...]
    n_chars: int
    session_id: str
    step: int
    window: int | None
    preamble: str | None = None
    source: str = ""  # where the content came from: "<session>@<step>", "lorem", ""
    seed: int | None = None
    reference_n_chars: int | None = None  # the real prefix length this arm is matched to
    truncated: bool = False
    intervention: str = "none"
    inserted: tuple[Insertion, ...] = ()

    @property
    def body(self) -> tuple[dict, ...]:
        return self.messages[1:] if self.preamble is not None else self.messages

    @property
    def inserted_tokens(self) -> int:
        return sum(i.tokens for i in self.inserted)

    @property
    def inserted_chars(self) -> int:
        return sum(i.chars for i in self.inserted)


@dataclass(frozen=True)
class ArmContext:
    window: int | None = DEFAULT_WINDOW
    instrument_seed: int = INSTRUMENT_SEED
    preamble: str | None = None
    redact: bool = True
    others: tuple[Session, ...] = field(default=(), repr=False)  # for unrelated_session
    real: Prefix | None = field(default=None, repr=False)  # this snapshot's real prefix, if known


Arm = Callable[[Snapshot, ArmContext], ArmPrefix]
T = TypeVar("T")
ARMS: Registry[Arm] = Registry("arm")


def real_prefix(snapshot: Snapshot, ctx: ArmContext) -> Prefix:
    if ctx.real is not None and (ctx.real.session_id, ctx.real.step) == (snapshot.session_id, snapshot.step):
        return ctx.real
    return render_prefix(snapshot, window=ctx.window, preamble=ctx.preamble, redact=ctx.redact)


def _from_prefix(arm: str, p: Prefix, **kw) -> ArmPrefix:
    return ArmPrefix(arm=arm, messages=p.messages, turns=p.turns, n_chars=p.n_chars,
                     session_id=p.session_id, step=p.step, window=p.window, preamble=p.preamble,
                     truncated=p.truncated, **kw)


def _key(snapshot: Snapshot, ctx: ArmContext, arm: str) -> tuple:
    return (snapshot.session_id, snapshot.step, ctx.window, arm)


@ARMS.register("real")
def real(snapshot: Snapshot, ctx: ArmContext) -> ArmPrefix:
    p = real_prefix(snapshot, ctx)
    return _from_prefix("real", p, source=f"{p.session_id}@{p.step}")


@ARMS.register("filler")
def filler(snapshot: Snapshot, ctx: ArmContext) -> ArmPrefix:
    p = real_prefix(snapshot, ctx)
    key = _key(snapshot, ctx, "filler")
    messages, turns = filler_like(p, rng_for(ctx.instrument_seed, *key))
    return ArmPrefix(arm="filler", messages=messages, turns=turns, n_chars=p.n_chars,
                     session_id=p.session_id, step=p.step, window=p.window, preamble=p.preamble,
                     source="lorem", seed=seed_for(ctx.instrument_seed, *key),
                     reference_n_chars=p.n_chars, truncated=p.truncated)


@ARMS.register("shuffled_real")
def shuffled_real(snapshot: Snapshot, ctx: ArmContext) -> ArmPrefix:
    p = real_prefix(snapshot, ctx)
    key = _key(snapshot, ctx, "shuffled_real")
    rng = rng_for(ctx.instrument_seed, *key)
    texts = list(p.texts)
    new_texts, new_kinds = list(texts), [t.kind for t in p.turns]
    for role in ("user", "assistant"):
        slots = [i for i, t in enumerate(p.turns) if t.role == role]
        for slot, src in zip(slots, rng.permutation(slots)):
            new_texts[slot], new_kinds[slot] = texts[src], p.turns[src].kind
    turns = tuple(PrefixTurn(t.role, k, len(x), t.message) for t, k, x in zip(p.turns, new_kinds, new_texts))
    body = [[] for _ in range(len(p.body))]
    for t, x in zip(turns, new_texts):
        body[t.message].append(x)
    messages = tuple(p.messages[:1] if p.preamble is not None else ()) + tuple(
        {"role": m["role"], "content": JOINER.join(parts)} for m, parts in zip(p.body, body))
    return ArmPrefix(arm="shuffled_real", messages=messages, turns=turns, n_chars=p.n_chars,
                     session_id=p.session_id, step=p.step, window=p.window, preamble=p.preamble,
                     source=f"{p.session_id}@{p.step}", seed=seed_for(ctx.instrument_seed, *key),
                     reference_n_chars=p.n_chars, truncated=p.truncated)


#: The share of the real prefix's length an unrelated prefix should reach (else the longest found is taken).
MATCH_SHARE = 0.9


def candidate_steps(relative: float, n: int) -> tuple[int, ...]:
    """Where another session of ``n`` steps is tried for a prefix at ``relative`` (step / the
    session's last): the same relative step (at least 1), then its last step."""
    return tuple(dict.fromkeys((min(n, max(1, round(relative * n))), n)))


def length_matched(sessions: Iterable[Iterable[T]], size: Callable[[T], int], target: int) -> T:
    """The unrelated prefix chosen: each session's candidates (lazily rendered) in turn, the
    first reaching :data:`MATCH_SHARE` of ``target`` ends the search; the longest seen is taken."""
    best = None
    for candidates in sessions:
        for candidate in candidates:
            if best is None or size(candidate) > size(best):
                best = candidate
            if size(candidate) >= MATCH_SHARE * target:
                break
        if best is not None and size(best) >= MATCH_SHARE * target:
            break
    if best is None:
        raise ValueError("no unrelated session to choose from")
    return best


@ARMS.register("unrelated_session")
def unrelated_session(snapshot: Snapshot, ctx: ArmContext) -> ArmPrefix:
    target = real_prefix(snapshot, ctx).n_chars
    others = [s for s in ctx.others if s.session_id != snapshot.session_id and s.n_agent_steps]
    if not others:
        raise ValueError("the unrelated_session arm needs other sessions: pass them as "
                         "ArmContext(others=...) / build_cells(..., others=...)")
    if target <= 0:
        raise ValueError(f"nothing to length-match: the real prefix of {snapshot.session_id!r} "
                         f"at step {snapshot.step} is empty")
    key = _key(snapshot, ctx, "unrelated_session")
    rng = rng_for(ctx.instrument_seed, *key)
    relative = snapshot.step / max(1, snapshot.n_steps_total)

    def renderings(other: Session):
        for step in candidate_steps(relative, other.n_agent_steps):
            yield render_prefix(snapshot_at(other, step), window=target, preamble=ctx.preamble, redact=ctx.redact)

    best = length_matched((renderings(others[int(i)]) for i in rng.permutation(len(others))),
                          lambda p: p.n_chars, target)
    return ArmPrefix(arm="unrelated_session", messages=best.messages, turns=best.turns,
                     n_chars=best.n_chars, session_id=snapshot.session_id, step=snapshot.step,
                     window=ctx.window, preamble=best.preamble,
                     source=f"{best.session_id}@{best.step}", seed=seed_for(ctx.instrument_seed, *key),
                     reference_n_chars=target, truncated=best.truncated)


@ARMS.register("scratch")
def scratch(snapshot: Snapshot, ctx: ArmContext) -> ArmPrefix:
    head = ({"role": "system", "content": ctx.preamble},) if ctx.preamble is not None else ()
    return ArmPrefix(arm="scratch", messages=head, turns=(), n_chars=0,
                     session_id=snapshot.session_id, step=snapshot.step, window=ctx.window,
                     preamble=ctx.preamble)


def make_prefix(arm: str, snapshot: Snapshot, ctx: ArmContext = ArmContext()) -> ArmPrefix:
    """Run the arm registered as ``arm`` (unknown names list the valid ones)."""
    return ARMS.get(arm)(snapshot, ctx)


def matched_filler(snapshot: Snapshot, real: Prefix) -> tuple[dict, ...]:
    """The filler arm's messages matched to ``real``, the snapshot's rendered prefix (its turn
    skeleton and character counts): how the other designs put a long context of no session
    before their questions."""
    return make_prefix("filler", snapshot, ArmContext(window=real.window, real=real)).messages


def arm_names() -> list[str]:
    return ARMS.names()


__all__ = ["ARMS", "ArmContext", "ArmPrefix", "Insertion", "make_prefix", "matched_filler", "arm_names",
           "real_prefix"]
