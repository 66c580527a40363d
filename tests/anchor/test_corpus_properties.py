"""Properties over every session of the real corpus (fail under CI without ../shared)."""
from dataclasses import replace

import pytest

from contextecho.anchor.filters import ask_requests, blind_filter
from contextecho.anchor.items import LETTERS
from contextecho.anchor.recall import FAMILIES, recall_items
from contextecho.anchor.window import causal_window
from contextecho.sessions import load_session

pytestmark = pytest.mark.corpus
LIMIT = 4000  # small: the property does not depend on the size, the suite's time does


@pytest.fixture(scope="module")
def corpus_items(corpus_sessions):
    return [(s, recall_items(s)) for s in corpus_sessions]


def test_the_corpus_yields_items(corpus_items):
    assert sum(len(items) for _, items in corpus_items) >= 50
    assert {i.family for _, items in corpus_items for i in items} == set(FAMILIES)


def test_generation_is_deterministic(corpus_items):
    for s, items in corpus_items:
        assert recall_items(load_session(s.path)) == items


def test_every_item_has_one_correct_option_and_three_distractors_from_the_session(corpus_items, oracle):
    for s, items in corpus_items:
        assert len({i.id for i in items}) == len(items)
        for item in items:
            assert item.session_id == s.session_id
            assert len(item.options) == 4 and len(set(item.options)) == 4
            assert oracle.correct_options(s, item) == [item.answer], item
            assert oracle.from_session(s, item), item


def test_causal_window_never_holds_a_record_after_the_decision_point(corpus_items):
    for s, items in corpus_items:
        for item in items:
            t = item.decision_step
            end = s.step_index[t - 1]
            w = causal_window(s, t, limit=LIMIT)
            assert w.last_entry == end and w.first_entry <= end and w.n_chars <= LIMIT
            assert max(item.option_steps + item.source_steps) <= t
            # The same window from a session cut at the decision point: later records
            # had no influence at all.
            cut = replace(s, entries=s.entries[:end + 1], step_index=s.step_index[:t],
                          compactions=tuple(c for c in s.compactions if c.entry_index <= end))
            assert causal_window(cut, t, limit=LIMIT).sha256 == w.sha256


def shortest_option(prompt: str) -> str:
    """Answers from the question text alone: the shortest option (a length prior)."""
    options = [line[3:] for line in prompt.splitlines() if line[:3] in {f"{x}. " for x in LETTERS}]
    return LETTERS[min(range(4), key=lambda k: (len(options[k]), k))]


def test_blind_filtering_removes_items_answerable_from_the_question_alone(corpus_items):
    items = [i for _, its in corpus_items for i in its]
    answers = [shortest_option(r.messages[-1]["content"])
               for r in ask_requests(items, "fake/echo", redact=False)]
    out = blind_filter(items, answers)
    right = {i.id + i.session_id for i, a in zip(items, answers) if LETTERS.index(a) == i.answer}
    assert out.discarded and out.kept
    assert {i.id + i.session_id for i in out.discarded} == right
    assert out.counts["kept"] + out.counts["discarded"] == len(items)
