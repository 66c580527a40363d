"""Role-playing agents and the BFI (CAPE §6.5, Table 2): InCharacter's scoring and alignment
by hand, the agent's messages, the Random baseline, the stage on a scripted agent, its plan.

The synthetic characters and BFI are written here from scratch; the real data
(``shared/data/rpa``) is read at run time only, and its absence skips (CI: fails)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from contextecho.cape import rpa
from contextecho.cape.consistency import ocean_consistency
from contextecho.cape.metrics import euclidean_distance, total_agreement_rate
from contextecho.cape.parsing import OK
from contextecho.engine.paths import shared_dir
from contextecho.experiments import cape, spine
from contextecho.notebooks.planning import plan_notebooks

DIMS = rpa.DIMENSIONS


def _bfi_file(tmp_path):
    """Ten items, two per dimension, the second of each reverse-keyed; prompts of our own
    with InCharacter's placeholders."""
    items = [{"id": k + 1, "dimension": DIMS[k % 5], "reverse_keyed": k >= 5,
              "text_en": f"Statement {k + 1}.", "text_zh": f"陈述{k + 1}。"} for k in range(10)]
    prompts = {"rpa_choose_prefix": {"en": 'Is "<statement>" you?', "zh": '"<statement>"是你吗？'},
               "rpa_choice_instruction": {"en": "Answer 1 to 5.", "zh": "请回答1到5。"}}
    path = tmp_path / "bfi.json"
    path.write_text(json.dumps({"items": items, "incharacter_prompts": prompts}, ensure_ascii=False))
    return path


def _labels(types, scores=(4.0, 2.0, 3.0, 4.5, 1.5)):
    return {d: {"score": s, "type": t} for d, s, t in zip(DIMS, scores, types)}


def _characters_file(tmp_path):
    rows = [
        {"id": "Ann-en", "name": "Ann", "language": "en", "source_framework": "ChatHaruhi", "experimenter": "Bob",
         "system_prompt": "You are Ann.", "dialogues": [{"text": "a" * 10}, {"text": "b" * 10}, {"text": "c" * 10}],
         "bfi_labels": _labels("HLXHL"), "bfi_labels_pdb": _labels("HLHXL"), "missing": [], "missing_note": None},
        {"id": "Wu-zh", "name": "吴", "language": "zh", "source_framework": "ChatHaruhi", "experimenter": "旅行者",
         "system_prompt": "你是吴。", "dialogues": [{"text": "吴:「你好」"}],
         "bfi_labels": _labels("HLHHL"), "bfi_labels_pdb": _labels("HLHHL"), "missing": [], "missing_note": None},
        {"id": "Rex-en", "name": "Rex", "language": "en", "source_framework": "RoleLLM", "experimenter": "Sam",
         "system_prompt": None, "dialogues": [], "bfi_labels": _labels("XXHHL"), "bfi_labels_pdb": _labels("HLHHX"),
         "missing": ["system_prompt", "dialogues"], "missing_note": "not reachable"},
    ]
    path = tmp_path / "characters.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


@pytest.fixture
def synthetic(tmp_path):
    characters = rpa.load_characters(_characters_file(tmp_path))
    return rpa.load_bfi(_bfi_file(tmp_path)), {c.id: c for c in characters}


@pytest.fixture
def real(missing_shared_data):
    folder = shared_dir() / "data" / "rpa"
    if not (folder / "characters.jsonl").is_file() or not (folder / "bfi.json").is_file():
        missing_shared_data(f"RPA data not found at {folder}")
    return rpa.load_bfi(), rpa.load_characters()


# ---------------------------------------------------------------- scoring
def _frame(bfi, character, condition, runs_choices):
    return rpa.answer_frame([
        rpa.RpaAnswer(character, condition, r, t + 1, item.id, item.dimension, item.reverse_keyed, "q", "x",
                      choice, OK if choice else rpa.UNPARSABLE, rpa.item_score(choice, item.reverse_keyed), 0)
        for r, choices in enumerate(runs_choices, start=1) for t, (item, choice) in enumerate(zip(bfi.items, choices))])


