"""Where the retention questionnaire is asked, and Persona Retention per facet.

ANCHOR's Identity Probe asks one fixed questionnaire in four kinds of condition. The
questionnaire and its administration are CAPE's (a trait-balanced subset of MPI-120, asked
context-free); this module lays out what comes before it, one :class:`RetentionRun` per
administration (:func:`retention_runs`), and the experiment
(:mod:`contextecho.experiments.anchor_retention`) asks the questionnaire after each:

- ``generic``: no system message, no history (the same model as a generic assistant);
- ``initial``: only the persona card as the system message;
- ``checkpoint``: the card, then a session's snapshot prefix at checkpoint ``c`` of
  ``k`` (agent step ``round(n · c / k)`` of ``n``, so the last checkpoint is the end);
- ``filler``: the card, then the length- and structure-matched filler of that same
  snapshot: what a long context alone does. The filler is ContextEcho's (its ``filler``
  arm); the experiment passes it in as a :data:`FillerPrefix`, so that ANCHOR imports
  neither of the other designs.

Per (session, checkpoint, arm) and facet, :func:`retention_table` compares the item
scores (the mean over replicate runs) with the initial and generic ones using
:func:`.measure.facet_retention`. Its facets are the five OCEAN traits by default, or any
item → facet map (the inventory's 30 IPIP facets, 4 items each in the full MPI-120). Only
items answered validly in all three conditions enter a facet's vectors; the dropped ones
are counted. A facet the persona does not displace (initial = generic) is reported as
``undefined``, never as a number.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from contextecho.sessions.render import Prefix, render_prefix
from contextecho.sessions.model import Session
from contextecho.sessions.snapshot import Snapshot, snapshot_at

from ..persona import PersonaCard
from .measure import DegenerateFacet, facet_retention

GENERIC, INITIAL, CHECKPOINT, FILLER = "generic", "initial", "checkpoint", "filler"
RETENTION_ARMS = (CHECKPOINT, FILLER)

FillerPrefix = Callable[[Snapshot, Prefix], Sequence[dict]]
"""The filler messages matching ``real``, the snapshot's rendered prefix (turn skeleton and
character counts)."""


@dataclass(frozen=True)
class RetentionRun:
    """One administration of the questionnaire: asked after ``prefix``, as replicate ``replicate``."""

    run_id: str  # condition/session/checkpoint/run, e.g. "checkpoint/<session>/c2/r1"
    prefix: tuple[dict, ...]  # the card as system message, then the session's or the filler's prefix
    replicate: int
    labels: Mapping[str, Any]  # condition, session, checkpoint, step, run, card_sha256


def checkpoint_steps(n_steps: int, k: int = 4) -> tuple[int, ...]:
    """Agent steps of checkpoints 1..k: evenly spaced, the last at the session's end."""
    if n_steps < 1 or k < 1:
        raise ValueError(f"need at least one step and one checkpoint, got {n_steps} steps, k={k}")
    return tuple(max(1, round(n_steps * c / k)) for c in range(1, k + 1))


def _prefixes(arms: Sequence[str], session: Session, step: int, window: int,
              filler: FillerPrefix | None) -> dict[str, tuple[dict, ...]]:
    """Each arm's prefix at ``step``; the snapshot is rendered once and the filler mirrors it."""
    snapshot = snapshot_at(session, step)
    real = render_prefix(snapshot, window=window)
    out = {CHECKPOINT: tuple(real.messages)} if CHECKPOINT in arms else {}
    if FILLER in arms:
        out[FILLER] = tuple(filler(snapshot, real))
    return out


def retention_runs(card: PersonaCard, sessions: Sequence[Session], *, checkpoints: int = 4,
                   window: int = 4000, arms: Sequence[str] = RETENTION_ARMS, n_runs: int = 1,
                   filler: FillerPrefix | None = None) -> list[RetentionRun]:
    """Every run of the retention design: generic, initial, and each session × checkpoint × arm.
    The ``filler`` arm needs ``filler``, the filler prefix matching a rendered prefix."""
    unknown = set(arms) - set(RETENTION_ARMS)
    if unknown:
        raise ValueError(f"unknown retention arm(s) {sorted(unknown)}; choose from {RETENTION_ARMS}")
    if FILLER in arms and filler is None:
        raise ValueError("the filler arm needs its prefixes: pass filler=, a FillerPrefix")
    system = ({"role": "system", "content": card.system_prompt()},)
    layout = [(GENERIC, None, 0, 0, ()), (INITIAL, None, 0, 0, system)]
    for s in sessions:
        for c, step in enumerate(checkpoint_steps(s.n_agent_steps, checkpoints), start=1):
            prefixes = _prefixes(arms, s, step, window, filler)
            layout += [(arm, s, c, step, system + prefixes[arm]) for arm in arms]
    runs = []
    for condition, session, c, step, prefix in layout:
        sid = session.session_id if session is not None else ""
        for r in range(n_runs):
            runs.append(RetentionRun(
                run_id=f"{condition}/{sid}/c{c}/r{r + 1}", prefix=prefix, replicate=r,
                labels={"condition": condition, "session": sid, "checkpoint": c,
                        "step": step, "run": r + 1, "card_sha256": card.sha256}))
    return runs


def _item_means(answers: pd.DataFrame) -> pd.Series:
    """Mean valid score per item over replicate runs (NaN when no run answered it)."""
    return answers.groupby("item")["score"].mean()


def retention_table(answers: pd.DataFrame, facets: Mapping[int, str] | None = None) -> pd.DataFrame:
    """One row per (session, checkpoint, step, arm, facet): R, items used and dropped, status.
    ``facets`` maps item index to facet; by default an item's facet is its OCEAN trait
    (``Inventory.ipip_facets()`` gives the inventory's finer IPIP facets instead)."""
    base = {c: answers[answers["condition"] == c] for c in (GENERIC, INITIAL)}
    if any(frame.empty for frame in base.values()):
        raise ValueError("retention needs the generic and initial administrations")
    generic, initial = _item_means(base[GENERIC]), _item_means(base[INITIAL])
    asked = answers.drop_duplicates("item").set_index("item")
    if facets is None:
        traits = asked["trait"]
    else:
        missing = sorted(set(asked.index) - set(facets))
        if missing:
            raise ValueError(f"no facet given for item(s) {missing}")
        traits = pd.Series({i: facets[i] for i in asked.index}, name="facet")
    later = answers[answers["condition"].isin(RETENTION_ARMS)]
    rows = []
    for (session, c, step, arm), group in later.groupby(["session", "checkpoint", "step", "condition"]):
        now = _item_means(group)
        for facet, items in traits.groupby(traits).groups.items():
            vectors = pd.DataFrame({"i": initial.reindex(items), "g": generic.reindex(items),
                                    "l": now.reindex(items)})
            usable = vectors.dropna()
            row = {"session": session, "checkpoint": int(c), "step": int(step), "arm": arm,
                   "facet": facet, "n_items": len(usable), "n_dropped": len(vectors) - len(usable)}
            if usable.empty:
                rows.append(row | {"retention": np.nan, "displacement": np.nan, "status": "no valid items"})
                continue
            try:
                r = facet_retention(usable["i"], usable["g"], usable["l"], facet)
            except DegenerateFacet:
                rows.append(row | {"retention": np.nan, "displacement": 0.0, "status": "undefined"})
                continue
            rows.append(row | {"retention": r.retention, "displacement": r.displacement, "status": "ok"})
    return pd.DataFrame(rows).sort_values(["arm", "session", "checkpoint", "facet"], ignore_index=True)
