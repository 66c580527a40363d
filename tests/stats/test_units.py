"""Units of the paired design and the spread of a judge's verdicts, on hand-computed cases."""
import math

import pandas as pd
import pytest

from contextecho.stats.errors import EmptyArmError
from contextecho.stats.spread import score_spread
from contextecho.stats.units import complete_units, unit_gaps


def cells() -> pd.DataFrame:
    # S1@p1: real 1, 2 and filler 3 -> gap 3 - 1.5 = 1.5; S1@p2: real 2 and filler invalid -> no gap
    return pd.DataFrame({"target": ["t"] * 5, "session": ["S1"] * 5, "position": ["p1", "p1", "p1", "p2", "p2"],
                         "step": [1, 1, 1, 9, 9], "arm": ["real", "real", "filler", "real", "filler"],
                         "score": [1.0, 2.0, 3.0, 2.0, math.nan]})


def test_a_unit_counts_when_both_arms_have_a_valid_score():
    kept, dropped = complete_units(cells())
    assert dropped == 1 and set(kept["position"]) == {"p1"} and len(kept) == 3


def test_a_unit_gap_is_filler_mean_minus_real_mean():
    gaps = unit_gaps(cells()).set_index("position")
    assert gaps.loc["p1", "gap"] == pytest.approx(1.5)
    assert gaps.loc["p1", "n_real"] == 2 and gaps.loc["p1", "n_filler"] == 1
    assert math.isnan(gaps.loc["p2", "gap"]) and gaps.loc["p2", "n_filler"] == 0


def test_the_modal_score_and_its_share():
    spread = score_spread(pd.Series([2, 2, 3, 1, 2, math.nan]))
    assert (spread.n, spread.modal_score, spread.n_distinct) == (5, 2.0, 3)
    assert spread.modal_pct == pytest.approx(60.0)
    assert score_spread(pd.Series([3, 1])).modal_score == 1.0  # a tie: the smaller score
    with pytest.raises(EmptyArmError, match="no valid verdict"):
        score_spread(pd.Series([math.nan]))
