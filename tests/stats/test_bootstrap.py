import math

import numpy as np
import pytest
from scipy import stats

import contextecho.stats.resampling as resampling_module
from contextecho.stats import (DegenerateDataError, InvalidScoreError, Resampling,
                               TooFewClustersError, bootstrap_mean)
from contextecho.stats.bootstrap import (harness_boot_gap_ci, harness_clustered_bootstrap_mean,
                                         harness_clustered_bootstrap_ratio, harness_onset_gap_cis,
                                         harness_paired_bootstrap_ci, ratio_of_sums, run_bootstrap)

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


# ---------------------------------------------------------------- the harness's bootstraps
# Hand-computed cases and scipy in distribution; bit-for-bit equality with the authors' code
# is checked on their own outputs by the conformance test (tests/conformance/test_functions.py).

def test_harness_clustered_point_is_position_equal_weighted():
    result = harness_clustered_bootstrap_mean({"A": [0, 3], "B": [1, 1, 1, 1]}, n_boot=200)
    assert result.mean == pytest.approx(1.25) and result.n == 6
    assert result.lo <= result.mean <= result.hi


def test_harness_clustered_degenerate_and_seeded():
    flat = harness_clustered_bootstrap_mean({"A": [2, 2], "B": [2]}, n_boot=100)
    assert (flat.mean, flat.lo, flat.hi) == (2.0, 2.0, 2.0)
    data = {"A": [0, 1, 3, 2], "B": [3, 3, 2], "C": [1, 0, 0]}
    one = harness_clustered_bootstrap_mean(data, n_boot=500, seed=7)
    assert one == harness_clustered_bootstrap_mean(data, n_boot=500, seed=7)
    assert one != harness_clustered_bootstrap_mean(data, n_boot=500, seed=8)
    empty = harness_clustered_bootstrap_mean({})
    assert math.isnan(empty.mean) and empty.n == 0


def test_harness_one_position_is_the_percentile_bootstrap():
    """With a single position the first stage is trivial: the interval is the ordinary
    percentile bootstrap of the mean (scipy), up to Monte Carlo error."""
    scores = np.random.default_rng(3).integers(0, 4, 40).astype(float)
    ours = harness_clustered_bootstrap_mean({"only": scores}, n_boot=4000, seed=1)
    ref = stats.bootstrap((scores,), np.mean, method="percentile", n_resamples=4000,
                          random_state=2).confidence_interval
    assert ours.lo == pytest.approx(ref.low, abs=0.06)
    assert ours.hi == pytest.approx(ref.high, abs=0.06)


def test_harness_paired_bootstrap_ci():
    assert harness_paired_bootstrap_ci([0.5] * 7, n_boot=100) == (0.5, 0.5)
    deltas = list(np.random.default_rng(9).integers(-2, 4, 30))
    lo, hi = harness_paired_bootstrap_ci(deltas, n_boot=4000, seed=3)
    ref = stats.bootstrap((np.array(deltas, float),), np.mean, method="percentile",
                          n_resamples=4000, random_state=4).confidence_interval
    assert lo == pytest.approx(ref.low, abs=0.1) and hi == pytest.approx(ref.high, abs=0.1)


def test_harness_boot_gap_ci_shares_one_generator_in_order():
    filler = {"T1": [3, 3, 2], "T5": [2, 3, 3, 3]}
    real = {"T1": [1, 2, 2], "T5": [0, 1, 3]}
    rng = np.random.default_rng(42)
    by_hand = {p: harness_boot_gap_ci(filler[p], real[p], rng, n_boot=300) for p in ("T1", "T5")}
    assert harness_onset_gap_cis(filler, real, ["T1", "T5"], n_boot=300, seed=42) == by_hand
    assert by_hand["T1"][0] == pytest.approx(8 / 3 - 5 / 3)
    # An empty arm gives NaNs and draws nothing: the next position sees the same stream.
    skipped = harness_onset_gap_cis({"X": [], **filler}, {"X": [1], **real}, ["X", "T1", "T5"],
                                    n_boot=300, seed=42)
    assert all(math.isnan(v) for v in skipped["X"]) and skipped["T1"] == by_hand["T1"]


def _mean(values):
    return sum(values) / len(values)


def test_harness_clustered_ratio_point_by_hand_and_the_filler_floor_of_one():
    real = {"B": [4], "A": [10, 30]}
    filler = {"A": [10], "B": [0, 1], "C": [5]}  # B's filler mean 0.5 counts as 1; C has no real arm
    point, lo, hi = harness_clustered_bootstrap_ratio(real, filler, n_boot=300, seed=3)
    assert point == (20 / 10 + 4 / 1) / 2
    assert lo <= point <= hi
    flat = harness_clustered_bootstrap_ratio({"A": [6, 6], "B": [9]}, {"A": [2, 2], "B": [3]}, n_boot=200)
    assert flat == (3.0, 3.0, 3.0)
    assert all(math.isnan(v) for v in harness_clustered_bootstrap_ratio({"A": [1]}, {"B": [1]}))


def test_harness_clustered_ratio_draws_positions_then_real_then_filler_in_sorted_position_order(percentile):
    """Three resamples laid out by hand from the documented draws: positions sorted, each
    resample draws the positions, then per drawn position the real lengths, then the filler."""
    real = {"P3": [12, 40, 7], "P0": [30, 2]}
    filler = {"P0": [10, 20], "P3": [5, 9, 1]}
    rng = np.random.default_rng(11)
    common = ["P0", "P3"]
    boots = []
    for _ in range(3):
        ratios = []
        for j in rng.integers(0, 2, size=2):
            r, f = real[common[j]], filler[common[j]]
            r_sample = [r[k] for k in rng.integers(0, len(r), size=len(r))]
            f_sample = [f[k] for k in rng.integers(0, len(f), size=len(f))]
            ratios.append(_mean(r_sample) / max(1.0, _mean(f_sample)))
        boots.append(_mean(ratios))
    point, lo, hi = harness_clustered_bootstrap_ratio(real, filler, n_boot=3, seed=11)
    assert point == pytest.approx((16 / 15 + (59 / 3) / 5) / 2, abs=1e-12)
    assert lo == pytest.approx(percentile(boots, 2.5), abs=1e-12)
    assert hi == pytest.approx(percentile(boots, 97.5), abs=1e-12)


def test_harness_clustered_ratio_with_one_position_is_scipys_two_sample_percentile_bootstrap():
    gen = np.random.default_rng(8)
    real, filler = gen.integers(20, 400, 40).astype(float), gen.integers(20, 200, 40).astype(float)
    point, lo, hi = harness_clustered_bootstrap_ratio({"only": real}, {"only": filler}, n_boot=4000, seed=1)
    ref = stats.bootstrap((real, filler), lambda x, y, axis: np.mean(x, axis=axis) / np.mean(y, axis=axis),
                          paired=False, method="percentile", n_resamples=4000, random_state=2).confidence_interval
    assert point == pytest.approx(real.mean() / filler.mean())
    assert lo == pytest.approx(ref.low, rel=0.03) and hi == pytest.approx(ref.high, rel=0.03)
