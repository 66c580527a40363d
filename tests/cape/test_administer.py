import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from contextecho.cape.administer import (CONTEXT_DEPENDENT, CONTEXT_FREE, LOCAL_HISTORY_PAIRS, RunSpec, administer,
                                         answer_frame, default_history_pairs)
from contextecho.cape.analyses import (attack_runs, factor_consistency, option_shift, ordering_runs,
                                       score_differences, table1, history_ablation, history_runs)
from contextecho.cape.factors import FACTORS, MissingParaphrases, factor_runs
from contextecho.cape.profiles import ocean_profiles
from contextecho.engine.fake_model import THINKING


def run(inv, run_id="r", **kw):
    return RunSpec(run_id, inv.items, **kw)


def test_context_free_requests_carry_no_history(synthetic_inventory, likert, cache):
    likert.seen.clear()
    result = administer([run(synthetic_inventory)], "cape/hash", setting=CONTEXT_FREE, cache=cache)
    assert len(likert.seen) == 10 and all(len(m) == 1 for m in likert.seen)
    a = result.answers
    assert a["status"].eq("ok").all() and a["position"].tolist() == list(range(1, 11))
    assert set(a.columns) >= {"run_id", "setting", "item", "trait", "key", "response", "answer", "score"}
    # a reverse-keyed item scores 6 - raw
    row = a.iloc[5]
    assert row["key"] == -1 and row["score"] == 6 - (5 - "ABCDE".index(row["answer"]))


def test_context_dependent_requests_carry_earlier_answers(synthetic_inventory, likert, cache):
    likert.seen.clear()
    result = administer([run(synthetic_inventory)], "cape/hash", setting=CONTEXT_DEPENDENT, cache=cache)
    a = result.answers
    last = likert.seen[-1]
    assert len(last) == 19  # 9 earlier pairs + the question
    assert [m["content"] for m in last[1:-1:2]] == a["response"].tolist()[:-1]
    assert [m["content"] for m in last[0:-1:2]] == a["question"].tolist()[:-1]
    assert a["n_history"].tolist() == list(range(10))
    # context-free and context-dependent ask the same questions; the replies may differ
    free = administer([run(synthetic_inventory)], "cape/hash", cache=cache).answers
    assert free["question"].tolist() == a["question"].tolist()


def test_history_pairs_keeps_the_last_k_pairs_and_runs_a_round_per_step(synthetic_inventory, likert, cache):
    likert.seen.clear()
    runs = [run(synthetic_inventory, "a"), run(synthetic_inventory, "b", replicate=1)]
    result = administer(runs, "cape/hash", setting=CONTEXT_DEPENDENT, history_pairs=3, cache=cache)
    assert max(len(m) for m in likert.seen) == 7 and result.history_pairs == 3
    assert result.n_calls == 20 and result.answers["n_history"].max() == 3
    assert default_history_pairs("local/smollm2-135m") == LOCAL_HISTORY_PAIRS and default_history_pairs("openai/x") is None


def test_rerun_is_served_from_the_cache(synthetic_inventory, likert, cache):
    runs = [run(synthetic_inventory)]
    first = administer(runs, "cape/parrot", setting=CONTEXT_DEPENDENT, cache=cache)
    n = len(likert.seen)
    again = administer(runs, "cape/parrot", setting=CONTEXT_DEPENDENT, cache=cache)
    assert len(likert.seen) == n and again.n_cached == again.n_calls
    assert again.answers["response"].tolist() == first.answers["response"].tolist()


def test_invalid_answers_are_counted_not_scored(synthetic_inventory, likert, cache):
    result = administer([run(synthetic_inventory)], "cape/garbage", cache=cache)
    statuses = result.answers["status"].value_counts()
    assert (result.answers["status"] != "ok").sum() == 10 and statuses["unrecognised"] == 10
    assert result.answers["score"].isna().all()
    failed = administer([run(synthetic_inventory)], "fake/garbage", setting=CONTEXT_DEPENDENT, cache=cache)
    assert failed.answers["status"].value_counts()["error"] == 10 and failed.answers["n_history"].max() == 0


def test_adversarial_attack_forces_history_to_c(synthetic_inventory, likert, cache):
    base = [run(synthetic_inventory)]
    before = administer(base, "cape/parrot", setting=CONTEXT_DEPENDENT, cache=cache).answers
    likert.seen.clear()
    after = administer(attack_runs(base), "cape/parrot", setting=CONTEXT_DEPENDENT, cache=cache).answers
    assert all(m["content"] == "(C) Neither Accurate Nor Inaccurate"
               for m in likert.seen[-1] if m["role"] == "assistant")
    assert after["answer"].iloc[1:].eq("C").all()  # the parrot follows its (forced) history
    shift = option_shift(before, after).set_index("option")
    assert shift.loc["C", "after"] == 9 + (after["answer"].iloc[0] == "C")
    assert shift["change"].sum() == 0


def test_factor_runs_and_table1(synthetic_inventory, likert, cache):
    runs = [r for f in ("stability", "option_order", "instruction") for r in factor_runs(f, synthetic_inventory)]
    assert len(runs) == 27 and len({r.run_id for r in runs}) == 27
    stability = [r.replicate for r in runs if r.labels["factor"] == "stability"]
    assert sorted(stability) == list(range(9))
    runs = [r for f in ("stability", "option_order") for r in factor_runs(f, synthetic_inventory, n_runs=1)]
    answers = pd.concat([administer(runs, "cape/hash", setting=s, cache=cache).answers
                         for s in (CONTEXT_FREE, CONTEXT_DEPENDENT)])
    consistency = factor_consistency(answers)
    assert len(consistency) == 2 * 2
    stab = consistency[consistency["factor"] == "stability"]
    # the scripted model answers a question the same way every time: a perfectly stable respondent
    assert (stab["tar"] == 1).all() and (stab["ed"] == 0).all() and (stab["tc"] == 1).all() \
        and (stab["oc"] == 1).all()
    table = table1(consistency)
    assert list(table.index) == ["stability", "option_order"]
    assert list(table.columns) == [(s, m) for s in ("context_free", "context_dependent")
                                   for m in ("tar", "ed", "tc", "oc")]
    assert table.loc["stability", ("context_free", "tar")] == 100
    diffs = score_differences(answers)
    assert list(diffs.columns[-9:]) == list(range(-4, 5))
    assert diffs[list(range(-4, 5))].sum(axis=1).eq(10).all()


