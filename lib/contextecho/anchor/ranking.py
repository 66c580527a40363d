"""Ranking ANCHOR's targets by each instrument, and how far the rankings agree.

ANCHOR's seed finds that "the questionnaire and turn-level judge can rank the same models
differently". Each instrument scores every target as a ratio of sums over sessions
(:class:`Instrument`: per target and session, a sum of observations and their number):

* :func:`retention_instrument` — Persona Retention: the mean R at the last checkpoint over
  facets and sessions, on the session prefix (one observation per session and facet with R);
* :func:`recall_instrument` — recall accuracy with the long-context window, on the calibrated
  main set where every target has main items asked, else on the blind-kept items (the
  instrument's name says which);
* :func:`axes_instruments` — per judge, the share of the target's forked turns decided to hold
  all four axes (a turn one observation; undecided turns are left out).

:func:`ranking_table` ranks the targets under each instrument (1 = the highest score; tied
scores share their average rank; a target without a score is unranked).
:func:`agreement_table` gives Kendall's τ-b (``scipy.stats.kendalltau``) between every pair of
rankings over the targets with a score under both, and its 95% percentile bootstrap interval
resampling sessions (the same draw of sessions for every instrument, seeded); a resample where
τ is undefined — fewer than two targets with scores under both, or a ranking of ties only — is
counted and left out of the interval.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, rankdata

from ..stats.resampling import Resampling
from .axes.report import all_axes_held
from .axes.turns import FORK
from .retention.runs import CHECKPOINT

#: The context condition recall ranks the targets under.
RECALL_CONDITION = "long_context"
RETENTION = "retention"


@dataclass(frozen=True, eq=False)
class Instrument:
    """One way of scoring the targets: ``sums[t, s]`` and ``counts[t, s]``, the total and the
    number of observations of target ``targets[t]`` in session ``s``; a target's score is
    ``sums.sum() / counts.sum()`` over the sessions drawn (NaN without an observation).
    ``why`` says why a target has no score."""

    name: str
    targets: tuple[str, ...]
    sums: np.ndarray
    counts: np.ndarray
    why: str = "no observation"

    def scores(self, draws: np.ndarray | None = None) -> np.ndarray:
        """Each target's score (``(T,)``), or one row per replicate for ``draws`` (``(b, S)``:
        how many times each session was drawn)."""
        w = np.ones((1, self.sums.shape[1])) if draws is None else np.asarray(draws, dtype=float)
        total, n = w @ self.sums.T, w @ self.counts.T
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(n > 0, total / np.where(n > 0, n, 1), np.nan)
        return out[0] if draws is None else out


def instrument(name: str, frame: pd.DataFrame, value: str, targets: Sequence[str], sessions: Sequence[str],
               why: str) -> Instrument:
    """An :class:`Instrument` from ``frame``'s rows (``target``, ``session`` and the observation
    ``value``; NaN observations left out), over ``targets`` and ``sessions`` in their order."""
    rows = frame[frame[value].notna()] if len(frame) else frame
    sums, counts = np.zeros((len(targets), len(sessions))), np.zeros((len(targets), len(sessions)))
    t_of, s_of = {t: k for k, t in enumerate(targets)}, {s: k for k, s in enumerate(sessions)}
    if len(rows):
        grouped = rows.groupby(["target", "session"])[value].agg(["sum", "count"])
        for (target, session), (total, n) in grouped.iterrows():
            if target in t_of and session in s_of:
                sums[t_of[target], s_of[session]], counts[t_of[target], s_of[session]] = total, n
    return Instrument(name, tuple(targets), sums, counts, why)


def retention_instrument(table: pd.DataFrame, targets: Sequence[str], sessions: Sequence[str],
                         checkpoint: int) -> Instrument:
    """Persona Retention at ``checkpoint`` (the last) on the session prefix: one observation
    per session and facet with R (``table``: the retention rows with a ``target`` column)."""
    rows = table[(table["arm"] == CHECKPOINT) & (table["checkpoint"] == checkpoint)] if len(table) else table
    return instrument(RETENTION, rows, "retention", targets, sessions,
                      f"no facet has R at checkpoint {checkpoint} on the session prefix in any session")


def recall_instrument(per_item: pd.DataFrame, targets: Sequence[str], sessions: Sequence[str]) -> Instrument:
    """Recall accuracy under the long-context window (``per_item``: one row per target, item
    and condition); on the main set where every target with items asked has main ones,
    else on the blind-kept items."""
    asked = per_item[(per_item["condition"] == RECALL_CONDITION) & per_item["context"]] if len(per_item) else per_item
    with_items = set(asked["target"]) if len(asked) else set()
    main = bool(with_items) and with_items <= set(asked.loc[asked["main"], "target"])
    rows = asked[asked["main"]] if main else asked
    rows = rows.assign(correct=rows["correct"].astype(float)) if len(rows) else rows
    return instrument(f"recall ({'main set' if main else 'blind-kept'})", rows, "correct", targets, sessions,
                      f"no recall item was asked with the {RECALL_CONDITION} context")


def axes_instruments(axes: pd.DataFrame, targets: Sequence[str], sessions: Sequence[str],
                     judges: Sequence[str]) -> list[Instrument]:
    """Per judge, the share of the target's forked turns holding all four axes among the
    decided ones (``axes``: one row per turn, axis and judge verdict)."""
    turns = all_axes_held(axes) if len(axes) else pd.DataFrame(columns=["source", "judge_model", "all_held"])
    forks = turns[turns["source"] == FORK]
    forks = forks.assign(held=forks["all_held"].astype("Float64").to_numpy(dtype=float, na_value=np.nan))
    return [instrument(f"all four axes ({judge})", forks[forks["judge_model"] == judge], "held", targets, sessions,
                       f"no forked turn was decided by {judge}") for judge in judges]


def ranks(scores: np.ndarray) -> np.ndarray:
    """1 for the highest score; tied scores share their average rank; NaN unranked."""
    scores = np.asarray(scores, dtype=float)
    out = np.full(len(scores), np.nan)
    scored = ~np.isnan(scores)
    out[scored] = rankdata(-scores[scored], method="average")
    return out


def ranking_table(instruments: Sequence[Instrument]) -> pd.DataFrame:
    """One row per instrument and target: its score and rank (a missing score noted)."""
    rows = []
    for inst in instruments:
        scores = inst.scores()
        for target, score, rank, n in zip(inst.targets, scores, ranks(scores), inst.counts.sum(axis=1)):
            rows.append({"instrument": inst.name, "target": target, "score": score, "rank": rank, "n": int(n),
                         "note": "" if n else inst.why})
    return pd.DataFrame(rows, columns=["instrument", "target", "score", "rank", "n", "note"])


def tau_b(a: np.ndarray, b: np.ndarray) -> tuple[float, int, str]:
    """Kendall's τ-b of two score vectors over the targets scored under both (scipy), with
    how many those are; NaN and the reason where it is undefined."""
    both = ~(np.isnan(a) | np.isnan(b))
    n = int(both.sum())
    if n < 2:
        return np.nan, n, f"{n} target{'' if n == 1 else 's'} with a score under both; a ranking needs two"
    if np.unique(a[both]).size < 2 or np.unique(b[both]).size < 2:
        return np.nan, n, "every target has the same score under one of them: no ranking to compare"
    return float(kendalltau(a[both], b[both]).statistic), n, ""


def agreement_table(instruments: Sequence[Instrument], *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Per pair of instruments: τ-b between their rankings, and its 95% percentile interval
    over ``n_resamples`` draws of the sessions with replacement (module doc), with the
    resamples used and those left out because τ was undefined in them."""
    columns = ["instrument_a", "instrument_b", "n_targets", "tau", "ci_low", "ci_high", "n_used", "n_undefined",
               "note"]
    if len(instruments) < 2:
        return pd.DataFrame(columns=columns)
    n_sessions = instruments[0].sums.shape[1]
    if n_sessions:
        draws = Resampling.clusters(n_sessions, "session").draw(np.random.default_rng(seed), n_resamples)
        replicated = [inst.scores(draws) for inst in instruments]
    rows = []
    for (i, a), (j, b) in combinations(enumerate(instruments), 2):
        tau, n, why = tau_b(a.scores(), b.scores())
        row = {"instrument_a": a.name, "instrument_b": b.name, "n_targets": n, "tau": tau, "ci_low": np.nan,
               "ci_high": np.nan, "n_used": 0, "n_undefined": 0, "note": why}
        if not why:
            taus = np.array([tau_b(x, y)[0] for x, y in zip(replicated[i], replicated[j])])
            used = taus[~np.isnan(taus)]
            row.update(n_used=len(used), n_undefined=int(np.isnan(taus).sum()))
            if len(used):
                row["ci_low"], row["ci_high"] = np.percentile(used, [2.5, 97.5])
            if row["n_undefined"]:
                row["note"] = (f"{row['n_undefined']} of {n_resamples} resamples left out: τ is undefined in them"
                               + ("" if len(used) else ", so there is no interval"))
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)
