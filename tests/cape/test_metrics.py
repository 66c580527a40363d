import numpy as np
import pytest

from contextecho.cape.metrics import euclidean_distance, pointwise_consistency, total_agreement_rate


def test_identical_runs_agree_totally():
    t = [5, 4, 1, 2, 3, 3]
    assert total_agreement_rate([t, t, t]) == 1.0
    assert euclidean_distance([t, t, t]) == 0.0


def test_hand_computed_small_case():
    runs = [[5, 4, 3, 1],
            [5, 4, 2, 1],
            [5, 2, 3, 3]]
    # agreement at items 1 only (item 4: 1, 1, 3 disagree) -> 1/4
    assert total_agreement_rate(runs) == pytest.approx(0.25)
    # |diffs| per item over pairs (1,2), (1,3), (2,3): item1 0,0,0; item2 0,2,2; item3 1,0,1;
    # item4 0,2,2 -> sum 10 over 3 pairs x 4 items
    assert euclidean_distance(runs) == pytest.approx(10 / 12)


def test_two_runs_and_missing_items_are_reported():
    result = pointwise_consistency([[1, 2, np.nan, 4], [1, 3, 5, 4]])
    assert result.n_items == 3 and result.n_missing == 1
    assert result.tar == pytest.approx(2 / 3) and result.ed == pytest.approx(1 / 3)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError):
        total_agreement_rate([1, 2, 3])
    with pytest.raises(ValueError):
        euclidean_distance([[np.nan], [1.0]])
