"""Choosing a recall item's options: which of the session's candidates stand beside the answer."""
from __future__ import annotations

from typing import Sequence, TypeVar

from .items import N_OPTIONS, item_rng

T = TypeVar("T")

N_DISTRACTORS = N_OPTIONS - 1


def distinct_indices(rng, n: int, k: int) -> list[int]:
    """``k`` distinct indices of ``range(n)`` drawn with ``rng``, in ascending order."""
    return sorted(int(i) for i in rng.choice(n, size=k, replace=False))


def draw(pool: Sequence[T], session_id: str, item_id: str, k: int = N_DISTRACTORS) -> list[T]:
    """``k`` members of ``pool`` chosen with the item's own generator, in pool order."""
    return [pool[i] for i in distinct_indices(item_rng(session_id, item_id, "select"), len(pool), k)]
