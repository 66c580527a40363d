"""Each experiment's ``run`` in-process on tiny parameters: the fake model for the
probe/judge experiments (fast), the embedded model for CAPE (the fake model cannot answer
a questionnaire)."""
import numbers

import numpy as np
import pandas as pd

import pytest
import yaml

from contextecho.notebooks import experiment
from contextecho.engine.paths import shared_dir
from contextecho.paper.tables import unexplained_missing

FAKE = {"targets": ("fake/echo",), "judges": ("fake/echo",), "n_resamples": 200, "max_tokens": 16,
        "window": 3000}
CASES = {
    "compaction": {"n_sessions": 2, "probes": ("C01", "C02")},
    "onset": {"n_sessions": 1, "probes": ("C01",), "steps": (1, 5)},
    "a_anchor": {"n_sessions": 1, "interventions": ("none", "a_anchor", "placebo_anchor"),
                         "probes": ("C01",), "contracts": ("S2#01",), "distances": (0, 4)},
    "cross_judge": {"n_sessions": 1, "n_positions": 2, "probes": ("C01", "C02")},
}


@pytest.fixture(autouse=True)
def corpus():
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


def check_outputs(result, name):
    root = result.output_dir
    variables = yaml.safe_load((root / "variables.yml").read_text())[name]
    assert variables and all(isinstance(v, (numbers.Number, str)) for v in variables.values())
    assert (root / "manifest.json").is_file() and list((root / "results").glob("*.parquet"))
    for figure in result.figures:
        assert figure.is_file() and figure.with_suffix(".pdf").is_file()
    assert list((root / "tables").glob("*.md"))
    return variables


@pytest.mark.parametrize("name", sorted(CASES))
def test_experiment_runs_on_the_fake_model(name, tmp_path):
    module = experiment(name)
    params = module.Parameters(**FAKE, **CASES[name], output_dir=str(tmp_path / name))
    variables = check_outputs(module.run(params), name)
    assert variables["n_failed"] == 0


def test_the_decay_shows_each_anchor_where_it_sat_and_the_text_says_where_that_was_not_as_asked(tmp_path):
    module = experiment("a_anchor")
    params = module.Parameters(**FAKE, **{**CASES["a_anchor"], "distances": (0, 10_000)},
                               output_dir=str(tmp_path / "a_anchor"))
    result = module.run(params)
    cells = pd.read_parquet(result.output_dir / "results" / "cells.parquet")
    far = cells[(cells["experiment"] == "anchor_decay")]
    placed = int(far["placed_distance"].iloc[0])
    assert set(far["distance"]) == {10_000} and set(far["placed_distance"]) == {placed} and 0 < placed < 10_000
    decay = pd.read_parquet(result.output_dir / "results" / "decay.parquet")
    assert set(decay.loc[decay["intervention"] == "a_anchor", "distance"]) == {0, placed}  # never 10,000
    assert result.variables["distances"] == "0, 10000"
    session = far["session"].iloc[0]
    assert f"{placed} messages instead of 10000 in session {session}" in result.variables["decay_placement"]


def test_a_placement_as_asked_is_said_in_one_sentence():
    from contextecho.experiments.a_anchor import placement_sentence

    frame = pd.DataFrame({"intervention": ["none", "a_anchor", "a_anchor"], "session": ["S1"] * 3,
                          "distance": [0, 0, 8], "placed_distance": [None, 0, 8]})
    assert placement_sentence(frame) == "Each anchor sat as far from the probe as asked."
    moved = frame.assign(session=["S1", "S1", "S2"], placed_distance=[None, 0, 2])
    assert "2 messages instead of 8 in session S2;" in placement_sentence(pd.concat([moved, moved]))


def test_cross_judge_rates_with_the_offline_rater(tmp_path):
    module = experiment("cross_judge")
    params = module.Parameters(**FAKE, **CASES["cross_judge"], output_dir=str(tmp_path / "cj"))
    result = module.run(params)
    assert result.variables["second_rater"] == "tfidf"
    assert set(result.tables["Drift gap per rater"]["rater"]) == {"fake/echo", "tfidf"}


