"""The spine: a run's stages, its run log, and manuscript variables keyed by target."""
import json
import re
from dataclasses import dataclass

import pandas as pd
import pytest

from contextecho.echo.calibration import calibration_set
from contextecho.echo.protocols import protocol

from contextecho.engine.calls import Transport
from contextecho.engine.counts import Counts
from contextecho.experiments import spine
from contextecho.experiments.parameters import ParameterError, RangeError
from contextecho.notebooks import experiment
from contextecho.paper.declared import Declared
from contextecho.paper.formats import COUNT, PERCENT, POINTS
from contextecho.paper.variables import Variable


@dataclass(frozen=True)
class Tiny:
    output_dir: str = ""

    def transport(self, models):
        return Transport(concurrency=1)


def _fails(run):
    """A stage that fails."""
    raise RuntimeError("boom")


def test_stages_run_in_order_and_a_failing_stage_leaves_the_run_log_failed(tmp_path):
    def begin(params):
        """Open the run."""
        return spine.start("demo", params, models=("fake/echo",), declared=Declared(variables=(Variable("n", COUNT),)))

    def count(run):
        """Count a batch."""
        return run.batch("demo:targets", Counts(calls=2, computed=2))

    def finish(run, counted):
        """Write the variables."""
        run.out.set(n=counted.calls)
        return spine.finish(run)

    stages = (spine.Stage("run", begin), spine.Stage("counted", count), spine.Stage("variables", finish))
    assert [s.arguments for s in stages] == [("params",), ("run",), ("run", "counted")]
    assert stages[2].code() == "variables = run.step('variables', experiment.finish, run, counted)\nvariables"
    assert stages[0].code() == "run = experiment.begin(params)\nrun"
    result = spine.run_stages(stages, Tiny(str(tmp_path / "ok")))
    assert result.variables == {"n": 2} and result.batches == {"demo:targets": Counts(2, 0, 2).as_dict()}
    log = json.loads((tmp_path / "ok" / "manifest.json").read_text())
    assert log["status"] == "complete" and log["batches"]["demo:targets"]["computed"] == 2
    with pytest.raises(RuntimeError, match="boom"):
        spine.run_stages((stages[0], stages[1], spine.Stage("x", _fails)), Tiny(str(tmp_path / "bad")))
    log = json.loads((tmp_path / "bad" / "manifest.json").read_text())
    assert log["status"] == "failed" and log["batches"]["demo:targets"]["calls"] == 2
    assert not (tmp_path / "bad" / "variables.yml").exists()


@pytest.mark.corpus
def test_a_panel_of_two_targets_keys_each_number_by_its_target(tmp_path, corpus_dir, scripted_models):
    """The first target given (here not the first in sorted order) is the one the unsuffixed
    keys describe; every target's numbers have their own keys."""
    module = experiment("panel")
    params = module.Parameters(targets=("scripted/command", "scripted/chatty"), judges=("scripted/judge",),
                               n_sessions=1, n_positions=2, probes=("C01", "C02"), stressors=("S2#01",),
                               n_resamples=200, max_tokens=16, window=3000, output_dir=str(tmp_path / "panel"))
    result = module.run(params)
    v = result.variables
    assert v["target"] == "scripted/command" and v["targets"] == "scripted/command, scripted/chatty"
    s2 = result.tables["S2 compliance and verbosity"].set_index("target")
    for target, slug in (("scripted/chatty", "scripted_chatty"), ("scripted/command", "scripted_command")):
        assert v[f"s2_real_rate_pct_{slug}"] == PERCENT.variable(s2.loc[target, "real_rate_pct"])
        for key in ("gap", "gap_ci", "perm_p", "holm_p", "gap_discrete", "verbosity_ratio"):
            assert f"{key}_{slug}" in v, key
    assert v["s2_real_rate_pct_scripted_chatty"] == "0.0%"  # a preamble every time
    assert v["s2_real_rate_pct"] == v["s2_real_rate_pct_scripted_command"] == "100.0%"  # a bare command
    gaps = result.tables["Drift gap per target (headline battery)"].set_index("target")
    assert v["gap_scripted_chatty"] == POINTS.variable(gaps.loc["scripted/chatty", "estimate"])
    assert v["gap"] == v["gap_scripted_command"] == POINTS.variable(gaps.loc["scripted/command", "estimate"])
    log = json.loads((result.output_dir / "manifest.json").read_text())
    assert log["status"] == "complete" and \
        set(log["batches"]) == {"panel:calibration", "panel:targets", "panel:judges"}
    # the judge scored the calibration set (the prompt's examples and the 48 responses) first
    assert log["batches"]["panel:calibration"]["calls"] == len(calibration_set(protocol("reference")))
    assert "calibrated" in v["judge_status"] and "Judge calibration against labelled responses" in result.tables
    assert log["batches"]["panel:targets"] == Counts(calls=2 * 2 * 2 * 3, computed=24).as_dict()
    assert v["n_cells"] == 24 and v["n_cached"] == 0 and v["n_failed"] == 0
    cells = pd.read_parquet(result.output_dir / "results" / "cells.parquet")
    assert set(cells["target"]) == {"scripted/chatty", "scripted/command"}


