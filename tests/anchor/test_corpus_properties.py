"""Properties over every session of the real corpus (fail under CI without ../shared)."""
from dataclasses import replace

import pytest

from contextecho.anchor.context.conditions import HierarchicalSummary, LongContext, Retrieval
from contextecho.anchor.recall.asking import ask_requests
from contextecho.anchor.recall.filters import blind_filter
from contextecho.anchor.recall.items import LETTERS
from contextecho.anchor.recall.families import RECALL_FAMILIES, recall_items
from contextecho.anchor.context.window import causal_window
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import generate
from contextecho.sessions import load_session

pytestmark = pytest.mark.corpus
LIMIT = 4000  # small: the property does not depend on the size, the suite's time does


@pytest.fixture(scope="module")
def corpus_items(corpus_sessions):
    return [(s, recall_items(s)) for s in corpus_sessions]


def test_the_corpus_yields_items(corpus_items):
    assert sum(len(items) for _, items in corpus_items) >= 50
    assert {i.family for _, items in corpus_items for i in items} == set(RECALL_FAMILIES)


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


@pytest.fixture(scope="module")
def corpus_conditions(corpus_items, tmp_path_factory):
    """The three conditions, summaries by fake/echo for every block any item needs."""
    summary = HierarchicalSummary(model="fake/echo", recent_chars=LIMIT // 2, block_steps=20)
    requests = [r for s, items in corpus_items for r in summary.summary_requests(s, items)]
    with pytest.MonkeyPatch.context() as mp:  # module scope: the per-test isolation is not up yet
        mp.setenv("CONTEXTECHO_RUNS", str(tmp_path_factory.mktemp("runs")))
        batch = generate(requests, cache=CallCache(tmp_path_factory.mktemp("cells")), progress=False)
    assert batch.n_errors == 0 and requests
    return (LongContext(limit=LIMIT), summary.with_summaries(requests, batch.records),
            Retrieval(recent_chars=LIMIT // 2))


def test_no_condition_holds_anything_after_the_decision_point(corpus_items, corpus_conditions, causality):
    n_summarised = 0
    for s, items in corpus_items:
        probes = causality.probes(s)
        for item in items:
            t = item.decision_step
            end, cut = s.step_index[t - 1], causality.cut_at(s, t)
            for condition in corpus_conditions:
                context = condition.context(s, item, redact=False)
                where = (s.path.name, item.id, condition.name)
                assert context.entry_ranges[-1][1] == end, where
                assert all(first <= last <= end for first, last in context.entry_ranges), where
                assert not causality.leaks(s, t, context.messages, probes), where
                # built again from the session cut at the decision point: later records had no say
                assert condition.context(cut, item, redact=False).sha256 == context.sha256, where
                n_summarised += bool(context.provenance.get("blocks"))
    assert n_summarised  # the summary condition really summarised somewhere


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
