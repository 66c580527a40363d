"""The bridge to drift: the inventory administered on snapshot prefixes of a session.

At each snapshot position of a coding session, every *arm* turns the snapshot into a
chat prefix; the questionnaire is then administered after that prefix (context-free:
each item alone after the prefix; context-dependent: the items and the model's replies
accumulate after it). Comparing arms position by position gives the questionnaire
counterpart of the probe surface: the self-reported OCEAN profile, and TC / OC across
runs, of the model conditioned on the real session versus on a matched filler.

An arm is any callable ``Snapshot -> list of chat messages``. :func:`session_prefix_provider`
renders the session itself (``sessions.render_prefix``, redacted). The filler arm
(length/structure-matched filler, ``contextecho.echo``) plugs in the same way,
``arms={"real": session_prefix_provider(), "filler": filler}``; this module does not import it.

Runs of one (position, arm) differ only by replicate, so they differ at all only
under sampling: pass ``params={"temperature": 1.0, ...}`` for TC / OC across runs.
On the embedded model (8,192 tokens) keep the prefix short (``session_prefix_provider(window=…)``
in characters) and the questionnaire's history short (``administer(history_pairs=…)``); an
oversized request fails before any compute.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..sessions.positions import Position
from ..sessions.model import Session
from ..sessions.render import render_prefix
from ..sessions.snapshot import snapshot_at, Snapshot
from .administer import RunSpec
from .consistency import ocean_consistency, trajectory_consistency
from .inventory import TRAITS, Inventory
from .metrics import NoComparableItems, pointwise_consistency
from .profiles import ocean_matrix, ocean_profiles, trajectory_matrix

PrefixProvider = Callable[[Snapshot], Sequence[dict]]


def session_prefix_provider(window: int | None = 4_000, **render_kwargs: Any) -> PrefixProvider:
    """The real session as the prefix: ``render_prefix(snapshot, window=window, ...)``."""
    def provider(snapshot: Snapshot) -> list[dict]:
        return list(render_prefix(snapshot, window=window, **render_kwargs).messages)
    return provider


def bridge_runs(session: Session, positions: Sequence[Position], arms: Mapping[str, PrefixProvider],
                inventory: Inventory, *, n_runs: int = 3, **run_kwargs: Any) -> list[RunSpec]:
    """One run per (position, arm, run); labels ``session, snapshot`` (the position's label)
    ``, step, arm, run``."""
    runs = []
    for pos in positions:
        snapshot = snapshot_at(session, pos.step)
        for arm, provider in arms.items():
            prefix = tuple(dict(m) for m in provider(snapshot))
            for r in range(n_runs):
                runs.append(RunSpec(
                    run_id=f"{session.session_id}/{pos.label}/{arm}/r{r + 1}", items=inventory.items,
                    prefix=prefix, replicate=r,
                    labels={"session": session.session_id, "snapshot": pos.label, "step": pos.step,
                            "arm": arm, "run": r + 1, "prefix_messages": len(prefix)},
                    **run_kwargs))
    return runs


def bridge_summary(answers: pd.DataFrame) -> pd.DataFrame:
    """Per (session, snapshot, step, arm): mean OCEAN profile over runs, invalid answers,
    and, with two or more runs, TAR / ED / TC / OC across them. ``comparable`` is False
    where every item was invalid in some run (no consistency metrics for that row)."""
    rows = []
    keys = ["session", "snapshot", "step", "arm"]
    for key, group in answers.groupby(keys, sort=False):
        ids = list(dict.fromkeys(group.sort_values("run")["run_id"]))
        profile = ocean_profiles(group)[list(TRAITS)].mean()
        row = dict(zip(keys, key)) | {t: profile[t] for t in TRAITS} | {
            "n_runs": len(ids), "n_invalid": int((group["status"] != "ok").sum())}
        if len(ids) >= 2:
            scores, _ = trajectory_matrix(group, ids)
            try:
                point = pointwise_consistency(scores)
                tc = trajectory_consistency(scores).value
            except NoComparableItems:
                row["comparable"] = False
                rows.append(row)
                continue
            ocean = ocean_matrix(group, ids)
            row |= {"comparable": True, "tar": point.tar, "ed": point.ed, "tc": tc,
                    "oc": ocean_consistency(ocean).value if not np.isnan(ocean).any() else np.nan}
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["session", "step", "arm"], ignore_index=True)
