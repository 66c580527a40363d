"""One rule per kind of quantity, the same in a variable and in a table cell."""
import math

import numpy as np
import pandas as pd
import pytest

from contextecho.paper.formats import (COEFFICIENT, COUNT, FLAG, MISSING_CELL, MODEL, P_VALUE, PERCENT, POINTS,
                                       POINTS_PP, SIMILARITY, TEXT, WHOLE, estimate, interval, is_missing,
                                       is_not_estimable, model_name, not_estimable)


@pytest.mark.parametrize("kind, value, variable, cell", [
    (POINTS, 0.3567, "0.36", "0.36"),
    (POINTS, -0.001, "0.00", "0.00"),  # never −0.00
    (POINTS, np.float64(2.5), "2.50", "2.50"),
    (PERCENT, 41.6666, "41.7%", "41.7"),  # the cell's unit is its header's
    (PERCENT, 100, "100.0%", "100.0"),
    (POINTS_PP, -8.333, "\u22128.3", "\u22128.3"),
    (COEFFICIENT, 0.7949, "0.79", "0.79"),
    (SIMILARITY, 0.12549, "0.125", "0.125"),
    (WHOLE, 1834.4, "1834", "1834"),
    (COUNT, np.int64(24), 24, "24"),
    (COUNT, 19.0, 19, "19"),  # a whole float (a count column with a NaN elsewhere) is a count
    (FLAG, np.bool_(True), "yes", "yes"),
    (TEXT, "not calibrated", "not calibrated", "not calibrated"),
    (MODEL, "hosted_vllm/Qwen/Qwen2.5-7B-Instruct", "hosted_vllm/Qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct"),
])
def test_each_kind_writes_a_variable_and_a_cell(kind, value, variable, cell):
    assert kind.variable(value) == variable
    assert kind.cell(value) == cell


@pytest.mark.parametrize("p, text", [(0.0494, "0.0494"), (0.49415, "0.494"), (1.0, "1.00"), (0.000123, "0.000123"),
                                     (0.05, "0.0500"), (0.9996, "1.00"), (0.0, "0.00")])
def test_a_p_value_has_three_significant_digits_in_fixed_notation(p, text):
    assert P_VALUE.text(p) == text


def test_an_interval_and_an_estimate_with_it_are_written_with_the_kind_of_their_bounds():
    assert interval(POINTS).variable((0.1234, 0.8333)) == "[0.12, 0.83]"
    assert interval(POINTS_PP).cell((-25, 0)) == "[\u221225.0, 0.0]"
    assert estimate(POINTS).cell((0.36, 0.12, 0.83)) == "0.36 [0.12, 0.83]"
    assert estimate(SIMILARITY).cell((0.0, float("nan"), float("nan"))) == "0.000"  # no interval: the estimate alone
    assert interval(PERCENT).unit == estimate(PERCENT).unit == "%"
    assert interval(POINTS).cell((float("nan"), 1.0)) == MISSING_CELL
    assert estimate(POINTS).cell((None, 0.0, 1.0)) == MISSING_CELL
    with pytest.raises(ValueError, match="takes 2 values"):
        interval(POINTS).text(0.5)


def test_a_missing_value_is_a_dash_in_a_cell_and_never_a_number():
    for missing in (None, float("nan"), np.nan, pd.NA, pd.NaT):
        assert is_missing(missing)
        assert POINTS.cell(missing) == COUNT.cell(missing) == MISSING_CELL
    assert not is_missing(0) and not is_missing("")
    with pytest.raises(ValueError, match="whole number"):
        COUNT.variable(2.5)
    with pytest.raises(ValueError, match="infinite"):
        POINTS.text(math.inf)
    with pytest.raises(ValueError, match="must be a number"):
        POINTS.text("0.3")


def test_not_estimable_carries_its_reason():
    assert not_estimable(" arm 'filler' has no valid verdict ") == "not estimable (arm 'filler' has no valid verdict)"
    assert is_not_estimable(not_estimable("x")) and not is_not_estimable("not estimable")
    with pytest.raises(ValueError, match="reason"):
        not_estimable("  ")
    assert model_name("local/smollm2-135m") == "smollm2-135m" and model_name("tfidf") == "tfidf"
