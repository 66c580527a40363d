import itertools

import numpy as np
import pytest
from scipy import stats

from contextecho.stats import (DegenerateDataError, EmptyArmError, InvalidScoreError,
                               sign_flip_test, wilcoxon_test)


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
