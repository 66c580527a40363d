"""The harness's statistics: hand-computed cases, exact enumeration, scipy in distribution.

Bit-for-bit equality with the authors' code is checked on their own outputs by the
conformance test (``tests/instruments/test_reference_conformance.py``).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from contextecho.stats import harness
from contextecho.stats.multiple import holm


def test_clustered_point_is_position_equal_weighted():
    result = harness.clustered_bootstrap_mean({"A": [0, 3], "B": [1, 1, 1, 1]}, n_boot=200)
    assert result.mean == pytest.approx(1.25) and result.n == 6
    assert result.lo <= result.mean <= result.hi


def test_clustered_degenerate_and_seeded():
    flat = harness.clustered_bootstrap_mean({"A": [2, 2], "B": [2]}, n_boot=100)
    assert (flat.mean, flat.lo, flat.hi) == (2.0, 2.0, 2.0)
    data = {"A": [0, 1, 3, 2], "B": [3, 3, 2], "C": [1, 0, 0]}
    one = harness.clustered_bootstrap_mean(data, n_boot=500, seed=7)
    assert one == harness.clustered_bootstrap_mean(data, n_boot=500, seed=7)
    assert one != harness.clustered_bootstrap_mean(data, n_boot=500, seed=8)
    empty = harness.clustered_bootstrap_mean({})
    assert math.isnan(empty.mean) and empty.n == 0


def test_one_position_is_the_percentile_bootstrap():
    """With a single position the first stage is trivial: the interval is the ordinary
    percentile bootstrap of the mean (scipy), up to Monte Carlo error."""
    scores = np.random.default_rng(3).integers(0, 4, 40).astype(float)
    ours = harness.clustered_bootstrap_mean({"only": scores}, n_boot=4000, seed=1)
    ref = stats.bootstrap((scores,), np.mean, method="percentile", n_resamples=4000,
                          random_state=2).confidence_interval
    assert ours.lo == pytest.approx(ref.low, abs=0.06)
    assert ours.hi == pytest.approx(ref.high, abs=0.06)


def _exact_sign_flip_p(deltas):
    n = len(deltas)
    observed = abs(sum(deltas) / n)
    hits = sum(abs(sum(s * d for s, d in zip(signs, deltas)) / n) >= observed - 1e-12
               for signs in itertools.product((1, -1), repeat=n))
    return hits / 2 ** n


@pytest.mark.parametrize("deltas", [[1, 2, 0, -1, 1, 2, 1, 0, 1, 3], [1, -1, 2, -2, 0, 1, -1, 1]])
def test_sign_flip_matches_exact_enumeration(deltas):
    exact = _exact_sign_flip_p(deltas)
    observed, p = harness.sign_flip_p(deltas, n_resamples=20_000, seed=5)
    assert observed == pytest.approx(sum(deltas) / len(deltas))
    assert p == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-3)


def test_sign_flip_plus_one_and_edges():
    deltas = [1, 1, 0, 2, -1]
    _, p = harness.sign_flip_p(deltas, n_resamples=999, seed=1)
    _, p1 = harness.sign_flip_p(deltas, n_resamples=999, seed=1, plus_one=True)
    assert p1 == pytest.approx((p * 999 + 1) / 1000)
    assert harness.sign_flip_p([0, 0, 0], n_resamples=50)[1] == 1.0   # every flip ties
    assert all(math.isnan(v) for v in harness.sign_flip_p([]))


def test_paired_differences_use_common_sorted_keys():
    a = {"p2": 1, "p1": 3, "only_a": 0}
    b = {"p1": 2, "p2": 3, "only_b": 1}
    assert harness.paired_differences(a, b) == [-1, 2]


def test_paired_bootstrap_ci():
    assert harness.paired_bootstrap_ci([0.5] * 7, n_boot=100) == (0.5, 0.5)
    deltas = list(np.random.default_rng(9).integers(-2, 4, 30))
    lo, hi = harness.paired_bootstrap_ci(deltas, n_boot=4000, seed=3)
    ref = stats.bootstrap((np.array(deltas, float),), np.mean, method="percentile",
                          n_resamples=4000, random_state=4).confidence_interval
    assert lo == pytest.approx(ref.low, abs=0.1) and hi == pytest.approx(ref.high, abs=0.1)


def test_boot_gap_ci_shares_one_generator_in_order():
    filler = {"T1": [3, 3, 2], "T5": [2, 3, 3, 3]}
    real = {"T1": [1, 2, 2], "T5": [0, 1, 3]}
    rng = np.random.default_rng(42)
    by_hand = {p: harness.boot_gap_ci(filler[p], real[p], rng, n_boot=300) for p in ("T1", "T5")}
    assert harness.onset_gap_cis(filler, real, ["T1", "T5"], n_boot=300, seed=42) == by_hand
    assert by_hand["T1"][0] == pytest.approx(8 / 3 - 5 / 3)
    # An empty arm gives NaNs and draws nothing: the next position sees the same stream.
    skipped = harness.onset_gap_cis({"X": [], **filler}, {"X": [1], **real}, ["X", "T1", "T5"],
                                    n_boot=300, seed=42)
    assert all(math.isnan(v) for v in skipped["X"]) and skipped["T1"] == by_hand["T1"]


def test_holm_is_the_harness_step_down():
    """(m − i) p sorted ascending with a running maximum, capped at 1; ties keep order."""
    result = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.03})
    assert dict(zip(result.labels, result.p_adjusted)) == pytest.approx(
        {"a": 0.04, "c": 0.09, "d": 0.09, "b": 0.09})
    capped = holm({"x": 0.6, "y": 0.5})
    assert capped.p_adjusted == (1.0, 1.0)
