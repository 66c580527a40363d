"""Where to snapshot a session: named position schemes, each a tuple of :class:`Position`.

- ``uniform``: ``k`` steps spread evenly from the first to the last agent step
  (default 12, the paper's panel); labels ``u01``..``u12``.
- ``deciles``: the step at the end of the assistant message at each tenth of the
  session's assistant messages (messages that took at least one step); ``d01``..``d10``.
- ``compaction``: around every compaction *j*, ``c{j}_pre`` = the last step before it
  and ``c{j}_post`` = the first step after it (either is left out when it does not
  exist).
- ``microcompaction``: the same around every microcompaction *j* (old tool results
  dropped, the rest kept), labelled ``m{j}_pre`` and ``m{j}_post``.
- ``early``: an explicit list of steps for onset sweeps (default 1, 5, 25, 125, 625,
  3125), those beyond the session's end dropped; labels ``s1``, ``s5``, ...
- ``late``: the one step :data:`LATE_OFFSET` before the last (the late-session position of
  the framing ablation); label ``late``.

Positions are sorted by step and de-duplicated per scheme (short sessions can map two
uniform positions to one step).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .errors import StepOutOfRange
from .model import Session

SCHEMES = ("uniform", "deciles", "compaction", "microcompaction", "early", "late")
LATE_OFFSET = 3
DEFAULT_K = 12
DEFAULT_EARLY = (1, 5, 25, 125, 625, 3125)


@dataclass(frozen=True, slots=True, order=True)
class Position:
    step: int
    label: str
    scheme: str


def _dedup(items: Iterable[Position]) -> tuple[Position, ...]:
    seen: set[int] = set()
    out = []
    for p in sorted(items):
        if p.step not in seen:
            seen.add(p.step)
            out.append(p)
    return tuple(out)


def uniform(n: int, k: int = DEFAULT_K) -> tuple[Position, ...]:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if k == 1:
        return (Position(n, "u01", "uniform"),)
    width = max(2, len(str(k)))
    return _dedup(Position(1 + round((n - 1) * i / (k - 1)), f"u{i + 1:0{width}d}", "uniform")
                  for i in range(k))


def deciles(session: Session) -> tuple[Position, ...]:
    ends = session.message_last_step
    m = len(ends)
    return _dedup(Position(ends[max(1, -(-q * m // 10)) - 1], f"d{q:02d}", "deciles")
                  for q in range(1, 11))


def around(events, n: int, letter: str, scheme: str) -> tuple[Position, ...]:
    """``{letter}{j}_pre`` / ``_post`` around each event (anything with ``steps_before``)."""
    out = []
    for j, c in enumerate(events, 1):
        if c.steps_before >= 1:
            out.append(Position(c.steps_before, f"{letter}{j}_pre", scheme))
        if c.steps_before + 1 <= n:
            out.append(Position(c.steps_before + 1, f"{letter}{j}_post", scheme))
    return tuple(sorted(out))  # pre/post of consecutive events may share a step


def around_compactions(session: Session) -> tuple[Position, ...]:
    return around(session.compactions, session.n_agent_steps, "c", "compaction")


def around_microcompactions(session: Session) -> tuple[Position, ...]:
    return around(session.microcompactions, session.n_agent_steps, "m", "microcompaction")


#: The events positions can be anchored on, each with the letter of its labels.
EVENT_TYPES = {"compaction": "c", "microcompaction": "m"}


def around_events(session: Session, n_events: int, event_types: Iterable[str] = ("compaction",)
                  ) -> tuple[Position, ...]:
    """Pre/post positions around the first ``n_events`` events of each type (0: every one)."""
    unknown = sorted(set(event_types) - set(EVENT_TYPES))
    if unknown:
        raise ValueError(f"unknown event type(s) {', '.join(unknown)}; choose from {', '.join(EVENT_TYPES)}")
    chosen: tuple[Position, ...] = ()
    for kind in event_types:
        chosen += positions(session, kind)
    if n_events > 0:
        keep = {f"{EVENT_TYPES[kind]}{j}_{phase}" for kind in event_types
                for j in range(1, n_events + 1) for phase in ("pre", "post")}
        chosen = tuple(p for p in chosen if p.label in keep)
    return tuple(sorted(chosen))


def early(n: int, steps: Iterable[int] = DEFAULT_EARLY) -> tuple[Position, ...]:
    return _dedup(Position(s, f"s{s}", "early") for s in steps if 1 <= s <= n)


def positions(session: Session, scheme: str = "uniform", *, k: int = DEFAULT_K,
              steps: Iterable[int] | None = None) -> tuple[Position, ...]:
    """Snapshot positions of ``session`` under ``scheme`` (one of :data:`SCHEMES`)."""
    n = session.n_agent_steps
    if n == 0:
        raise StepOutOfRange(session.path, 1, 0)
    if scheme == "uniform":
        return uniform(n, k)
    if scheme == "deciles":
        return deciles(session)
    if scheme == "compaction":
        return around_compactions(session)
    if scheme == "microcompaction":
        return around_microcompactions(session)
    if scheme == "early":
        return early(n, DEFAULT_EARLY if steps is None else steps)
    if scheme == "late":
        return (Position(max(1, n - LATE_OFFSET), "late", "late"),)
    raise ValueError(f"unknown position scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")


def session_order(labelled: Iterable[tuple[str, int]]) -> list[str]:
    """Position labels in the order of a session: ``labelled`` holds (label, step) pairs (the
    same label may stand at another step in another session); each label is placed at its
    median step, ties in order of appearance. Never the labels' alphabetical order
    (``c1_post`` before ``c1_pre``)."""
    steps: dict[str, list[int]] = {}
    for label, step in labelled:
        steps.setdefault(str(label), []).append(int(step))
    twice_median = {label: sorted(s)[(len(s) - 1) // 2] + sorted(s)[len(s) // 2] for label, s in steps.items()}
    return sorted(steps, key=lambda label: twice_median[label])  # sorted is stable: ties keep their first appearance