def test_incharacter_scoring_by_hand(synthetic):
    bfi, _ = synthetic
    assert [rpa.item_score(c, False) for c in (1, 5)] == [1, 5]
    assert [rpa.item_score(c, True) for c in (1, 2, 5)] == [5, 4, 1]
    assert rpa.item_score(None, True) == rpa.item_score(None, False) == 3
    # items 1..5 positive (one per dimension, O C E A N), 6..10 reverse-keyed
    choices = [5, 1, 4, 3, 2, 1, 1, 2, 5, 4]
    scores = rpa.dimension_scores(_frame(bfi, "Ann-en", rpa.RPA, [choices])).iloc[0]
    # O: (5 + 6-1)/2 = 5; C: (1 + 5)/2 = 3; E: (4 + 4)/2 = 4; A: (3 + 1)/2 = 2; N: (2 + 2)/2 = 2
    assert list(scores) == [5.0, 3.0, 4.0, 2.0, 2.0]
    assert [rpa.trait_type(s) for s in scores] == ["H", "L", "H", "L", "L"]  # exactly 3 is L
    assert rpa.trait_type(3.0001) == "H"


def test_a_refusal_counts_as_three_and_is_counted(synthetic):
    assert rpa.parse_choice("I'd rather not say.") is None
    assert rpa.parse_choice("4") == 4 and rpa.parse_choice("Hmm, 7 or maybe 2") == 2
    assert rpa.parse_choice("我选３") == 3 and rpa.parse_choice(None) is None
    bfi, chars = synthetic
    frame = _frame(bfi, "Ann-en", rpa.RPA, [[None, 5, 5, 5, 5, None, 1, 1, 1, 1]])
    assert (frame["status"] == rpa.UNPARSABLE).sum() == 2
    assert rpa.dimension_scores(frame).iloc[0]["Openness"] == 3.0  # 3 and 6 - 3


def test_the_ambiguity_rules_on_a_synthetic_set(synthetic):
    _, chars = synthetic
    everyone = list(chars.values())
    skip = {rule: {(c.id, d) for c in everyone for d in DIMS if rpa.skipped(c, d, rule)} for rule in rpa.AMBIGUITY}
    assert skip["pdb"] == {("Ann-en", "Agreeableness"), ("Rex-en", "Neuroticism")}
    assert skip["annotation"] == {("Ann-en", "Extraversion"), ("Rex-en", "Openness"), ("Rex-en", "Conscientiousness")}
    assert rpa.n_skipped(everyone, "pdb") == 2 and rpa.n_skipped(everyone, "annotation") == 3
    with pytest.raises(ValueError):
        rpa.skipped(everyone[0], "Openness", "votes")


def test_a_balanced_subset_takes_the_first_items_of_each_dimension(synthetic, real):
    bfi, _ = synthetic
    assert [i.id for i in bfi.balanced(5).items] == [1, 2, 3, 4, 5]  # one per dimension
    assert bfi.balanced(0) is bfi and bfi.balanced(99) is bfi
    assert [i.id for i in bfi.balanced(3).items] == [1, 2, 3, 4, 5]  # at least one each
    full, _ = real
    ten = full.balanced(10).items
    assert [i.id for i in ten] == list(range(1, 11))
    assert sorted(i.dimension for i in ten) == sorted(DIMS * 2)
    assert sum(i.reverse_keyed for i in ten) == 4  # items 2, 6, 8, 9
    assert len(full.balanced(20).items) == 20 and all(
        sum(i.dimension == d for i in full.balanced(20).items) == 4 for d in DIMS)


def test_the_ambiguity_rules_on_the_real_file(real):
    bfi, characters = real
    assert len(characters) == 32 and len(bfi.items) == 44
    assert rpa.n_skipped(characters, "pdb") == 3 and rpa.n_skipped(characters, "annotation") == 23
    assert sum(c.has_agent for c in characters) == 16
    assert {c.framework for c in characters if not c.has_agent} == {"RoleLLM"}
    assert {(c.id, d) for c in characters for d in DIMS if rpa.skipped(c, d, "pdb")} == {
        ("Gaston-en", "Neuroticism"), ("James Bond-en", "Conscientiousness"), ("Walt Kowalski-en", "Neuroticism")}


