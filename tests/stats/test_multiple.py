import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from contextecho.stats import InvalidScoreError, StatsInputError, holm


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
