import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from contextecho.stats import (DegenerateDataError, InvalidScoreError, StatsInputError,
                               direction_agreement, judge_agreement)


@pytest.mark.parametrize("seed", range(4))
def test_kappas_match_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 250)
    b = np.clip(a + rng.integers(-1, 2, 250) * (rng.random(250) < 0.45), 0, 3)
    r = judge_agreement(a, b)
    assert r.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert r.kappa_linear == pytest.approx(cohen_kappa_score(a, b, weights="linear"), abs=1e-12)
    assert r.kappa_quadratic == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic"), abs=1e-12)
    assert r.exact == pytest.approx(np.mean(a == b))
    assert r.within_one == pytest.approx(np.mean(np.abs(a - b) <= 1))


def test_unused_rubric_categories_do_not_change_kappa():
    a, b = [1, 2, 2, 3, 3, 1], [1, 2, 3, 3, 2, 2]
    r = judge_agreement(a, b)
    assert r.kappa_linear == pytest.approx(cohen_kappa_score(a, b, weights="linear"))


def test_hand_computed_binary_kappa():
    # 2x2 table [[20, 5], [10, 15]]: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5 -> kappa 0.4
    a = [0] * 25 + [1] * 25
    b = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    r = judge_agreement(a, b, categories=(0, 1))
    assert r.kappa == pytest.approx(0.4) and r.kappa_linear == pytest.approx(0.4)
    assert r.exact == pytest.approx(0.7) and r.within_one == 1.0


def test_invalid_verdicts_are_dropped_and_counted():
    r = judge_agreement([0, 1, np.nan, 3, 2], [0, 2, 1, np.nan, 2])
    assert (r.n, r.n_dropped) == (3, 2)
    assert r.exact == pytest.approx(2 / 3)


def test_degenerate_and_bad_inputs():
    with pytest.raises(DegenerateDataError):
        judge_agreement([3, 3, 3], [3, 3, 3])
    with pytest.raises(InvalidScoreError):
        judge_agreement([0, 4], [0, 1])
    with pytest.raises(StatsInputError):
        judge_agreement([0, 1], [0])


def test_direction_agreement_reproduces_table_7():
    sonnet = {"Sonnet 4.5": 1.2, "Kimi K2.6": 1.0, "Mistral Large": 0.8, "Haiku 4.5": 0.8,
              "Qwen3 235B": 0.8, "Command A": 0.6, "Nemotron Nano 30B": 0.6, "GPT-5": 0.6,
              "Sonnet 4.6": 0.4, "Nemotron Super 120B": 0.4, "Mistral Medium": 0.2,
              "GPT-4.1": 0.2, "Command R7B": 0.0, "Gemini 2.5 Flash": 0.0,
              "Gemini 2.5 Pro": 0.0, "Mistral Small": 0.0, "Llama 3.3 70B": -0.2,
              "Opus 4.1": -0.4, "DeepSeek V3": -1.0}
    gpt5 = {"Sonnet 4.5": 1.4, "Kimi K2.6": 0.2, "Mistral Large": 1.0, "Haiku 4.5": -0.2,
            "Qwen3 235B": 0.2, "Command A": 1.0, "Nemotron Nano 30B": 1.2, "GPT-5": 0.8,
            "Sonnet 4.6": 0.4, "Nemotron Super 120B": 0.8, "Mistral Medium": 0.4,
            "GPT-4.1": 0.2, "Command R7B": -0.4, "Gemini 2.5 Flash": -0.4,
            "Gemini 2.5 Pro": 0.2, "Mistral Small": 0.4, "Llama 3.3 70B": 0.0,
            "Opus 4.1": -0.2, "DeepSeek V3": -1.0}
    r = direction_agreement(sonnet, gpt5)
    assert (r.n, r.n_agree, r.n_flip, r.n_null_vs_small) == (19, 13, 1, 5)
    table = r.to_frame().set_index("target")
    assert table.loc["Haiku 4.5", "direction"] == "flip"
    assert table.loc["Llama 3.3 70B", "direction"] == "null vs small"


def test_direction_agreement_target_mismatch():
    with pytest.raises(StatsInputError):
        direction_agreement({"a": 1.0}, {"b": 1.0})


