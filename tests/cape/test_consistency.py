import itertools

import numpy as np
import pytest

from contextecho.cape.consistency import (mean_normalise, moving_average, ocean_consistency, ocean_series,
                                          overlap_ratio, trajectory_consistency)


def test_moving_average_is_trailing_and_full_windows_only():
    assert moving_average(np.array([1, 2, 3, 4, 5, 6.0]), 4).tolist() == [2.5, 3.5, 4.5]
    assert np.allclose(moving_average(np.array([[4, 4, 4, 4, 0.0]]), 4), [[4, 3]])


def test_mean_normalise_mean_sd_and_constant():
    z = mean_normalise(np.array([1.0, 2, 3]))
    assert z.mean() == pytest.approx(0) and z.std() == pytest.approx(1)
    assert mean_normalise(np.array([3.0, 3, 3])).tolist() == [0, 0, 0]


def test_overlap_ratio_hand_computed():
    # point 0: [0,2],[1,3],[1.5,2.5] -> inter 0.5, union 3;  point 1: [0,1],[2,3],[4,5] ->
    # inter 0, union 3 (three disjoint);  point 2: [0,4],[1,2],[3,5] -> inter 0, union 5
    lower = np.array([[0, 0, 0], [1, 2, 1], [1.5, 4, 3]])
    upper = np.array([[2, 1, 4], [3, 3, 2], [2.5, 5, 5]])
    assert np.allclose(overlap_ratio(lower, upper), [0.5 / 3, 0, 0])
    same = np.array([[0.0], [0.0]])
    assert overlap_ratio(same, same).tolist() == [1.0]


def test_identical_trajectories_give_tc_one():
    rng = np.random.default_rng(1)
    t = rng.integers(1, 6, 60)
    assert trajectory_consistency([t, t, t]).value == 1.0
    assert trajectory_consistency([[3] * 20] * 3).value == 1.0  # constant: SD 0


def test_tc_is_in_unit_interval_and_symmetric_in_runs():
    rng = np.random.default_rng(2)
    runs = rng.integers(1, 6, (3, 50))
    a = trajectory_consistency(runs).value
    b = trajectory_consistency(runs[[2, 0, 1]]).value
    assert 0 <= a < 1 and a == pytest.approx(b, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_tc_decreases_as_one_trajectory_is_perturbed_further(seed):
    # Property: T3 = T + a·d moves away from T1 = T2 = T as a grows.
    rng = np.random.default_rng(seed)
    m = int(rng.integers(40, 121))
    base = rng.integers(1, 6, m).astype(float)
    d = rng.normal(size=m)
    values = [trajectory_consistency([base, base, base + a * d]).value
              for a in (0, 0.1, 0.25, 0.5, 1, 2, 4, 8)]
    assert values[0] == 1.0
    assert all(np.diff(values) <= 1e-9), np.round(values, 4)
    assert values[-1] < 0.6


def test_ocean_series_has_all_permutations():
    s = np.array([[1.0, 2, 3, 4, 5]])
    series = ocean_series(s, "lexicographic")
    assert series.shape == (1, 600)
    assert series[0, :5].tolist() == [1, 2, 3, 4, 5]
    blocks = {tuple(b) for b in series[0].reshape(120, 5)}
    assert blocks == set(itertools.permutations([1.0, 2, 3, 4, 5]))


def test_oc_identical_and_invariant_to_trait_order():
    ocean = np.array([[3.2, 4.1, 2.5, 4.4, 1.9], [3.3, 4.0, 2.6, 4.3, 2.0], [3.0, 4.2, 2.2, 4.5, 2.1]])
    assert ocean_consistency(ocean[[0, 0, 0]]).value == 1.0
    base = ocean_consistency(ocean).value
    assert 0 < base < 1
    for perm in ([2, 0, 4, 1, 3], [4, 3, 2, 1, 0]):
        assert ocean_consistency(ocean[:, perm]).value == pytest.approx(base, abs=1e-12)
    # the series itself is the same, whatever order the traits come in
    assert np.array_equal(ocean_series(ocean), ocean_series(ocean[:, [1, 2, 3, 4, 0]]))


def test_oc_refuses_missing_traits():
    with pytest.raises(ValueError, match="missing"):
        ocean_consistency([[1, 2, 3, 4, np.nan], [1, 2, 3, 4, 5]])


def test_tc_needs_one_full_window_of_comparable_items():
    from contextecho.cape.metrics import NoComparableItems

    runs = np.array([[1, 2, 3, np.nan, 5], [1, 2, np.nan, 4, 5], [1, 2, 3, 4, 5]], dtype=float)
    with pytest.raises(NoComparableItems, match="3 items are valid in every run"):
        trajectory_consistency(runs)


def test_a_fit_is_made_once_per_points_level_and_kernel():
    """The kept fit equals a fresh one, is read-only, and another kernel (bounds included,
    which the kernel's repr leaves out) or other points are fitted anew."""
    from sklearn.gaussian_process.kernels import RBF, WhiteKernel

    from contextecho.cape import consistency
    x = np.arange(4, 20, dtype=float)
    y = np.sin(x / 3)
    consistency._fits.clear()
    first = consistency.support_interval(x, y)
    assert consistency.support_interval(x.copy(), y.copy()) is first  # same points: kept
    fresh = consistency._fit(x, y, 0.95, None)
    assert np.array_equal(first[0], fresh[0]) and np.array_equal(first[1], fresh[1]) and first[2] == fresh[2]
    with pytest.raises(ValueError):
        first[0][0] = 1.0  # nobody can change a kept fit
    narrow = RBF(length_scale=1.0, length_scale_bounds=(1.0, 2.0)) + WhiteKernel(0.5, (1e-3, 1e1))
    assert repr(narrow) == repr(consistency.default_kernel())
    assert consistency.support_interval(x, y, kernel=narrow) is not first
    assert consistency.support_interval(x, y + 1e-9) is not first
    assert len(consistency._fits) == 3
