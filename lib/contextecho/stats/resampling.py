"""Resampling schemes for the bootstrap: which leaves one replicate draws.

A replicate is a ``(b, L)`` count matrix, as in :mod:`~contextecho.stats.bootstrap`.

* ``clusters(L)`` — one level: draw ``L`` leaves with replacement from all ``L``
  (the same ``rng.integers(0, L, (b, L))`` draws as ``scipy.stats.bootstrap``).
* ``stratified(strata)`` — draw within each fixed stratum, keeping its size (the
  unclustered "cell" bootstrap; several strata reproduce the independent
  multi-sample bootstrap of ``scipy.stats.bootstrap``).
* ``nested(outer_of_leaf)`` — two levels: draw outer clusters (sessions) with
  replacement, then, independently for every drawn outer cluster, draw as many of its
  leaves (positions) with replacement as it has.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from .errors import StatsInputError

#: Upper bound on array elements per chunk of replicates (~16 MB of float64).
CHUNK_ELEMENTS = 2_000_000


def _below(rng: np.random.Generator, sizes: np.ndarray,
           shape: tuple[int, ...]) -> np.ndarray:
    """Uniform integers in ``0..sizes-1`` (broadcast) as ``floor(U * size)``: several
    times faster than ``rng.integers`` with array bounds; the non-uniformity is of
    order ``size * 2**-53``, negligible."""
    return np.minimum((rng.random(shape) * sizes).astype(np.int64), sizes - 1)


@dataclass(frozen=True, eq=False)
class Resampling:
    """Which leaves a replicate draws; see the module docstring for the schemes."""

    group_of_leaf: np.ndarray
    resample_groups: bool
    label: str
    _order: np.ndarray = field(init=False, repr=False)    # leaves sorted by group
    _sizes: np.ndarray = field(init=False, repr=False)    # leaves per group
    _starts: np.ndarray = field(init=False, repr=False)   # first sorted slot per group

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


def chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(total, start + size)


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
