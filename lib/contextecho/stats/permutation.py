"""Paired tests: sign-flip permutation test of the mean difference, and Wilcoxon.

Sign-flip test. Under H0 (exchangeable arms within a pair) each paired difference
``d_i = x_i − y_i`` is equally likely to have either sign. The statistic is the mean
difference; its null distribution is the mean of ``s_i d_i`` over sign patterns
``s``. Swapping the two members of a pair flips the sign of ``d_i``, so this is
``scipy.stats.permutation_test(..., permutation_type="samples")`` with statistic
``mean(x) − mean(y)``.

* Exact enumeration of all ``2**m`` patterns of the ``m`` non-zero differences when
  ``2**m <= n_resamples`` (zero differences do not change under a flip, so dropping
  them leaves every p-value unchanged); ``exact=True`` forces it (m <= 24).
* Otherwise ``n_resamples`` random patterns from ``seed`` (default 10,000 and 42, as
  the paper); ``p = (k + 1) / (n_resamples + 1)``, which counts the observed pattern
  (scipy's convention) and is never 0.
* Ties: a null value counts as "at least as extreme" when within 1e-9 of the mean
  absolute difference of the observed value (robust to summation order).
* ``alternative``: ``"greater"`` P(T* >= T), ``"less"`` P(T* <= T),
  ``"two-sided"`` ``min(1, 2 * min(greater, less))`` (scipy's convention).
* All differences zero: ``statistic = 0`` and ``p = 1`` (documented, not NaN).

Wilcoxon signed-rank (:func:`wilcoxon_test`) delegates to ``scipy.stats.wilcoxon``
(zero differences dropped, ``zero_method="wilcox"``) and raises
:class:`DegenerateDataError` when every difference is zero.

The ``harness_`` functions are the authors' harness's own sign-flip test (``PROTOCOL.md`` §9),
call for call (the same generator, draws and arithmetic: the paper's p-values exactly).
"""
from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from ._inputs import DEFAULT_RESAMPLES, DEFAULT_SEED, as_generator, finite_1d
from .errors import DegenerateDataError, EmptyArmError, StatsInputError
from .records import PermutationTest

ALTERNATIVES = ("two-sided", "greater", "less")
MAX_EXACT = 24
_CHUNK = 1_000_000


def _differences(x, y) -> np.ndarray:
    d = finite_1d(x, "x") if y is None else finite_1d(x, "x") - _same_length(x, y)
    if len(d) == 0:
        raise EmptyArmError("no pairs to test")
    return d


def _same_length(x, y) -> np.ndarray:
    y = finite_1d(y, "y")
    if len(y) != len(np.asarray(x)):
        raise StatsInputError(f"paired samples differ in length: {len(np.asarray(x))} vs {len(y)}")
    return y


def _sign_patterns(m: int, start: int, stop: int) -> np.ndarray:
    """Rows ``start..stop-1`` of the 2**m sign patterns (bit j of the row number)."""
    bits = (np.arange(start, stop, dtype=np.int64)[:, None] >> np.arange(m)) & 1
    return 1.0 - 2.0 * bits


def _p_value(greater: int, less: int, total: int, plus_one: bool, alternative: str) -> float:
    add = 1 if plus_one else 0
    p_greater = (greater + add) / (total + add)
    p_less = (less + add) / (total + add)
    if alternative == "greater":
        return float(p_greater)
    if alternative == "less":
        return float(p_less)
    return float(min(1.0, 2.0 * min(p_greater, p_less)))


def sign_flip_test(x, y=None, *, alternative: str = "two-sided",
                   n_resamples: int = DEFAULT_RESAMPLES,
                   seed: int | np.random.Generator = DEFAULT_SEED,
                   exact: bool | None = None) -> PermutationTest:
    """Paired sign-flip permutation test of mean(x − y) (or of mean(x) when ``y`` is None).

    ``exact=None`` enumerates when ``2**n_nonzero <= n_resamples``; see the module
    docstring for the p-value conventions.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}")
    d = _differences(x, y)
    nonzero = d[d != 0]
    m = len(nonzero)
    observed = float(d.mean())
    if m == 0:
        return PermutationTest(statistic=0.0, p_value=1.0, n=len(d), n_nonzero=0,
                               alternative=alternative, method="sign-flip (all differences zero)",
                               n_resamples=1, seed=None)
    tol = 1e-9 * float(np.abs(d).mean())
    use_exact = (2**m <= n_resamples) if exact is None else bool(exact)
    if use_exact and m > MAX_EXACT:
        raise StatsInputError(f"exact enumeration limited to {MAX_EXACT} non-zero pairs, got {m}")
    greater = less = 0
    if use_exact:
        total, seed_used = 2**m, None
        rows = max(1, _CHUNK // m)
        for start in range(0, total, rows):
            null = _sign_patterns(m, start, min(total, start + rows)) @ nonzero / len(d)
            greater += int(np.sum(null >= observed - tol))
            less += int(np.sum(null <= observed + tol))
        method = f"sign-flip exact ({total} patterns)"
    else:
        rng, seed_used = as_generator(seed)
        total = int(n_resamples)
        rows = max(1, _CHUNK // len(d))
        for start in range(0, total, rows):
            b = min(total, start + rows) - start
            signs = 1.0 - 2.0 * rng.integers(0, 2, size=(b, len(d)))
            null = signs @ d / len(d)
            greater += int(np.sum(null >= observed - tol))
            less += int(np.sum(null <= observed + tol))
        method = "sign-flip Monte Carlo"
    return PermutationTest(statistic=observed,
                           p_value=_p_value(greater, less, total, not use_exact, alternative),
                           n=len(d), n_nonzero=m, alternative=alternative, method=method,
                           n_resamples=total, seed=seed_used)


def wilcoxon_test(x, y=None, *, alternative: str = "two-sided",
                  method: str = "auto") -> PermutationTest:
    """Wilcoxon signed-rank test of the paired differences x − y (scipy.stats.wilcoxon).

    ``statistic`` is scipy's (the smaller rank sum for two-sided, else T+).
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}")
    d = _differences(x, y)
    m = int(np.count_nonzero(d))
    if m == 0:
        raise DegenerateDataError("Wilcoxon undefined: every paired difference is zero")
    res = stats.wilcoxon(d, zero_method="wilcox", alternative=alternative, method=method)
    return PermutationTest(statistic=float(res.statistic), p_value=float(res.pvalue), n=len(d),
                           n_nonzero=m, alternative=alternative, method=f"wilcoxon ({method})",
                           n_resamples=None, seed=None)


