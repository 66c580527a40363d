"""e16's summary of the probe-framing ablation: the judge's scores per framing and probe,
pooled per framing, and the framing effect framed − bare (``experiments/
e16_probe_framing_ablation/run.py:141-176``). Shared by the framing notebook, its run-level
conformance and the re-analysis of the released cells (the published notebook)."""
from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from ..echo.probes import FRAMINGS
from .scores import failure_column

FRAMED, BARE = FRAMINGS
#: The ``probe`` of a framing's pooled row in :func:`framing_results`.
OVERALL = "overall"


def _mean(scores: Sequence[float]) -> float:
    return sum(scores) / len(scores) if scores else math.nan


def framing_results(primary: pd.DataFrame, failures: str = "out") -> pd.DataFrame:
    """Per target, framing and probe (in the frame's order): the ``scores`` (replicate order),
    their ``n`` and ``mean``; then per target and framing the pooled row (``probe``
    :data:`OVERALL`: the mean of all that framing's scores). ``failures``: ``out`` reads the
    valid verdicts, ``in`` every score the harness stored, its −1s included
    (:func:`~.scores.failure_column`); a cell without a score counts nowhere."""
    column = failure_column(failures)
    rows = []
    for target, own in primary.groupby("target", sort=False):
        for framing, g in own.groupby("framing", sort=False):
            g = g.sort_values(["session", "step", "replicate"], kind="stable")
            pooled: list[float] = []
            for probe, cells in g.groupby("item", sort=False):
                scores = [float(v) for v in cells[column] if pd.notna(v)]
                pooled += scores
                rows.append({"target": target, "framing": framing, "probe": probe, "mean": _mean(scores),
                             "n": len(scores), "scores": scores})
            rows.append({"target": target, "framing": framing, "probe": OVERALL, "mean": _mean(pooled),
                         "n": len(pooled), "scores": pooled})
    return pd.DataFrame(rows, columns=["target", "framing", "probe", "mean", "n", "scores"])


def framing_effect(results: pd.DataFrame) -> pd.DataFrame:
    """Per target of :func:`framing_results`: the pooled means framed and bare and the effect
    framed − bare (NaN where a framing has no score; a ``note`` says why)."""
    rows = []
    pooled = results[results["probe"] == OVERALL]
    for target, g in pooled.groupby("target", sort=False):
        means = dict(zip(g["framing"], g["mean"]))
        counts = dict(zip(g["framing"], g["n"]))
        framed, bare = means.get(FRAMED, math.nan), means.get(BARE, math.nan)
        missing = [f for f in FRAMINGS if not counts.get(f)]
        rows.append({"target": target, "framed_mean": framed, "bare_mean": bare, "effect": framed - bare,
                     "n_framed": counts.get(FRAMED, 0), "n_bare": counts.get(BARE, 0),
                     "note": f"not estimable: no score {' or '.join(missing)}" if missing else ""})
    return pd.DataFrame(rows, columns=["target", "framed_mean", "bare_mean", "effect", "n_framed", "n_bare",
                                       "note"])
