"""The stratified validation sample of the axes judge: seeded draws per stratum, majority of
three, population reweighting (hand-computed) and rater agreement (statsmodels, scikit-learn)."""
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from contextecho.anchor.axes.rubric import AXES
from contextecho.anchor.axes.validation import (ALL_FOUR, STRATA, STRATIFICATIONS, fleiss, majority, rater_agreement, reweighted_rates,
                                                stratified_sample)
from contextecho.experiments.anchor import STRATA_WORDS
from contextecho.stats.errors import StatsInputError


def population():
    rows = [{"turn_id": f"{source}|{c}|{i}", "source": source, "checkpoint": c}
            for source, c, n in (("real", "u1", 5), ("real", "u2", 1), ("fork", "u1", 3), ("fork", "u2", 4))
            for i in range(n)]
    return pd.DataFrame(rows)


def test_the_sample_is_seeded_and_drawn_per_stratum():
    turns = population()
    a, b = stratified_sample(turns, 2, seed=7), stratified_sample(turns.sample(frac=1, random_state=3), 2, seed=7)
    assert a["turn_id"].tolist() == b["turn_id"].tolist()  # the order turns come in does not matter
    sizes = a.groupby(["source", "checkpoint"]).agg(n=("turn_id", "size"), N=("population", "first"),
                                                    k=("sampled", "first"))
    assert sizes.to_dict("index") == {("fork", "u1"): {"n": 2, "N": 3, "k": 2}, ("fork", "u2"): {"n": 2, "N": 4, "k": 2},
                                      ("real", "u1"): {"n": 2, "N": 5, "k": 2}, ("real", "u2"): {"n": 1, "N": 1, "k": 1}}
    assert all(t.startswith(f"{s}|{c}|") for t, s, c in a[["turn_id", "source", "checkpoint"]].itertuples(index=False))
    draws = {tuple(stratified_sample(turns, 2, seed=s)["turn_id"]) for s in range(10)}
    assert len(draws) > 1  # the seed decides which turns
    with pytest.raises(StatsInputError, match="at least 1"):
        stratified_sample(turns, 0, seed=1)
    with pytest.raises(StatsInputError, match="twice"):
        stratified_sample(pd.concat([turns, turns.head(1)]), 1, seed=1)


def test_the_source_stratification_draws_per_source_with_its_whole_population():
    sample = stratified_sample(population(), 1, seed=7, strata=STRATIFICATIONS["source"])
    assert sorted(sample["source"]) == ["fork", "real"]
    assert dict(zip(sample["source"], sample["population"])) == {"real": 6, "fork": 7}
    assert set(STRATIFICATIONS) == set(STRATA_WORDS) and STRATIFICATIONS["source_checkpoint"] == STRATA


def verdicts(table):
    """{turn: {axis: (rater verdicts)}} -> rows (turn_id, axis, rater, held)."""
    return pd.DataFrame([{"turn_id": t, "axis": axis, "rater": f"r{k}", "held": v}
                         for t, axes in table.items() for axis, vs in axes.items() for k, v in enumerate(vs)])


def test_the_majority_of_three_and_of_the_valid_ones():
    nan = np.nan
    got = majority(verdicts({"t": {"role": (1, 1, 0), "style": (0, 1, 0), "values": (1, nan, 0),
                                   "boundaries": (nan, nan, 0)}, "u": {"role": (nan, nan, nan)}}))
    by = got.set_index(["turn_id", "axis"])
    assert by.loc[("t", "role"), "held"] == 1 and by.loc[("t", "style"), "held"] == 0
    assert np.isnan(by.loc[("t", "values"), "held"])  # one valid each way: no majority
    assert by.loc[("t", "boundaries"), "held"] == 0 and by.loc[("t", "boundaries"), "n_valid"] == 1
    assert np.isnan(by.loc[("u", "role"), "held"]) and by.loc[("u", "role"), "n_raters"] == 3


