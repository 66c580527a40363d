"""Vectorized, optionally clustered bootstrap: the engine every interval uses.

A replicate is represented by *counts*: how many times each resampling leaf (a cell,
a position, a (session, position) unit, ...) was drawn. A statistic is a function
``counts (b, L) -> values (b,)``, so ``b`` replicates are computed at once with array
arithmetic (usually one matrix product) and there is no Python loop over resamples;
replicates are produced in chunks only to bound memory. The full-sample estimate is
the statistic at counts of one, and the jackknife (for BCa) evaluates the same
statistic with one top-level unit's counts set to zero.

Schemes (:class:`Resampling`):

* ``clusters(L)`` — one level: draw ``L`` leaves with replacement from all ``L``.
* ``stratified(strata)`` — draw within each fixed stratum, keeping its size (the
  unclustered "cell" bootstrap; one stratum reproduces the ordinary bootstrap,
  several reproduce the independent multi-sample bootstrap of
  ``scipy.stats.bootstrap``).
* ``nested(outer_of_leaf)`` — two levels: draw outer clusters (sessions) with
  replacement, then, independently for every drawn outer cluster, draw as many of its
  leaves (positions) with replacement as it has.

Intervals: ``"percentile"`` (linear-interpolated quantiles of the replicates) and
``"bca"`` (Efron's bias-corrected and accelerated; ``z0`` from the mid-rank share of
replicates below the estimate, acceleration from the jackknife over top-level units:
clusters, outer clusters, or cells for the stratified scheme, where the multi-sample
formula weights each stratum as scipy does). A degenerate bootstrap
distribution (all replicates equal, e.g. all-equal scores) gives the documented
point interval ``[estimate, estimate]`` with ``degenerate=True``, never NaN.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from ._inputs import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, as_generator,
                      finite_1d)
from .errors import DegenerateDataError, StatsInputError, TooFewClustersError
from .records import BootstrapEstimate

CI_METHODS = ("percentile", "bca")
#: Upper bound on array elements per chunk of replicates (~16 MB of float64).
CHUNK_ELEMENTS = 2_000_000

Statistic = Callable[[np.ndarray], np.ndarray]


def _below(rng: np.random.Generator, sizes: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform integers in ``0..sizes-1`` (broadcast): ``floor(U * size)``, several
    times faster than ``rng.integers`` with array bounds (bias below 2**-40)."""
    return np.minimum((rng.random(shape) * sizes).astype(np.int64), sizes - 1)


