import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from contextecho.stats import InvalidScoreError, StatsInputError, holm
from contextecho.stats.multiple import harness_holm


def test_hand_computed():
    r = holm([0.01, 0.04, 0.03])
    # sorted 0.01*3 = 0.03, 0.03*2 = 0.06, max(0.06, 0.04*1) = 0.06
    assert r.p_adjusted == pytest.approx((0.03, 0.06, 0.06))
    assert r.reject == (True, False, False)


@pytest.mark.parametrize("seed", range(5))
def test_matches_statsmodels(seed):
    p = np.random.default_rng(seed).uniform(0, 0.2, size=12)
    p[3] = p[7]                                   # a tie
    r = holm(p, alpha=0.05)
    reject, adjusted, _, _ = multipletests(p, alpha=0.05, method="holm")
    assert np.allclose(r.p_adjusted, adjusted, atol=1e-12)
    assert list(r.reject) == list(reject)


def test_labels_mapping_and_frame():
    r = holm({"C2_yaml": 0.0004, "pooled": 0.03, "C1_csv": 0.2})
    assert r.adjusted("C2_yaml") == pytest.approx(0.0012)
    frame = r.to_frame()
    assert list(frame.label) == ["C2_yaml", "pooled", "C1_csv"]
    assert r.to_dict()["labels"] == ["C2_yaml", "pooled", "C1_csv"]


def test_bad_inputs():
    with pytest.raises(InvalidScoreError):
        holm([0.1, np.nan])
    with pytest.raises(StatsInputError):
        holm([])
    with pytest.raises(StatsInputError):
        holm([0.1, 0.2], labels=["a", "a"])


# ---------------------------------------------------------------- the harness's Holm

def test_holm_is_the_harness_step_down():
    """(m − i) p sorted ascending with a running maximum, capped at 1; ties keep order."""
    result = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.03})
    assert dict(zip(result.labels, result.p_adjusted)) == pytest.approx(
        {"a": 0.04, "c": 0.09, "d": 0.09, "b": 0.09})
    capped = holm({"x": 0.6, "y": 0.5})
    assert capped.p_adjusted == (1.0, 1.0)


@pytest.mark.parametrize("seed", range(4))
def test_harness_holm_is_statsmodels_holm_on_finite_p_values(seed):
    p = np.random.default_rng(seed).uniform(0, 0.3, size=9)
    p[2] = p[5]                                   # a tie
    labels = [f"c{i}" for i in range(len(p))]
    ours = harness_holm(list(zip(labels, p)))
    _, adjusted, _, _ = multipletests(p, method="holm")
    assert [ours[k] for k in labels] == pytest.approx(list(adjusted), abs=1e-15)
    assert harness_holm({}) == {}


def test_harness_holm_takes_a_nan_as_the_harness_does():
    """NaN compares false, so Python's sort leaves the list as given here; ``max(running,
    nan)`` keeps the running maximum. By hand: 3 × 0.01, then NaN keeps 0.03, then
    max(0.03, 1 × 0.04); and a NaN can keep a smaller p after a larger one."""
    assert harness_holm({"a": 0.01, "b": math.nan, "c": 0.04}) == pytest.approx(
        {"a": 0.03, "b": 0.03, "c": 0.04})
    assert harness_holm({"a": 0.2, "b": math.nan, "c": 0.1}) == pytest.approx(
        {"a": 0.6, "b": 0.6, "c": 0.6})               # a proper Holm would give c 0.3, a 0.3
    assert harness_holm({"n": math.nan, "a": 0.5}) == {"n": 0.0, "a": 0.5}
