"""Vectorized, optionally clustered bootstrap: the engine every interval uses.

A replicate is represented by *counts*: how many times each resampling leaf (a cell,
a position, a (session, position) unit, ...) was drawn. A statistic is a function
``counts (b, L) -> values (b,)``, so ``b`` replicates are computed at once with array
arithmetic (usually one matrix product) and there is no Python loop over resamples;
replicates are produced in chunks only to bound memory. The full-sample estimate is
the statistic at counts of one, and the jackknife (for BCa) evaluates the same
statistic with one top-level unit's counts set to zero.

Schemes (one level, stratified "cell", two levels) are in
:mod:`~contextecho.stats.resampling`.

Intervals: ``"percentile"`` (linear-interpolated quantiles of the replicates) and
``"bca"`` (Efron's bias-corrected and accelerated; ``z0`` from the mid-rank share of
replicates below the estimate, acceleration from the jackknife over top-level units:
clusters, outer clusters, or cells for the stratified scheme, where the multi-sample
formula weights each stratum as scipy does). A degenerate bootstrap
distribution (all replicates equal, e.g. all-equal scores) gives the documented
point interval ``[estimate, estimate]`` with ``degenerate=True``, never NaN.

The ``harness_`` functions are the authors' harness's own bootstraps (``PROTOCOL.md`` §9), call
for call (the same generators, draws in the same order and arithmetic: the paper's intervals
exactly, not just in distribution), so a reader can check the paper's protocol.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from . import harness_draws, resampling
from ._inputs import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, as_generator,
                      finite_1d)
from .errors import DegenerateDataError, StatsInputError, TooFewClustersError
from .records import BootstrapEstimate
from .resampling import Resampling, chunks, scheme_from_clusters

CI_METHODS = ("percentile", "bca")

Statistic = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class BootstrapOutcome:
    """Raw result of :func:`run_bootstrap` (records are built from it)."""

    estimate: float
    ci_low: float
    ci_high: float
    standard_error: float
    degenerate: bool
    replicates: np.ndarray
    ci_method: str
    confidence: float
    n_resamples: int


def replicates(scheme: Resampling, statistic: Statistic, n_resamples: int,
               rng: np.random.Generator) -> np.ndarray:
    """The ``n_resamples`` bootstrap replicates of ``statistic`` (vectorized in chunks)."""
    out = np.empty(n_resamples)
    for start, stop in chunks(n_resamples, scheme.chunk_size()):
        out[start:stop] = statistic(scheme.draw(rng, stop - start))
    return out


def jackknife(scheme: Resampling, statistic: Statistic) -> np.ndarray:
    """Leave-one-top-level-unit-out values of ``statistic``."""
    size = max(1, resampling.CHUNK_ELEMENTS // scheme.n_leaves)
    values = np.empty(scheme.n_top)
    for start, stop in chunks(scheme.n_top, size):
        values[start:stop] = statistic(scheme.jackknife_counts(start, stop))
    return values


def bca_alphas(reps: np.ndarray, estimate: float, jack: np.ndarray, confidence: float,
               blocks: np.ndarray | None = None) -> tuple[float, float]:
    """BCa percentile levels (fractions) for a two-sided ``confidence`` interval.

    ``z0 = Φ⁻¹(p)`` with ``p`` the mid-rank share of replicates below the estimate
    (``(#< + #<=) / 2B``, ties split); acceleration from jackknife values ``jack``
    (Efron & Tibshirani 1993, eq. 14.15; with ``blocks`` — the stratum of each
    jackknife unit — the multi-sample form eq. 15.36, as scipy's
    ``bootstrap(method="BCa")``).
    """
    below = np.count_nonzero(reps < estimate) + np.count_nonzero(reps <= estimate)
    share = below / (2 * len(reps))
    z0 = ndtri(share)
    if not np.isfinite(z0):
        raise DegenerateDataError(
            "BCa undefined: every bootstrap replicate lies on one side of the estimate; "
            "use ci_method='percentile'")
    if not np.all(np.isfinite(jack)):
        raise DegenerateDataError(
            "BCa undefined: a leave-one-out jackknife value is not finite (a unit or "
            "stratum has a single member); use ci_method='percentile'")
    blocks = np.zeros(len(jack), dtype=np.int64) if blocks is None else blocks
    sizes = np.bincount(blocks).astype(float)
    block_mean = np.bincount(blocks, weights=jack) / np.where(sizes > 0, sizes, 1)
    u = (sizes[blocks] - 1) * (block_mean[blocks] - jack)
    num = np.sum(u**3 / sizes[blocks] ** 3)
    den = np.sum(u**2 / sizes[blocks] ** 2) ** 1.5
    accel = float(num / (6.0 * den)) if den > 0 else 0.0  # no jackknife spread: a = 0
    z = ndtri(np.array([(1 - confidence) / 2, (1 + confidence) / 2]))
    levels = ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    return float(levels[0]), float(levels[1])


def run_bootstrap(scheme: Resampling, statistic: Statistic, *, rng: np.random.Generator,
                  n_resamples: int = DEFAULT_RESAMPLES,
                  confidence: float = DEFAULT_CONFIDENCE,
                  ci_method: str = "percentile") -> BootstrapOutcome:
    """Bootstrap ``statistic`` under ``scheme``; percentile or BCa interval."""
    if ci_method not in CI_METHODS:
        raise ValueError(f"ci_method must be one of {CI_METHODS}, not {ci_method!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), not {confidence}")
    if int(n_resamples) < 2:
        raise ValueError("n_resamples must be at least 2")
    if scheme.n_top < 2:
        raise TooFewClustersError(
            f"bootstrap by {scheme.label!r} needs at least 2 units at the top level, "
            f"got {scheme.n_top}")
    estimate = float(statistic(np.ones((1, scheme.n_leaves)))[0])
    reps = replicates(scheme, statistic, int(n_resamples), rng)
    if not (np.isfinite(estimate) and np.all(np.isfinite(reps))):
        raise DegenerateDataError("statistic is not finite on the data or a resample")
    se = float(reps.std(ddof=1))
    if np.ptp(reps) <= 1e-12 * max(1.0, abs(estimate)):
        return BootstrapOutcome(estimate, estimate, estimate, 0.0, True, reps, ci_method,
                                confidence, int(n_resamples))
    if ci_method == "percentile":
        levels = ((1 - confidence) / 2, (1 + confidence) / 2)
    else:
        blocks = None if scheme.resample_groups else scheme.group_of_leaf
        levels = bca_alphas(reps, estimate, jackknife(scheme, statistic), confidence, blocks)
    low, high = np.percentile(reps, [100 * levels[0], 100 * levels[1]])
    return BootstrapOutcome(estimate, float(low), float(high), se, False, reps, ci_method,
                            confidence, int(n_resamples))


def ratio_of_sums(numerator: np.ndarray, denominator: np.ndarray) -> Statistic:
    """Statistic ``(C @ numerator) / (C @ denominator)`` over leaf totals."""
    num = np.asarray(numerator, dtype=float)
    den = np.asarray(denominator, dtype=float)
    return lambda counts: (counts @ num) / (counts @ den)


def bootstrap_mean(values, clusters=None, *, n_resamples: int = DEFAULT_RESAMPLES,
                   confidence: float = DEFAULT_CONFIDENCE, ci_method: str = "percentile",
                   seed: int | np.random.Generator = DEFAULT_SEED) -> BootstrapEstimate:
    """Mean of ``values`` with a (clustered) bootstrap CI.

    Estimator in every replicate: the mean of all observations in the drawn clusters,
    ``sum_k c_k S_k / sum_k c_k n_k`` (``c_k`` draws of cluster ``k`` with total
    ``S_k`` over ``n_k`` observations), i.e. observations weighted equally. With
    ``clusters=None`` this is the ordinary bootstrap of the mean.
    """
    x = finite_1d(values, "values")
    if len(x) == 0:
        raise StatsInputError("no values")
    rng, recorded = as_generator(seed)
    scheme, leaf = scheme_from_clusters(len(x), clusters)
    sums = np.bincount(leaf, weights=x, minlength=scheme.n_leaves)
    sizes = np.bincount(leaf, minlength=scheme.n_leaves).astype(float)
    out = run_bootstrap(scheme, ratio_of_sums(sums, sizes), rng=rng, n_resamples=n_resamples,
                        confidence=confidence, ci_method=ci_method)
    return BootstrapEstimate(
        estimate=out.estimate, ci_low=out.ci_low, ci_high=out.ci_high, n=len(x),
        n_clusters=scheme.n_top, cluster=scheme.label, method="mean of observations",
        ci_method=ci_method, confidence=confidence, n_resamples=out.n_resamples,
        seed=recorded, standard_error=out.standard_error, degenerate=out.degenerate)


HARNESS_LOW, HARNESS_HIGH = 2.5, 97.5


@dataclass(frozen=True)
class HarnessInterval:
    """A point estimate with the harness's 95% interval; ``n`` counts the scores."""

    mean: float
    lo: float
    hi: float
    n: int


def harness_clustered_bootstrap_mean(by_position: Mapping[str, Sequence[float]], *,
                                     n_boot: int = DEFAULT_RESAMPLES,
                                     seed: int = DEFAULT_SEED) -> HarnessInterval:
    """The panel forest's interval (Fig. 3): two-stage bootstrap of the position-equal-weighted
    mean, positions in the mapping's order.

    ``numpy`` ``default_rng(seed)``; point = unweighted mean of the per-position means; each
    of ``n_boot`` resamples draws positions with replacement (``integers(0, P, P)``), then for
    each drawn position its scores with replacement (``integers(0, n, n)``); statistic = mean
    of the resampled position means; interval = ``np.percentile`` 2.5 / 97.5 (linear). The
    harness restarts each arm from the seed."""
    if not by_position:
        return HarnessInterval(math.nan, math.nan, math.nan, 0)
    positions = list(by_position)
    arrays = [np.array(by_position[p], dtype=float) for p in positions]
    n_pos = len(positions)
    point = float(np.mean([a.mean() for a in arrays]))
    # ``np.add.reduce(x) / n`` is ``x.mean()`` to the bit (the same pairwise sum, then one
    # division), row by row of a matrix as of each row alone.
    add, sizes = np.add.reduce, [len(a) for a in arrays]
    draws = harness_draws.clustered_draws([[n] for n in sizes], n_boot, seed)
    if draws is not None:  # the harness's draws, read in bulk
        means = np.empty((n_boot, n_pos), dtype=float)
        for j, drawn in enumerate(draws):
            means[drawn.rows, drawn.slots] = add(arrays[j][drawn.indices[0]], axis=1) / sizes[j]
        boots = add(means, axis=1) / n_pos
    else:  # the harness's loop, draw by draw
        rng = np.random.default_rng(seed)
        boots = np.empty(n_boot, dtype=float)
        means = np.empty(n_pos, dtype=float)
        for b in range(n_boot):
            for k, j in enumerate(rng.integers(0, n_pos, size=n_pos).tolist()):
                n = sizes[j]
                means[k] = add(arrays[j][rng.integers(0, n, size=n)]) / n
            boots[b] = add(means) / n_pos
    return HarnessInterval(point, float(np.percentile(boots, HARNESS_LOW)),
                           float(np.percentile(boots, HARNESS_HIGH)), sum(len(a) for a in arrays))


def harness_boot_gap_ci(filler: Sequence[float], real: Sequence[float], rng: np.random.Generator,
                        *, n_boot: int = DEFAULT_RESAMPLES) -> tuple[float, float, float]:
    """The onset figure's interval (Fig. 15): ``(gap, lo, hi)`` of ``mean(filler) − mean(real)``,
    unclustered: ``rng.choice`` resamples the filler list then the real list (``n_boot`` rows
    each), interval = percentiles of the difference of the row means (NaNs and no draws when
    either list is empty)."""
    if len(filler) == 0 or len(real) == 0:
        return math.nan, math.nan, math.nan
    f = np.array(filler, dtype=float)
    c = np.array(real, dtype=float)
    gap = float(f.mean() - c.mean())
    f_means = rng.choice(f, size=(n_boot, len(f)), replace=True).mean(axis=1)
    c_means = rng.choice(c, size=(n_boot, len(c)), replace=True).mean(axis=1)
    lo, hi = np.percentile(f_means - c_means, [HARNESS_LOW, HARNESS_HIGH])
    return gap, float(lo), float(hi)


def harness_onset_gap_cis(filler_by_position: Mapping[str, Sequence[float]],
                          real_by_position: Mapping[str, Sequence[float]], positions: Sequence[str],
                          *, n_boot: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                          rng: np.random.Generator | None = None) -> dict[str, tuple[float, float, float]]:
    """:func:`harness_boot_gap_ci` per position of one target, one generator across them in order.

    ``rng``: the generator to draw from (the harness's onset figure keeps one
    ``default_rng(42)`` for every target in turn, ``plotting/fig_app_onset.py:25``);
    default a new one from ``seed``."""
    rng = rng if rng is not None else np.random.default_rng(seed)
    return {p: harness_boot_gap_ci(filler_by_position.get(p, ()), real_by_position.get(p, ()), rng,
                                   n_boot=n_boot) for p in positions}


def harness_paired_bootstrap_ci(deltas: Sequence[float], *, n_boot: int = DEFAULT_RESAMPLES,
                                seed: int = DEFAULT_SEED) -> tuple[float, float]:
    """B7's percentile interval of the mean paired difference: ``random.Random(seed).randrange(n)``
    n times per resample; interval = sorted replicates at ``int(0.025 B)`` and
    ``int(0.975 B) − 1``."""
    if len(deltas) == 0:
        return math.nan, math.nan
    rng = random.Random(seed)
    n = len(deltas)
    boots = sorted(sum(deltas[rng.randrange(n)] for _ in range(n)) / n for _ in range(n_boot))
    return boots[int(0.025 * n_boot)], boots[int(0.975 * n_boot) - 1]


def harness_clustered_bootstrap_ratio(real_by_position: Mapping[str, Sequence[float]],
                                      filler_by_position: Mapping[str, Sequence[float]], *,
                                      n_boot: int = DEFAULT_RESAMPLES,
                                      seed: int = DEFAULT_SEED) -> tuple[float, float, float]:
    """``(point, lo, hi)`` of the position-clustered ratio of means real / filler
    (``plotting/fig_forest_stressors.py`` ``cluster_bootstrap_ratio``, ``:177-204``).

    The positions both arms have, in sorted order; point = mean over them of
    ``mean(real) / max(1, mean(filler))``. Each of ``n_boot`` resamples (``default_rng(seed)``)
    draws positions with replacement (``integers(0, P, P)``), then for each drawn position
    the real values with replacement and then the filler values (``integers(0, n, n)`` each);
    statistic = the mean of the resampled ratios; interval = percentiles 2.5 / 97.5 (linear).
    NaNs without a common position."""
    common = sorted(set(real_by_position) & set(filler_by_position))
    if not common:
        return math.nan, math.nan, math.nan
    real = [np.array(real_by_position[p], dtype=float) for p in common]
    filler = [np.array(filler_by_position[p], dtype=float) for p in common]
    point = float(np.mean([r.mean() / max(1.0, f.mean()) for r, f in zip(real, filler)]))
    n_pos = len(common)
    draws = harness_draws.clustered_draws([[len(r), len(f)] for r, f in zip(real, filler)], n_boot, seed)
    if draws is not None:  # the harness's draws, read in bulk
        ratios = np.empty((n_boot, n_pos), dtype=float)
        for j, drawn in enumerate(draws):
            r_means = real[j][drawn.indices[0]].mean(axis=1)
            ratios[drawn.rows, drawn.slots] = r_means / np.fmax(1.0, filler[j][drawn.indices[1]].mean(axis=1))
        boots = ratios.mean(axis=1)
    else:  # the harness's loop, draw by draw
        rng = np.random.default_rng(seed)
        boots = np.empty(n_boot, dtype=float)
        for b in range(n_boot):
            ratios = []
            for j in rng.integers(0, n_pos, size=n_pos):
                r, f = real[j], filler[j]
                r_mean = r[rng.integers(0, len(r), size=len(r))].mean()
                ratios.append(r_mean / max(1.0, f[rng.integers(0, len(f), size=len(f))].mean()))
            boots[b] = float(np.mean(ratios))
    return point, float(np.percentile(boots, HARNESS_LOW)), float(np.percentile(boots, HARNESS_HIGH))