@pytest.mark.embedded
def test_cape_runs_on_the_embedded_model(tmp_path):
    module = experiment("cape")
    params = module.Parameters(n_items=5, factors=("stability",), history_window=2, few_shots=(1,),
                               orderings=("cyclic",), bridge_positions=1, bridge_runs=1, rpa_items=5, rpa_scene_chars=300,
                               output_dir=str(tmp_path / "cape"))
    result = module.run(params)
    variables = check_outputs(result, "cape")
    assert variables["n_items"] == 5 and variables["cf_tar_pct"].endswith(("%", ")"))  # a percentage, or why not
    assert (result.output_dir / "tables" / "table1.md").read_text().count("stability") == 2  # CF and CD rows
    # Constrained answers are read beside the text ones: Table 1 under both, and their agreement.
    assert (result.output_dir / "tables" / "table1_constrained.md").read_text().count("stability") == 2
    assert variables["table1_rows_constrained"] == 1 and variables["n_constrained_ok"] > 0
    assert variables["answers_compared"] >= 0 and variables["answer"] == "text"
    # Table 2: the role-playing agent (one character, two runs) beside the Random baseline
    assert variables["rpa_n_characters"] == 1 and variables["rpa_answers"] == 5 * 2 * 2
    assert (result.output_dir / "tables" / "table2.md").read_text().count("RPA\\+\\+") == 2  # both parts
    # Table 6: the embedded default asks no reasoning target: no call, one footnoted row, and the text says so
    assert variables["table6_finding"].startswith("On this build Table 6") and "cape:reasoning" not in result.batches
    assert unexplained_missing((result.output_dir / "tables" / "table6.md").read_text()) == []
    # Fig. 2: one run keeping the last pair and one its full history, each answer read or said why not
    assert result.batches["cape:few-shot"]["calls"] == 2 * 5 and variables["few_shots"] == "1"
    assert variables["few_shot_finding"].startswith(("Against the full history's", "On this build the few-shot"))
    assert (result.output_dir / "figures" / "few_shot.png").is_file()


def test_cross_judge_asks_the_late_position_with_replicates_and_onset_replicates(tmp_path):
    cj = experiment("cross_judge")
    params = cj.Parameters(**FAKE, **{**CASES["cross_judge"], "n_positions": 1}, positions="late", replicates=2,
                           output_dir=str(tmp_path / "cj"))
    result = cj.run(params)
    assert result.variables["n_cells"] == 1 * 2 * 2 * 2  # one position × two arms × two probes × two samples
    assert result.variables["rank_n_targets"] == 0 and "not estimable" in result.variables["rank_tau"]
    onset = experiment("onset")
    params = onset.Parameters(**FAKE, **CASES["onset"], replicates=2, output_dir=str(tmp_path / "onset"))
    assert onset.run(params).variables["n_cells"] == 2 * 2 * 1 * 2  # two steps × two arms × one probe × two


def test_the_judges_consensus_per_cell_hand_computed(tmp_path):
    cj = experiment("cross_judge")
    params = cj.Parameters(**{**FAKE, "judges": ("fake/echo", "fake/other")}, **CASES["cross_judge"],
                           output_dir=str(tmp_path / "cj"))
    run = cj.start(params)
    scores = pd.DataFrame({"target": "fake/echo", "session": "S1", "position": ["p1", "p1", "p2", "p2"],
                           "arm": ["real", "filler", "real", "filler"], "item": "C01", "replicate": 1,
                           "response": "r", "fake/echo": [1.0, 3.0, 0.0, 2.0], "fake/other": [1.0, 2.0, 2.0, np.nan]})
    table = cj.consensus(run, scores).set_index("target")
    # cells judged by both: three; unanimous: the first; spreads 0, 1, 2
    assert table.loc["fake/echo", "n_cells"] == 3
    assert table.loc["fake/echo", "unanimous_pct"] == pytest.approx(100 / 3)
    assert table.loc["fake/echo", "mean_spread"] == pytest.approx(1.0)
    # consensus scores: p1 real 1, filler 2.5; p2 real 1, filler 2 (one judge): gap = mean(1.5, 1.0)
    assert table.loc["fake/echo", "gap"] == pytest.approx(1.25)