@dataclass(frozen=True)
class Resampling:
    """Which leaves a replicate draws; see the module docstring for the schemes."""

    group_of_leaf: np.ndarray
    resample_groups: bool
    label: str

    @classmethod
    def clusters(cls, n_leaves: int, label: str = "cluster") -> Resampling:
        return cls(np.zeros(int(n_leaves), dtype=np.int64), False, label)

    @classmethod
    def stratified(cls, strata, label: str = "cell") -> Resampling:
        return cls(np.asarray(strata, dtype=np.int64), False, label)

    @classmethod
    def nested(cls, outer_of_leaf, label: str = "outer>inner") -> Resampling:
        return cls(np.asarray(outer_of_leaf, dtype=np.int64), True, label)

    def __post_init__(self) -> None:
        g = self.group_of_leaf
        if g.ndim != 1 or len(g) == 0:
            raise StatsInputError("resampling needs at least one leaf")
        if g.min() < 0 or np.any(np.bincount(g) == 0):
            raise StatsInputError("group codes must be 0..G-1 with every group used")
        order = np.argsort(g, kind="stable")
        sizes = np.bincount(g)
        object.__setattr__(self, "_order", order)
        object.__setattr__(self, "_sizes", sizes)
        object.__setattr__(self, "_starts", np.concatenate([[0], np.cumsum(sizes)[:-1]]))

    @property
    def n_leaves(self) -> int:
        return len(self.group_of_leaf)

    @property
    def n_groups(self) -> int:
        return len(self._sizes)

    @property
    def n_top(self) -> int:
        """Units resampled at the top level (and left out one at a time by the jackknife)."""
        return self.n_groups if self.resample_groups else self.n_leaves

    def chunk_size(self) -> int:
        width = self.n_groups * int(self._sizes.max()) if self.resample_groups else self.n_leaves
        return max(1, CHUNK_ELEMENTS // max(width, 1))

    def draw(self, rng: np.random.Generator, b: int) -> np.ndarray:
        """Counts ``(b, L)`` of ``b`` independent replicates."""
        L = self.n_leaves
        rows = np.arange(b, dtype=np.int64)[:, None] * L
        if not self.resample_groups:
            if self.n_groups == 1:  # same draws as scipy.stats.bootstrap's resampling
                pos = rng.integers(0, L, size=(b, L))
            else:
                slot_group = self.group_of_leaf[self._order]     # group of each sorted slot
                sizes = self._sizes[slot_group]
                pos = self._starts[slot_group] + _below(rng, sizes, (b, L))
            flat = (self._order[pos] + rows).ravel()
            return np.bincount(flat, minlength=b * L).reshape(b, L).astype(float)
        G, width = self.n_groups, int(self._sizes.max())
        drawn = rng.integers(0, G, size=(b, G))                   # outer clusters
        sizes = self._sizes[drawn][..., None]                     # (b, G, 1)
        local = _below(rng, sizes, (b, G, width))                 # inner draws
        mask = np.arange(width) < sizes
        pos = np.where(mask, self._starts[drawn][..., None] + local, 0)
        flat = (self._order[pos] + rows[..., None])[mask]
        return np.bincount(flat, minlength=b * L).reshape(b, L).astype(float)

    def jackknife_counts(self, start: int, stop: int) -> np.ndarray:
        """Counts with top-level unit ``i`` left out, for ``i`` in ``start..stop-1``."""
        units = np.arange(start, stop)
        counts = np.ones((len(units), self.n_leaves))
        if self.resample_groups:
            counts[self.group_of_leaf[None, :] == units[:, None]] = 0.0
        else:
            counts[np.arange(len(units)), units] = 0.0
        return counts


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


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(total, start + size)


def replicates(scheme: Resampling, statistic: Statistic, n_resamples: int,
               rng: np.random.Generator) -> np.ndarray:
    """The ``n_resamples`` bootstrap replicates of ``statistic`` (vectorized in chunks)."""
    out = np.empty(n_resamples)
    for start, stop in _chunks(n_resamples, scheme.chunk_size()):
        out[start:stop] = statistic(scheme.draw(rng, stop - start))
    return out


def jackknife(scheme: Resampling, statistic: Statistic) -> np.ndarray:
    """Leave-one-top-level-unit-out values of ``statistic``."""
    size = max(1, CHUNK_ELEMENTS // scheme.n_leaves)
    values = np.empty(scheme.n_top)
    for start, stop in _chunks(scheme.n_top, size):
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
    share = (np.count_nonzero(reps < estimate) + np.count_nonzero(reps <= estimate)) / (2 * len(reps))
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


def scheme_from_clusters(n: int, clusters) -> tuple[Resampling, np.ndarray]:
    """Resampling for observations ``0..n-1`` and the leaf of each observation.

    ``clusters`` is None (each observation its own leaf), one label array (one
    level) or a pair ``(outer, inner)`` of label arrays (two levels; leaves are the
    distinct (outer, inner) combinations).
    """
    if clusters is None:
        return Resampling.clusters(n, "observation"), np.arange(n)
    if isinstance(clusters, tuple):
        if len(clusters) != 2:
            raise ValueError("two-level clusters are a pair (outer, inner)")
        outer, inner = (np.asarray(c) for c in clusters)
        if len(outer) != n or len(inner) != n:
            raise StatsInputError("cluster labels must have one entry per observation")
        _, outer_code = np.unique(outer, return_inverse=True)
        pairs = np.stack([outer_code, np.unique(inner, return_inverse=True)[1]], axis=1)
        leaf_keys, leaf = np.unique(pairs, axis=0, return_inverse=True)
        return Resampling.nested(leaf_keys[:, 0], "outer>inner"), leaf.ravel()
    labels = np.asarray(clusters)
    if len(labels) != n:
        raise StatsInputError("cluster labels must have one entry per observation")
    _, leaf = np.unique(labels, return_inverse=True)
    return Resampling.clusters(leaf.max() + 1, "cluster"), leaf.ravel()


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
