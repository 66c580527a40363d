"""Agreement between two judges on the same cells, and per-target direction agreement.

:func:`judge_agreement` — on the cells both judges scored (a NaN verdict from either
judge drops the cell, counted in ``n_dropped``): exact agreement, within-one agreement
(``|a − b| <= 1``) and Cohen's kappa, unweighted, linear and quadratic weights
(``κ_w = 1 − Σ w O / Σ w E`` with ``w_ij = |i − j|`` or ``(i − j)²`` over the rubric
categories, ``O`` observed and ``E`` chance-expected proportions; the same as
scikit-learn ``cohen_kappa_score``). Kappa is undefined when both judges used one and
the same category (``Σ w E = 0``): :class:`DegenerateDataError`.

:func:`score_agreement` — the same pairing for continuous scores (expected scores
Σ s·p(s)): Pearson and Spearman correlation and the mean absolute difference (the
correlations are NaN when either judge's scores do not vary; scipy.stats agrees).

:func:`label_agreement` — one judge against known scores (a calibration set, or the scores
a first judge stored for the responses a second one re-judges): the invalid rate over every
item, and over the items with a verdict exact and within-one agreement, Cohen's kappa
unweighted and quadratic-weighted (scikit-learn ``cohen_kappa_score``), Spearman's rho
(scipy) and the confusion matrix (scikit-learn), label by verdict. Two choices are
parameters, for the harness's cross-judge audit (``run_crossjudge_audit.py:95-129``): a
*failed* score (its −1) may stay in the pairs as a value of its own, and tied scores may be
ranked in the order they come (``ordinal``) instead of by their average rank.

:func:`direction_agreement` — per target, compare the signs of the two judges' drift
gaps (paper Table 7): ``"agree"``, ``"flip"`` or ``"null vs small"``.

:func:`rank_agreement` — how stable the judges' ranking of the targets is: Kendall's tau-b
between the two judges' drift gaps over the targets both estimated (scipy.stats.kendalltau);
it needs two targets, and a ranking that is not all ties under either judge.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from .errors import DegenerateDataError, EmptyArmError, InvalidScoreError, StatsInputError
from .records import DirectionAgreement, JudgeAgreement, LabelAgreement, RankAgreement, ScoreAgreement

RUBRIC_SCORES = (0, 1, 2, 3)


def _kappa(confusion: np.ndarray, weights: np.ndarray) -> float:
    observed = confusion / confusion.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    chance = float(np.sum(weights * expected))
    if chance <= 0:
        raise DegenerateDataError(
            "kappa undefined: both judges gave every cell the same single category")
    return 1.0 - float(np.sum(weights * observed)) / chance


def _paired(a, b) -> tuple[np.ndarray, np.ndarray, int]:
    """The cells both judges scored (NaN from either drops a cell), and how many were dropped."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise StatsInputError("judge scores must be two 1-D arrays of equal length")
    keep = ~(np.isnan(x) | np.isnan(y))
    if not keep.any():
        raise EmptyArmError("no cell was scored validly by both judges")
    return x[keep], y[keep], int((~keep).sum())


def judge_agreement(a, b, *, categories: Sequence[int] = RUBRIC_SCORES) -> JudgeAgreement:
    """Exact, within-one and kappa agreement of paired verdicts ``a`` and ``b``."""
    x, y, n_dropped = _paired(a, b)
    cats = np.asarray(categories, dtype=float)
    if not np.all(np.diff(cats) > 0):
        raise StatsInputError("categories must be strictly increasing")
    unknown = sorted(set(np.unique(np.concatenate([x, y]))) - set(cats))
    if unknown:
        raise InvalidScoreError(f"verdicts {unknown} are not rubric categories {tuple(categories)}")
    i, j = np.searchsorted(cats, x), np.searchsorted(cats, y)
    k = len(cats)
    confusion = np.zeros((k, k))
    np.add.at(confusion, (i, j), 1.0)
    dist = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]).astype(float)
    return JudgeAgreement(
        n=len(x), n_dropped=n_dropped, exact=float(np.mean(x == y)),
        within_one=float(np.mean(np.abs(x - y) <= 1)),
        kappa=_kappa(confusion, (dist > 0).astype(float)),
        kappa_linear=_kappa(confusion, dist), kappa_quadratic=_kappa(confusion, dist**2),
        categories=tuple(int(c) for c in categories))


