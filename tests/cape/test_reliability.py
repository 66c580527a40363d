"""CAPE's Tables 3 and 4 from answers already given: Cronbach's α (a hand-computed case and the
covariance form), test–retest and the metric correlations (against scipy), and their
undefined cases, each saying why."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from contextecho.cape.analyses import CORRELATED, metric_correlations
from contextecho.cape.reliability import NO_RETEST, cronbach_alpha, retest_correlation, retest_identical, trait_alphas

# 5 respondents x 3 items. By hand: item variances 1.3, 1.5, 2.2 (sum 5.0); totals 6, 8, 10, 14, 5
# with variance 12.8; alpha = 3/2 * (1 - 5.0/12.8) = 0.9140625.
SCORES = pd.DataFrame([[1, 2, 3], [2, 3, 3], [3, 3, 4], [4, 5, 5], [2, 2, 1]], columns=[11, 12, 13], dtype=float)


def test_cronbach_alpha_of_a_hand_computed_case_and_its_covariance_form():
    alpha, why = cronbach_alpha(SCORES)
    assert why == "" and alpha == pytest.approx(0.9140625)
    cov = SCORES.cov().to_numpy()
    k, mean_cov = 3, cov[~np.eye(3, dtype=bool)].mean()
    assert alpha == pytest.approx(k * mean_cov / (np.diag(cov).mean() + (k - 1) * mean_cov))


def test_cronbach_alpha_leaves_out_incomplete_runs_and_says_when_it_is_undefined():
    with_gap = pd.concat([SCORES, pd.DataFrame([[5, np.nan, 1]], columns=SCORES.columns)], ignore_index=True)
    assert cronbach_alpha(with_gap)[0] == pytest.approx(0.9140625)  # listwise, as pingouin's default
    for scores, why in ((SCORES[[11]], "1 item(s)"), (SCORES.iloc[:1], "1 run(s)"),
                        (pd.DataFrame([[2, 3], [3, 2], [1, 4]], dtype=float), "same total score")):
        alpha, reason = cronbach_alpha(scores)
        assert math.isnan(alpha) and why in reason


def answers(rows):
    return pd.DataFrame(rows, columns=["setting", "factor", "run_id", "item", "trait", "score"])


def test_trait_alphas_take_each_run_as_a_respondent_of_one_setting():
    rows = [("context_free", "f", f"r{r}", item, "O", SCORES.iloc[r, i]) for r in range(5)
            for i, item in enumerate(SCORES.columns)]
    rows += [("context_dependent", "f", f"r{r}", 11, "O", 5.0 - r) for r in range(5)]  # another setting: not read
    table = trait_alphas(answers(rows), "context_free").set_index("trait")
    assert table.loc["O", "alpha"] == pytest.approx(0.9140625)
    assert (table.loc["O", "n_items"], table.loc["O", "n_runs"], table.loc["O", "note"]) == (3, 5, "")
    assert table.loc["C", "note"].startswith("not estimable: only 0 item(s)") and math.isnan(table.loc["C", "alpha"])


def test_retest_is_pearsons_r_of_the_stability_factors_first_two_runs():
    first, second, third = [1, 2, 4, 5, 3, 2], [2, 2, 5, 4, 3, 1], [5, 5, 5, 5, 5, 5]
    rows = [("context_free", "stability", run, item, "O", float(score)) for run, scores in
            (("plain_1", first), ("plain_2", second), ("plain_3", third)) for item, score in enumerate(scores)]
    r, n, why = retest_correlation(answers(rows), "context_free")
    assert (n, why) == (6, "") and r == pytest.approx(stats.pearsonr(first, second).statistic)
    r, n, why = retest_correlation(answers(rows), "context_dependent")  # no stability run asked there
    assert math.isnan(r) and (n, why) == (0, NO_RETEST)
    constant = [row for row in rows if row[2] != "plain_2"]  # plain_1 against plain_3, all 5s
    assert "same score" in retest_correlation(answers(constant), "context_free")[2]


def test_retest_runs_that_agree_on_every_item_are_told_apart_from_reliable_ones():
    """r = 1 from two identical runs (greedy decoding of the same requests) says nothing about
    reliability across occasions; the sentence says so only where every item agrees."""
    same = [1, 2, 4, 5, 3, 2]
    rows = [("context_free", "stability", run, item, "O", float(score)) for run in ("plain_1", "plain_2")
            for item, score in enumerate(same)]
    assert retest_correlation(answers(rows), "context_free")[0] == pytest.approx(1.0)
    assert retest_identical(answers(rows), "context_free")
    shifted = rows[:6] + [(*row[:5], row[5] + 0.5) for row in rows[6:]]  # r = 1, but no item agrees
    assert retest_correlation(answers(shifted), "context_free")[0] == pytest.approx(1.0)
    assert not retest_identical(answers(shifted), "context_free")
    assert not retest_identical(answers(rows), "context_dependent")  # no runs there


def test_metric_correlations_are_scipys_and_undefined_ones_say_why():
    consistency = pd.DataFrame({"tar": [0.2, 0.5, 0.4, 0.9], "ed": [1.2, 0.6, 0.7, 0.1],
                                "tc": [0.3, 0.6, 0.8, 0.7], "oc": [0.5, 0.5, 0.5, 0.5]})
    table = metric_correlations(consistency)
    assert [(p, q) for p, q in zip(table["pattern"], table["point"])] == [(a.upper(), b.upper()) for a, b in CORRELATED]
    tc = table[table["pattern"] == "TC"].set_index("point")
    for point in ("TAR", "ED"):
        x, y = consistency["tc"], consistency[point.lower()]
        assert tc.loc[point, "pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)
        assert tc.loc[point, "spearman"] == pytest.approx(stats.spearmanr(x, y).statistic)
        assert tc.loc[point, "n"] == 4 and tc.loc[point, "note"] == ""
    oc = table[table["pattern"] == "OC"]
    assert oc["pearson"].isna().all() and oc["note"].str.contains("OC is the same in all 4").all()
    short = metric_correlations(consistency.iloc[:2])
    assert short["note"].str.contains("2 condition").all() and short["spearman"].isna().all()
