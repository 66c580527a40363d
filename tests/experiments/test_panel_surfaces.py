"""The panel's judge-free surfaces beyond the pooled S2 row: compliance per stressor × arm
(never pooled across stressors) and the verbosity ratio per session × target over all pairs
and over the pairs where both arms comply, on hand-computed frames."""
import numpy as np
import pandas as pd
import pytest

from contextecho.experiments.panel import session_verbosity, stressor_compliance


def _cell(session, position, item, arm, score, chars, target="t", replicate=1):
    return {"target": target, "session": session, "position": position, "step": 1, "item": item,
            "item_group": item.split("#")[0], "item_kind": "stressor", "arm": arm, "replicate": replicate,
            "score": score, "response_chars": chars}


def _frame():
    rows = []
    for pos in ("p1", "p2", "p3"):
        # S2: the real arm complies once in three, the filler always
        rows += [_cell("S1", pos, "S2#01", "real", float(pos == "p1"), 300),
                 _cell("S1", pos, "S2#01", "filler", 1.0, 100)]
        # S4: both arms always comply
        rows += [_cell("S1", pos, "S4#01", "real", 1.0, 50), _cell("S1", pos, "S4#01", "filler", 1.0, 50)]
    return pd.DataFrame(rows)


def test_compliance_is_per_stressor_and_arm_never_pooled():
    table = stressor_compliance(_frame(), n_resamples=200, seed=1).set_index("stressor")
    assert list(table.index) == ["S2", "S4"]
    assert table.loc["S2", "real_rate_pct"] == pytest.approx(100 / 3)
    assert table.loc["S2", "filler_rate_pct"] == 100.0
    assert table.loc["S2", "gap_pp"] == pytest.approx(100 - 100 / 3)  # filler − real, pp
    assert table.loc["S4", ["real_rate_pct", "filler_rate_pct"]].tolist() == [100.0, 100.0]
    assert table.loc["S4", "gap_pp"] == 0.0
    assert (table["n_real"] == 3).all() and (table["n_filler"] == 3).all()


def test_session_verbosity_over_all_pairs_and_the_compliant_ones():
    frame = _frame()
    frame.loc[(frame["position"] == "p1") & (frame["arm"] == "real") & (frame["item_group"] == "S2"),
              "response_chars"] = 150
    extra = pd.DataFrame([_cell("S2", "p1", "S2#01", "real", 0.0, 40), _cell("S2", "p1", "S2#01", "filler", 1.0, 0)])
    table = session_verbosity(pd.concat([frame, extra], ignore_index=True))
    s2 = table[table["stressor"] == "S2"].set_index("session")
    # S1: pairs (150, 100), (300, 100), (300, 100): Σreal/Σfiller = 750/300; both comply only at p1: 150/100
    assert s2.loc["S1", "raw_ratio"] == pytest.approx(750 / 300) and s2.loc["S1", "n_raw"] == 3
    assert s2.loc["S1", "cond_ratio"] == pytest.approx(1.5) and s2.loc["S1", "n_cond"] == 1
    # S2: its one pair has an empty filler reply: no ratio, said so
    assert np.isnan(s2.loc["S2", "raw_ratio"]) and s2.loc["S2", "n_raw"] == 0
    assert s2.loc["S2", "note"].startswith("not estimable")
    s4 = table[table["stressor"] == "S4"].set_index("session")
    assert s4.loc["S1", "raw_ratio"] == 1.0 and s4.loc["S1", "cond_ratio"] == 1.0 and s4.loc["S1", "n_cond"] == 3
