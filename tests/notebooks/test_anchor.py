"""The anchor notebook's run in-process: every section on the fake model (plumbing,
two judges for agreement), and the whole notebook on the embedded model at a tiny scale."""
from pathlib import Path

import pytest
import yaml

from contextecho.notebooks import experiment
from contextecho.engine.paths import shared_dir

TINY = dict(n_sessions=1, n_items=5, checkpoints=1, axes_positions=1, per_family=1, n_evaluators=1, min_agree=1,
            calibration_runs=1, retention_window=1500, axes_window=1500, window=2000, recent_chars=800,
            summary_block_steps=100, summary_turn_chars=40, summary_max_tokens=16, fork_max_tokens=16,
            n_resamples=200)


@pytest.fixture(autouse=True)
def corpus():
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


def check(result):
    variables = yaml.safe_load((result.output_dir / "variables.yml").read_text())["anchor"]
    assert all(isinstance(v, (int, float, str)) for v in variables.values())
    for stem in ("retention", "axes", "axes_all_held", "axes_all_held_sessions", "recall_accuracy", "recall_filters",
                 "memory"):
        assert (result.output_dir / "tables" / f"{stem}.md").is_file()
    for figure in ("retention", "recall"):
        assert (result.output_dir / "figures" / f"{figure}.png").is_file()
    return variables


def test_anchor_notebook_runs_every_section_on_the_fake_model(tmp_path):
    module = experiment("anchor")
    params = module.Parameters(**{**TINY, "per_family": 2, "checkpoints": 2, "axes_positions": 2}, memory_chunk_steps=80,
                               targets=("fake/echo",),
                               judges=("fake/echo", "fake/echo@0"), summariser="fake/echo", facets="ipip",
                               banks=(str(Path(__file__).parents[1] / "fixtures" / "anchor_bank"),),
                               output_dir=str(tmp_path / "anchor"))
    result = module.run(params)
    variables = check(result)
    # fake/echo names no option: every questionnaire answer is invalid, so no facet has items
    assert variables["retention_no_items"] == variables["retention_rows"] > 0
    assert variables["recall_candidates"] >= variables["recall_blind_kept"] >= variables["recall_validated"]
    # fake/echo answers no JSON: every memory update is rejected and said so, the memory stays {}
    memory = result.tables["Self-managed memory: each update per session and chunk"]
    assert variables["memory_chunks"] == len(memory) > 0 and variables["memory_updates_accepted"] == 0
    assert set(memory["update"]) == {"NotJSON"} and variables["memory_chars_final"] == 2
    assert variables["memory_finding"].startswith(f"Of its {len(memory)} updates 0 were accepted")
    assert "Judge agreement per axis" in result.tables
    assert variables["primary_judge"] == "fake/echo"
    assert result.tables["ANCHOR banks"]["n_items"].tolist() == [7]
    assert (result.output_dir / "results" / "banks" / "ca_forge_tidyfeed__updated" / "run_manifest.json").is_file()
    retention = result.tables["Persona Retention R per facet (mean over sessions)"]  # one row per facet, IPIP's too
    facets = list(dict.fromkeys(retention["facet"]))
    assert facets and all(":" in f and f[0] in "OCEAN" for f in facets)
    assert facets == sorted(facets, key=lambda f: ("OCEAN".index(f[0]), f))  # by trait, then by name
    # R is undefined everywhere here: every missing R is a footnote that says why
    text = (result.output_dir / "tables" / "retention.md").read_text()
    assert "^a^" in text and "sessions no item of this facet has a valid answer" in text
    assert set(result.tables["Behavioural axes: held rate among valid verdicts"]["source"]) == {"real", "fork"}
    headline = result.tables["All four axes held: share of the decided turns"]
    assert set(headline["judge_model"]) == {"fake/echo", "fake/echo@0"} and set(headline["source"]) == {"real", "fork"}
    assert (headline["n_turns"] == headline[["n_all_held", "n_deviated", "n_undecided"]].sum(axis=1)).all()
    assert variables["axes_all_held_finding"].startswith(("Under the primary judge (fake/echo)", "On this build"))