TIES = ("average", "ordinal")


def label_agreement(labels, verdicts, *, categories: Sequence[int] = RUBRIC_SCORES, failed: float | None = None,
                    ties: str = "average") -> LabelAgreement:
    """Agreement of ``verdicts`` (NaN: no verdict) with the known ``labels`` (module doc).

    ``failed``: the score a failed verdict is stored as (the harness's −1), kept in the pairs
    on either side as a value of its own: it counts in ``exact`` and ``within_one`` and in
    the observed agreement of the unweighted ``kappa``, never in its chance agreement (the sum
    over ``categories`` of the two judges' shares); ``kappa_quadratic`` and ``confusion``
    read the pairs of two category scores. Without failed scores in the pairs ``kappa`` is
    scikit-learn's. ``ties``: ``average`` ranks tied scores by their mean rank (scipy
    ``spearmanr``); ``ordinal`` gives them distinct ranks in the order they come (scipy
    ``rankdata(method="ordinal")``, then Pearson's r)."""
    from scipy.stats import pearsonr, rankdata, spearmanr
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    truth = np.asarray(labels, dtype=float)
    given = np.asarray(verdicts, dtype=float)
    if truth.shape != given.shape or truth.ndim != 1 or not len(truth):
        raise StatsInputError("labels and verdicts must be two non-empty 1-D arrays of equal length")
    if np.isnan(truth).any():
        raise StatsInputError("every labelled item needs its score")
    if ties not in TIES:
        raise StatsInputError(f"ties must be one of {TIES}, got {ties!r}")
    cats = list(categories)
    allowed = set(map(float, cats)) | ({float(failed)} if failed is not None else set())
    unknown = sorted((set(np.unique(truth)) | set(np.unique(given[~np.isnan(given)]))) - allowed)
    if unknown:
        raise InvalidScoreError(f"scores {unknown} are not rubric categories {tuple(cats)}")
    valid = ~np.isnan(given)
    x, y = truth[valid].astype(int), given[valid].astype(int)
    n_valid = int(valid.sum())
    nan = float("nan")
    if n_valid:
        exact, within = float(np.mean(x == y)), float(np.mean(np.abs(x - y) <= 1))
        rated = np.isin(x, cats) & np.isin(y, cats)
        xq, yq = x[rated], y[rated]
        kappa_quadratic = float(cohen_kappa_score(xq, yq, labels=cats, weights="quadratic")) \
            if len(set(xq) | set(yq)) > 1 else nan
        kappa = _kappa_over(x, y, cats, failed)
        if ties == "average":
            rho = float(spearmanr(x, y).statistic) if len(set(x)) > 1 and len(set(y)) > 1 else nan
        else:
            rho = float(pearsonr(rankdata(x, method="ordinal"), rankdata(y, method="ordinal")).statistic) \
                if n_valid > 1 else nan
        confusion = confusion_matrix(xq, yq, labels=cats)
    else:
        exact = within = kappa = kappa_quadratic = rho = nan
        confusion = np.zeros((len(cats), len(cats)), dtype=int)
    return LabelAgreement(n=len(truth), n_valid=n_valid, n_invalid=len(truth) - n_valid,
                          invalid_rate=(len(truth) - n_valid) / len(truth), exact=exact, within_one=within,
                          kappa=kappa, kappa_quadratic=kappa_quadratic, spearman=rho,
                          confusion=tuple(tuple(int(v) for v in row) for row in confusion),
                          categories=tuple(int(c) for c in cats))


