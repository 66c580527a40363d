"""A plan before the run (``plan`` parameter, ``notebook --plan``, ``paper --plan``): the calls
it counts are the calls the run then makes, it leaves the outputs as they are, and the run
records the plan beside what it called."""
from __future__ import annotations

import json

import pytest

from contextecho.__main__ import main
from contextecho.engine.paths import shared_dir
from contextecho.experiments.spine import PLAN_FILE
from contextecho.notebooks import experiment
from contextecho.notebooks.planning import plan_notebooks

FAKE = {"targets": ("scripted/x",), "judges": ("scripted/judge",), "n_resamples": 100, "max_tokens": 16}
SMALL = {"n_sessions": 2, "probes": ("C01", "C02")}


@pytest.fixture(autouse=True)
def corpus(scripted_models):
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


def test_the_plan_counts_the_calls_the_run_then_makes(tmp_path):
    module = experiment("compaction")
    out = tmp_path / "compaction"
    params = module.Parameters(**FAKE, **SMALL, output_dir=str(out))
    plan = plan_notebooks(["compaction"], {"compaction": {"output_dir": str(out), **_text(FAKE), **_text(SMALL)}})
    planned = json.loads((out / PLAN_FILE).read_text())
    assert not (out / "manifest.json").exists() and not list(out.glob("results/*"))  # a plan writes no results
    assert planned["totals"]["to_compute"] == plan.totals["to_compute"] > 0

    result = module.run(params)
    manifest = json.loads((out / "manifest.json").read_text())
    computed = sum(b["computed"] for b in manifest["batches"].values())
    calls = sum(b["calls"] for b in manifest["batches"].values())
    assert computed == plan.totals["to_compute"]
    assert calls == plan.totals["calls"]
    versus = manifest["plan_vs_actual"]
    assert versus["to_compute"] == {"planned": computed, "actual": computed}
    assert versus["prompt_tokens"]["actual"] > 0
    assert result.variables  # the run itself is whole

    again = plan_notebooks(["compaction"], {"compaction": {"output_dir": str(out), **_text(FAKE), **_text(SMALL)}})
    assert again.totals["to_compute"] == 0 and again.totals["cached"] == plan.totals["calls"]


def test_a_stale_plan_is_not_recorded(tmp_path):
    module = experiment("compaction")
    out = tmp_path / "c"
    plan_notebooks(["compaction"], {"compaction": {"output_dir": str(out), **_text(FAKE), **_text(SMALL)}})
    module.run(module.Parameters(**FAKE, **{**SMALL, "probes": ("C01",)}, output_dir=str(out)))
    manifest = json.loads((out / "manifest.json").read_text())
    assert "plan" not in manifest and "plan_vs_actual" not in manifest


