"""CAPE's Table 6 (App. E): the reasoning targets answer the questionnaire as Table 1's targets
do, in both settings, on in-process models: a row group each in Table 6 and in no other
table; a reasoning block is never read as the answer; with no reasoning target nothing is
asked and the section says it measures nothing; the paper-scale set plans CAPE's two models
with their reasoning budget."""
import hashlib
import json

import pandas as pd
import pytest

from contextecho.experiments import cape, spine
from contextecho.experiments.parameters import ParameterError
from contextecho.notebooks.runner import check_parameters
from contextecho.paper.formats import model_name
from contextecho.paper.tables import unexplained_missing
from tests.experiments.conftest import ITEMS

#: What a reasoner's thinking names: an option it never answers.
THOUGHT = "(A) Very Accurate is my first thought, but let me reconsider."


def reasoner_reply(model, messages):
    """``reasoner/inline``: a ``<think>`` block naming option A, then (B) or (D) by the
    request's hash; ``reasoner/opened``: the same with the block opened by the chat template
    (the reply holds only its closing tag), as DeepSeek-R1's distills on a server answer."""
    answer = "(B)" if int(hashlib.sha256(json.dumps(messages).encode()).hexdigest(), 16) % 2 else "(D)"
    return f"<think>{THOUGHT}</think>\n\n{answer}" if model == "inline" else f"{THOUGHT}\n</think>\n\n{answer}"


@pytest.fixture
def reasoner(provider):
    return provider("reasoner", reasoner_reply)


#: The opened block closes only where the request turned the model's reasoning on (its options).
OPTIONS = json.dumps({"reasoner/opened": {"extra_body": {"chat_template_kwargs": {"enable_thinking": True}},
                                          "reasoning_budget": 64}})
REASONING = ("reasoner/inline", "reasoner/opened", "fake/think")


def test_reasoning_targets_get_table6_alone_and_their_thinking_is_never_their_answer(scripted_models, reasoner,
                                                                                    inventory, tmp_path):
    params = cape.Parameters(targets=("scripted/letters",), reasoning_targets=REASONING, model_options=OPTIONS,
                             inventory=inventory, n_items=0, factors=("stability", "option_order"),
                             history_window=2, orderings=("cyclic",), output_dir=str(tmp_path / "cape"))
    run = spine.start("cape", params, models=params.targets + params.reasoning_targets, declared=cape.MANUSCRIPT)
    answers = cape.factors(run)
    cape.consistency_table(run, answers)
    table = cape.reasoning_table(run)
    for stage in (cape.reliability, cape.differences_figure, cape.validity, cape.profile_shift_table,
                  cape.logical_consistency, cape.attack):
        stage(run, answers)
    cape.ordering(run)

    # a row group per reasoning target, context-free then context-dependent, the metrics measured
    assert list(table["model"]) == [m for m in REASONING for _ in range(2)]
    assert list(table["setting"]) == ["context-free", "context-dependent"] * len(REASONING)
    assert table[["tar", "ed"]].notna().all().all()
    markdown = (tmp_path / "cape" / "tables" / "table6.md").read_text()
    assert unexplained_missing(markdown) == [] and all(model_name(m) in markdown for m in REASONING)

    # the reasoning never is the answer: the inline block, the template-opened one, the fake's
    asked = pd.read_parquet(tmp_path / "cape" / "results" / "reasoning_answers.parquet")
    assert set(asked["model"]) == set(REASONING) and set(asked["setting"]) == {"context_free", "context_dependent"}
    assert (asked["status"] == "ok").all() and "A" not in set(asked["answer"])
    assert set(asked.loc[asked["model"] != "fake/think", "answer"]) == {"B", "D"}
    assert not asked["response"].str.contains("think|reconsider").any()
    history = [m["content"] for seen in reasoner.seen for m in seen if m["role"] == "assistant"]
    assert history and not any("think" in h or "reconsider" in h for h in history)  # nor kept in the history

    # in Table 6 alone: not among Table 1's answers, nor in any other table
    assert set(answers["model"]) == {"scripted/letters"}
    assert set(pd.read_parquet(tmp_path / "cape" / "results" / "consistency.parquet")["model"]) == {"scripted/letters"}
    others = {p.name: p.read_text() for p in (tmp_path / "cape" / "tables").glob("*.md") if p.name != "table6.md"}
    assert {"table1.md", "table3.md", "table4.md", "table5.md", "attack.md", "ordering.md"} <= set(others)
    assert not [name for name, text in others.items() for m in REASONING if model_name(m) in text]
    assert run.log.batches["cape:factors"].calls == len(answers)
    assert run.log.batches["cape:reasoning"].calls == len(asked)

    finding = run.out.variables["table6_finding"]
    assert finding.count("With its earlier answers in context") == len(REASONING)
    assert not finding.startswith("On this build")
    assert finding.endswith(f" 0 of the reasoning targets' {len(asked)} answers were not read as an option and are "
                            "left out.")
    for m in REASONING:  # the sentence prints the table's TAR and ED for each setting, as the table does
        rows = table[table["model"] == m].set_index("setting")
        tar, ed = rows["tar"], rows["ed"]
        assert f"TAR ({tar['context-free']:.1f}% without, {tar['context-dependent']:.1f}% with)" in finding
        assert f"ED ({ed['context-free']:.2f} without, {ed['context-dependent']:.2f} with)" in finding


