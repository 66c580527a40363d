"""Judge-free drift measures: compliance-rate gaps and verbosity ratios.

* :func:`compliance_gap` — the drift gap (same estimator and clustering as
  :func:`~contextecho.stats.drift.drift_gap`) of a 0/1 compliance column, in
  percentage points: filler rate − real rate (positive: the real prefix breaks the
  output contract more often).
* :func:`log_verbosity_ratios` — per pair (same session, position, probe/stressor and
  paraphrase/replicate under both arms) ``log(real length / filler length)``.
* :func:`verbosity_ratio` — the median per-pair ratio (``summary="median"``) or the
  geometric mean ratio ``exp(mean log ratio)`` (``summary="geometric"``), with a
  bootstrap CI over pairs, clustered by ``cluster`` (pairs in drawn clusters are
  pooled; the median of a replicate is the median of the expanded resample).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._inputs import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, as_columns,
                      as_generator, codes, require_columns)
from .bootstrap import ratio_of_sums, run_bootstrap
from .resampling import Resampling
from .drift import drift_gap
from .errors import DegenerateDataError, EmptyArmError, StatsInputError
from .records import DriftGap, RatioEstimate

PAIR = ("session", "position", "probe", "replicate")


def compliance_gap(cells: pd.DataFrame, *, compliant: str = "compliant",
                   **options) -> DriftGap:
    """Compliance-rate gap in percentage points (filler − real); options as
    :func:`drift_gap`. Values must be 0/1 (or bool); NaN follows ``invalid``."""
    require_columns(cells, [compliant], "compliance_gap")
    values = pd.to_numeric(cells[compliant].astype("float"), errors="raise")
    if not values.dropna().isin([0.0, 1.0]).all():
        raise StatsInputError(f"{compliant!r} must hold 0/1 (or bool) compliance values")
    return drift_gap(cells.assign(**{compliant: values}), score=compliant, scale=100.0,
                     units="pp", **options)


def log_verbosity_ratios(cells: pd.DataFrame, *, length: str = "length", arm: str = "arm",
                         filler_arm: str = "filler", real_arm: str = "real",
                         pair: Sequence[str] = PAIR) -> pd.DataFrame:
    """Per-pair lengths and ``log_ratio = log(real / filler)``.

    Pairs with a missing or NaN length in either arm are dropped; their number is in
    ``result.attrs["n_unpaired"]``. A zero or negative length raises
    :class:`DegenerateDataError` (mark empty outputs as NaN upstream).
    """
    keys = list(as_columns(pair))
    require_columns(cells, [length, arm, *keys], "log_verbosity_ratios")
    frame = cells.loc[cells[arm].isin([filler_arm, real_arm]), [*keys, arm, length]]
    if frame.duplicated([*keys, arm]).any():
        raise StatsInputError(f"more than one cell per pair {keys} and arm; add the "
                              "distinguishing column to `pair`")
    wide = frame.pivot(index=keys, columns=arm, values=length)
    for name in (filler_arm, real_arm):
        if name not in wide.columns:
            raise EmptyArmError(f"arm {name!r} has no cells")
    wide = wide[[filler_arm, real_arm]].astype(float)
    complete = wide.notna().all(axis=1)
    wide = wide.loc[complete]
    if (wide <= 0).any().any():
        raise DegenerateDataError(
            f"{int((wide <= 0).any(axis=1).sum())} pair(s) have a zero or negative length; "
            "the log ratio is undefined (mark empty outputs as NaN to drop them)")
    out = wide.rename(columns={filler_arm: "filler_length", real_arm: "real_length"})
    out = out.reset_index()
    out.columns.name = None
    out["log_ratio"] = np.log(out["real_length"]) - np.log(out["filler_length"])
    out.attrs["n_unpaired"] = int((~complete).sum())
    return out


def weighted_median(sorted_values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Row-wise median of the sample that repeats ``sorted_values[j]`` ``weights[:, j]``
    times (even totals average the two middle values, as ``np.median``)."""
    cum = np.cumsum(weights, axis=1)
    total = cum[:, -1:]
    lower = (cum < np.floor((total + 1) / 2)).sum(axis=1)
    upper = (cum < np.floor(total / 2) + 1).sum(axis=1)
    return (sorted_values[lower] + sorted_values[upper]) / 2


def verbosity_ratio(cells: pd.DataFrame, *, summary: str = "median",
                    cluster: str | tuple[str, ...] | None = "session",
                    length: str = "length", arm: str = "arm", filler_arm: str = "filler",
                    real_arm: str = "real", pair: Sequence[str] = PAIR,
                    ci_method: str = "percentile", n_resamples: int = DEFAULT_RESAMPLES,
                    confidence: float = DEFAULT_CONFIDENCE,
                    seed: int | np.random.Generator = DEFAULT_SEED) -> RatioEstimate:
    """Verbosity ratio real/filler over pairs (see module docstring)."""
    if summary not in ("median", "geometric"):
        raise ValueError(f"summary must be 'median' or 'geometric', not {summary!r}")
    pairs = log_verbosity_ratios(cells, length=length, arm=arm, filler_arm=filler_arm,
                                 real_arm=real_arm, pair=pair)
    if pairs.empty:
        raise EmptyArmError("no complete (filler, real) pairs")
    rng, recorded = as_generator(seed)
    levels = as_columns(cluster)
    outside = [c for c in levels if c not in as_columns(pair)]
    if outside:
        raise StatsInputError(f"cluster column(s) {outside} must be among the pair keys")
    if not levels:
        scheme, leaf = Resampling.clusters(len(pairs), "pair"), np.arange(len(pairs))
    elif len(levels) == 1:
        leaf, keys = codes(pairs, levels)
        scheme = Resampling.clusters(len(keys), levels[0])
    elif len(levels) == 2:
        leaf, keys = codes(pairs, levels)
        scheme = Resampling.nested(codes(keys, levels[:1])[0], ">".join(levels))
    else:
        raise ValueError(f"cluster must be None, a column, or (outer, inner); got {cluster!r}")
    log_ratio = pairs["log_ratio"].to_numpy()
    if summary == "geometric":
        mean_log = ratio_of_sums(np.bincount(leaf, weights=log_ratio, minlength=scheme.n_leaves),
                                 np.bincount(leaf, minlength=scheme.n_leaves))
        statistic = lambda counts: np.exp(mean_log(counts))  # noqa: E731
        method = "exp(mean over pairs of log(real/filler))"
    else:
        order = np.argsort(log_ratio, kind="stable")
        ratios, leaf_sorted = np.exp(log_ratio[order]), leaf[order]
        statistic = lambda counts: weighted_median(ratios, counts[:, leaf_sorted])  # noqa: E731
        method = "median over pairs of real/filler"
    out = run_bootstrap(scheme, statistic, rng=rng, n_resamples=n_resamples,
                        confidence=confidence, ci_method=ci_method)
    return RatioEstimate(
        estimate=out.estimate, ci_low=out.ci_low, ci_high=out.ci_high, n=len(pairs),
        n_clusters=scheme.n_top, cluster=scheme.label, method=method, ci_method=ci_method,
        confidence=confidence, n_resamples=out.n_resamples, seed=recorded,
        standard_error=out.standard_error, degenerate=out.degenerate,
        summary=summary, n_unpaired=int(pairs.attrs["n_unpaired"]))
