"""Typed result records: what every analysis returns.

Each record is a frozen dataclass with ``to_dict()`` (flat, JSON-friendly Python
scalars) so that a notebook can build a table with ``pd.DataFrame([r.to_dict() ...])``
or write manuscript variables without knowing the record's class. Nested records are
flattened with a ``<field>_`` prefix.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, kw_only=True)
class Record:
    """Base of every result record."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Record):
                for key, sub in value.to_dict().items():
                    out[f"{f.name}_{key}"] = sub
            else:
                out[f.name] = _plain(value)
        return out


@dataclass(frozen=True, kw_only=True)
class BootstrapEstimate(Record):
    """A point estimate with a bootstrap confidence interval.

    ``cluster`` names the resampling scheme: ``"cell"`` (observations resampled
    within their strata), one column (``"position"``: clusters resampled) or
    ``"session>position"`` (sessions resampled, then positions within each drawn
    session). ``n_clusters`` counts the units resampled at the top level.
    ``degenerate`` is True when every bootstrap replicate equals the estimate (e.g.
    all-equal scores); the interval is then the point ``[estimate, estimate]``.
    ``seed`` is None when the caller passed a ready ``numpy.random.Generator``.
    """

    estimate: float
    ci_low: float
    ci_high: float
    n: int
    n_clusters: int
    cluster: str
    method: str
    ci_method: str
    confidence: float
    n_resamples: int
    seed: int | None
    standard_error: float
    degenerate: bool = False
    n_invalid: int = 0


@dataclass(frozen=True, kw_only=True)
class DriftGap(BootstrapEstimate):
    """Drift gap Δ = filler − real (Def. 1), averaged over units with equal weight.

    ``filler_mean``/``real_mean`` are the unit-averaged arm means (so
    ``estimate == filler_mean - real_mean``); ``units`` says the scale
    (``"score"`` for judge points, ``"pp"`` for compliance-rate gaps).
    """

    filler_mean: float
    real_mean: float
    n_units: int
    units: str = "score"


@dataclass(frozen=True, kw_only=True)
class RatioEstimate(BootstrapEstimate):
    """A verbosity ratio (real / filler) summarized over pairs.

    ``summary`` is ``"median"`` (median of per-pair ratios) or ``"geometric"``
    (exp of the mean per-pair log ratio). ``n_unpaired`` counts pair keys dropped
    because one arm was missing or invalid.
    """

    summary: str
    n_unpaired: int = 0


@dataclass(frozen=True, kw_only=True)
class PermutationTest(Record):
    """A paired test of the mean difference (or Wilcoxon signed-rank).

    ``n_resamples`` is the number of sign patterns evaluated (``2**n_nonzero`` when
    exact); ``seed`` is None for exact enumeration and for Wilcoxon.
    """

    statistic: float
    p_value: float
    n: int
    n_nonzero: int
    alternative: str
    method: str
    n_resamples: int | None
    seed: int | None


@dataclass(frozen=True, kw_only=True)
class PairedContrast(BootstrapEstimate):
    """Mean paired difference a − b with a bootstrap CI and a paired test."""

    p_value: float
    test: str
    test_statistic: float


@dataclass(frozen=True, kw_only=True)
class HolmResult(Record):
    """Holm step-down adjustment over one family of hypotheses."""

    labels: tuple[str, ...]
    p_values: tuple[float, ...]
    p_adjusted: tuple[float, ...]
    reject: tuple[bool, ...]
    alpha: float
    method: str = "holm"

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"label": self.labels, "p_value": self.p_values,
                             "p_adjusted": self.p_adjusted, "reject": self.reject})

    def adjusted(self, label: str) -> float:
        return self.p_adjusted[self.labels.index(label)]


