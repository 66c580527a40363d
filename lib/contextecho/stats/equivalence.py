"""Equivalence testing (TOST) for "does compaction change drift?".

The pre-specified question (paper F3): is the mean post − pre change in drift within
the margin ``±0.08`` judge points? Two one-sided tests at level ``alpha``:

    H0_lower: μ <= −margin   vs  μ > −margin   (p_lower)
    H0_upper: μ >= +margin   vs  μ < +margin   (p_upper)

Equivalence is declared when both are rejected, ``p = max(p_lower, p_upper) <
alpha``, which is the same as the (1 − 2·alpha) confidence interval lying inside
``(−margin, +margin)``.

* :func:`tost_paired` — t-based on the paired differences (post − pre), as
  statsmodels ``ttost_paired(post, pre, -margin, margin)``.
* :func:`tost_independent` — two independent samples (pooled or Welch variance), as
  statsmodels ``ttost_ind``.
* :func:`equivalence_bootstrap` — CI-inclusion TOST with a (1 − 2·alpha) percentile
  bootstrap interval of the mean change, clustered (e.g. compaction events within
  sessions); p-values are not defined for this variant and are None.

Zero spread with the mean strictly inside the margins gives p = 0 for both one-sided
tests (documented; the t statistics are infinite).
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from ._inputs import DEFAULT_RESAMPLES, DEFAULT_SEED, finite_1d
from .bootstrap import bootstrap_mean
from .errors import StatsInputError
from .records import EquivalenceResult

COMPACTION_MARGIN = 0.08


def _margins(margin: float | tuple[float, float]) -> tuple[float, float]:
    low, high = (-margin, margin) if np.isscalar(margin) else margin
    if not low < high:
        raise ValueError(f"margin must give low < high, got ({low}, {high})")
    return float(low), float(high)


def _t_tost(estimate: float, se: float, df: float, low: float, high: float, alpha: float,
            n: int, method: str) -> EquivalenceResult:
    if se > 0:
        p_lower = float(stats.t.sf((estimate - low) / se, df))
        p_upper = float(stats.t.cdf((estimate - high) / se, df))
    else:  # no spread: the one-sided tests are decided by the point alone
        p_lower = 0.0 if estimate > low else 1.0
        p_upper = 0.0 if estimate < high else 1.0
    half = float(stats.t.ppf(1 - alpha, df) * se)
    p_value = max(p_lower, p_upper)
    return EquivalenceResult(
        estimate=estimate, ci_low=estimate - half, ci_high=estimate + half, margin_low=low,
        margin_high=high, p_lower=p_lower, p_upper=p_upper, p_value=p_value,
        equivalent=bool(p_value < alpha), n=n, n_clusters=n, df=float(df), alpha=alpha,
        method=method)


def tost_paired(post, pre=None, *, margin: float | tuple[float, float] = COMPACTION_MARGIN,
                alpha: float = 0.05) -> EquivalenceResult:
    """Paired t TOST of mean(post − pre) (``pre=None``: ``post`` are the differences)."""
    d = finite_1d(post, "post")
    if pre is not None:
        before = finite_1d(pre, "pre")
        if len(before) != len(d):
            raise StatsInputError("post and pre differ in length")
        d = d - before
    if len(d) < 2:
        raise StatsInputError("TOST needs at least 2 paired differences")
    low, high = _margins(margin)
    se = float(d.std(ddof=1) / np.sqrt(len(d)))
    return _t_tost(float(d.mean()), se, len(d) - 1, low, high, alpha, len(d),
                   "paired t TOST")


def tost_independent(x, y, *, margin: float | tuple[float, float] = COMPACTION_MARGIN,
                     alpha: float = 0.05, usevar: str = "pooled") -> EquivalenceResult:
    """TOST of mean(x) − mean(y) for independent samples (``usevar``: pooled|unequal)."""
    a, b = finite_1d(x, "x"), finite_1d(y, "y")
    if len(a) < 2 or len(b) < 2:
        raise StatsInputError("TOST needs at least 2 observations per sample")
    low, high = _margins(margin)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if usevar == "pooled":
        df = len(a) + len(b) - 2
        pooled = ((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / df
        se = np.sqrt(pooled * (1 / len(a) + 1 / len(b)))
    elif usevar == "unequal":
        se = np.sqrt(va + vb)
        welch = va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)
        df = (va + vb) ** 2 / welch if welch > 0 else len(a) + len(b) - 2
    else:
        raise ValueError("usevar must be 'pooled' or 'unequal'")
    return _t_tost(float(a.mean() - b.mean()), float(se), float(df), low, high, alpha,
                   len(a) + len(b), f"independent t TOST ({usevar})")


def equivalence_bootstrap(changes, clusters=None, *,
                          margin: float | tuple[float, float] = COMPACTION_MARGIN,
                          alpha: float = 0.05, n_resamples: int = DEFAULT_RESAMPLES,
                          seed: int | np.random.Generator = DEFAULT_SEED) -> EquivalenceResult:
    """CI-inclusion TOST: equivalent when the (1 − 2·alpha) percentile bootstrap CI of
    the mean change (clustered as :func:`bootstrap_mean`) lies inside the margins."""
    low, high = _margins(margin)
    ci = bootstrap_mean(changes, clusters, n_resamples=n_resamples, confidence=1 - 2 * alpha,
                        ci_method="percentile", seed=seed)
    return EquivalenceResult(
        estimate=ci.estimate, ci_low=ci.ci_low, ci_high=ci.ci_high, margin_low=low,
        margin_high=high, p_lower=None, p_upper=None, p_value=None,
        equivalent=bool(low < ci.ci_low and ci.ci_high < high), n=ci.n,
        n_clusters=ci.n_clusters, df=None, alpha=alpha,
        method=f"bootstrap CI inclusion ({ci.cluster})", n_resamples=ci.n_resamples,
        seed=ci.seed)