def _kappa_over(x: np.ndarray, y: np.ndarray, cats: Sequence[int], failed: float | None) -> float:
    """Unweighted kappa: observed agreement over every pair, chance agreement over ``cats``
    (:func:`label_agreement`); NaN where chance agreement is certain."""
    from sklearn.metrics import confusion_matrix

    values = ([int(failed)] if failed is not None else []) + list(cats)
    counts = confusion_matrix(x, y, labels=values).astype(float)
    n = counts.sum()
    chance = sum(counts[i].sum() * counts[:, i].sum() for i, v in enumerate(values) if v in cats) / n**2
    return float((np.trace(counts) / n - chance) / (1 - chance)) if chance != 1 else float("nan")


def score_agreement(a, b) -> ScoreAgreement:
    """Correlation and mean absolute difference of paired continuous scores ``a``, ``b``."""
    x, y, n_dropped = _paired(a, b)

    def pearson(u: np.ndarray, v: np.ndarray) -> float:
        du, dv = u - u.mean(), v - v.mean()
        denominator = np.sqrt(np.sum(du * du) * np.sum(dv * dv))
        return float(np.sum(du * dv) / denominator) if denominator > 0 else float("nan")

    ranks = [pd.Series(v).rank().to_numpy() for v in (x, y)]
    return ScoreAgreement(n=len(x), n_dropped=n_dropped, pearson=pearson(x, y),
                          spearman=pearson(*ranks), mean_abs_diff=float(np.mean(np.abs(x - y))))


def direction_label(gap_a: float, gap_b: float, null_tol: float = 1e-9) -> str:
    """``"agree"`` / ``"flip"`` / ``"null vs small"`` for one target's two gaps."""
    null_a, null_b = abs(gap_a) <= null_tol, abs(gap_b) <= null_tol
    if null_a and null_b:
        return "agree"
    if null_a or null_b:
        return "null vs small"
    return "agree" if np.sign(gap_a) == np.sign(gap_b) else "flip"


def direction_agreement(gaps_a: Mapping[str, float] | pd.Series,
                        gaps_b: Mapping[str, float] | pd.Series, *,
                        null_tol: float = 1e-9) -> DirectionAgreement:
    """Per-target sign agreement of two judges' drift gaps (same set of targets)."""
    a, b = pd.Series(gaps_a, dtype=float), pd.Series(gaps_b, dtype=float)
    if set(a.index) != set(b.index):
        raise StatsInputError(f"targets differ between judges: "
                              f"{sorted(set(a.index) ^ set(b.index), key=str)}")
    if a.empty:
        raise EmptyArmError("no targets")
    b = b.loc[a.index]
    if a.isna().any() or b.isna().any():
        raise InvalidScoreError("a drift gap is NaN; compute gaps on valid cells first")
    labels = [direction_label(x, y, null_tol) for x, y in zip(a, b)]
    return DirectionAgreement(
        targets=tuple(str(t) for t in a.index), gap_a=tuple(float(v) for v in a),
        gap_b=tuple(float(v) for v in b), labels=tuple(labels), n=len(labels),
        n_agree=labels.count("agree"), n_flip=labels.count("flip"),
        n_null_vs_small=labels.count("null vs small"), null_tol=null_tol)


def rank_agreement(gaps_a: Mapping[str, float] | pd.Series,
                   gaps_b: Mapping[str, float] | pd.Series) -> RankAgreement:
    """Kendall's tau-b between two judges' target rankings by drift gap, over the targets
    with a gap under both (module doc); too few targets or a ranking of ties only raise
    :class:`StatsInputError` saying so."""
    a, b = pd.Series(gaps_a, dtype=float), pd.Series(gaps_b, dtype=float)
    both = a.index.intersection(b.index)
    a, b = a.loc[both], b.loc[both]
    keep = a.notna() & b.notna()
    a, b = a[keep], b[keep]
    if len(a) < 2:
        raise EmptyArmError(f"{len(a)} target{'' if len(a) == 1 else 's'} with a drift gap under both judges; a ranking needs two")
    if a.nunique() < 2 or b.nunique() < 2:
        raise DegenerateDataError("every target has the same drift gap under one judge: no ranking to compare")
    result = kendalltau(a.to_numpy(), b.to_numpy())
    return RankAgreement(n_targets=len(a), tau=float(result.statistic), p_value=float(result.pvalue))
