"""Context conditions on hand-made sessions: long context, hierarchical summary (fake/echo
as the summariser, through generate and the call cache), retrieval; causality of each."""
import pytest

from contextecho.anchor.context.conditions import (CONTEXT_CONDITIONS, HierarchicalSummary, LongContext, Retrieval,
                                           build_contexts, condition_for)
from contextecho.anchor.recall.asking import ask_requests
from contextecho.anchor.recall.items import RecallItem
from contextecho.anchor.recall.families import recall_items
from contextecho.anchor.context.retrieval import most_relevant
from contextecho.anchor.context.summary import ContextUnavailable, history_blocks
from contextecho.anchor.context.window import causal_window
from contextecho.engine.calls import Transport, generate
from contextecho.engine.record import OK, CallRecord

BLOCK_STEPS, RECENT = 4, 300
ONCE = Transport(max_attempts=1)  # a failing summariser fails at once, no backoff


@pytest.fixture(scope="module")
def session(story):
    return story.build()


@pytest.fixture(scope="module")
def items(session):
    return recall_items(session)


def summarised(session, items, cache, model="fake/echo"):
    condition = HierarchicalSummary(model=model, recent_chars=RECENT, block_steps=BLOCK_STEPS)
    requests = condition.summary_requests(session, items)
    batch = generate(requests, cache=cache, transport=ONCE, progress=False)
    return condition.with_summaries(requests, batch.records), requests, batch


def test_long_context_is_the_causal_window(session, items):
    for item in items:
        context = LongContext(limit=500).context(session, item)
        window = causal_window(session, item.decision_step, limit=500)
        assert context.messages == window.messages and context.sha256 == window.sha256
        assert context.entry_ranges == ((window.first_entry, window.last_entry),)
        assert context.n_chars == window.n_chars


def test_requests_default_to_long_context_and_conditions_are_named(session, items):
    keys = [r.key for r in ask_requests(items, "fake/echo", session, window=700)]
    assert keys == [r.key for r in ask_requests(items, "fake/echo", session, condition="long_context",
                                                window=700)]
    assert keys == [r.key for r in ask_requests(items, "fake/echo", session, condition=LongContext(700))]
    assert list(CONTEXT_CONDITIONS) == ["long_context", "hierarchical_summary", "self_managed",
                                        "retrieval"]  # the grid's order, ANCHOR's
    with pytest.raises(KeyError, match="unknown context condition"):
        condition_for("self_kept")
    with pytest.raises(ValueError, match="needs its memories"):
        condition_for("self_managed")
    with pytest.raises(ValueError, match="needs its summaries"):
        ask_requests(items, "fake/echo", session, condition="hierarchical_summary")


