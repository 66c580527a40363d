"""A plan never analyses placeholders (issue 43): in a plan, a stage runs only as far as it
needs no answer. The calls it asks before it stops are planned; where it stops (an analysis of
placeholder answers, or an earlier stage it could not compute) it says so in one line and its
value is :class:`~contextecho.experiments.spine.NotComputed`; the stages that do not read it
run and plan their calls. A failure no placeholder explains is raised as the run raises it.

A scripted four-stage experiment shows the mechanism; CAPE, whose analyses need valid
answers, shows it on a real notebook: its plan on an empty cache counts the calls its run
then makes."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import pytest

from contextecho.engine.calls import generate
from contextecho.engine.model_request import ModelRequest
from contextecho.experiments import spine
from contextecho.experiments.parameter_sets import ServingParameters
from contextecho.experiments.parameters import ParameterError
from contextecho.experiments.spine import NotComputed, Stage

LETTERS = "ABCDE"


@dataclass(frozen=True)
class Params(ServingParameters):
    model: str = "scripted/letters"  # an option letter each (scripted/command: a shell command)
    output_dir: str = ""


class NoOption(ValueError):
    """The analysis needs option letters (as CAPE's Table 1 needs valid answers)."""


def _ask(run, name, prompts):
    result = generate([ModelRequest(run.params.model, [{"role": "user", "content": p}], {"max_tokens": 4})
                       for p in prompts], transport=run.transport, name=name, progress=False)
    run.batch(name, result.counts())
    return [r.response_text for r in result.records]


def start(params):
    return spine.start("scripted", params, models=(params.model,))


def answers(run):
    texts = _ask(run, "scripted:answers", [f"item {i}" for i in range(4)])
    if not all(t in LETTERS for t in texts):
        raise NoOption("no answer is an option letter")
    return pd.DataFrame({"answer": texts})


def attack(run, answers):
    attacked = _ask(run, "scripted:attack", [f"attacked {i}" for i in range(3)])  # before the answers are read
    return answers.head(len(attacked)).assign(shifted=[a != b for a, b in zip(answers["answer"], attacked)])


def table(answers):
    return answers["answer"].value_counts()


def ordering(run):
    return _ask(run, "scripted:ordering", ["first order", "second order"])


def variables(run):
    return spine.finish(run)


STAGES = (Stage("run", start), Stage("answers", answers), Stage("shift", attack), Stage("table", table),
          Stage("profiles", ordering), Stage("variables", variables))


def _rounds(plan) -> dict[str, int]:
    found: dict[str, int] = {}
    for call in plan.calls:
        found[call.round] = found.get(call.round, 0) + 1
    return found


@pytest.fixture
def params(scripted_models, tmp_path):
    return Params(output_dir=str(tmp_path / "scripted"))


def test_a_plan_runs_each_stage_only_as_far_as_it_needs_no_answer(params, capsys, tmp_path):
    plan = spine.plan_stages(STAGES, params)
    printed = capsys.readouterr().out
    # every call is planned, the attack's too (asked before it reads the answers it cannot have)
    assert _rounds(plan) == {"scripted:answers": 4, "scripted:attack": 3, "scripted:ordering": 2}
    assert plan.totals["to_compute"] == 9
    lines = [line for line in printed.splitlines() if "not computed in this plan" in line]
    assert lines == [
        "[scripted:answers] not computed in this plan: it needs answers the plan has not got "
        "(NoOption: no answer is an option letter); the calls it asked are planned",
        "[scripted:shift] not computed in this plan: it reads answers, which this plan could not compute; "
        "the calls it asked are planned",
        "[scripted:table] not computed in this plan: it reads answers, which this plan could not compute; "
        "the calls it asked are planned"]
    assert "Traceback" not in printed
    planned = json.loads((tmp_path / "scripted" / spine.PLAN_FILE).read_text())
    assert planned["totals"]["to_compute"] == 9


def test_the_run_after_the_plan_makes_the_calls_it_planned(params):
    plan = spine.plan_stages(STAGES, params)
    result = spine.run_stages(STAGES, params)
    computed = sum(b["computed"] for b in result.batches.values())
    assert computed == plan.totals["to_compute"] == 9
    again = spine.plan_stages(STAGES, params)  # all cached now: nothing stands on a placeholder
    assert again.totals["to_compute"] == 0


def test_a_value_not_computed_is_reported_where_it_is_read(params, capsys):
    run = start(spine.dataclasses.replace(params, plan=True))
    run.planned.add("answers")
    assert run.step("table", table, NotComputed("answers", "why")) == NotComputed(
        "table", "it reads answers, which this plan could not compute")
    assert "[scripted:table] not computed in this plan: it reads answers" in capsys.readouterr().out


def test_outside_a_plan_the_analysis_failure_is_raised(params):
    with pytest.raises(NoOption):
        spine.run_stages(STAGES, spine.dataclasses.replace(params, model="scripted/command"))


def _broken(run):
    raise ZeroDivisionError("a bug, not a placeholder")


def test_a_failure_no_placeholder_explains_is_raised_in_a_plan_that_holds_placeholders(params, capsys):
    """``answers`` stands on placeholders, the broken stage reads none: its failure is the run's."""
    with pytest.raises(ZeroDivisionError, match="a bug"):
        spine.plan_stages(STAGES[:2] + (Stage("broken", _broken),), params)
    assert "[scripted:answers] not computed in this plan" in capsys.readouterr().out


def test_a_failure_is_raised_in_a_plan_the_cache_answers_whole(params):
    spine.run_stages(STAGES, params)  # the cache now answers every call: the plan holds no placeholder
    with pytest.raises(ZeroDivisionError, match="a bug"):
        spine.plan_stages(STAGES[:3] + (Stage("broken", lambda run, shift: _broken(run)),), params)


def test_an_error_the_user_fixes_is_raised_in_a_plan_with_placeholders(params):
    def refused(run, answers):
        raise ParameterError("parameter 'x': give a number")

    with pytest.raises(ParameterError, match="parameter 'x'"):
        spine.plan_stages(STAGES[:2] + (Stage("refused", refused),), params)


def test_a_plan_that_fails_leaves_no_scratch_folder(params, tmp_path, monkeypatch):
    """A plan's outputs are scratch: a plan that stops on an error removes them too, once its
    run is gone (a finished plan removes them at its end)."""
    import gc
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def refused(run, answers):
        assert [p.name for p in scratch.iterdir()][0].startswith("contextecho-plan-scripted-")
        raise ParameterError("parameter 'x': give a number")

    with pytest.raises(ParameterError):
        spine.plan_stages(STAGES[:2] + (Stage("refused", refused),), params)
    gc.collect()
    assert list(scratch.iterdir()) == []
    spine.plan_stages(STAGES, params)
    assert list(scratch.iterdir()) == []


# ---------------------------------------------------------------- a real notebook
def test_a_cape_plan_on_an_empty_cache_counts_the_calls_its_run_makes(scripted_models, tmp_path, capsys):
    """CAPE's Table 1 cannot be computed from placeholders (no item is answered validly in
    every run); its plan reports that, plans every round (the attack's included), and the run
    with a model that answers letters makes exactly the planned calls."""
    from contextecho.notebooks import experiment
    from contextecho.notebooks.planning import plan_notebooks

    values = {"targets": "scripted/letters", "n_items": "5", "factors": "stability", "n_runs": "2",
              "bridge_positions": "1", "answer": "constrained", "output_dir": str(tmp_path / "cape")}
    plan = plan_notebooks(["cape"], {"cape": values})
    printed = capsys.readouterr().out
    assert "[cape:answers] not computed in this plan: it needs answers the plan has not got (NoComparableItems" \
        in printed
    assert {r.split(":")[1] for r in _rounds(plan)} == {
        "context_free", "context_dependent", "few-shot", "attack", "ordering", "rpa", "bridge"}
    module = experiment("cape")
    from contextecho.notebooks.runner import check_parameters

    result = module.run(check_parameters("cape", values))
    computed = sum(b["computed"] for b in result.batches.values())
    assert computed == plan.totals["to_compute"] > 0