@pytest.mark.corpus
@pytest.mark.parametrize("name, extra", [
    ("compaction", {"n_sessions": 2, "probes": ("C01", "C02")}),
    ("onset", {"n_sessions": 2, "probes": ("C01",), "steps": (1, 5)}),
    ("a_anchor", {"n_sessions": 1, "interventions": ("none", "a_anchor"), "probes": ("C01", "C03"),
                          "contracts": ("S2#01",), "distances": (0,)}),
    ("cross_judge", {"n_sessions": 2, "n_positions": 3, "probes": ("C01", "C02", "C03")}),
])
def test_every_per_target_number_has_a_key_for_each_target(name, extra, tmp_path, corpus_dir, scripted_models):
    module = experiment(name)
    targets = ("scripted/varied", "scripted/chatty")  # the first given sorts last
    params = module.Parameters(targets=targets, judges=("scripted/judge",), n_resamples=200, max_tokens=16,
                               window=3000, output_dir=str(tmp_path / name), **extra)
    v = module.run(params).variables
    suffixed = {k[: -len("_scripted_chatty")] for k in v if k.endswith("_scripted_chatty")}
    assert suffixed and all(f"{k}_scripted_varied" in v for k in suffixed)
    assert all(v[k] == v[f"{k}_scripted_varied"] for k in suffixed)  # unsuffixed: the first target
    assert any(v[f"{k}_scripted_varied"] != v[f"{k}_scripted_chatty"] for k in suffixed)  # they differ
    assert v["target"] == "scripted/varied"


@pytest.mark.corpus
def test_judge_labels_calibrates_on_a_set_of_ones_own_and_a_bad_line_names_its_place(tmp_path, corpus_dir,
                                                                                        scripted_models):
    from tests.conftest import JUDGE_LABELS

    module = experiment("panel")
    tiny = dict(targets=("scripted/command",), judges=("scripted/judge",), n_sessions=1, n_positions=2,
                probes=("C01",), stressors=("S2#01",), n_resamples=200, max_tokens=16, window=3000)
    result = module.run(module.Parameters(**tiny, judge_labels=str(JUDGE_LABELS), output_dir=str(tmp_path / "own")))
    log = json.loads((result.output_dir / "manifest.json").read_text())
    assert log["batches"]["panel:calibration"]["calls"] == 4 == len(JUDGE_LABELS.read_text().splitlines())
    assert result.variables["judge_calibration_n"] == 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text(JUDGE_LABELS.read_text() + '{"probe_id": "I01", "probe": "Who are you?"\n')
    with pytest.raises(ParameterError, match=rf"parameter 'judge_labels': {re.escape(str(bad))}:5: not valid JSON"):
        module.run(module.Parameters(**tiny, judge_labels=str(bad), output_dir=str(tmp_path / "bad")))
    with pytest.raises(RangeError, match="parameter 'judge_labels': 'no-such.jsonl' is not an existing .jsonl file"):
        module.Parameters(**tiny, judge_labels="no-such.jsonl")