def test_blocks_are_fixed_by_the_session_alone(session, causality):
    blocks = history_blocks(session, BLOCK_STEPS)
    assert len(blocks) == session.n_agent_steps // BLOCK_STEPS and blocks[0].first_entry == 0
    for b, c in zip(blocks, blocks[1:]):
        assert c.first_entry == b.last_entry + 1 and c.first_step == b.last_step + 1
    for b in blocks:
        assert b.last_entry == session.step_index[b.last_step - 1]
    for t in range(1, session.n_agent_steps + 1):
        assert history_blocks(causality.cut_at(session, t), BLOCK_STEPS) == blocks[:t // BLOCK_STEPS]


def test_items_of_a_session_share_the_same_summary_calls(session, items, cache):
    condition, requests, batch = summarised(session, items, cache)
    assert batch.n_errors == 0 and len({r.key for r in requests}) == len(requests)
    contexts = build_contexts(condition, session, items).contexts
    assert len(contexts) == len(items)
    all_blocks = [(b.first_step, b.last_step) for b in history_blocks(session, BLOCK_STEPS)]
    keys = [r.key for r in requests]
    used = 0
    for item in items:
        prov = contexts[item.id].provenance
        n = len(prov["blocks"])
        assert list(prov["blocks"]) == all_blocks[:n] and list(prov["summary_keys"]) == keys[:n]
        alone = condition.summary_requests(session, [item])
        assert [r.key for r in alone] == keys[:len(alone)]
        text = contexts[item.id].messages[0]["content"]
        assert all(condition.summaries.texts[k] in text for k in prov["summary_keys"])
        used += n > 0
    assert used  # some items are answered from summaries, not only verbatim


def test_summary_calls_are_cached_on_a_second_run(session, items, cache):
    _, requests, first = summarised(session, items, cache)
    _, again, second = summarised(session, items, cache)
    assert again == requests and first.n_hits == 0 and second.n_hits == len(requests)
    assert [r.response_text for r in second.records] == [r.response_text for r in first.records]


@pytest.mark.parametrize("model,reason", [("fake/auth", "AuthenticationError"), ("fake/timeout", "Timeout")])
def test_a_failing_summariser_is_reported_never_an_empty_summary(session, items, cache, model, reason):
    condition, requests, batch = summarised(session, items, cache, model=model)
    assert batch.n_errors == len(requests) > 0
    assert condition.summaries.counts == {"summaries": 0, "failed": len(requests),
                                          f"failed_{reason}": len(requests)}
    out = build_contexts(condition, session, items)
    assert out.failed and set(out.failed.values()) == {reason}
    assert out.counts["failed"] == len(out.failed) and out.counts["built"] + len(out.failed) == len(items)
    for context in out.contexts.values():  # built only where no summary was needed
        assert context.provenance["blocks"] == ()
    with pytest.raises(ContextUnavailable, match=f"have no context under hierarchical_summary.*{reason}"):
        ask_requests(items, "fake/echo", session, condition=condition)
    assert len(ask_requests(out.usable(items), "fake/echo", session, condition=condition)) == len(out.contexts)


def test_an_empty_or_missing_summary_is_a_failure(session, items):
    condition = HierarchicalSummary(model="fake/echo", recent_chars=RECENT, block_steps=BLOCK_STEPS)
    request = condition.summary_requests(session, items)[0]
    empty = condition.summaries.add([request], [CallRecord(request.key, "fake/echo", "{}", OK, response_text=" ")])
    with pytest.raises(ContextUnavailable) as caught:
        empty.text(request)
    assert caught.value.reason == "EmptySummary"
    assert set(build_contexts(condition, session, items).failed.values()) == {"NotRun"}


def test_every_condition_holds_nothing_after_the_decision_point(session, items, cache, causality):
    summary, _, _ = summarised(session, items, cache)
    probes = causality.probes(session)
    everything = causal_window(session, session.n_agent_steps, limit=None, redact=False).messages
    assert causality.leaks(session, 1, everything, probes)  # the check can fail
    for condition in (LongContext(limit=RECENT), summary, Retrieval(k=2, recent_chars=RECENT)):
        for item in items:
            t = item.decision_step
            context = condition.context(session, item, redact=False)
            assert all(last <= session.step_index[t - 1] for _, last in context.entry_ranges)
            assert list(context.entry_ranges) == sorted(context.entry_ranges)
            assert not causality.leaks(session, t, context.messages, probes), (condition.name, item.id)
            cut = causality.cut_at(session, t)
            assert condition.context(cut, item, redact=False).sha256 == context.sha256


@pytest.fixture(scope="module")
def chat_session(chat):
    turns = [("user", "Please set up the project skeleton."), ("assistant", "Created the folders and a README."),
             ("user", "The frobnicator calibration must use a tolerance of 0.25 millimetres."),
             ("assistant", "Noted: calibration tolerance recorded.")]
    for k in range(10):
        turns += [("user", f"Add unit tests for module {k}."), ("assistant", f"Added tests for module {k}.")]
    turns += [("user", "Let us continue."), ("assistant", "Working on module 11 now."),
              ("user", "Actually the frobnicator calibration tolerance is now 0.5 millimetres, frobnicator!"),
              ("assistant", "Updated the frobnicator calibration tolerance.")]
    return chat.build(turns)


def tolerance_item(session, decision_step):
    return RecallItem("custom/0", session.session_id, "custom",
                      "Which tolerance must the frobnicator calibration use?",
                      ("0.25 millimetres", "0.5 millimetres", "1 millimetre", "2 millimetres"), 0,
                      (2, 2, 2, 2), (2,), decision_step)


def test_retrieval_finds_the_relevant_earlier_turn_and_nothing_later(chat_session):
    t = chat_session.n_agent_steps - 1  # "Working on module 11 now."
    item = tolerance_item(chat_session, t)
    context = Retrieval(k=2, recent_chars=120).context(chat_session, item, redact=False)
    relevant = 2  # the entry of the user's tolerance request
    assert (relevant, relevant) in context.entry_ranges
    assert "0.25 millimetres" in context.messages[0]["content"]
    assert "is now 0.5" not in "".join(m["content"] for m in context.messages)
    assert context.entry_ranges[-1][1] == chat_session.step_index[t - 1]
    retrieved = context.entry_ranges[:-1]
    assert list(retrieved) == sorted(retrieved) and retrieved[-1][1] < context.entry_ranges[-1][0]
    assert len(context.provenance["scores"]) == len(retrieved) <= 2


def test_retrieval_requests_go_through_generate(chat_session, cache):
    item = tolerance_item(chat_session, chat_session.n_agent_steps - 1)
    requests = ask_requests([item], "fake/echo", chat_session, condition=Retrieval(k=1, recent_chars=120))
    assert "0.25 millimetres" in requests[0].messages[0]["content"]
    assert generate(requests, cache=cache, progress=False).records[0].ok


def test_ranking_is_deterministic_with_ties_to_the_earlier_turn():
    texts = ["alpha beta", "gamma delta", "alpha beta", "alpha"]
    assert [i for i, _ in most_relevant(texts, "alpha beta", 2)] == [0, 2]
    assert [i for i, _ in most_relevant(texts, "alpha beta", 3)] == [0, 2, 3]
    assert most_relevant(texts, "epsilon", 3) == []  # no overlap: nothing is relevant
    assert most_relevant(["the", "a"], "the", 2) == []  # stop words only