@pytest.mark.embedded
def test_anchor_notebook_runs_on_the_embedded_model(tmp_path):
    module = experiment("anchor")
    labels = Path(__file__).parents[1] / "fixtures" / "axes_labels_tiny.jsonl"  # one turn per axis: the run, not the set
    params = module.Parameters(**TINY, families=("failed_command", "superseded_request"), axes_labels=str(labels),
                               output_dir=str(tmp_path / "anchor"))
    result = module.run(params)
    variables = check(result)
    assert variables["target"] == "local/smollm2-135m" and variables["n_sessions"] == 1 and variables["n_targets"] == 1
    assert variables["axes_calibration_n"] == 4 and variables["axes_calibration_labels"] == str(labels)
    assert variables["rank_agreement_finding"].startswith("On this build the agreement between the instruments'")
    assert variables["retention_rows"] == 2 * 5  # arms x facets at one checkpoint
    accuracy = result.tables["Recall accuracy per family × condition (chance 0.25)"]
    assert set(accuracy.columns) >= {"long_context", "hierarchical_summary", "self_managed", "retrieval"}


def test_a_retention_that_cannot_be_estimated_says_why_per_session():
    """R missing at the last checkpoint: the manuscript's value names each status and how
    many sessions had it, never a bare n/a."""
    import pandas as pd

    from contextecho.experiments.anchor import _retention_missing

    table = pd.DataFrame({"arm": ["checkpoint"] * 3 + ["filler"], "facet": ["E"] * 4, "checkpoint": [3] * 4,
                          "status": ["undefined", "undefined", "no valid items", "ok"]})
    why = _retention_missing(table, "checkpoint", "E", 3)
    assert why.startswith("R is undefined in 2 of 3 sessions, as the persona card leaves the facet's answers at the")
    assert "in 1 of 3 sessions no item of this facet has a valid answer" in why
    assert _retention_missing(table, "checkpoint", "E", 2) == "no checkpoint administration at checkpoint 2"


def test_several_targets_run_every_section_judge_the_real_turns_once_and_are_ranked(tmp_path, scripted_models):
    """Two targets: each section has a Target column, the real turns are judged once (the
    forks once per target), and the ranking and rank agreement tables are written; the text's
    values stay the first target's."""
    import pandas as pd

    module = experiment("anchor")
    targets = ("fake/echo", "scripted/letters")
    result = module.run(module.Parameters(**{**TINY, "checkpoints": 2, "axes_positions": 2}, targets=targets,
                                          judges=("scripted/judge",), summariser="fake/echo",
                                          output_dir=str(tmp_path / "anchor")))
    variables = check(result)
    assert variables["n_targets"] == 2 and variables["target"] == "fake/echo"
    assert variables["targets"] == "fake/echo, scripted/letters"
    for stem in ("retention", "axes", "axes_all_held", "recall_filters", "recall_accuracy", "ranking"):
        assert "| Target" in (result.output_dir / "tables" / f"{stem}.md").read_text(), stem
    retention = result.tables["Persona Retention R per facet (mean over sessions)"]
    assert set(retention["target"]) == set(targets)
    # fake/echo names no option: no item of the first target has a valid answer, whatever scripted/letters did
    assert variables["retention_no_items"] == variables["retention_rows"] > 0
    axes = pd.read_parquet(result.output_dir / "results" / "axes.parquet")
    real, forks = axes[axes["source"] == "real"], axes[axes["source"] == "fork"]
    assert axes.groupby(["turn_id", "judge_model", "axis"]).size().max() == 1  # each turn judged once per axis
    assert set(real["target"]) == {"recorded"} and set(forks["target"]) == set(targets)
    per_target = forks.groupby("target")["turn_id"].nunique()
    assert per_target.tolist() == [real["turn_id"].nunique()] * 2  # each target forked at every real turn
    assert variables["axes_turns"] == real["turn_id"].nunique() + per_target["fake/echo"]
    accuracy = result.tables["Recall accuracy per family × condition (chance 0.25)"]
    asked = pd.read_parquet(result.output_dir / "results" / "recall_accuracy.parquet")
    assert len(accuracy) == len(asked[["target", "set", "family"]].drop_duplicates())  # no row of a set never asked
    ranking = result.tables["The targets ranked by each instrument"]
    assert set(ranking["instrument"]) == {"retention", "all four axes (scripted/judge)"} | {
        i for i in ranking["instrument"] if i.startswith("recall (")}
    assert (ranking.groupby("instrument")["target"].apply(set) == set(targets)).all()
    agreement = result.tables["Rank agreement between the instruments (Kendall's τ-b)"]
    assert len(agreement) == 3 and (agreement["n_used"] + agreement["n_undefined"]).isin([0, TINY["n_resamples"]]).all()
    assert variables["rank_agreement_finding"].startswith(("Kendall's τ-b between the instruments' rankings of the 2 targets",
                                                           "On this build the agreement"))