def test_the_opened_block_would_be_read_as_the_answer_without_the_reasoning_switch(reasoner, inventory, tmp_path):
    """The check above can fail: without the options that turn its reasoning on, the reply of
    ``reasoner/opened`` is read whole, and its thinking's (A) is taken for the answer."""
    params = cape.Parameters(targets=("reasoner/inline",), reasoning_targets=("reasoner/opened",), inventory=inventory,
                             n_items=0, factors=("stability",), output_dir=str(tmp_path / "cape"))
    run = spine.start("cape", params, models=params.targets + params.reasoning_targets, declared=cape.MANUSCRIPT)
    cape.reasoning_table(run)
    asked = pd.read_parquet(tmp_path / "cape" / "results" / "reasoning_answers.parquet")
    assert set(asked["answer"]) == {"A"}
    assert run.out.variables["table6_finding"].startswith("With its earlier answers in context, opened is as consistent")


def test_with_no_reasoning_target_nothing_is_asked_and_table6_says_why(reasoner, inventory, tmp_path):
    params = cape.Parameters(targets=("reasoner/inline",), inventory=inventory, n_items=0, factors=("stability",),
                             output_dir=str(tmp_path / "cape"))
    assert params.reasoning_targets == ()  # the embedded build's default
    run = spine.start("cape", params, models=params.targets, declared=cape.MANUSCRIPT)
    table = cape.reasoning_table(run)
    assert reasoner.seen == [] and "cape:reasoning" not in run.log.batches
    assert len(table) == 1 and table[["tar", "ed", "tc", "oc"]].isna().all().all()
    assert table["note"].iloc[0].startswith(cape.NO_REASONING_TARGET)
    markdown = (tmp_path / "cape" / "tables" / "table6.md").read_text()
    assert unexplained_missing(markdown) == [] and "^a^" in markdown
    assert not (tmp_path / "cape" / "results" / "reasoning_answers.parquet").exists()
    assert run.out.variables["table6_finding"] == (
        "On this build Table 6 (the reasoning models) measures nothing: no reasoning target was asked (the parameter "
        "reasoning_targets is empty); reasoning models in reasoning_targets, each with a reasoning budget in "
        "model_options, or the notebook's paper-scale set (CAPE's two DeepSeek-R1 models) would make it a measurement.")


def test_reasoning_targets_are_model_strings():
    with pytest.raises(ParameterError, match="reasoning_targets"):
        check_parameters("cape", {"reasoning_targets": "not a model"})
    assert check_parameters("cape", {"reasoning_targets": ""}).reasoning_targets == ()


def test_the_paper_scale_set_plans_capes_two_reasoning_models_with_their_budget(scripted_models, inventory, tmp_path):
    scale = cape.PAPER_SCALE
    assert set(scale["reasoning_targets"]) == {"deepseek/deepseek-reasoner",
                                               "hosted_vllm/deepseek-ai/DeepSeek-R1-Distill-Llama-8B"}
    params = check_parameters("cape", {"targets": "scripted/letters", "inventory": inventory, "n_items": "0",
                                       "factors": "stability", "reasoning_targets": ",".join(scale["reasoning_targets"]),
                                       "model_options": scale["model_options"], "output_dir": str(tmp_path / "cape")})
    plan = spine.plan_stages(cape.STAGES[:4], params)  # the run, Table 1's answers, Table 1, Table 6
    answered = [c for c in plan.calls if c.round.startswith("cape:reasoning:")]
    assert not [c for c in answered if c.round.endswith("constrained")]  # no option distribution read of theirs
    for model in scale["reasoning_targets"]:
        calls = [c for c in answered if c.model == model]
        assert len(calls) == 2 * 3 * len(ITEMS)  # both settings, the stability factor's three runs, every item
        # (a context-dependent run's first item, asked with no history, is its context-free request: planned once)
        assert {c.max_tokens for c in calls if not c.cached} == {params.max_tokens + cape.REASONING_BUDGET}
    assert not [c for c in plan.calls if c.model in scale["reasoning_targets"] and not c.round.startswith("cape:reasoning")]
