"""A paired contrast a − b: mean difference, bootstrap CI and a paired test.

:func:`paired_contrast` works on two aligned arrays (one entry per pair: a cutpoint,
a session, ...). Estimate: ``scale * mean(a − b)``; interval: bootstrap of that mean
over pairs (optionally clustered, see :func:`bootstrap_mean`); test: the sign-flip
permutation test (default, ``n_permutations`` patterns, seed as given) or Wilcoxon
signed-rank, both on the unscaled differences and treating pairs as independent —
aggregate to the independent unit first (e.g. sessions, :func:`arm_pairs`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._inputs import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, as_columns,
                      as_generator, finite_1d, handle_invalid, require_columns)
from .bootstrap import bootstrap_mean
from .errors import EmptyArmError, StatsInputError
from .permutation import sign_flip_test, wilcoxon_test
from .records import PairedContrast

TESTS = ("permutation", "wilcoxon")


def paired_contrast(a, b, *, clusters=None, test: str = "permutation", scale: float = 1.0,
                    n_resamples: int = DEFAULT_RESAMPLES,
                    n_permutations: int = DEFAULT_RESAMPLES,
                    confidence: float = DEFAULT_CONFIDENCE, ci_method: str = "percentile",
                    seed: int | np.random.Generator = DEFAULT_SEED,
                    alternative: str = "two-sided", n_invalid: int = 0) -> PairedContrast:
    """Mean of a − b (times ``scale``) with bootstrap CI and paired test p-value."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}")
    x, y = finite_1d(a, "a"), finite_1d(b, "b")
    if len(x) != len(y):
        raise StatsInputError(f"paired arrays differ in length: {len(x)} vs {len(y)}")
    if len(x) == 0:
        raise EmptyArmError("no pairs")
    rng, recorded = as_generator(seed)
    d = x - y
    ci = bootstrap_mean(scale * d, clusters, n_resamples=n_resamples, confidence=confidence,
                        ci_method=ci_method, seed=rng)
    if test == "permutation":
        result = sign_flip_test(d, alternative=alternative, n_resamples=n_permutations, seed=rng)
    else:
        result = wilcoxon_test(d, alternative=alternative)
    return PairedContrast(
        estimate=ci.estimate, ci_low=ci.ci_low, ci_high=ci.ci_high, n=len(d),
        n_clusters=ci.n_clusters, cluster=ci.cluster, method="mean of paired differences a - b",
        ci_method=ci_method, confidence=confidence, n_resamples=ci.n_resamples, seed=recorded,
        standard_error=ci.standard_error, degenerate=ci.degenerate, n_invalid=n_invalid,
        p_value=result.p_value, test=result.method, test_statistic=result.statistic)


def arm_pairs(cells: pd.DataFrame, *, arms: tuple[str, str], value: str = "score",
              arm: str = "arm", pair_on: Sequence[str] = ("session",),
              invalid: str = "drop") -> pd.DataFrame:
    """Mean ``value`` per ``pair_on`` key and arm, one column per arm (``arms`` order).

    ``invalid`` applies to NaN cells first; a key left without a valid cell in either
    arm raises :class:`EmptyArmError` (use :func:`attrition_contrast` to report
    complete-case and intention-to-treat versions instead). ``attrs["n_invalid"]``
    holds the number of invalid cells.
    """
    keys = list(as_columns(pair_on))
    require_columns(cells, [value, arm, *keys], "arm_pairs")
    frame = cells.loc[cells[arm].isin(arms)]
    frame, n_invalid = handle_invalid(frame, value, invalid)
    wide = frame.groupby([*keys, arm])[value].mean().unstack(arm)
    wide = wide.reindex(columns=list(arms))
    lacking = wide.index[wide.isna().any(axis=1)]
    if len(lacking) or wide.empty:
        raise EmptyArmError(f"{len(lacking)} pair key(s) lack a valid cell in one arm: "
                            f"{list(lacking[:5])}")
    wide.columns.name = None
    wide.attrs["n_invalid"] = n_invalid
    return wide


def harness_paired_differences(a: Mapping[str, float], b: Mapping[str, float]) -> list[float]:
    """The harness's B7 pairing: ``b[k] − a[k]`` for the keys present in both mappings, in sorted key order."""
    return [b[k] - a[k] for k in sorted(set(a) & set(b))]


def harness_paired_cuts(a: Mapping[Any, float | None], b: Mapping[Any, float | None], *,
                        fill: float | None = None) -> tuple[list, list[float]]:
    """The harness's tool-call continuation pairs (e07): ``(cuts, deltas)``, ``a[c] − b[c]`` over the cuts
    both arms were generated at (the keys of both mappings; the harness writes no metrics file
    for a cut whose runner raised), ascending, which fixes the random stream of the test after
    it. ``fill=None``: complete case, only where both values exist (M2 is None without a call or
    with another tool than the ground truth); else a missing value (None) counts as ``fill``
    (the ITT recomputation: 0)."""
    cuts, deltas = [], []
    for cut in sorted(set(a) & set(b)):
        x, y = a[cut], b[cut]
        if fill is None and (x is None or y is None):
            continue
        cuts.append(cut)
        deltas.append((fill if x is None else x) - (fill if y is None else y))
    return cuts, deltas
