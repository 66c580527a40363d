import itertools
import math
import random

import numpy as np
import pytest
from scipy import stats

from contextecho.stats import (DegenerateDataError, EmptyArmError, InvalidScoreError,
                               sign_flip_test, wilcoxon_test)
from contextecho.stats import permutation
from contextecho.stats.permutation import (harness_exact_sign_flip_p, harness_sign_flip_p,
                                           harness_sign_flip_summary)


def scipy_paired(x, y, alternative, n_resamples=np.inf, rng=None):
    return stats.permutation_test(
        (x, y), lambda a, b, axis: np.mean(a, axis=axis) - np.mean(b, axis=axis),
        permutation_type="samples", vectorized=True, n_resamples=n_resamples,
        alternative=alternative, rng=rng).pvalue


@pytest.mark.parametrize("n", [3, 8, 12])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_exact_matches_scipy_permutation_test(n, alternative):
    rng = np.random.default_rng(n)
    x, y = rng.normal(0.4, 1, n), rng.normal(0, 1, n)
    ours = sign_flip_test(x, y, alternative=alternative)
    assert ours.method.startswith("sign-flip exact") and ours.seed is None
    assert ours.p_value == pytest.approx(scipy_paired(x, y, alternative), abs=1e-9)


def test_exact_with_zeros_and_ties_matches_scipy():
    # fidelity-like data on a 0.2 grid: exact zeros and many tied |differences|
    x = np.array([0.6, 0.8, 0.4, 1.0, 0.2, 0.6, 0.0, 0.8, 0.4])
    y = np.array([0.4, 0.8, 0.2, 0.6, 0.2, 0.8, 0.0, 0.4, 0.4])
    ours = sign_flip_test(x, y)
    assert ours.n_nonzero == 5 and ours.n_resamples == 2**5
    assert ours.p_value == pytest.approx(scipy_paired(x, y, "two-sided"), abs=1e-9)


def test_hand_computed_exact_cases():
    # d = 1, 2, 3: of 8 sign patterns only +++ reaches mean 2 -> one-sided 1/8
    assert sign_flip_test([1.0, 2.0, 3.0], alternative="greater").p_value == 1 / 8
    assert sign_flip_test([1.0, 2.0, 3.0]).p_value == 2 / 8
    # the paper's strata: six non-zero differences, five positive -> two-sided 0.0625
    d = [0.3, 0.5, 0.2, 0.4, 0.6, -0.1, 0, 0, 0, 0]
    r = sign_flip_test(d)
    assert r.p_value == pytest.approx(0.0625) and r.n == 10 and r.n_nonzero == 6


def test_monte_carlo_matches_scipy_within_error():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0.35, 1, 30), rng.normal(0, 1, 30)
    ours = sign_flip_test(x, y)
    assert ours.method == "sign-flip Monte Carlo"
    assert (ours.n_resamples, ours.seed) == (10_000, 42)
    ref = scipy_paired(x, y, "two-sided", n_resamples=10_000, rng=np.random.default_rng(1))
    exact_sd = np.sqrt(ref * (1 - ref) / 10_000)
    assert abs(ours.p_value - ref) < 6 * exact_sd * np.sqrt(2)
    assert ours == sign_flip_test(x, y)       # seed 42 by default: reproducible


def test_exact_forced_for_moderate_n_agrees_with_monte_carlo():
    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1, 16)
    exact = sign_flip_test(d, exact=True)
    mc = sign_flip_test(d, n_resamples=20_000, seed=5)
    assert exact.n_resamples == 2**16
    assert abs(exact.p_value - mc.p_value) < 0.02


def test_all_zero_differences_documented_p_one():
    r = sign_flip_test([1.0, 2.0], [1.0, 2.0])
    assert (r.statistic, r.p_value, r.n_nonzero) == (0.0, 1.0, 0)


def test_invalid_inputs():
    with pytest.raises(InvalidScoreError):
        sign_flip_test([1.0, np.nan])
    with pytest.raises(EmptyArmError):
        sign_flip_test([])
    with pytest.raises(ValueError):
        sign_flip_test([1.0, 2.0], [1.0])


def test_wilcoxon_matches_scipy_and_brute_force():
    d = np.array([1.3, -0.4, 2.1, 0.7, 1.8, -1.1, 0.9, 0.0])
    r = wilcoxon_test(d)
    ref = stats.wilcoxon(d, zero_method="wilcox")
    assert r.p_value == pytest.approx(ref.pvalue, abs=1e-12)
    assert r.n_nonzero == 7
    # brute force: exact null of T+ over the 2^7 sign patterns of ranks 1..7
    nz = d[d != 0]
    ranks = stats.rankdata(np.abs(nz))
    t_plus = ranks[nz > 0].sum()
    null = [sum(r_ for r_, s in zip(ranks, signs) if s) for signs in
            itertools.product([0, 1], repeat=len(nz))]
    null = np.array(null)
    p = min(1.0, 2 * min(np.mean(null >= t_plus), np.mean(null <= t_plus)))
    assert r.p_value == pytest.approx(p, abs=1e-12)