def test_notebook_plan_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "onset"
    code = main(["notebook", "onset", "--plan", "--output-dir", str(out), "-p", "targets", "scripted/x",
                 "-p", "judges", "scripted/judge", "-p", "n_sessions", "1", "-p", "probes", "C01",
                 "-p", "steps", "1,5"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "onset: plan" in printed and "nothing was sent" in printed and "to compute" in printed
    assert (out / PLAN_FILE).is_file() and not (out / "manifest.json").exists()


def test_a_plan_of_a_hosted_model_needs_no_key_and_prices_it(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "onset"
    plan = plan_notebooks(["onset"], {"onset": {"output_dir": str(out), "targets": "openai/gpt-4o-mini",
                                                "judges": "scripted/judge", "n_sessions": "1",
                                                "probes": "C01", "steps": "1,5"}})
    per_model = plan.per_model()
    assert per_model["openai/gpt-4o-mini"]["to_compute"] > 0
    assert per_model["openai/gpt-4o-mini"]["cost_usd"] > 0
    assert per_model["openai/gpt-4o-mini"]["batch_cost_usd"] < per_model["openai/gpt-4o-mini"]["cost_usd"]


def _text(values: dict) -> dict:
    return {k: ",".join(v) if isinstance(v, tuple) else str(v) for k, v in values.items()}


# ---------------------------------------------------------------- CAPE's paraphrasing factor
CAPE = {"targets": "scripted/x", "n_items": "5", "factors": "stability,paraphrasing", "n_runs": "1",
        "bridge_positions": "1"}


def _rounds(plan) -> dict[str, int]:
    found: dict[str, int] = {}
    for call in plan.calls:
        found[call.round] = found.get(call.round, 0) + 1
    return found


def test_a_cape_plan_without_a_reviewed_paraphrase_file_plans_their_generation_and_says_what_to_do(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(experiment("cape"), "paraphrase_path", lambda *a: tmp_path / "absent.csv")
    plan = plan_notebooks(["cape"], {"cape": {"output_dir": str(tmp_path / "cape"), **CAPE}})
    printed = capsys.readouterr().out
    assert "python -m contextecho paraphrases --model scripted/x --inventory mpi_120" in printed
    assert "left out of this plan" in printed
    assert _rounds(plan)["cape:paraphrase"] == 5  # one generation call per item asked


def test_a_cape_plan_with_a_reviewed_paraphrase_file_plans_the_factor(tmp_path, capsys):
    from contextecho.cape.inventory import load_inventory

    inventory = load_inventory("mpi_120").balanced(5)
    review = tmp_path / "reviewed.csv"
    review.write_text("item,paraphrase_1,paraphrase_2,review\n" + "".join(
        f"{i.index},worry about things {i.index},fret about things {i.index},\n" for i in inventory.items))
    without = plan_notebooks(["cape"], {"cape": {"output_dir": str(tmp_path / "a"), **CAPE,
                                                 "factors": "stability"}})
    capsys.readouterr()
    plan = plan_notebooks(["cape"], {"cape": {"output_dir": str(tmp_path / "b"), **CAPE, "paraphrases": str(review)}})
    printed = capsys.readouterr().out
    assert f"paraphrases: {review}" in printed and "5 items reviewed" in printed
    assert "cape:paraphrase" not in _rounds(plan)
    # the two paraphrased wordings x two settings x five items, beyond what stability asks
    # (the factor's original wording is stability's request)
    assert plan.totals["calls"] - without.totals["calls"] == 2 * 2 * 5


def test_a_cape_run_without_a_reviewed_paraphrase_file_stops_before_any_call_and_says_what_to_do(
        tmp_path, monkeypatch):
    from contextecho.cape.factors import MissingParaphrases

    module = experiment("cape")
    monkeypatch.setattr(module, "paraphrase_path", lambda *a: tmp_path / "absent.csv")
    params = module.Parameters(targets=("scripted/x",), n_items=5, factors=("paraphrasing",),
                               output_dir=str(tmp_path / "cape"))
    with pytest.raises(MissingParaphrases, match="python -m contextecho paraphrases --model scripted/x"):
        module.run(params)


def test_every_named_parameter_set_is_planned_at_the_paper_scale(tmp_path, monkeypatch):
    """``paper --plan --paper-scale`` plans each notebook's PAPER_SCALE, then each of its
    NAMED_SETS, and names them; none is refused (the corpus grid asks every offered position)."""
    import contextecho.notebooks.planning as planning_module

    module = experiment("panel")
    assert module.NAMED_SETS and module.CORPUS_GRID["n_positions"] == 0
    seen = []

    def fake_run(params):
        seen.append(params)

    monkeypatch.setattr(module, "run", fake_run)
    monkeypatch.setattr(planning_module, "write_record", lambda *a, **k: None)
    plan_notebooks(["panel"], {"panel": {"output_dir": str(tmp_path / "p")}}, paper_scale=True)
    assert len(seen) == 1 + len(module.NAMED_SETS)
    assert seen[0].targets == module.PAPER_SCALE["targets"]
    assert {p.protocol for p in seen} == {"reference", "contextecho"}
    assert all(p.plan for p in seen)


def test_the_paper_scale_plan_plans_every_notebook_anchor_at_anchors_settings(tmp_path, monkeypatch):
    """``paper --plan --paper-scale`` (every notebook, as the command names them) plans each
    at its PAPER_SCALE, anchor among them, each set in range; anchor's carries ANCHOR's filters
    (3 of 4 validators, five calibration runs), the reference judge's budget and the harness's
    budget for a forked turn. Every run is stubbed: this is the selection, not the calls."""
    import contextecho.notebooks.planning as planning_module
    from contextecho.echo.reference.judge import JUDGE_MAX_TOKENS
    from contextecho.echo.reference.texts import STRESSOR_MAX_TOKENS
    from contextecho.notebooks.build import NOTEBOOKS

    seen = []
    for name in NOTEBOOKS:
        monkeypatch.setattr(experiment(name), "run", lambda params, name=name: seen.append((name, params)))
    monkeypatch.setattr(planning_module, "write_record", lambda *a, **k: None)
    plan_notebooks(list(NOTEBOOKS), paper_scale=True)
    assert [name for name, _ in seen[:len(NOTEBOOKS)]] == list(NOTEBOOKS) and all(p.plan for _, p in seen)
    anchor = next(params for name, params in seen if name == "anchor")
    assert (anchor.targets, anchor.n_sessions) == (experiment("anchor").PAPER_SCALE["targets"], 0)
    assert anchor.targets == ("openai/gpt-4o-mini", "gemini/gemini-2.5-pro", "anthropic/claude-sonnet-4-6",
                              "openai/gpt-5-mini")  # ANCHOR's four evaluated models
    assert (len(anchor.validators), anchor.min_agree, anchor.calibration_runs) == (4, 3, 5)
    assert anchor.judge_max_tokens == JUDGE_MAX_TOKENS and anchor.fork_max_tokens == STRESSOR_MAX_TOKENS == 1024
