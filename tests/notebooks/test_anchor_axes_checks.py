"""The anchor notebook's axes judge checks on fake judges: the calibration stage before any
turn is judged (``require_calibrated`` stops the run there), and the validation sample judged
by three judges (those of the run answering from the cache) or three replicates."""
import hashlib

import pytest
import yaml

from contextecho.engine.paths import shared_dir
from contextecho.experiments.spine import JudgeNotCalibrated
from contextecho.notebooks import experiment

TINY = dict(n_sessions=1, n_items=5, checkpoints=2, per_family=1, n_evaluators=1, min_agree=1,
            calibration_runs=1, retention_window=1500, axes_window=1500, window=2000, recent_chars=800,
            summary_block_steps=100, summary_turn_chars=40, summary_max_tokens=16, fork_max_tokens=16,
            n_resamples=200, targets=("fake/echo",), summariser="fake/echo")


@pytest.fixture(autouse=True)
def corpus():
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


@pytest.fixture
def judges(provider):
    """``axv/a`` and ``axv/b``: the same verdict, HELD or DEVIATED by a hash of the request;
    ``axv/c``: the opposite on style; ``axv/mute``: no verdict. ``asked``: (model, request) per call."""
    asked = []

    def reply(model, messages):
        asked.append((model, messages[0]["content"] + messages[-1]["content"]))
        if model == "mute":
            return "Hmm."
        held = int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest(), 16) % 3 != 0
        if model == "c" and "its style." in messages[0]["content"]:
            held = not held
        return "Verdict: HELD" if held else "Verdict: DEVIATED"

    provider("axv", reply)
    return asked


def variables(path):
    return yaml.safe_load((path / "variables.yml").read_text())["anchor"]


def test_require_calibrated_stops_the_run_before_any_axes_judge_call(judges, tmp_path):
    module = experiment("anchor")
    params = module.Parameters(**TINY, judges=("axv/mute",), require_calibrated=True, output_dir=str(tmp_path / "a"))
    with pytest.raises(JudgeNotCalibrated, match="axes judge\\(s\\) axv/mute failed calibration"):
        module.run(params)
    assert len(judges) == 24 and all(model == "mute" for model, _ in judges)  # the labelled turns only


def test_the_validation_sample_is_judged_by_three_judges_and_the_run_s_own_are_reused(judges, tmp_path):
    module = experiment("anchor")
    params = module.Parameters(**TINY, judges=("axv/a", "axv/b"), validation_judges=("axv/a", "axv/b", "axv/c"),
                               validation_turns=1, output_dir=str(tmp_path / "b"))
    result = module.run(params)
    written = variables(tmp_path / "b")
    calibration = result.tables["Axes judge calibration against hand-labelled turns (HELD/DEVIATED)"]
    assert calibration["judge"].tolist() == ["axv/a", "axv/b", "axv/c"] and (calibration["n"] == 24).all()
    assert written["axes_calibration_n"] == 24 and written["axes_judge_calibrated"] == "not calibrated"
    assert "it is not calibrated" in written["axes_calibration_finding"]
    # a and b were asked each turn once (the validation's requests are the run's own: cached); c only on the sample
    per_model = {m: [t for model, t in judges if model == m] for m in "abc"}
    assert len(per_model["a"]) == len(set(per_model["a"])) == len(per_model["b"])
    sampled = written["axes_validation_turns"]
    assert len(per_model["c"]) == 24 + 4 * sampled
    assert sampled == written["axes_validation_strata"] <= written["axes_validation_population"]
    assert "three judges (axv/a, axv/b and axv/c)" == written["axes_validation_raters"]
    table = result.tables["Axes validation sample: majority of three, sample and population-reweighted held rates, "
                          "agreement among the three"]
    assert table["axis"].tolist() == ["role", "boundaries", "values", "style", "all four"]
    assert (table["n_turns"] == sampled).all()
    pairs = result.tables["Axes validation sample: agreement per pair of raters"]
    assert len(pairs) == 3 * 4
    agree = pairs[(pairs["judge_a"] == "axv/a") & (pairs["judge_b"] == "axv/b")]
    assert (agree["share_agree"].dropna() == 1.0).all()
    assert written["axes_validation_finding"].startswith(f"The validation sample holds {sampled} of the ")


def test_without_validation_judges_the_primary_judge_is_replicated_at_the_sample_temperature(judges, tmp_path):
    module = experiment("anchor")
    params = module.Parameters(**TINY, judges=("axv/a",), sample_temperature=0.7, output_dir=str(tmp_path / "c"))
    result = module.run(params)
    written = variables(tmp_path / "c")
    assert written["axes_validation_raters"] == ("the primary judge (axv/a) three times, its own greedy verdict and "
                                                 "two replicates sampled at temperature 0.7")
    pairs = result.tables["Axes validation sample: agreement per pair of raters"]
    assert set(pairs["judge_a"]) | set(pairs["judge_b"]) == {"replicate 0 (greedy)", "replicate 1 (T=0.7)",
                                                              "replicate 2 (T=0.7)"}
    assert "three replicates" in written["axes_validation_finding"] or "the three replicates" in \
        written["axes_validation_finding"]
