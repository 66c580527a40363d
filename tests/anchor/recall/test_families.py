import pytest

from contextecho.anchor.recall.events import commands, file_edits, failed
from contextecho.anchor.recall.items import RecallItem, item_rng, prompt_text
from contextecho.anchor.recall.families import RECALL_FAMILIES, recall_items


@pytest.fixture(scope="module")
def session(synthetic):
    return synthetic.build()


def test_events_of_the_synthetic_session(session, synthetic):
    cmds = commands(session)
    assert [c.text for c in cmds] == synthetic.COMMANDS
    assert [c.text for c in cmds if c.failed] == sorted(synthetic.FAILING)
    assert [e.path for e in file_edits(session)] == synthetic.EDITS


@pytest.mark.parametrize("text,expected", [
    ("[error] boom", True), ("Exit code: 2\nWall time: 0.1 seconds", True),
    ("Exit code: 0\nOutput:\nok", False), ('{"output":"x","metadata":{"exit_code":1}}', True),
    ("Process exited with code 0\nOutput:", False), ("all good", False)])
def test_failure_markers(text, expected):
    assert failed(text) is expected


def test_every_family_yields_items_with_one_correct_option(session, oracle):
    items = recall_items(session)
    # no user requests to supersede and no compaction here: see test_recall_families
    assert {i.family for i in items} == set(RECALL_FAMILIES) - {"superseded_request", "compaction_dropped"}
    for item in items:
        assert oracle.correct_options(session, item) == [item.answer], item
        assert oracle.from_session(session, item)
        assert len(set(item.options)) == 4
        assert max(item.option_steps) <= item.decision_step <= session.n_agent_steps


def test_generation_is_deterministic_and_independent_of_family_order(session, synthetic):
    a = recall_items(session)
    b = recall_items(synthetic.build())
    c = recall_items(session, families=reversed(list(RECALL_FAMILIES)))
    assert a == b
    assert sorted(a, key=lambda i: i.id) == sorted(c, key=lambda i: i.id)


def test_option_order_depends_on_session_and_item():
    shuffles = {tuple(item_rng("s", f"x/{k}").permutation(4)) for k in range(40)}
    assert len(shuffles) > 5
    assert list(item_rng("s", "x/0").permutation(4)) == list(item_rng("s", "x/0").permutation(4))


def test_last_edit_is_asked_after_time_has_passed(session):
    for item in recall_items(session, families=["last_edit"]):
        assert item.decision_step > item.source_steps[0]


def test_prompt_lists_four_lettered_options(session):
    item = recall_items(session)[0]
    text = prompt_text(item)
    assert all(f"{letter}. {o}" in text for letter, o in zip("ABCD", item.options))


def test_items_refuse_bad_shapes():
    with pytest.raises(ValueError):
        RecallItem("x", "s", "f", "q?", ("a", "a", "b", "c"), 0, (1, 2, 3, 4), (1,), 5)
    with pytest.raises(ValueError):
        RecallItem("x", "s", "f", "q?", ("a", "b", "c", "d"), 0, (1, 2, 3, 9), (1,), 5)


def test_families_are_generated_in_their_registered_order(session):
    assert list(RECALL_FAMILIES) == ["temporal_order", "last_edit", "failed_command", "superseded_request",
                              "compaction_dropped"]
    families = [i.family for i in recall_items(session)]
    assert families == sorted(families, key=list(RECALL_FAMILIES).index)


def test_unknown_family_is_named(synthetic):
    with pytest.raises(KeyError, match="unknown recall family"):
        recall_items(synthetic.build(), families=["nope"])
