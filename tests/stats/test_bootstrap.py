import numpy as np
import pytest
from scipy import stats

import contextecho.stats.resampling as resampling_module
from contextecho.stats import (DegenerateDataError, InvalidScoreError, Resampling,
                               TooFewClustersError, bootstrap_mean)
from contextecho.stats.bootstrap import ratio_of_sums, run_bootstrap

X = np.random.default_rng(1).exponential(size=40)


def mean_stat(a, axis=-1):
    return np.mean(a, axis=axis)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_unclustered_matches_scipy_bit_for_bit_on_the_same_stream(method):
    # One stratum draws rng.integers(0, n, (B, n)) exactly as scipy does.
    ours = bootstrap_mean(X, n_resamples=4000, ci_method=method, seed=7)
    ref = stats.bootstrap((X,), mean_stat, method=method, n_resamples=4000,
                          rng=np.random.default_rng(7))
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert ours.standard_error == pytest.approx(ref.standard_error, abs=1e-12)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_unclustered_matches_scipy_within_monte_carlo_error(method):
    ours = bootstrap_mean(X, n_resamples=20_000, ci_method=method, seed=11)
    ref = stats.bootstrap((X,), mean_stat, method=method, n_resamples=20_000,
                          rng=np.random.default_rng(99))
    # MC sd of a 2.5% quantile with B=20k is ~0.4% of the SE (~0.25) -> 0.02 is ~10 sd.
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.02)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.02)


def test_defaults_are_10000_resamples_95_percent_seed_42():
    r = bootstrap_mean(X)
    assert (r.n_resamples, r.confidence, r.seed, r.ci_method) == (10_000, 0.95, 42, "percentile")
    assert r == bootstrap_mean(X)                     # reproducible
    gen = bootstrap_mean(X, seed=np.random.default_rng(42))
    assert gen.seed is None and gen.ci_low == r.ci_low  # same stream, seed not recorded


def test_none_seed_is_refused():
    with pytest.raises(TypeError):
        bootstrap_mean(X, seed=None)


def test_chunking_does_not_change_the_result(monkeypatch):
    a = bootstrap_mean(X, n_resamples=3000, seed=3)
    monkeypatch.setattr(resampling_module, "CHUNK_ELEMENTS", 1000)
    b = bootstrap_mean(X, n_resamples=3000, seed=3)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)


def test_two_clusters_hand_computed():
    # Equal-size clusters with means 1 and 3: replicates are 1, 2, 3 with prob 1/4, 1/2, 1/4.
    values = np.array([0.0, 2.0, 2.0, 4.0])
    r = bootstrap_mean(values, clusters=[0, 0, 1, 1], n_resamples=20_000, seed=1)
    assert r.estimate == 2.0 and r.n_clusters == 2
    assert (r.ci_low, r.ci_high) == (1.0, 3.0)
    assert r.standard_error == pytest.approx(np.sqrt(0.5), abs=0.01)  # var = 1/2


def test_vectorized_counts_equal_a_plain_loop_over_expanded_resamples():
    rng = np.random.default_rng(0)
    scheme = Resampling.nested(np.array([0, 0, 0, 1, 1, 2]))
    values = rng.normal(size=6)
    counts = scheme.draw(np.random.default_rng(5), 50)
    stat = ratio_of_sums(values, np.ones(6))(counts)
    for row, expected in zip(counts, stat):
        expanded = np.repeat(values, row.astype(int))
        assert expanded.mean() == pytest.approx(expected, abs=1e-12)


def test_nested_draw_structure():
    outer = np.array([0, 0, 0, 1, 1, 2])          # sessions with 3, 2, 1 positions
    scheme = Resampling.nested(outer)
    counts = scheme.draw(np.random.default_rng(2), 20_000)
    # every drawn session contributes as many position draws as it has positions
    sessions_drawn = np.stack([counts[:, outer == g].sum(axis=1) / (outer == g).sum()
                               for g in range(3)], axis=1)
    assert np.allclose(sessions_drawn, np.round(sessions_drawn))
    assert np.all(sessions_drawn.sum(axis=1) == 3)
    assert np.allclose(counts.mean(axis=0), 1.0, atol=0.03)   # unbiased
    assert scheme.n_top == 3


def test_stratified_draw_keeps_stratum_sizes():
    strata = np.array([0, 0, 1, 1, 1, 2, 2])
    counts = Resampling.stratified(strata).draw(np.random.default_rng(3), 100)
    for g, size in enumerate(np.bincount(strata)):
        assert np.all(counts[:, strata == g].sum(axis=1) == size)


def test_two_level_clusters_run_and_are_wider_than_one_level():
    rng = np.random.default_rng(4)
    session = np.repeat(np.arange(8), 30)
    position = np.tile(np.repeat(np.arange(6), 5), 8)
    values = rng.normal(size=8)[session] + rng.normal(size=240)
    one = bootstrap_mean(values, clusters=None, n_resamples=2000)
    two = bootstrap_mean(values, clusters=(session, position), n_resamples=2000, ci_method="bca")
    assert two.cluster == "outer>inner" and two.n_clusters == 8
    assert two.ci_high - two.ci_low > 1.5 * (one.ci_high - one.ci_low)


def test_degenerate_all_equal_gives_point_interval():
    r = bootstrap_mean(np.full(10, 2.5), clusters=np.arange(10) % 3, ci_method="bca")
    assert r.degenerate and (r.ci_low, r.ci_high, r.standard_error) == (2.5, 2.5, 0.0)


def test_one_cluster_is_an_error():
    with pytest.raises(TooFewClustersError):
        bootstrap_mean([1.0, 2.0, 3.0], clusters=[0, 0, 0])
    with pytest.raises(TooFewClustersError):
        bootstrap_mean([1.0])


def test_nan_is_an_error():
    with pytest.raises(InvalidScoreError):
        bootstrap_mean([1.0, np.nan, 2.0])


def test_bca_undefined_when_all_replicates_on_one_side():
    scheme = Resampling.clusters(20)
    with pytest.raises(DegenerateDataError):
        # statistic minimal at the full sample: every replicate (none a permutation of
        # the 20 clusters, P ~ 2e-8) is above the estimate
        run_bootstrap(scheme, lambda c: ((c - 1.0) ** 2).sum(axis=1),
                      rng=np.random.default_rng(0), n_resamples=200, ci_method="bca")


def test_bad_arguments():
    with pytest.raises(ValueError):
        bootstrap_mean(X, ci_method="basic")
    with pytest.raises(ValueError):
        bootstrap_mean(X, confidence=95)