def test_mae_accuracy_and_oa_by_hand(synthetic):
    bfi, chars = synthetic
    ann = chars["Ann-en"]  # labels O 4 H, C 2 L, E 3 X, A 4.5 H, N 1.5 L; pdb skips A
    # two runs; S_d per run: run 1 (5, 3, 4, 2, 2) as above, run 2 all 3s
    frame = _frame(bfi, "Ann-en", rpa.RPA, [[5, 1, 4, 3, 2, 1, 1, 2, 5, 4], [3] * 10])
    pairs = rpa.alignment(frame, [ann], "pdb").set_index("dimension")
    assert list(pairs.index) == ["Openness", "Conscientiousness", "Extraversion", "Neuroticism"]
    # mean over runs: O 4, C 3, E 3.5, N 2.5
    assert list(pairs["predicted"]) == [4.0, 3.0, 3.5, 2.5]
    assert list(pairs["mae"]) == pytest.approx([0, 1 / 4, 0.5 / 4, 1 / 4])
    # types: O H=H, C L=L (3 is L), E H vs X, N L=L
    assert list(pairs["correct"]) == [True, True, False, True]
    rows = rpa.character_rows(frame, [ann], "pdb").iloc[0]
    assert rows["mae"] == pytest.approx((0 + 0.25 + 0.125 + 0.25) / 4) and rows["accuracy"] == 0.75
    human, llm = [4.0, 2.0, 3.0, 1.5], [4.0, 3.0, 3.5, 2.5]
    assert rows["oa"] == pytest.approx(ocean_consistency(np.array([human, llm])).value)
    # consistency over the two runs, from the CAPE metrics on the item-score trajectories
    t = np.array([[5, 1, 4, 3, 2, 5, 5, 4, 1, 2], [3, 3, 3, 3, 3, 3, 3, 3, 3, 3]], dtype=float)
    assert rows["tar"] == total_agreement_rate(t) == pytest.approx(0.1)  # item 4 only
    assert rows["ed"] == pytest.approx(euclidean_distance(t)) and rows["ed"] == pytest.approx(14 / 10)
    table = rpa.table2(frame, [ann], "pdb").iloc[0]
    assert table["accuracy"] == 75 and table["n_pairs"] == 4 and table["note"] == ""


def test_one_run_leaves_consistency_not_estimable_with_a_note(synthetic):
    bfi, chars = synthetic
    frame = _frame(bfi, "Ann-en", rpa.RPA, [[3] * 10])
    row = rpa.table2(frame, [chars["Ann-en"]], "annotation").iloc[0]
    assert np.isnan(row["tar"]) and row["note"].startswith("not estimable: ") and "one" in row["note"]
    assert row["n_pairs"] == 4  # annotation skips E


def test_oa_needs_two_unskipped_dimensions_and_says_so(synthetic):
    bfi, chars = synthetic
    ann = replace(chars["Ann-en"], labels={d: rpa.Label(3.0, "X" if d != "Neuroticism" else "L") for d in DIMS})
    frame = _frame(bfi, "Ann-en", rpa.RPA, [[3] * 10, [4] * 10])
    row = rpa.table2(frame, [ann], "annotation").iloc[0]
    assert row["n_pairs"] == 1 and np.isnan(row["oa"]) and not np.isnan(row["mae"])
    assert row["note"] == "not estimable: OA needs two or more unskipped dimensions of a character"
    none = rpa.table2(frame, [replace(ann, labels={d: rpa.Label(3.0, "X") for d in DIMS})], "annotation").iloc[0]
    assert none["n_pairs"] == 0 and "every (character, dimension) pair is skipped" in none["note"]


# ---------------------------------------------------------------- messages
def test_the_scene_cap_keeps_whole_snippets_in_file_order(synthetic):
    _, chars = synthetic
    ann = chars["Ann-en"]
    assert rpa.scenes(ann, 25) == rpa.SCENES_HEADER + "a" * 10 + "\n###\n" + "b" * 10  # 25 chars: two fit
    assert rpa.scenes(ann, 24) == rpa.SCENES_HEADER + "a" * 10  # the second would need 25
    assert rpa.scenes(ann, 1000).count("\n###\n") == 2
    assert rpa.scenes(ann, 5) == rpa.SCENES_HEADER


