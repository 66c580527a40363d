"""The request and compaction families on a hand-made session with known answers."""
import pytest

from contextecho.anchor.recall.events import request_text, user_requests
from contextecho.anchor.recall.families import RECALL_FAMILIES, recall_items
from contextecho.anchor.recall.families import mentions

NEW = ["superseded_request", "compaction_dropped"]


@pytest.fixture(scope="module")
def session(story):
    return story.build()


@pytest.mark.parametrize("typed,expected", [
    ("Please fix the build and tidy the docs.", "Please fix the build and tidy the docs."),
    ("ok", None), ("[Request interrupted by user for tool use]", None),
    ("<command-name>/exit</command-name>", None), ("Stop hook feedback:\n[hook] commit first", None),
    ("<ide_opened_file>The user opened a.py</ide_opened_file>\nplease  read plan.md and roadmap.md",
     "please read plan.md and roadmap.md"),
    ("# Context from my IDE setup:\n\n## My request for Codex:\nwhat is speckit from github?\n",
     "what is speckit from github?"),
    ("## User Input\n\n```text\nCreate a spec for the orchestrator\n```\n\nYou **MUST** consider it",
     "Create a spec for the orchestrator"),
    ("## User Input\n\n```text\n\n```\n\nYou **MUST** consider the user input", None)])
def test_what_counts_as_a_request(typed, expected):
    assert request_text(typed) == expected


def test_requests_of_the_story_and_their_steps(session, story):
    requests = user_requests(session)
    assert [r.text for r in requests] == story.REQUESTS
    for r in requests:  # each request's step is the agent's first act after it
        assert session.step_index[r.step - 1] > r.entry_index
        assert r.step == 1 or session.step_index[r.step - 2] < r.entry_index


def test_superseded_request_asks_for_the_latest_request(session, story, oracle):
    (item,) = recall_items(session, families=["superseded_request"])
    assert item.options[item.answer] == story.REQUESTS[3]
    assert set(item.options) == set(story.REQUESTS)
    assert item.decision_step == session.n_agent_steps > item.source_steps[0]
    assert oracle.correct_options(session, item) == [item.answer]
    steps = {r.text: r.step for r in user_requests(session)}
    assert item.option_steps == tuple(steps[o] for o in item.options)


def test_compaction_dropped_asks_for_the_file_the_summary_left_out(session, story, oracle):
    (item,) = recall_items(session, families=["compaction_dropped"])
    compaction = session.compactions[0]
    assert item.options[item.answer] == story.DROPPED
    # a.py names two files and Mixed.py is mentioned in another case: neither is a distractor
    assert sorted(o for k, o in enumerate(item.options) if k != item.answer) == sorted(story.KEPT)
    assert item.decision_step == compaction.steps_before + 1
    assert session.step_index[item.decision_step - 1] > compaction.entry_index
    assert max(item.option_steps) <= compaction.steps_before
    assert oracle.correct_options(session, item) == [item.answer]


@pytest.mark.parametrize("name,expected", [
    ("b.py", True), ("notes.md", True), ("a.py", True), ("Mixed.py", False), ("c.p", False),
    ("y", False)])
def test_a_mention_is_the_whole_file_name(story, name, expected):
    assert mentions(story.SUMMARY, name) is expected


def test_new_families_keep_every_invariant_and_are_deterministic(session, story, oracle):
    items = recall_items(session)
    assert set(NEW) < {i.family for i in items} <= set(RECALL_FAMILIES)
    assert items == recall_items(story.build())
    assert len({i.id for i in items}) == len(items)
    for item in items:
        assert oracle.correct_options(session, item) == [item.answer], item
        assert oracle.from_session(session, item), item
        assert len(set(item.options)) == 4
        assert max(item.option_steps + item.source_steps) <= item.decision_step <= session.n_agent_steps


def test_sessions_without_requests_or_compactions_yield_none(synthetic):
    assert recall_items(synthetic.build(), families=NEW) == ()
