"""Choosing a recall item's options: which of the session's candidates stand beside the answer."""
from __future__ import annotations

from .items import N_OPTIONS

N_DISTRACTORS = N_OPTIONS - 1


def distinct_indices(rng, n: int, k: int) -> list[int]:
    """``k`` distinct indices of ``range(n)`` drawn with ``rng``, in ascending order."""
    return sorted(int(i) for i in rng.choice(n, size=k, replace=False))
