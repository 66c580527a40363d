"""Validating the axes judge on a stratified sample: ANCHOR's seed (004) scores "a stratified
798-turn validation sample" with three judges and reports a "population-reweighted
majority-of-three estimate". The seed does not list its strata; ours are the turn's source
(real or forked) × its checkpoint (:data:`STRATA`).

:func:`stratified_sample` — ``per_stratum`` turns drawn without replacement from each stratum
of the judged turns (all of a smaller one), seeded; each sampled turn carries its stratum's
population ``N_h`` and sample size ``n_h``.

:func:`majority` — per (turn, axis), the majority of the raters' verdicts: of three binary
verdicts there is always one; an invalid verdict (or a failed call) leaves the majority of the
valid ones (one valid verdict decides alone), and none where the valid ones tie or none is valid
(``undecided``).

:func:`reweighted_rates` — per axis, and for all four axes held (a turn holds all four when every
axis's majority is held, deviates when one's is deviated, else it is undecided), the sample
rate (held among the decided sampled turns) beside the population-reweighted rate
``Σ_h W_h p_h``: ``p_h`` the stratum's held rate among its decided sampled turns and ``W_h =
N_h / Σ N`` its share of the judged turns, over the strata with a decided turn (their weights
renormalised; the strata left out are counted).

:func:`rater_agreement` — per axis, on the turns every rater judged validly, Fleiss' kappa
(statsmodels ``fleiss_kappa``; undefined, with a note, when every verdict is one category), and
pairwise Cohen's kappa per rater pair (:func:`.report.axis_agreement`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from contextecho.stats.errors import StatsInputError

from .report import axis_agreement
from .rubric import AXES

STRATA = ("source", "checkpoint")
#: The stratifications a run may choose, by name: the turn's source alone (two strata, the
#: embedded build's, whose validation must fit its time budget), or source × checkpoint.
STRATIFICATIONS = {"source": ("source",), "source_checkpoint": STRATA}
#: The row of :func:`reweighted_rates` for the share of turns holding all four axes.
ALL_FOUR = "all four"


def stratified_sample(turns: pd.DataFrame, per_stratum: int, seed: int,
                      strata: Sequence[str] = STRATA) -> pd.DataFrame:
    """``per_stratum`` of ``turns`` (one row per judged turn, ``turn_id`` and the ``strata``
    columns) from each stratum, drawn without replacement with ``numpy.random.default_rng(seed)``
    over the strata in sorted order and each stratum's turns sorted by id; with ``population``
    (``N_h``) and ``sampled`` (``n_h``)."""
    if per_stratum < 1:
        raise StatsInputError(f"per_stratum must be at least 1, got {per_stratum}")
    missing = [c for c in ("turn_id", *strata) if c not in turns.columns]
    if missing:
        raise StatsInputError(f"the judged turns lack column(s) {', '.join(missing)}")
    unique = turns.drop_duplicates("turn_id")
    if len(unique) != len(turns):
        raise StatsInputError("a turn is listed twice among the judged turns")
    rng = np.random.default_rng(seed)
    parts = []
    for _, group in unique.groupby(list(strata), sort=True, dropna=False):
        group = group.sort_values("turn_id")
        take = min(per_stratum, len(group))
        chosen = np.sort(rng.choice(len(group), size=take, replace=False))
        parts.append(group.iloc[chosen].assign(population=len(group), sampled=take))
    columns = [*turns.columns, "population", "sampled"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def majority(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per (``turn_id``, ``axis``) of ``verdicts`` (one row per rater, ``held`` 1, 0 or NaN):
    ``n_raters``, ``n_valid``, ``n_held`` and ``held`` (the majority of the valid verdicts:
    1, 0, or NaN where they tie or none is valid)."""
    rows = []
    for (turn, axis), group in verdicts.groupby(["turn_id", "axis"], sort=True):
        held = group["held"].to_numpy(float)
        valid = held[~np.isnan(held)]
        n_held, n_deviated = int((valid == 1).sum()), int((valid == 0).sum())
        rows.append({"turn_id": turn, "axis": axis, "n_raters": len(group), "n_valid": len(valid),
                     "n_held": n_held,
                     "held": 1.0 if n_held > n_deviated else 0.0 if n_deviated > n_held else np.nan})
    return pd.DataFrame(rows, columns=["turn_id", "axis", "n_raters", "n_valid", "n_held", "held"])


