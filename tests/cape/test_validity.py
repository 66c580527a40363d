"""CAPE's Table 5 (construct validity) from the Table-1 rows: each statistic against scipy
directly, Cohen's d_z by a hand-computed case, the pairing by factor run, and every undefined
case NaN with its reason (scipy is never called on degenerate data, so it never warns)."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from contextecho.cape.validity import TESTS, construct_validity, note, paired_statistics

# Four factor runs. By hand: d = cd - cf = 0.3, 0.2, 0.4, 0.1; mean 0.25; squared deviations
# 0.0025, 0.0025, 0.0225, 0.0225 (sum 0.05), sd = sqrt(0.05 / 3); d_z = 0.25 / sd = sqrt(15) / 2.
CF = [0.2, 0.4, 0.5, 0.7]
CD = [0.5, 0.6, 0.9, 0.8]


def statistics(cf, cd):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # scipy's degenerate-data warnings among them
        return paired_statistics(cf, cd)


def test_the_statistics_are_scipys_and_d_z_is_the_hand_computed_one():
    values, why = statistics(CF, CD)
    assert why == {}
    paired = stats.ttest_rel(CD, CF)
    assert values["t_p"] == pytest.approx(paired.pvalue)
    assert values["wilcoxon_p"] == pytest.approx(stats.wilcoxon(np.subtract(CD, CF)).pvalue)
    assert values["wilcoxon_p"] == pytest.approx(2 / 16)  # exact: all four differences positive
    assert values["anova_p"] == pytest.approx(stats.f_oneway(CF, CD).pvalue)
    assert values["anova_p"] == pytest.approx(stats.ttest_ind(CF, CD).pvalue)  # two groups: Student's unpaired t
    assert values["d"] == pytest.approx(math.sqrt(15) / 2)
    assert paired.statistic == pytest.approx(values["d"] * math.sqrt(len(CF)))  # the paired form: t = d_z * sqrt(n)
    assert statistics(CD, CF)[0]["d"] == pytest.approx(-math.sqrt(15) / 2)  # sign: context-dependent minus free


@pytest.mark.parametrize("cf, cd, undefined, reason", [
    ([0.4], [0.6], set(TESTS), "only 1 factor run has"),
    ([], [], set(TESTS), "only 0 factor runs have"),
    ([0.2, 0.5, 0.7], [0.2, 0.5, 0.7], {"t_p", "wilcoxon_p", "d"}, "the same in both settings in all 3"),
    ([0.1, 0.2, 0.4], [0.2, 0.3, 0.5], {"t_p", "d"}, "standard deviation is zero"),  # 0.1 each, up to float noise
    ([0.5, 0.5], [0.7, 0.7], {"t_p", "d", "anova_p"}, "does not vary within either setting"),
])
def test_an_undefined_statistic_is_nan_with_its_reason(cf, cd, undefined, reason):
    values, why = statistics(cf, cd)
    assert {k for k, v in values.items() if math.isnan(v)} == undefined == set(why)
    assert any(reason in text for text in why.values())
    assert note(why).startswith("not estimable: ") and reason in note(why) and ":" not in note(why)[15:]


def test_the_note_names_each_undefined_statistic_once_per_reason():
    _, why = statistics([0.5, 0.5], [0.7, 0.7])
    assert note(why) == ("not estimable: the t-test and Cohen's d_z as the difference is the same in all 2 factor "
                         "runs, so its standard deviation is zero; the ANOVA as the metric does not vary within "
                         "either setting")
    assert note({}) == ""
    assert note(statistics([0.4], [0.6])[1]) == ("not estimable: only 1 factor run has the metric in both "
                                                 "settings, and a test needs two")


def rows(setting, metric_values, factors=("stability", "option_order"), runs=(1, 2)):
    units = [(f, r) for f in factors for r in runs]
    return [{"setting": setting, "factor": f, "run": r, **{m: v[i] for m, v in metric_values.items()}}
            for i, (f, r) in enumerate(units)]


def test_construct_validity_pairs_the_settings_by_factor_run():
    cf = {"tar": CF, "ed": [1.0, 0.8, 0.6, 0.9], "tc": [0.3, 0.4, 0.5, 0.6], "oc": [0.5, np.nan, 0.6, 0.7]}
    cd = {"tar": CD, "ed": [0.7, 0.8, 0.2, 0.5], "tc": [0.3, 0.4, 0.5, 0.6], "oc": [0.6, 0.6, 0.9, 0.8]}
    frame = pd.DataFrame(rows("context_free", cf) + rows("context_dependent", cd)[::-1])  # order: not the pairing
    frame = pd.concat([frame, pd.DataFrame(rows("context_free", {m: [0.9] for m in cf}, factors=("instruction",),
                                                runs=(1,)))])  # asked context-free only: no unit
    table = construct_validity(frame).set_index("metric")
    assert list(table.index) == ["TAR", "ED", "TC", "OC"]
    assert table.loc["TAR", "n"] == 4 and table.loc["OC", "n"] == 3  # a unit without OC in one setting: left out
    assert table.loc["TAR", "t_p"] == pytest.approx(stats.ttest_rel(CD, CF).pvalue)
    assert table.loc["TAR", "d"] == pytest.approx(math.sqrt(15) / 2)
    assert table.loc["ED", "d"] == pytest.approx(np.mean(np.subtract(cd["ed"], cf["ed"]))
                                                 / np.std(np.subtract(cd["ed"], cf["ed"]), ddof=1))
    oc_cf, oc_cd = [0.5, 0.6, 0.7], [0.6, 0.9, 0.8]
    assert table.loc["OC", "wilcoxon_p"] == pytest.approx(stats.wilcoxon(np.subtract(oc_cd, oc_cf)).pvalue)
    assert table.loc["OC", "cf"] == pytest.approx(np.mean(oc_cf)) and table.loc["TAR", "note"] == ""
    assert "the same in both settings in all 4" in table.loc["TC", "note"] and math.isnan(table.loc["TC", "t_p"])
    assert table.attrs["why"]["TC"]["t_p"] == "the metric is the same in both settings in all 4 factor runs"
    assert table.loc["TC", "anova_p"] == pytest.approx(1.0)  # the same values in both groups: F = 0


def test_construct_validity_without_a_comparable_unit_says_why_for_every_metric():
    table = construct_validity(pd.DataFrame(rows("context_free", {m: [0.5] * 4 for m in ("tar", "ed", "tc", "oc")})))
    assert (table["n"] == 0).all() and table[list(TESTS)].isna().all().all()
    assert table["note"].str.startswith("not estimable: only 0 factor runs have").all()
    assert construct_validity(pd.DataFrame())["note"].str.contains("only 0").all()
