"""The release comparison's statistics: paired units, the one-sided tests against statsmodels,
the verdicts on hand-made cases, Holm over endpoints, the overall verdict."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_paired

from contextecho.stats.comparison import (EQUIVALENT, IMPROVED, INCONCLUSIVE, REGRESSED, endpoint_test, overall,
                                          unit_differences, verdicts)
from contextecho.stats.errors import StatsInputError


def units(shift: float, n_sessions: int = 12, per_session: int = 20, sd_session: float = 0.05,
          sd_within: float = 0.3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    d, s = [], []
    for i in range(n_sessions):
        b = rng.normal(0, sd_session)
        d += list(shift + b + rng.normal(0, sd_within, per_session))
        s += [f"S{i}"] * per_session
    return np.array(d), np.array(s)


def test_unit_differences_pair_the_same_cells_and_difference_the_gaps():
    keys = dict(session="S1", position="p", replicate=0)
    rows = lambda fr, re_, item: [{**keys, "item": item, "arm": "filler", "score": fr},  # noqa: E731
                                  {**keys, "item": item, "arm": "real", "score": re_}]
    base = pd.DataFrame(rows(3, 2, "C01") + rows(2, 2, "C02") + rows(3, 0, "C03"))
    cand = pd.DataFrame(rows(3, 1, "C01") + rows(2, np.nan, "C02") + rows(1, 1, "C03")
                        + rows(3, 0, "C04"))
    out = unit_differences(base, cand, value="score").set_index("item")
    # C01: (3-1) - (3-2) = 1; C02: the candidate's real is invalid; C03: 0 - 3; C04: not in the baseline
    assert list(out.index) == ["C01", "C03"]
    assert out.loc["C01", "d"] == 1 and out.loc["C03", "d"] == -3
    assert unit_differences(base, cand, value="score", scale=100).set_index("item").loc["C01", "d"] == 100
    with pytest.raises(StatsInputError, match="missing"):
        unit_differences(base.drop(columns="arm"), cand, value="score")


@pytest.mark.parametrize("shift", [0.0, 0.05, 0.3, -0.3])
def test_the_tests_are_statsmodels_ttost_paired_on_the_session_means(shift):
    d, s = units(shift)
    t = endpoint_test("drift", d, s, margin=0.08, n_resamples=500)
    means = pd.Series(d).groupby(s).mean().to_numpy()
    p, lower, upper = ttost_paired(means, np.zeros_like(means), -0.08, 0.08)
    assert t.p_lower == pytest.approx(lower[1], abs=1e-12)
    assert t.p_upper == pytest.approx(upper[1], abs=1e-12)
    assert t.p_equivalent == pytest.approx(p, abs=1e-12)
    assert t.p_regressed == pytest.approx(1 - upper[1], abs=1e-12)
    assert t.p_improved == pytest.approx(1 - lower[1], abs=1e-12)
    assert t.n_sessions == 12 and t.n_units == 240
    assert t.ci_low <= t.estimate <= t.ci_high  # the clustered bootstrap interval
    assert t.estimate == pytest.approx(d.mean())


def test_hand_computed_case():
    # Session means 0.1, 0.2, 0.3: mean 0.2, sd 0.1, se 0.1/sqrt(3); t for H0 δ <= 0.08 is
    # (0.2 - 0.08) / (0.1/sqrt(3)) = 2.0785 on 2 df: p = 0.0864 (t table).
    d = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.3])
    t = endpoint_test("drift", d, ["a", "a", "b", "b", "c", "c"], margin=0.08, n_resamples=200)
    assert t.estimate == pytest.approx(0.2)
    assert t.p_regressed == pytest.approx(0.0864, abs=5e-4)
    half = 2.919986 * 0.1 / np.sqrt(3)  # t(0.95, 2) = 2.919986: the 90% interval
    assert (t.tost_low, t.tost_high) == pytest.approx((0.2 - half, 0.2 + half))
    assert verdicts([t])[0].verdict == INCONCLUSIVE  # 0.0864 > 0.05


@pytest.mark.parametrize("shift, verdict", [(0.0, EQUIVALENT), (0.02, EQUIVALENT), (0.3, REGRESSED),
                                            (-0.3, IMPROVED)])
def test_known_differences_give_their_verdicts(shift, verdict):
    d, s = units(shift, n_sessions=30, per_session=40, seed=3)
    assert verdicts([endpoint_test("drift", d, s, margin=0.08, n_resamples=200)])[0].verdict == verdict


def test_a_small_run_is_inconclusive_and_one_session_is_untested():
    d, s = units(0.0, n_sessions=3, per_session=2, sd_session=0.2, seed=1)
    assert verdicts([endpoint_test("drift", d, s, margin=0.08, n_resamples=200)])[0].verdict == INCONCLUSIVE
    one = endpoint_test("drift", [0.0, 0.01], ["S1", "S1"], margin=0.08)
    assert np.isnan(one.p_lower) and "fewer than 2 sessions" in one.note
    assert verdicts([one])[0].verdict == INCONCLUSIVE


def test_sessions_alike_are_tested_by_the_sign_test():
    # every session mean 1.0 (> +0.08): p_regressed = 0.5^S, the other directions as the point says
    two = endpoint_test("s2", [1.0, 1.0, 1.0], ["a", "a", "b"], margin=0.08, n_resamples=50)
    assert (two.p_regressed, two.p_improved, two.p_lower, two.p_upper) == (0.25, 1.0, 0.25, 1.0)
    assert "sign test" in two.note and verdicts([two])[0].verdict == INCONCLUSIVE  # two sessions cannot tell
    five = endpoint_test("s2", [0.0] * 5, list("abcde"), margin=0.08, n_resamples=50)
    assert (five.p_lower, five.p_upper, five.p_regressed) == (0.03125, 0.03125, 1.0)
    assert verdicts([five])[0].verdict == EQUIVALENT
    assert verdicts([endpoint_test("s2", [1.0] * 5, list("abcde"), margin=0.08)])[0].verdict == REGRESSED


def test_holm_runs_over_the_endpoints_in_each_family():
    a = endpoint_test("drift", *units(0.0, seed=4), margin=0.08, n_resamples=200)
    b = endpoint_test("s2", *units(0.0, sd_within=3.0, seed=5), margin=2.0, n_resamples=200)
    out = verdicts([a, b])
    for family in ("equivalent", "regressed", "improved"):
        raw = [getattr(t, f"p_{family}") for t in (a, b)]
        expected = multipletests(raw, method="holm")[1]
        assert [getattr(v, f"p_{family}_holm") for v in out] == pytest.approx(expected, abs=1e-12)
    assert out[0].row()["verdict"] == out[0].verdict


def test_overall_verdict():
    assert overall([EQUIVALENT, IMPROVED]) == IMPROVED
    assert overall([EQUIVALENT, EQUIVALENT]) == EQUIVALENT
    assert overall([IMPROVED, INCONCLUSIVE]) == INCONCLUSIVE
    assert overall([INCONCLUSIVE, REGRESSED, IMPROVED]) == REGRESSED
    with pytest.raises(ValueError, match="unknown"):
        overall(["better"])


def test_bad_margin_or_alpha_or_no_units():
    with pytest.raises(ValueError, match="margin"):
        endpoint_test("drift", [0.0, 1.0], ["a", "b"], margin=0)
    with pytest.raises(ValueError, match="alpha"):
        endpoint_test("drift", [0.0, 1.0], ["a", "b"], margin=0.1, alpha=0.6)
    with pytest.raises(StatsInputError, match="no unit"):
        endpoint_test("drift", [np.nan], ["a"], margin=0.1)
