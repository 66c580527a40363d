"""CAPE's Fig. 3b numbers: the OCEAN profile per setting over the answers to the same item in
the same run valid in both settings, and its shift, by a hand-computed case."""
import math

import numpy as np
import pandas as pd
import pytest

from contextecho.cape.profiles import profile_shift


def answers(rows):
    return pd.DataFrame(rows, columns=["setting", "run_id", "item", "trait", "score"])


def test_the_shift_is_the_context_dependent_minus_the_context_free_mean_over_paired_answers():
    rows = [("context_free", "r1", 1, "O", 4.0), ("context_dependent", "r1", 1, "O", 5.0),
            ("context_free", "r1", 2, "O", 2.0), ("context_dependent", "r1", 2, "O", np.nan),  # invalid: unpaired
            ("context_free", "r2", 1, "O", 2.0), ("context_dependent", "r2", 1, "O", 4.0),
            ("context_free", "r1", 3, "C", 5.0), ("context_dependent", "r1", 3, "C", 3.0),
            ("context_free", "r1", 4, "E", 1.0),  # asked context-free only
            ("context_dependent", "r2", 5, "A", 2.0)]  # asked context-dependent only
    table = profile_shift(answers(rows)).set_index("trait")
    assert list(table.index) == ["O", "C", "E", "A", "N"]
    # O: the pairs (4, 5) and (2, 4); item 2 of r1 is left out in both settings
    assert (table.loc["O", "cf"], table.loc["O", "cd"], table.loc["O", "shift"], table.loc["O", "n"]) == \
        pytest.approx((3.0, 4.5, 1.5, 2))
    assert table.loc["C", "shift"] == pytest.approx(-2.0) and table.loc["C", "note"] == ""
    for trait in ("E", "A", "N"):
        assert table.loc[trait, "n"] == 0 and math.isnan(table.loc[trait, "shift"])
        assert table.loc[trait, "note"] == "not estimable: no item of this trait was answered validly in both settings"
