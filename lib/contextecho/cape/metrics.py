"""Point-wise consistency of scoring trajectories: TAR and ED (CAPE §4).

A set of trajectories is an ``(n, m)`` array: ``n`` runs (3 in the paper) of ``m``
item scores, items aligned by column. Both functions return fractions / raw
distances; the paper's Table 1 shows TAR (and TC, OC) ×100.

- TAR = (1/m) Σ_k 1(T_1,k = T_2,k = … = T_n,k)
- ED  = (1/(P·m)) Σ_k Σ_{(i,j) pairs} |T_i,k − T_j,k|, P = n(n−1)/2 (= 3 for n = 3,
  the paper's 1/(3m)); the Euclidean norm of a scalar difference is its absolute value.

Items where any run has no valid score (NaN) are left out of both and counted in
``n_missing``; the paper assumes complete trajectories.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np


@dataclass(frozen=True, slots=True)
class PointwiseConsistency:
    tar: float
    ed: float
    n_items: int  # items compared
    n_missing: int  # items left out because some run had no valid score


def as_trajectories(trajectories) -> np.ndarray:
    array = np.asarray(trajectories, dtype=float)
    if array.ndim != 2 or array.shape[0] < 2 or array.shape[1] < 1:
        raise ValueError(f"need an (n_runs >= 2, n_items >= 1) array of scores, got shape {array.shape}")
    return array


class NoComparableItems(ValueError):
    """Every item is invalid in at least one run: the runs cannot be compared."""


def _complete(trajectories) -> tuple[np.ndarray, int]:
    array = as_trajectories(trajectories)
    keep = ~np.isnan(array).any(axis=0)
    if not keep.any():
        raise NoComparableItems("no item has a valid score in every run")
    return array[:, keep], int((~keep).sum())


def total_agreement_rate(trajectories) -> float:
    array, _ = _complete(trajectories)
    return float(np.mean(np.all(array == array[0], axis=0)))


def euclidean_distance(trajectories) -> float:
    array, _ = _complete(trajectories)
    pairs = list(combinations(range(array.shape[0]), 2))
    return float(np.mean([np.abs(array[i] - array[j]) for i, j in pairs]))


def pointwise_consistency(trajectories) -> PointwiseConsistency:
    array, missing = _complete(trajectories)
    return PointwiseConsistency(total_agreement_rate(array), euclidean_distance(array),
                                array.shape[1], missing)