def harness_sign_flip_p(deltas: Sequence[float], *, n_resamples: int = DEFAULT_RESAMPLES,
                        seed: int = DEFAULT_SEED, plus_one: bool = False) -> tuple[float, float]:
    """``(observed mean, two-sided p)`` of the harness's sign-flip test on paired differences
    (``consolidate_12model_perm.paired_permutation``): CPython ``random.Random(seed)``; each
    resample flips every difference with ``random() < 0.5``; two-sided count of
    ``|mean| >= |observed|``; ``p = count / n`` (``plus_one=True``: ``(count + 1) / (n + 1)``,
    the B7 ``perm_p`` variant).

    The resamples are computed a block at a time: the same uniforms from the same Mersenne
    Twister state (:func:`harness_uniforms`), each resample's flipped differences summed left to
    right as Python's ``sum`` adds them (a cumulative sum, not numpy's pairwise one)."""
    if len(deltas) == 0:
        return math.nan, math.nan
    n = len(deltas)
    observed = sum(deltas) / n
    values = np.asarray(deltas, dtype=float)
    uniforms, count = harness_uniforms(seed), 0
    block = max(1, _CHUNK // n)
    for start in range(0, n_resamples, block):
        signed = np.where(uniforms.random_sample((min(block, n_resamples - start), n)) < 0.5, values, -values)
        flipped = np.cumsum(signed, axis=1)[:, -1] / n
        count += int(np.count_nonzero(np.abs(flipped) >= abs(observed)))
    if plus_one:
        return observed, (count + 1) / (n_resamples + 1)
    return observed, count / n_resamples


def harness_uniforms(seed: int) -> np.random.RandomState:
    """CPython's ``random.Random(seed)`` as a numpy ``RandomState``: the same Mersenne Twister
    state, whose ``random_sample`` makes each double as ``random()`` does (two 32-bit outputs,
    ``(a >> 5, b >> 6)``, 53 bits), so its uniforms are ``random()``'s, one for one."""
    _, internal, _ = random.Random(seed).getstate()
    state = np.random.RandomState()
    state.set_state(("MT19937", np.array(internal[:-1], dtype=np.uint32), internal[-1]))
    return state


def harness_exact_sign_flip_p(deltas: Sequence[float]) -> float:
    """:func:`harness_sign_flip_p` over every sign pattern instead of random ones: the share of
    the ``2**m`` patterns of the ``m`` non-zero differences whose mean (summed in order, over all
    ``n`` differences, as the harness sums) is at least the observed mean in absolute value;
    exact float comparison, as the harness compares. NaN without differences."""
    if not deltas:
        return math.nan
    n = len(deltas)
    observed = abs(sum(deltas) / n)
    nonzero = [float(d) for d in deltas if d != 0]
    hits = sum(abs(sum(s * d for s, d in zip(signs, nonzero)) / n) >= observed
               for signs in itertools.product((1, -1), repeat=len(nonzero)))
    return hits / 2 ** len(nonzero)


def harness_sign_flip_summary(deltas: Sequence[float], *, n_resamples: int = 20_000,
                              seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The tool-call continuation's paired analysis of ``deltas`` (e07; the paper's Δ M2, its ITT
    recomputation and its strata, whose script is not in the release: composed from the
    harness's metrics fields around :func:`harness_sign_flip_p` with the appendix's 20,000
    resamples and seed 42; the pairs from :func:`~contextecho.stats.paired.harness_paired_cuts`).

    ``n``, ``delta_mean`` and ``p`` (:func:`harness_sign_flip_p` with ``n_resamples`` and
    ``seed``; NaN without pairs), the counts of non-zero, positive and negative differences,
    and beside the Monte Carlo p an exact one, ``exact_p`` (:func:`harness_exact_sign_flip_p`)
    where ``2**n_nonzero <= n_resamples`` (NaN otherwise, or without pairs)."""
    deltas = [float(d) for d in deltas]
    nonzero = [d for d in deltas if d != 0]
    mean, p = harness_sign_flip_p(deltas, n_resamples=n_resamples, seed=seed)
    exact = harness_exact_sign_flip_p(deltas) if deltas and 2 ** len(nonzero) <= n_resamples else math.nan
    return {"n": len(deltas), "delta_mean": mean, "p": p, "n_nonzero": len(nonzero),
            "n_positive": sum(d > 0 for d in deltas), "n_negative": sum(d < 0 for d in deltas),
            "exact_p": exact}
