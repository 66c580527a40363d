import pytest

from contextecho.anchor.context.conditions import LongContext
from contextecho.anchor.context.summary import ContextUnavailable
from contextecho.anchor.context.window import causal_window
from contextecho.anchor.recall.asking import answers_of, ask_requests, parse_choice
from contextecho.anchor.recall.families import recall_items
from contextecho.anchor.recall.filters import blind_filter
from contextecho.anchor.recall.items import LETTERS
from contextecho.engine.record import ERROR, OK, CallRecord


def shortest_option(prompt: str) -> str:
    """A fake model that answers from the question text alone: the shortest option."""
    options = [line[3:] for line in prompt.splitlines() if line[:3] in {f"{x}. " for x in LETTERS}]
    return LETTERS[min(range(len(options)), key=lambda k: (len(options[k]), k))]


@pytest.mark.parametrize("text,expected", [
    ("B", 1), ("(b)", 1), ("C. because", 2), ("The answer is D.", 3), ("Answer: a", 0),
    ("a good one is B", 1), ("**C**", 2), ("no idea", None), ("", None), (None, None)])
def test_parse_choice(text, expected):
    assert parse_choice(text) == expected


def test_blind_requests_hold_the_question_only_and_windowed_ones_the_history(synthetic):
    s = synthetic.build()
    items = recall_items(s)
    blind = ask_requests(items, "fake/echo")
    assert all(len(r.messages) == 1 and r.messages[0]["role"] == "user" for r in blind)
    seen = ask_requests(items, "fake/echo", s, window=2000)
    for item, b, r in zip(items, blind, seen):
        w = causal_window(s, item.decision_step, limit=2000)
        assert list(r.messages[:-1]) == list(w.messages) and r.messages[-1] == b.messages[0]
    assert len({r.key for r in blind + seen}) == 2 * len(items)


class Counting:
    """A long-context condition that counts the contexts it builds, and has none for one item."""

    name = "long_context"

    def __init__(self, missing: str):
        self.inner, self.missing, self.built = LongContext(limit=2000), missing, 0

    def context(self, session, item, **kwargs):
        self.built += 1
        if item.id == self.missing:
            raise ContextUnavailable("none", "NotRun")
        return self.inner.context(session, item, **kwargs)


def test_a_kept_dict_builds_each_context_once_for_every_model_and_replicate(synthetic):
    s = synthetic.build()
    items = recall_items(s)
    condition, built = Counting(missing=items[0].id), {}
    with pytest.raises(ContextUnavailable):
        ask_requests(items, "fake/echo", s, condition=condition, built=built)
    assert condition.built == len(items)
    usable = items[1:]
    first = ask_requests(usable, "fake/a", s, condition=condition, built=built, replicate=1)
    again = ask_requests(usable, "fake/b", s, condition=condition, built=built)
    assert condition.built == len(items)  # nothing built twice, the missing item's reason kept too
    fresh = ask_requests(usable, "fake/b", s, condition=LongContext(limit=2000))
    assert [r.messages for r in first] == [r.messages for r in again] == [r.messages for r in fresh]
    assert [r.key for r in again] == [r.key for r in fresh] and {r.model for r in first} == {"fake/a"}
    with pytest.raises(ContextUnavailable, match="1 of"):
        ask_requests(items[:1], "fake/c", s, condition=condition, built=built)
    assert condition.built == len(items)


def test_requests_refuse_an_item_of_another_session(synthetic):
    item = recall_items(synthetic.build("other"))[0]
    with pytest.raises(ValueError, match="from session"):
        ask_requests([item], "fake/echo", synthetic.build())


def test_blind_filter_drops_what_the_question_alone_answers(synthetic):
    items = recall_items(synthetic.build())
    answers = [shortest_option(r.messages[-1]["content"]) for r in ask_requests(items, "fake/echo")]
    out = blind_filter(items, answers)
    assert all(shortest_option_is_right(i) for i in out.discarded)
    assert not any(shortest_option_is_right(i) for i in out.kept)
    assert out.counts["candidates"] == len(items) and out.counts["discarded"] == len(out.discarded)


def shortest_option_is_right(item):
    return min(range(4), key=lambda k: (len(item.options[k]), k)) == item.answer


def test_failed_or_unreadable_blind_answers_keep_the_item_and_are_counted(synthetic):
    items = recall_items(synthetic.build())[:3]
    records = [CallRecord("k0", "m", "{}", ERROR, error_type="Timeout"),
               CallRecord("k1", "m", "{}", OK, response_text="I cannot tell"),
               CallRecord("k2", "m", "{}", OK, response_text=LETTERS[items[2].answer])]
    out = blind_filter(items, answers_of(records))
    assert out.kept == tuple(items[:2]) and out.discarded == (items[2],)
    assert (out.n_failed, out.n_unparsed) == (1, 1)
    with pytest.raises(ValueError):
        blind_filter(items, [0])


def test_requests_go_through_the_one_call_site(synthetic, tmp_path):
    from contextecho.engine.cache import CallCache
    from contextecho.engine.calls import generate

    s = synthetic.build()
    items = recall_items(s)[:2]
    result = generate(ask_requests(items, "fake/echo", s, window=1000), cache=CallCache(tmp_path),
                      progress=False)
    assert all(r.ok for r in result.records)
    out = blind_filter(items, answers_of(result.records))  # echoes name no single option
    assert out.counts["candidates"] == 2


def test_blind_filter_through_the_call_site_with_a_model_that_reads_only_the_question(synthetic, tmp_path,
                                                                                      provider):
    """A provider that sees only the last message (the question) and answers its shortest
    option: the blind batch discards exactly the items that heuristic gets right."""
    from contextecho.engine.cache import CallCache
    from contextecho.engine.calls import generate

    provider("questiononly", lambda model, messages: f"The answer is {shortest_option(messages[-1]['content'])}.",
             tokens=(1, 1))
    items = recall_items(synthetic.build())
    cache = CallCache(tmp_path / "cache")
    try:
        result = generate(ask_requests(items, "questiononly/shortest"), cache=cache, progress=False)
    finally:
        cache.close()
    out = blind_filter(items, answers_of(result.records))
    assert out.discarded and out.kept
    assert set(out.discarded) == {i for i in items if shortest_option_is_right(i)}
    assert out.n_unparsed == 0 and out.n_failed == 0