@dataclass(frozen=True, kw_only=True)
class EquivalenceResult(Record):
    """Two one-sided tests (TOST) of |mean change| < margin.

    ``ci_low``/``ci_high`` is the (1 − 2·alpha) interval whose inclusion in
    ``(margin_low, margin_high)`` is equivalent to rejecting both one-sided nulls.
    For the bootstrap variant ``p_lower``/``p_upper``/``df`` are None.
    """

    estimate: float
    ci_low: float
    ci_high: float
    margin_low: float
    margin_high: float
    p_lower: float | None
    p_upper: float | None
    p_value: float | None
    equivalent: bool
    n: int
    n_clusters: int
    df: float | None
    alpha: float
    method: str
    n_resamples: int | None = None
    seed: int | None = None


@dataclass(frozen=True, kw_only=True)
class VarianceDecomposition(Record):
    """One-way random-effects decomposition (paper Table 2).

    ``sigma2_total`` is the plain sample variance (ddof=1) of the value, as in the
    paper's table; ``share_between = sigma2_between / (sigma2_between +
    sigma2_within)``. ``at_boundary`` is True when the between-group variance
    estimate is 0 (REML optimum on the boundary, or a negative ANOVA estimate
    truncated to 0).
    """

    sigma2_between: float
    sigma2_within: float
    sigma2_total: float
    share_between: float
    n: int
    n_groups: int
    method: str
    at_boundary: bool
    fixed: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class JudgeAgreement(Record):
    """Agreement of two judges on the same cells (0–3 rubric by default)."""

    n: int
    n_dropped: int
    exact: float
    within_one: float
    kappa: float
    kappa_linear: float
    kappa_quadratic: float
    categories: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class LabelAgreement(Record):
    """Agreement of one judge's verdicts with known scores (a calibration, or a first
    judge's stored scores): ``n`` labelled items, ``n_invalid`` without a verdict; the rest
    over the ``n_valid`` pairs with one (NaN where undefined); ``kappa`` unweighted,
    ``kappa_quadratic`` quadratic-weighted; ``confusion[label][verdict]`` counts over the
    categories."""

    n: int
    n_valid: int
    n_invalid: int
    invalid_rate: float
    exact: float
    within_one: float
    kappa: float
    kappa_quadratic: float
    spearman: float
    confusion: tuple[tuple[int, ...], ...]
    categories: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class ScoreAgreement(Record):
    """Agreement of two judges' continuous scores (expected scores) on the same cells."""

    n: int
    n_dropped: int
    pearson: float
    spearman: float
    mean_abs_diff: float


@dataclass(frozen=True, kw_only=True)
class RankAgreement(Record):
    """Kendall's tau-b between two judges' rankings of the same targets by their drift gap,
    with its two-sided p (scipy.stats.kendalltau)."""

    n_targets: int
    tau: float
    p_value: float


@dataclass(frozen=True, kw_only=True)
class DirectionAgreement(Record):
    """Per-target agreement in the sign of the drift gap between two judges.

    Labels: ``"agree"`` (same sign, or both null), ``"flip"`` (opposite non-null
    signs), ``"null vs small"`` (null under exactly one judge). A gap is null when
    ``|gap| <= null_tol``.
    """

    targets: tuple[str, ...]
    gap_a: tuple[float, ...]
    gap_b: tuple[float, ...]
    labels: tuple[str, ...]
    n: int
    n_agree: int
    n_flip: int
    n_null_vs_small: int
    null_tol: float

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"target": self.targets, "gap_a": self.gap_a,
                             "gap_b": self.gap_b, "direction": self.labels})


@dataclass(frozen=True, kw_only=True)
class AttritionReport(Record):
    """A paired contrast reported complete-case and intention-to-treat.

    Complete-case keeps units where both arms have a valid value; intention-to-treat
    keeps every attempted unit and scores an invalid (NaN) or missing cell as
    ``itt_fill`` (0 by default).
    """

    complete_case: PairedContrast
    intention_to_treat: PairedContrast
    n_units: int
    n_complete: int
    n_invalid_a: int
    n_invalid_b: int
    n_missing_a: int
    n_missing_b: int
    itt_fill: float