def _all_four(decided: pd.DataFrame) -> pd.DataFrame:
    """Per turn of :func:`majority`'s rows: 1 every axis held, 0 one deviated, else NaN."""
    rows = []
    for turn, group in decided.groupby("turn_id", sort=True):
        held = group["held"].to_numpy(float)
        value = 0.0 if (held == 0).any() else 1.0 if len(held) == len(AXES) and (held == 1).all() else np.nan
        rows.append({"turn_id": turn, "axis": ALL_FOUR, "held": value})
    return pd.DataFrame(rows, columns=["turn_id", "axis", "held"])


def reweighted_rates(majorities: pd.DataFrame, sample: pd.DataFrame,
                     strata: Sequence[str] = STRATA) -> pd.DataFrame:
    """Per axis (and :data:`ALL_FOUR`): ``n_turns`` sampled, ``n_decided``, ``n_held``, the
    ``sample_rate`` and the population-``reweighted_rate`` (module doc), with ``n_strata`` and
    ``strata_left_out`` (strata without a decided turn)."""
    per_turn = pd.concat([majorities[["turn_id", "axis", "held"]], _all_four(majorities)], ignore_index=True)
    stratum = sample.set_index("turn_id")
    key = stratum[list(strata)].astype(str).agg("|".join, axis=1)
    rows = []
    for axis in [a for a in (*AXES, ALL_FOUR) if a in set(per_turn["axis"])]:
        part = per_turn[per_turn["axis"] == axis].assign(stratum=lambda f: f["turn_id"].map(key))
        if part["stratum"].isna().any():
            raise StatsInputError(f"turn {part.loc[part['stratum'].isna(), 'turn_id'].iloc[0]} is not in the sample")
        decided = part[part["held"].notna()]
        by = decided.groupby("stratum")["held"].mean()
        population = stratum.assign(stratum=key).drop_duplicates("stratum").set_index("stratum")["population"]
        weights = population.reindex(by.index).astype(float)
        n_decided = len(decided)
        rows.append({"axis": axis, "n_turns": len(part), "n_decided": n_decided,
                     "n_held": int((decided["held"] == 1).sum()),
                     "sample_rate": float(decided["held"].mean()) if n_decided else np.nan,
                     "reweighted_rate": float((by * weights).sum() / weights.sum()) if n_decided else np.nan,
                     "n_strata": int(population.size), "strata_left_out": int(population.size - by.size)})
    return pd.DataFrame(rows)


def fleiss(held: np.ndarray) -> tuple[float, str]:
    """Fleiss' kappa of a turns × raters array of 1/0 verdicts (statsmodels), or NaN and why."""
    from statsmodels.stats.inter_rater import fleiss_kappa

    if held.shape[0] == 0:
        return np.nan, "no turn has a valid verdict from every rater"
    counts = np.column_stack([(held == 0).sum(axis=1), (held == 1).sum(axis=1)])
    if (counts.sum(axis=0) == 0).any():
        return np.nan, "every verdict is one category, so chance agreement is certain"
    return float(fleiss_kappa(counts, method="fleiss")), ""


def rater_agreement(verdicts: pd.DataFrame, raters: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per axis: ``n_turns``, ``n_all_valid`` (every rater valid), Fleiss' kappa and its note;
    and the pairwise frame of :func:`.report.axis_agreement` (``judge_a``/``judge_b`` the raters).
    ``verdicts``: one row per (turn, axis, ``rater``) with ``held``."""
    rows = []
    for axis in [a for a in AXES if a in set(verdicts["axis"])]:
        wide = verdicts[verdicts["axis"] == axis].groupby(["turn_id", "rater"])["held"].first().unstack()
        wide = wide.reindex(columns=list(raters))
        complete = wide.dropna()
        kappa, note = fleiss(complete.to_numpy(float))
        rows.append({"axis": axis, "n_turns": len(wide), "n_all_valid": len(complete), "fleiss_kappa": kappa,
                     "note": note})
    pairs = axis_agreement(verdicts.assign(judge_model=verdicts["rater"]), list(raters))
    return pd.DataFrame(rows), pairs
