"""Holm step-down correction over one family of hypotheses.

Sort the m p-values ascending, ``p_(1) <= ... <= p_(m)``; the adjusted value of the
j-th smallest is ``max_{i <= j} min(1, (m − i + 1) p_(i))`` and hypothesis j is
rejected when its adjusted value is ``<= alpha``. This controls the family-wise error
rate at ``alpha`` under any dependence (Holm 1979); it equals statsmodels'
``multipletests(method="holm")``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .errors import InvalidScoreError, StatsInputError
from .records import HolmResult


def holm(p_values: Sequence[float] | Mapping[str, float], *, alpha: float = 0.05,
         labels: Sequence[str] | None = None) -> HolmResult:
    """Holm-adjusted p-values; ``p_values`` may be a mapping label -> p."""
    if isinstance(p_values, Mapping):
        if labels is not None:
            raise ValueError("give labels either as mapping keys or as `labels`, not both")
        labels, p_values = list(p_values.keys()), list(p_values.values())
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or len(p) == 0:
        raise StatsInputError("holm needs a non-empty one-dimensional family of p-values")
    if not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InvalidScoreError("p-values must be finite and within [0, 1]")
    labels = [str(i) for i in range(len(p))] if labels is None else [str(x) for x in labels]
    if len(labels) != len(p) or len(set(labels)) != len(labels):
        raise StatsInputError("labels must be unique, one per p-value")
    order = np.argsort(p, kind="stable")
    m = len(p)
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return HolmResult(labels=tuple(labels), p_values=tuple(float(v) for v in p),
                      p_adjusted=tuple(float(v) for v in adjusted),
                      reject=tuple(bool(v <= alpha) for v in adjusted), alpha=alpha)


def harness_holm(p_values: Mapping[str, float] | Sequence[tuple[str, float]]) -> dict[str, float]:
    """The harness's Holm step-down (``consolidate_12model_perm.py:59-68``, ``PROTOCOL.md`` §9): label -> p
    (a mapping, or ``(label, p)`` pairs as the harness passes them) sorted by p with
    Python's sort, ``(m − i) p`` with a running maximum, capped at 1.

    For finite p-values this is :func:`holm`. A NaN p-value (a contrast without pairs) is
    adjusted as the harness adjusts it: NaN compares false with everything, so the sort
    leaves it where its insertion stops (and it can keep finite values after it out of
    order), and ``max(running, nan)`` keeps the running maximum, so the NaN contrast gets
    the adjusted value of the one before it (0 when first)."""
    pairs = p_values.items() if isinstance(p_values, Mapping) else p_values
    ranked = sorted(pairs, key=lambda item: item[1])
    m = len(ranked)
    adjusted, running = {}, 0.0
    for i, (label, p) in enumerate(ranked):
        running = max(running, (m - i) * p)
        adjusted[label] = min(running, 1.0)
    return adjusted