def test_rpa_has_no_history_and_rpa_plus_holds_the_earlier_pairs(synthetic):
    bfi, chars = synthetic
    ann = chars["Ann-en"]
    plain = rpa.messages(ann, bfi.items[2], bfi, 1000)
    assert [m["role"] for m in plain] == ["system", "user", "user"]
    assert plain[0]["content"] == "You are Ann." and plain[1]["content"].startswith(rpa.SCENES_HEADER)
    assert plain[-1]["content"] == 'Bob:「Is "Statement 3." you? Answer 1 to 5.」'
    history = [("Bob:「q1」", "4"), ("Bob:「q2」", "2")]
    held = rpa.messages(ann, bfi.items[2], bfi, 1000, history)
    assert [m["role"] for m in held] == ["system", "user", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in held[2:6]] == ["Bob:「q1」", "4", "Bob:「q2」", "2"]
    with pytest.raises(ValueError):
        rpa.messages(chars["Rex-en"], bfi.items[0], bfi, 1000)


def test_the_zh_character_gets_the_zh_prompt(synthetic, real):
    bfi, chars = synthetic
    assert rpa.messages(chars["Wu-zh"], bfi.items[0], bfi, 1000)[-1]["content"] == '旅行者:「"陈述1。"是你吗？请回答1到5。」'
    bfi, characters = real
    zhongli = next(c for c in characters if c.id == "zhongli-zh")
    q = rpa.query(zhongli, bfi.items[0], bfi)
    assert q.startswith("旅行者:「你认为\"健谈。\"这个说法适用于你吗？请用1到5") and q.endswith("不要说其他内容。」")
    hermione = next(c for c in characters if c.id == "Hermione-en")
    assert rpa.query(hermione, bfi.items[0], bfi).startswith(
        'Harry:「Do you think that the statement "Is talkative." applies to you? Reply a number from 1 to 5')


def test_the_random_baseline_is_deterministic_for_a_seed(synthetic):
    bfi, chars = synthetic
    one = rpa.random_answers([chars["Ann-en"]], bfi, 2, seed=7)
    again = rpa.random_answers([chars["Ann-en"]], bfi, 2, seed=7)
    other = rpa.random_answers([chars["Ann-en"]], bfi, 2, seed=8)
    assert one == again and [a.choice for a in one] != [a.choice for a in other]
    assert {a.choice for a in one} <= {1, 2, 3, 4, 5} and len(one) == 20
    assert [a.choice for a in one[:10]] != [a.choice for a in one[10:]]  # runs differ


# ---------------------------------------------------------------- the agent on a scripted model
def digit_reply(model, messages):
    """``rpa/digits``: a digit 1–5 from the hash of the query and the history length;
    ``rpa/refuse``: never a digit."""
    if model.endswith("refuse"):
        return "As Ann I would never say."
    h = int(hashlib.sha256(json.dumps(messages[-1]["content"]).encode()).hexdigest(), 16)
    return str(1 + (h + len(messages)) % 5)


@pytest.fixture(scope="module")
def agent(provider):
    return provider("rpa", digit_reply, tokens=(5, 1))


def test_administer_asks_each_condition_and_feeds_the_history(synthetic, agent, cache):
    bfi, chars = synthetic
    agent.seen.clear()
    answers = rpa.administer_rpa([chars["Ann-en"], chars["Wu-zh"]], bfi, "rpa/digits", n_runs=2, scene_chars=100,
                                 params={"temperature": 0.7, "max_tokens": 4}, cache=cache)
    frame = rpa.answer_frame(answers)
    assert len(frame) == 2 * 10 * 2 * 2 and (frame["status"] == OK).all()
    plus = frame[frame["condition"] == rpa.RPA_PLUS]
    assert list(plus[(plus["character"] == "Ann-en") & (plus["run"] == 1)]["n_history"]) == list(range(10))
    assert (frame[frame["condition"] == rpa.RPA]["n_history"] == 0).all()
    first = frame[frame["position"] == 1]  # same messages in both conditions, yet two calls
    assert first["request_key"].nunique() == len(first) and not first["cached"].any()
    last = max(agent.seen, key=len)
    assert len(last) == 2 + 2 * 9 + 1  # system, scenes, nine pairs, the query
    refused = rpa.answer_frame(rpa.administer_rpa([chars["Ann-en"]], bfi, "rpa/refuse", n_runs=1, scene_chars=100,
                                                  params={"temperature": 0.7, "max_tokens": 4}, cache=cache,
                                                  conditions=(rpa.RPA,)))
    assert (refused["status"] == rpa.UNPARSABLE).all() and (refused["score"] == 3).all()


