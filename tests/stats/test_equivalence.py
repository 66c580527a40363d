import numpy as np
import pytest
from statsmodels.stats.weightstats import ttost_ind, ttost_paired

from contextecho.stats import (COMPACTION_MARGIN, StatsInputError, equivalence_bootstrap,
                               tost_independent, tost_paired)


def test_margin_is_the_preregistered_0_08():
    assert COMPACTION_MARGIN == 0.08


@pytest.mark.parametrize("seed", range(3))
def test_paired_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    pre = rng.normal(0.2, 0.3, 169)
    post = pre + rng.normal(-0.03, 0.15, 169)
    r = tost_paired(post, pre)
    p, lower, upper = ttost_paired(post, pre, -0.08, 0.08)
    assert r.p_value == pytest.approx(p, abs=1e-12)
    assert r.p_lower == pytest.approx(lower[1], abs=1e-12)
    assert r.p_upper == pytest.approx(upper[1], abs=1e-12)
    assert r.df == lower[2]


@pytest.mark.parametrize("usevar", ["pooled", "unequal"])
def test_independent_matches_statsmodels(usevar):
    rng = np.random.default_rng(4)
    x, y = rng.normal(0.0, 0.2, 40), rng.normal(0.02, 0.4, 55)
    r = tost_independent(x, y, margin=0.15, usevar=usevar)
    p, lower, upper = ttost_ind(x, y, -0.15, 0.15, usevar=usevar)
    assert r.p_value == pytest.approx(p, abs=1e-12)
    assert r.p_lower == pytest.approx(lower[1], abs=1e-12)
    assert r.p_upper == pytest.approx(upper[1], abs=1e-12)


def test_hand_computed():
    # differences 0, 0.02, -0.02, 0.04, -0.04: mean 0, sd sqrt(0.001), se sqrt(0.0002)
    r = tost_paired([0.0, 0.02, -0.02, 0.04, -0.04])
    se = np.sqrt(0.001 / 5)
    t = 0.08 / se
    from scipy import stats
    assert r.p_lower == pytest.approx(stats.t.sf(t, 4)) and r.p_upper == pytest.approx(r.p_lower)
    assert r.equivalent and r.estimate == 0.0
    assert r.ci_high == pytest.approx(stats.t.ppf(0.95, 4) * se)


def test_ci_inclusion_equals_both_tests():
    rng = np.random.default_rng(9)
    for _ in range(20):
        d = rng.normal(rng.uniform(-0.1, 0.1), 0.2, 60)
        r = tost_paired(d)
        inside = -0.08 < r.ci_low and r.ci_high < 0.08
        assert inside == r.equivalent


def test_zero_spread_documented():
    r = tost_paired([0.01, 0.01, 0.01])
    assert (r.p_lower, r.p_upper, r.equivalent) == (0.0, 0.0, True)
    assert not tost_paired([0.2, 0.2, 0.2]).equivalent


def test_bootstrap_clustered_variant():
    rng = np.random.default_rng(2)
    session = np.repeat(np.arange(57), 3)
    change = rng.normal(-0.03, 0.05, 57)[session] + rng.normal(0, 0.1, len(session))
    r = equivalence_bootstrap(change, session, n_resamples=2000)
    assert r.p_value is None and r.n_clusters == 57 and r.n == 171
    assert r.equivalent == (-0.08 < r.ci_low and r.ci_high < 0.08)
    assert r.method == "bootstrap CI inclusion (cluster)"


def test_too_few():
    with pytest.raises(StatsInputError):
        tost_paired([0.1])