def test_paraphrasing_needs_every_paraphrase(synthetic_inventory):
    with pytest.raises(MissingParaphrases):
        factor_runs("paraphrasing", synthetic_inventory, paraphrases={0: ("a", "b")})
    para = {i.index: (f"p1 {i.index}", f"p2 {i.index}") for i in synthetic_inventory.items}
    runs = factor_runs("paraphrasing", synthetic_inventory, paraphrases=para)
    assert "You p2 3" in runs[-1].question(synthetic_inventory.items[3])
    assert list(FACTORS) == ["stability", "temperature", "option_wording", "option_order",
                             "instruction", "paraphrasing"]  # CAPE's order: the order of Table 1's rows


def test_ordering_profiles_and_history_ablation(synthetic_inventory, likert, cache):
    runs = ordering_runs(synthetic_inventory, np.random.default_rng(3))
    answers = administer(runs, "cape/hash", setting=CONTEXT_DEPENDENT, cache=cache).answers
    profiles = ocean_profiles(answers, by=["ordering"])
    assert len(profiles) == 3 and profiles[["n_O", "n_C"]].eq(2).all().all()
    by_history = {k: administer(r, "cape/parrot", setting=CONTEXT_DEPENDENT, history_pairs=k, cache=cache).answers
                  for k, r in history_runs(synthetic_inventory, [None, 0, 2]).items()}
    table = history_ablation(by_history)
    assert table["history_pairs"].tolist() == ["full", 0, 2]
    assert table.loc[0, "agreement"] == 1.0 and table.loc[0, "tc"] == 1.0


@pytest.mark.parametrize("setting", [CONTEXT_FREE, CONTEXT_DEPENDENT])
def test_an_administered_answer_is_a_record_that_cannot_change(synthetic_inventory, likert, cache, setting):
    result = administer([run(synthetic_inventory, labels={"factor": "f"})], "cape/hash", setting=setting,
                        cache=cache, constrained=True)
    answer = result.records[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.answer = "A"
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.constrained.answer = "A"
    with pytest.raises(TypeError):
        answer.labels["factor"] = "g"
    assert isinstance(result.records, tuple) and len(result.records) == len(result.answers) == 10
    # The frame is built from the records, each a row: the labels after the model, the
    # constrained answer in its own columns.
    pd.testing.assert_frame_equal(result.answers, answer_frame(result.records))
    assert result.answers.loc[0, ["answer", "factor", "constrained_answer"]].tolist() == \
        [answer.answer, "f", answer.constrained.answer]
    assert list(result.answers.columns[:4]) == ["run_id", "setting", "model", "factor"]


def test_labels_may_not_overwrite_answer_columns(synthetic_inventory):
    with pytest.raises(ValueError, match="position"):
        administer([run(synthetic_inventory, labels={"position": "u01"})], "cape/hash")


def test_a_triple_with_no_comparable_item_is_counted_not_scored(synthetic_inventory, likert, cache):
    from contextecho.cape.metrics import NoComparableItems

    stable = factor_runs("stability", synthetic_inventory, n_runs=1)
    garbled = factor_runs("option_order", synthetic_inventory, n_runs=1)
    answers = pd.concat([administer(stable, "cape/hash", setting=CONTEXT_FREE, cache=cache).answers,
                         administer(garbled, "cape/garbage", setting=CONTEXT_FREE, cache=cache).answers])
    consistency = factor_consistency(answers)
    assert list(consistency["factor"]) == ["stability"]
    assert consistency.attrs["n_not_comparable"] == 1
    with pytest.raises(NoComparableItems, match="none of 1 factor triples"):
        factor_consistency(answers[answers["factor"] == "option_order"])


def test_answer_counts_by_hand():
    import pandas as pd

    from contextecho.cape import answer_counts
    from contextecho.engine.counts import Counts

    answers = pd.DataFrame({"cached": [True, False, False, True], "error_type": [None, "Timeout", None, None],
                            "status": ["ok", "error", "invalid", "ok"]})
    assert answer_counts(answers) == Counts(calls=4, cached=2, computed=2, failed=1, invalid=1)


def test_a_reasoning_models_think_block_is_never_its_answer(synthetic_inventory, cache):
    """``fake/think`` reasons towards (A) in a ``<think>`` block, then answers (B): every item is
    scored on (B), and the history shows the model its answers alone."""
    a = administer([run(synthetic_inventory)], "fake/think", setting=CONTEXT_DEPENDENT, cache=cache).answers
    assert a["status"].eq("ok").all() and a["answer"].eq("B").all() and a["response"].eq("(B)").all()
    assert a["score"].tolist() == [4.0 if key == 1 else 2.0 for key in a["key"]]
    last = json.loads(cache.lookup(a["request_key"].iloc[-1]).request_json)["messages"]
    assert [m["content"] for m in last if m["role"] == "assistant"] == ["(B)"] * (len(a) - 1)
    assert cache.lookup(a["request_key"].iloc[0]).reasoning == THINKING  # stored apart