def test_wilcoxon_all_zero_is_an_error():
    with pytest.raises(DegenerateDataError):
        wilcoxon_test([0.5, 1.0], [0.5, 1.0])


# ---------------------------------------------------------------- the harness's sign-flip test
# Hand-computed cases, exact enumeration and scipy; bit-for-bit equality with the authors' code
# is checked on their own outputs by the conformance test (tests/conformance/test_functions.py).

def _exact_sign_flip_p(deltas):
    n = len(deltas)
    observed = abs(sum(deltas) / n)
    hits = sum(abs(sum(s * d for s, d in zip(signs, deltas)) / n) >= observed - 1e-12
               for signs in itertools.product((1, -1), repeat=n))
    return hits / 2 ** n


@pytest.mark.parametrize("deltas", [[1, 2, 0, -1, 1, 2, 1, 0, 1, 3], [1, -1, 2, -2, 0, 1, -1, 1]])
def test_harness_sign_flip_matches_exact_enumeration(deltas):
    exact = _exact_sign_flip_p(deltas)
    observed, p = harness_sign_flip_p(deltas, n_resamples=20_000, seed=5)
    assert observed == pytest.approx(sum(deltas) / len(deltas))
    assert p == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-3)


def test_harness_sign_flip_plus_one_and_edges():
    deltas = [1, 1, 0, 2, -1]
    _, p = harness_sign_flip_p(deltas, n_resamples=999, seed=1)
    _, p1 = harness_sign_flip_p(deltas, n_resamples=999, seed=1, plus_one=True)
    assert p1 == pytest.approx((p * 999 + 1) / 1000)
    assert harness_sign_flip_p([0, 0, 0], n_resamples=50)[1] == 1.0   # every flip ties
    assert all(math.isnan(v) for v in harness_sign_flip_p([]))


def _harness_loop(deltas, n_resamples, seed):
    """consolidate_12model_perm.paired_permutation as the harness runs it."""
    rng = random.Random(seed)
    n = len(deltas)
    observed = sum(deltas) / n
    count = 0
    for _ in range(n_resamples):
        flipped = sum(d if rng.random() < 0.5 else -d for d in deltas) / n
        if abs(flipped) >= abs(observed):
            count += 1
    return observed, count / n_resamples


@pytest.mark.parametrize("case", range(40))
def test_harness_sign_flip_is_the_harness_loop_to_the_bit(case, monkeypatch):
    """Its resamples in blocks (here some of one or two resamples, so a block boundary falls
    inside the run) are the loop's, the same uniforms and the same left-to-right sums."""
    g = np.random.default_rng(case)
    n = int(g.integers(1, 40))
    deltas = [g.integers(-3, 4, n).tolist(), g.normal(0, 1, n).tolist(), (g.integers(-3, 4, n) / 7).tolist()][case % 3]
    if case % 4 == 0:
        monkeypatch.setattr(permutation, "_CHUNK", n * int(g.integers(1, 3)))
    n_resamples, seed = int(g.choice([1, 7, 500])), int(g.integers(0, 10**6))
    assert harness_sign_flip_p(deltas, n_resamples=n_resamples, seed=seed) == _harness_loop(deltas, n_resamples, seed)


def test_harness_exact_sign_flip_p_by_enumeration_by_hand():
    # six non-zero differences, five positive, the negative one smallest: of the 64 sign
    # patterns only all-positive, the observed one and their mirror images reach |mean|.
    deltas = [0.5, 0.4, 0.3, 0.2, 0.6, -0.1]
    assert harness_exact_sign_flip_p(deltas) == 4 / 64
    assert harness_exact_sign_flip_p([0.0, 0.0]) == 1.0
    assert math.isnan(harness_exact_sign_flip_p([]))


def test_harness_exact_sign_flip_p_agrees_with_scipy_permutation_test():
    rng = np.random.default_rng(3)
    deltas = list(np.round(rng.normal(0.1, 0.3, size=9), 3))
    ref = stats.permutation_test((np.array(deltas),), np.mean, permutation_type="samples",
                                 alternative="two-sided", n_resamples=np.inf)
    assert harness_exact_sign_flip_p(deltas) == pytest.approx(ref.pvalue, abs=1e-12)


def test_harness_sign_flip_summary_counts_and_limits():
    s = harness_sign_flip_summary([0.5, 0.0, -0.25, 0.5], n_resamples=2000, seed=42)
    assert (s["n"], s["n_nonzero"], s["n_positive"], s["n_negative"]) == (4, 3, 2, 1)
    assert s["delta_mean"] == pytest.approx(0.1875)
    assert s["p"] == harness_sign_flip_p([0.5, 0.0, -0.25, 0.5], n_resamples=2000, seed=42)[1]
    assert s["exact_p"] == harness_exact_sign_flip_p([0.5, 0.0, -0.25, 0.5])
    many = harness_sign_flip_summary([0.1 * (i + 1) for i in range(12)], n_resamples=2000)
    assert math.isnan(many["exact_p"])  # 2**12 patterns exceed the 2,000 resamples
    empty = harness_sign_flip_summary([])
    assert empty["n"] == 0 and math.isnan(empty["delta_mean"]) and math.isnan(empty["p"])
