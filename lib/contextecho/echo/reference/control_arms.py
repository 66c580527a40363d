"""Our control arms, in the reference protocol's rendering: ours, not the harness's.

The harness's runners compare the real prefix with filler only (its e03 A1 and e11 conditions
are other designs: :mod:`.context_source`). The seed's controls are arms of our own
(:mod:`contextecho.echo.arms`); under ``reference`` they are built from the harness's rendering
(:mod:`.transcript`), so that a cell differs from its real one only in the context's content:

* ``shuffled_real``: the real prefix's blocks (:func:`~.transcript.prefix_blocks`) permuted
  within each role (``USER`` among user slots, ``ASSISTANT`` among assistant slots; a
  compaction summary stays first), then joined and windowed as the real prefix is. The
  blocks' total length is unchanged, so the windowed text is as long as the real one.
  The permutation is seeded from (instrument seed, session, turn, window, arm).
* ``unrelated_session``: the prefix of another of the run's sessions at the same relative
  turn (turn / the session's last turn, at least turn 1), windowed to the real prefix's
  length; the other session is chosen by a seeded permutation, and its last turn is tried
  when the relative one gives less than :data:`~contextecho.echo.arms.MATCH_SHARE` of that length
  (the longest wins), as
  :func:`contextecho.echo.arms.unrelated_session` does with our rendering.
* ``scratch``: no context: the item alone (the empty prefix).

Each returns the text before redaction; the cells redact it for a hosted target as they
redact the real prefix (:mod:`.cells`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...engine.hashing import rng_for, seed_for
from ...engine.registry import UnknownNameError
from ..arms import INSTRUMENT_SEED, candidate_steps, length_matched
from .transcript import Block, joined, prefix_blocks, render_prefix, turn_index

SHUFFLED_REAL, UNRELATED_SESSION, SCRATCH = "shuffled_real", "unrelated_session", "scratch"
#: Our control arms this module renders (the real and filler arms are the harness's).
CONTROL_ARMS = (SHUFFLED_REAL, UNRELATED_SESSION, SCRATCH)
#: Roles whose blocks trade places (a compaction summary keeps its place).
SHUFFLED_ROLES = ("USER", "ASSISTANT")


@dataclass(frozen=True)
class ControlText:
    """A control arm's context at one position: its text (before redaction), where it came
    from (``<session>@<turn>``; ``""`` for scratch) and the seed that chose it (None: none)."""

    text: str
    source: str
    seed: int | None = None


@dataclass(frozen=True)
class Turns:
    """One session's rows and turn index, as the harness reads them."""

    session_id: str
    rows: Sequence
    index: dict[int, int]

    @property
    def last(self) -> int:
        return max(self.index)


def shuffled_blocks(blocks: Sequence[Block], rng) -> list[Block]:
    """``blocks`` with each role's blocks permuted among that role's slots."""
    out = list(blocks)
    for role in SHUFFLED_ROLES:
        slots = [i for i, b in enumerate(blocks) if b.role == role]
        for slot, source in zip(slots, rng.permutation(slots)):
            out[slot] = blocks[int(source)]
    return out


def shuffled_real(session: Turns, turn: int, window: int, instrument_seed: int = INSTRUMENT_SEED) -> ControlText:
    key = (session.session_id, turn, window, SHUFFLED_REAL)
    blocks = prefix_blocks(list(session.rows), session.index, turn)
    text = joined(shuffled_blocks(blocks, rng_for(instrument_seed, *key)), window)
    return ControlText(text, f"{session.session_id}@{turn}", seed_for(instrument_seed, *key))


def unrelated_session(session: Turns, turn: int, window: int, real_chars: int, others: Sequence[Turns],
                      instrument_seed: int = INSTRUMENT_SEED) -> ControlText:
    pool = [o for o in others if o.session_id != session.session_id and o.last > 0]
    if not pool:
        raise ValueError("the unrelated_session arm needs another session of the run: ask for more "
                         "than one session (n_sessions)")
    if real_chars <= 0:
        raise ValueError(f"nothing to length-match: the real prefix of {session.session_id!r} at turn "
                         f"{turn} is empty")
    key = (session.session_id, turn, window, UNRELATED_SESSION)
    rng = rng_for(instrument_seed, *key)
    relative = turn / max(1, session.last)

    def renderings(other: Turns):
        for other_turn in candidate_steps(relative, other.last):
            yield render_prefix(list(other.rows), other.index, other_turn, real_chars).text, f"{other.session_id}@{other_turn}"

    best = length_matched((renderings(pool[int(i)]) for i in rng.permutation(len(pool))), lambda c: len(c[0]),
                          real_chars)
    return ControlText(best[0], best[1], seed_for(instrument_seed, *key))


def scratch() -> ControlText:
    return ControlText("", "")


def turns_of(session_id: str, rows: Sequence) -> Turns:
    return Turns(session_id, rows, turn_index(list(rows)))


def control_text(arm: str, session: Turns, turn: int, window: int, real_chars: int, pool: Sequence[Turns],
                 instrument_seed: int = INSTRUMENT_SEED) -> ControlText:
    """The context of control arm ``arm`` (module doc) at ``turn`` of ``session``; ``real_chars``:
    the length of the real prefix there (before redaction), ``pool``: the run's sessions."""
    if arm == SHUFFLED_REAL:
        return shuffled_real(session, turn, window, instrument_seed)
    if arm == UNRELATED_SESSION:
        return unrelated_session(session, turn, window, real_chars, pool, instrument_seed)
    if arm == SCRATCH:
        return scratch()
    raise UnknownNameError("control arm", arm, list(CONTROL_ARMS))