def test_reweighting_by_the_strata_population_hand_computed():
    # stratum A: 6 judged turns, 2 sampled, both held; stratum B: 2 judged, 2 sampled, neither held
    sample = pd.DataFrame({"turn_id": ["a1", "a2", "b1", "b2"], "source": ["real", "real", "fork", "fork"],
                           "checkpoint": ["u1"] * 4, "population": [6, 6, 2, 2], "sampled": [2, 2, 2, 2]})
    majorities = pd.DataFrame([{"turn_id": t, "axis": axis, "held": 1.0 if t.startswith("a") else
                                (0.0 if axis == "style" else 1.0)} for t in ("a1", "a2", "b1", "b2") for axis in AXES])
    rates = reweighted_rates(majorities, sample).set_index("axis")
    assert rates.loc["style", "sample_rate"] == pytest.approx(2 / 4)
    assert rates.loc["style", "reweighted_rate"] == pytest.approx(6 / 8 * 1 + 2 / 8 * 0)  # 0.75
    assert rates.loc["role", "reweighted_rate"] == pytest.approx(1.0)
    assert rates.loc[ALL_FOUR, "reweighted_rate"] == pytest.approx(0.75)
    assert rates.loc[ALL_FOUR, "n_decided"] == 4 and rates.loc[ALL_FOUR, "strata_left_out"] == 0
    # a stratum with no decided turn is left out and the weights of the others renormalised
    undecided = majorities.assign(held=[np.nan if t.startswith("b") else h
                                        for t, h in majorities[["turn_id", "held"]].itertuples(index=False)])
    rates = reweighted_rates(undecided, sample).set_index("axis")
    assert rates.loc["style", "reweighted_rate"] == 1.0 and rates.loc["style", "strata_left_out"] == 1
    assert rates.loc[ALL_FOUR, "n_decided"] == 2


def test_fleiss_kappa_against_statsmodels_and_by_hand():
    held = np.array([[1, 1, 1], [0, 0, 0], [1, 1, 0]])
    kappa, note = fleiss(held)
    assert kappa == pytest.approx(fleiss_kappa(np.array([[0, 3], [3, 0], [1, 2]])))
    # by hand: P_i = 1, 1, 1/3; P = 7/9; p = (4/9, 5/9); Pe = 41/81
    assert kappa == pytest.approx((7 / 9 - 41 / 81) / (1 - 41 / 81)) and note == ""
    kappa, note = fleiss(np.ones((4, 3)))
    assert np.isnan(kappa) and "one category" in note
    assert np.isnan(fleiss(np.zeros((0, 3)))[0])


def test_rater_agreement_per_axis_fleiss_and_pairwise_cohen():
    rng = np.random.default_rng(3)
    table = {f"t{i}": {axis: tuple(rng.integers(0, 2, 3).astype(float)) for axis in AXES} for i in range(12)}
    table["t0"]["role"] = (np.nan, 1.0, 1.0)
    frame = verdicts(table)
    per_axis, pairs = rater_agreement(frame, ["r0", "r1", "r2"])
    role = per_axis.set_index("axis").loc["role"]
    assert role["n_turns"] == 12 and role["n_all_valid"] == 11
    wide = frame[frame["axis"] == "style"].pivot(index="turn_id", columns="rater", values="held")
    counts = np.column_stack([(wide.to_numpy() == 0).sum(axis=1), (wide.to_numpy() == 1).sum(axis=1)])
    assert per_axis.set_index("axis").loc["style", "fleiss_kappa"] == pytest.approx(fleiss_kappa(counts))
    pair = pairs[(pairs["judge_a"] == "r0") & (pairs["judge_b"] == "r2") & (pairs["axis"] == "values")].iloc[0]
    wide = frame[frame["axis"] == "values"].pivot(index="turn_id", columns="rater", values="held")
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(wide["r0"], wide["r2"]))
    assert len(pairs) == 3 * len(AXES)