def test_score_agreement_matches_scipy_on_continuous_scores():
    import scipy.stats

    from contextecho.stats import score_agreement

    a = np.array([0.4, 1.7, 2.2, np.nan, 2.9, 1.1, 1.1])
    b = np.array([0.9, 1.2, 2.5, 2.0, 2.6, 0.3, np.nan])
    r = score_agreement(a, b)
    keep = ~(np.isnan(a) | np.isnan(b))
    assert r.n == 5 and r.n_dropped == 2
    assert r.pearson == pytest.approx(scipy.stats.pearsonr(a[keep], b[keep])[0])
    assert r.spearman == pytest.approx(scipy.stats.spearmanr(a[keep], b[keep])[0])
    assert r.mean_abs_diff == pytest.approx(np.mean(np.abs(a[keep] - b[keep])))
    assert np.isnan(score_agreement([1.0, 1.0], [0.2, 0.9]).pearson)  # one judge does not vary
    with pytest.raises(StatsInputError):
        score_agreement([1.0], [1.0, 2.0])


def test_label_agreement_kappa_and_ordinal_ranks_match_scikit_learn_and_scipy():
    from scipy.stats import pearsonr, rankdata

    from contextecho.stats.agreement import label_agreement

    rng = np.random.default_rng(5)
    labels = rng.integers(0, 4, 80)
    verdicts = np.where(rng.random(80) < 0.6, labels, rng.integers(0, 4, 80)).astype(float)
    verdicts[[4, 9]] = np.nan
    keep = ~np.isnan(verdicts)
    x, y = labels[keep], verdicts[keep].astype(int)
    average = label_agreement(labels, verdicts)
    assert average.kappa == pytest.approx(cohen_kappa_score(x, y, labels=[0, 1, 2, 3]), abs=1e-12)
    ordinal = label_agreement(labels, verdicts, ties="ordinal")
    assert ordinal.spearman == pytest.approx(
        pearsonr(rankdata(x, method="ordinal"), rankdata(y, method="ordinal")).statistic, abs=1e-12)
    assert ordinal.kappa == average.kappa and ordinal.kappa_quadratic == average.kappa_quadratic
    with pytest.raises(StatsInputError):
        label_agreement(labels, verdicts, ties="dense")


def test_failed_scores_kept_in_the_pairs_count_as_observed_agreement_never_as_chance():
    from contextecho.stats.agreement import label_agreement

    # pairs (-1,-1) (0,0) (1,2) (-1,3): exact 2/4, within one 3/4 (|-1 - 3| = 4);
    # chance over 0-3 only: first judge 0:1 1:1, second 0:1 2:1 3:1 -> 1/16; kappa (1/2 - 1/16) / (15/16)
    r = label_agreement([-1, 0, 1, -1], [-1, 0, 2, 3], failed=-1)
    assert (r.n_valid, r.exact, r.within_one) == (4, 0.5, 0.75) and r.kappa == pytest.approx(7 / 15)
    assert r.kappa_quadratic == pytest.approx(  # the pairs of two rubric scores
        cohen_kappa_score([0, 1], [0, 2], labels=[0, 1, 2, 3], weights="quadratic"))
    with pytest.raises(InvalidScoreError):
        label_agreement([-1, 0], [0, 0])


# ---------------------------------------------------------------- rank_agreement
def test_rank_agreement_is_kendalls_tau_over_the_targets_both_judges_estimated():
    from contextecho.stats.agreement import rank_agreement
    # hand-computed: ranks (1, 2, 3) against (1, 3, 2): two concordant pairs, one discordant: tau = 1/3
    r = rank_agreement({"a": 0.1, "b": 0.5, "c": 0.9, "d": 0.2}, {"a": 0.0, "b": 0.8, "c": 0.4, "d": float("nan")})
    assert r.n_targets == 3 and r.tau == pytest.approx(1 / 3)
    assert r.p_value == pytest.approx(1.0)  # exact two-sided p for n = 3, tau = 1/3 (scipy's)


def test_rank_agreement_says_why_it_is_not_estimable():
    from contextecho.stats.agreement import rank_agreement
    with pytest.raises(StatsInputError, match="needs two"):
        rank_agreement({"a": 0.3}, {"a": 0.1})
    with pytest.raises(StatsInputError, match="same drift gap"):
        rank_agreement({"a": 0.3, "b": 0.3}, {"a": 0.1, "b": 0.2})
