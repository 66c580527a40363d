"""The drift gap Δ(t, M) of ContextEcho Def. 1, with clustered bootstrap intervals.

Estimator (stated once, used everywhere). Cells are grouped into *units* — by default
``(session, position)``, one snapshot position t of one session. Within a unit,

    d_u = mean(filler-arm scores in u) − mean(real-arm scores in u)

and the reported gap is ``Δ = mean_u d_u`` with every unit (position) weighted
equally, whatever its number of valid cells; ``filler_mean`` and ``real_mean`` are the
unit-averaged arm means, so ``Δ = filler_mean − real_mean``. Positive Δ: the real
prefix lowers the assistant-register score (drift).

Intervals (``cluster``):

* ``"position"`` (default; any column of ``unit``): resample clusters with
  replacement; a replicate is ``Δ* = Σ_k c_k D_k / Σ_k c_k m_k`` where cluster k
  was drawn ``c_k`` times and holds ``m_k`` units with gap total ``D_k``. For a
  single session clustered by position (one unit per position) this is the mean
  over the resampled positions of (filler mean − real mean), as in the paper. With
  several sessions, ``"position"`` pools a position label across sessions into one
  cluster; for corpus-scale data cluster by ``"session"`` or use two levels.
* ``("session", "position")``: two levels — sessions with replacement, then
  positions with replacement within each drawn session; same estimator over the
  drawn units.
* ``None``: the "cell" bootstrap — cells resampled within each (unit, arm) stratum,
  keeping stratum sizes; ``Δ*`` recomputed from the resampled arm means. Use it for
  one position (the paper's cell-bootstrap CIs); it ignores between-position
  variation.

Invalid verdicts (NaN scores) follow ``invalid``: ``"drop"`` (default, counted in
``n_invalid``), ``"zero"`` or ``"raise"``. Arms other than the two named are ignored.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._inputs import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, as_columns,
                      as_generator, codes, handle_invalid, require_columns)
from .bootstrap import HarnessInterval, Statistic, ratio_of_sums, run_bootstrap
from .resampling import Resampling
from .errors import EmptyArmError, StatsInputError, TooFewClustersError
from .records import DriftGap

ClusterSpec = str | tuple[str, ...] | None


def _describe(keys: pd.DataFrame, rows: np.ndarray, limit: int = 5) -> str:
    """The units at ``rows`` as a reader reads them, ``session S2, position P0_start; ...``
    (at most ``limit``, then how many more): a reason that is printed in a sentence."""
    shown = "; ".join(", ".join(f"{column} {value}" for column, value in unit.items())
                      for unit in keys.iloc[rows[:limit]].to_dict("records"))
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"{shown}{more}"


def _cluster_scheme(units: pd.DataFrame, unit_cols: tuple[str, ...],
                    cluster: ClusterSpec) -> tuple[Resampling, np.ndarray]:
    """Resampling over clusters and the leaf index of each unit."""
    levels = as_columns(cluster)
    if len(levels) not in (1, 2):
        raise ValueError(f"cluster must be None, a column, or (outer, inner); got {cluster!r}")
    outside = [c for c in levels if c not in unit_cols]
    if outside:
        raise StatsInputError(
            f"cluster column(s) {outside} must be among the unit columns {unit_cols} so "
            "that each unit lies in one cluster")
    leaf_of_unit, leaf_keys = codes(units, levels)
    if len(levels) == 1:
        return Resampling.clusters(len(leaf_keys), levels[0]), leaf_of_unit
    outer_of_leaf, _ = codes(leaf_keys, levels[:1])
    return Resampling.nested(outer_of_leaf, ">".join(levels)), leaf_of_unit


def _cell_statistic(y: np.ndarray, stratum: np.ndarray,
                    scale: float) -> tuple[Resampling, Statistic]:
    """Cell bootstrap within (unit, arm) strata; leaves are cells sorted by stratum."""
    order = np.argsort(stratum, kind="stable")
    y, stratum = y[order], stratum[order]
    sizes = np.bincount(stratum)
    if sizes.min() < 2:
        raise TooFewClustersError(
            "the cell bootstrap needs at least 2 valid cells per unit and arm; "
            f"smallest stratum has {sizes.min()}")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])

    def statistic(counts: np.ndarray) -> np.ndarray:
        sums = np.add.reduceat(counts * y, starts, axis=1)
        n = np.add.reduceat(counts, starts, axis=1)
        means = (sums / n).reshape(len(counts), -1, 2)           # (b, unit, [filler, real])
        return scale * (means[..., 0] - means[..., 1]).mean(axis=1)

    return Resampling.stratified(stratum, "cell"), statistic


def drift_gap(cells: pd.DataFrame, *, score: str = "score", arm: str = "arm",
              filler_arm: str = "filler", real_arm: str = "real",
              unit: Sequence[str] = ("session", "position"),
              cluster: ClusterSpec = "position", ci_method: str = "percentile",
              n_resamples: int = DEFAULT_RESAMPLES, confidence: float = DEFAULT_CONFIDENCE,
              seed: int | np.random.Generator = DEFAULT_SEED, invalid: str = "drop",
              scale: float = 1.0, units: str = "score") -> DriftGap:
    """Drift gap Δ = filler − real over ``cells`` (one target), with a bootstrap CI.

    See the module docstring for the estimator and the clustering schemes. ``scale``
    multiplies every number (100 turns a 0/1 compliance gap into percentage points;
    ``units`` labels the result). Raises :class:`EmptyArmError` when an arm — or one
    arm of some unit — has no valid cell, :class:`TooFewClustersError` with fewer
    than two clusters; all-equal gaps give a documented point interval
    (``degenerate=True``).
    """
    unit_cols = as_columns(unit)
    require_columns(cells, [score, arm, *unit_cols, *as_columns(cluster)], "drift_gap")
    rng, recorded = as_generator(seed)
    frame = cells.loc[cells[arm].isin([filler_arm, real_arm])]
    frame, n_invalid = handle_invalid(frame, score, invalid)
    for name in (filler_arm, real_arm):
        if not (frame[arm] == name).any():
            raise EmptyArmError(f"arm {name!r} has no valid cells "
                                f"({n_invalid} invalid dropped)")
    unit_of_cell, unit_keys = codes(frame, unit_cols)
    is_real = (frame[arm] == real_arm).to_numpy()
    y = frame[score].to_numpy(dtype=float)
    stratum = 2 * unit_of_cell + is_real
    n_strata = 2 * len(unit_keys)
    sums = np.bincount(stratum, weights=y, minlength=n_strata).reshape(-1, 2)
    counts = np.bincount(stratum, minlength=n_strata).reshape(-1, 2)
    lacking = np.flatnonzero((counts == 0).any(axis=1))
    if len(lacking):
        raise EmptyArmError(
            f"{len(lacking)} {'unit lacks' if len(lacking) == 1 else 'units lack'} valid cells in one arm: "
            f"{_describe(unit_keys, lacking)}")
    means = sums / counts
    gaps = means[:, 0] - means[:, 1]

    if cluster is None:
        scheme, statistic = _cell_statistic(y, stratum, scale)
    else:
        scheme, leaf = _cluster_scheme(unit_keys, unit_cols, cluster)
        totals = np.bincount(leaf, weights=scale * gaps, minlength=scheme.n_leaves)
        sizes = np.bincount(leaf, minlength=scheme.n_leaves)
        statistic = ratio_of_sums(totals, sizes)
    out = run_bootstrap(scheme, statistic, rng=rng, n_resamples=n_resamples,
                        confidence=confidence, ci_method=ci_method)
    return DriftGap(
        estimate=out.estimate, ci_low=out.ci_low, ci_high=out.ci_high, n=len(frame),
        n_clusters=scheme.n_top, cluster=scheme.label,
        method="mean over units of (filler mean - real mean)", ci_method=ci_method,
        confidence=confidence, n_resamples=out.n_resamples, seed=recorded,
        standard_error=out.standard_error, degenerate=out.degenerate, n_invalid=n_invalid,
        filler_mean=float(scale * means[:, 0].mean()),
        real_mean=float(scale * means[:, 1].mean()), n_units=len(unit_keys), units=units)


def drift_gap_table(cells: pd.DataFrame, by: str | Sequence[str], **options) -> pd.DataFrame:
    """One :func:`drift_gap` per group of ``by`` (e.g. ``"position"``, ``"category"``,
    ``["target", "category"]``), as a frame of ``to_dict()`` rows.

    Per-position gaps need ``cluster=None`` (one position is one cluster). Errors
    name the failing group.
    """
    by_cols = list(as_columns(by))
    require_columns(cells, by_cols, "drift_gap_table")
    rows = []
    for key, group in cells.groupby(by_cols, sort=True):
        labels = dict(zip(by_cols, key if isinstance(key, tuple) else (key,)))
        try:
            record = drift_gap(group, **options)
        except StatsInputError as error:
            raise type(error)(f"{labels}: {error}") from error
        rows.append({**labels, **record.to_dict()})
    return pd.DataFrame(rows)


def harness_drift_gap(filler: HarnessInterval, real: HarnessInterval) -> float:
    """The harness's panel-forest drift gap (Fig. 3, ``PROTOCOL.md`` §9): filler mean minus
    real-session mean of the two point estimates (positive = drift)."""
    return filler.mean - real.mean
