import numpy as np
import pandas as pd
import pytest

from contextecho.stats import (EmptyArmError, attrition_contrast, paired_contrast,
                               sign_flip_test)
from contextecho.stats.paired import arm_pairs


def continuation_cells():
    # 6 cutpoints; claude invalid at 4, gpt missing at 5, both fine elsewhere
    claude = [0.8, 0.6, 1.0, 0.4, np.nan, 0.9]
    gpt = [0.5, 0.6, 0.7, 0.2, 0.3, None]
    rows = []
    for cut, (c, g) in enumerate(zip(claude, gpt)):
        rows.append(dict(position=cut, arm="claude", score=c))
        if g is not None:
            rows.append(dict(position=cut, arm="gpt", score=g))
    return pd.DataFrame(rows)


def test_complete_case_and_itt_hand_computed():
    r = attrition_contrast(continuation_cells(), arms=("claude", "gpt"), n_resamples=2000)
    # complete case: cutpoints 0..3 -> differences .3, 0, .3, .2 -> mean 0.2
    assert r.complete_case.estimate == pytest.approx(0.2)
    assert r.complete_case.n == 4
    # ITT: cutpoint 4 scores 0 - 0.3, cutpoint 5 scores 0.9 - 0 -> (.8 - .3 + .9) / 6
    assert r.intention_to_treat.estimate == pytest.approx((0.8 - 0.3 + 0.9) / 6)
    assert r.intention_to_treat.n == 6
    assert (r.n_units, r.n_complete, r.n_invalid_a, r.n_invalid_b,
            r.n_missing_a, r.n_missing_b) == (6, 4, 1, 0, 0, 1)
    d_itt = np.array([0.3, 0.0, 0.3, 0.2, -0.3, 0.9])
    assert r.intention_to_treat.p_value == pytest.approx(sign_flip_test(d_itt).p_value)
    flat = r.to_dict()
    assert flat["complete_case_estimate"] == pytest.approx(0.2)
    assert flat["intention_to_treat_n"] == 6 and flat["complete_case_seed"] == 42


def test_attempted_units_can_be_given():
    r = attrition_contrast(continuation_cells(), arms=("claude", "gpt"), units=range(8),
                           n_resamples=500)
    assert r.n_units == 8 and r.n_missing_a == 2 and r.n_missing_b == 3
    assert r.intention_to_treat.estimate == pytest.approx((0.8 - 0.3 + 0.9) / 8)


def test_no_complete_units_is_an_error():
    cells = pd.DataFrame(dict(position=[0, 1], arm=["claude", "gpt"], score=[1.0, 1.0]))
    with pytest.raises(EmptyArmError):
        attrition_contrast(cells, arms=("claude", "gpt"))


def test_paired_contrast_wilcoxon_and_scale():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.6, 1, 20), rng.uniform(0.5, 0.9, 20)
    r = paired_contrast(a, b, test="wilcoxon", scale=100, n_resamples=2000)
    assert r.estimate == pytest.approx(100 * np.mean(a - b))
    assert r.test.startswith("wilcoxon") and 0 < r.p_value < 1
    assert r.ci_low < r.estimate < r.ci_high


def test_arm_pairs_per_session():
    cells = pd.DataFrame(dict(session=["a", "a", "a", "b", "b", "b"],
                              arm=["anchor", "control", "control"] * 2,
                              score=[1.0, 0.0, 1.0, 1.0, 1.0, np.nan]))
    wide = arm_pairs(cells, arms=("anchor", "control"))
    assert wide.loc["a"].tolist() == [1.0, 0.5] and wide.loc["b"].tolist() == [1.0, 1.0]
    assert wide.attrs["n_invalid"] == 1
    with pytest.raises(EmptyArmError):
        arm_pairs(cells[cells.arm == "anchor"], arms=("anchor", "control"))