def test_the_stage_writes_table2_with_the_three_conditions(real, agent, tmp_path):
    params = cape.Parameters(targets=("rpa/digits",), rpa_characters=("Hermione-en", "zhongli-zh"), rpa_runs=2, rpa_items=0,
                             rpa_scene_chars=300, output_dir=str(tmp_path / "cape"))
    run = spine.start("cape", params, models=params.targets, declared=cape.MANUSCRIPT)
    table = cape.role_playing(run)
    assert list(table["condition"]) == ["Random", "RPA", "RPA++"]
    assert (table["n_characters"] == 2).all() and table[["oa", "tar", "tc", "oc"]].notna().all().all()
    assert (table["n_pairs"] == 10 - 0).all()  # neither has a pdb X
    written = run.out.variables
    assert written["rpa_n_characters"] == 2 and written["rpa_n_label_only"] == 16
    assert written["rpa_pairs_skipped_all"] == 3 and written["rpa_answers"] == 2 * 44 * 2 * 2
    rendered = (tmp_path / "cape" / "tables" / "table2.md").read_text()
    assert all(c in rendered for c in ("Random", "RPA\\+\\+"))  # Markdown-escaped
    saved = pd.read_parquet(tmp_path / "cape" / "results" / "rpa_answers.parquet")
    assert set(saved["condition"]) == {"Random", "RPA", "RPA++"}


def test_the_plan_counts_characters_items_runs_and_both_conditions(real, scripted_models, tmp_path):
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")
    plan = plan_notebooks(["cape"], {"cape": {
        "output_dir": str(tmp_path / "cape"), "targets": "scripted/x", "n_items": "5", "factors": "stability",
        "bridge_positions": "1", "rpa_characters": "Hermione-en,Luna-en", "rpa_items": "15", "rpa_runs": "3"}})
    asked = [c for c in plan.calls if c.round.startswith("cape:rpa")]
    assert len(asked) == 2 * 15 * 3 * 2  # characters x items x runs x (RPA, RPA++); Random calls nothing
    assert sum(c.round == "cape:rpa:context_free" for c in plan.calls) == 2 * 15 * 3
    assert sum(c.round.startswith("cape:rpa:step") for c in plan.calls) == 2 * 15 * 3


def test_several_targets_give_table1_and_table2_a_row_group_each_and_the_rest_the_first(real, agent, scripted_models,
                                                                                          tmp_path):
    """Two targets: Table 1 and Table 2 have a Target column and a row group per target (Table 2's
    Random once, calling no model; a target whose answers compare no triple has Table 1 rows that
    say why); the text's numbers and the other sections are the first's."""
    targets = ("scripted/letters", "rpa/digits")
    params = cape.Parameters(targets=targets, n_items=5, factors=("stability",), n_runs=2, history_window=2,
                             orderings=("cyclic",), rpa_runs=2, rpa_scene_chars=300, output_dir=str(tmp_path / "cape"))
    run = spine.start("cape", params, models=params.targets, declared=cape.MANUSCRIPT)
    answers = cape.factors(run)
    assert set(answers["model"]) == set(targets)
    table1 = cape.consistency_table(run, answers)
    assert list(dict.fromkeys(table1["target"])) == list(targets)
    digits = table1[table1["target"] == "rpa/digits"]  # no option letter: no triple compares, the rows say so
    assert len(digits) == 2 and (digits["note"] == cape.NOT_COMPARABLE).all()
    assert table1.loc[table1["target"] == targets[0], "tar"].notna().any()
    assert "| Target" in (tmp_path / "cape" / "tables" / "table1.md").read_text()
    assert run.out.variables["table1_factors"] == "stability"
    profile = cape.profile_shift_table(run, answers)  # the first target's answers only
    first = cape.chosen_answers(answers[answers["model"] == targets[0]], params.answer)
    assert profile["n"].sum() == cape.profile_shift(first)["n"].sum()
    table2 = cape.role_playing(run)
    assert list(table2["target"]) == [cape.NO_MODEL, *[t for t in targets for _ in ("RPA", "RPA++")]]
    assert list(table2["condition"]) == ["Random", "RPA", "RPA++", "RPA", "RPA++"]
    saved = pd.read_parquet(tmp_path / "cape" / "results" / "rpa_answers.parquet")
    assert saved.loc[saved["condition"] == "Random", "model"].isna().all()
    assert set(saved.loc[saved["condition"] != "Random", "model"]) == set(targets)
