"""The Fig.-5 mitigation forest (:func:`contextecho.experiments.harness_forests.harness_mitigation`) and the
identity resume of :mod:`contextecho.experiments.selection`, on hand-computed cases."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from contextecho.echo.reference.plot_inputs import MITIGATION_PLOT_TARGETS
from contextecho.experiments import harness_forests
from contextecho.experiments.selection import cell_identity, unstored
from contextecho.stats.bootstrap import harness_clustered_bootstrap_mean


def _rows(target, arm, intervention, by_position, steps):
    return [{"target": target, "session": "s", "step": steps[pos], "position": pos, "arm": arm,
             "intervention": intervention, "item": f"C{i + 1:02d}", "replicate": 0,
             "reference_score": float(v) if v is not None else math.nan,
             "score": float(v) if v is not None and v >= 0 else math.nan, "verdict_status": "ok"}
            for pos, values in by_position.items() for i, v in enumerate(values)]


STEPS = {"P0_start": 100, "P5_pre_C6": 573}


def _frame(**targets):
    rows = []
    for target, (real, filler, anchored) in targets.items():
        rows += _rows(target, "real", "none", real, STEPS) + _rows(target, "filler", "none", filler, STEPS)
        for intervention, values in anchored.items():
            rows += _rows(target, "real", intervention, values, STEPS)
    return pd.DataFrame(rows)


def test_three_series_their_means_and_the_two_gaps_by_hand():
    frame = _frame(t=({"P0_start": [3, 1], "P5_pre_C6": [0, -1, None]},  # -1 averaged in, a lost cell not
                      {"P0_start": [3, 3], "P5_pre_C6": [2, 2, 2]},
                      {"A": {"P0_start": [3, 2]}, "A_E15": {"P5_pre_C6": [3, 3, 0]}}))
    table = harness_forests.harness_mitigation(frame, anchor=("A", "A_E15"), n_resamples=200, seed=42)
    row = table.iloc[0]
    assert row["real_mean"] == pytest.approx((2 + (-0.5)) / 2)
    assert row["filler_mean"] == pytest.approx((3 + 2) / 2)
    assert row["anchor_mean"] == pytest.approx((2.5 + 2) / 2)  # both anchor designs: one series
    assert (row["n_real"], row["n_filler"], row["n_anchor"]) == (4, 5, 5)
    assert row["n_positions_anchor"] == 2
    assert row["gap"] == pytest.approx(2.5 - 0.75) and row["recovered_gap"] == pytest.approx(2.25 - 0.75)
    # the anchor's bounds are the harness's bootstrap of its scores, positions in the forest's order
    expected = harness_clustered_bootstrap_mean({"P0_start": [3, 2], "P5_pre_C6": [3, 3, 0]}, n_boot=200, seed=42)
    assert (row["anchor_lo"], row["anchor_hi"]) == (expected.lo, expected.hi)


def test_rows_need_all_three_series_and_follow_the_figures_order():
    full = ({"P0_start": [1]}, {"P0_start": [3]}, {"A": {"P0_start": [2]}})
    frame = _frame(**{"gpt-4o": full, "gpt-5": ({"P0_start": [2]}, {"P0_start": [3]}, {"A": {"P0_start": [2]}}),
                      "claude-sonnet-4-5": full, "unlisted": full,
                      "claude-haiku-4-5": ({"P0_start": [1]}, {"P0_start": [3]}, {})})
    table = harness_forests.harness_mitigation(frame, anchor="A", n_resamples=50, seed=42, targets=MITIGATION_PLOT_TARGETS)
    # reasoning tier first, then drift gap largest first, ties in the figure's list order;
    # no anchor scores (haiku) or not in the figure's list: no row
    assert list(table["target"]) == ["claude-sonnet-4-5", "gpt-5", "gpt-4o"]
    assert list(table["reasoning"]) == [True, True, False]
    assert list(table["label"]) == ["Sonnet 4.5", "GPT-5", "GPT-4o"]
    tiers = [("gpt-4o", "x", "y", True), ("claude-sonnet-4-5", "x", "y", True)]
    tied = harness_forests.harness_mitigation(frame, anchor="A", n_resamples=50, seed=42, targets=tiers)
    assert list(tied["target"]) == ["gpt-4o", "claude-sonnet-4-5"]


def test_the_two_arms_read_the_cells_without_an_intervention():
    frame = _frame(t=({"P0_start": [1, 1]}, {"P0_start": [3, 3]}, {"A": {"P0_start": [3, 3]}}))
    plain = harness_forests.harness_table(frame[frame["intervention"] == "none"], n_resamples=50, seed=42)
    mixed = harness_forests.harness_table(frame, n_resamples=50, seed=42, anchor="A")
    for column in plain.columns:
        assert plain[column].iloc[0] == mixed[column].iloc[0] or \
            (pd.isna(plain[column].iloc[0]) and pd.isna(mixed[column].iloc[0]))


def _cell(key, intervention, item="C01", position="P0_start"):
    return SimpleNamespace(key=key, target="m", session="s", position=position, arm="real",
                           intervention=intervention, item=SimpleNamespace(id=item), replicate=0)


def test_a_resumed_run_skips_a_cell_filed_under_the_same_folder_whatever_its_request():
    filed = {"A": "A", "A_E15": "A", "none": "none"}.get
    earlier = [_cell("k1", "A"), _cell("k2", "A", "C02")]
    stored = {cell_identity(earlier[0], filed)}  # k2 was lost
    later = [_cell("k3", "A_E15"), _cell("k4", "A_E15", "C02"), _cell("k5", "none")]
    assert [c.key for c in unstored(later, stored, filed)] == ["k4", "k5"]
    assert [c.key for c in unstored(later, stored)] == ["k3", "k4", "k5"]  # filed by its own name
