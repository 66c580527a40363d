"""The JSON-object constraint of the embedded model's ``response_format``: which texts are
the beginning of one JSON object, and when it is complete (checked against ``json.loads``)."""
from __future__ import annotations

import json

import pytest

from contextecho.engine.json_constraint import JsonObjectPrefix

VALID = ['{"score": 2, "label": "mostly_assistant", "reason": "AI, but \\"enjoys\\" code \\u00e9"}',
         '{ }', '{"a": [1, -2.5e3, true, false, null, {"b": []}], "c": "x"}', '\n{"score":3}',
         '{"n": 0, "m": -0.0, "e": 1E+2}']
INVALID = ['x{"a": 1}', '{"a" 1}', '{"a": 01}', '{"a": tru}', '{a: 1}', '{"a": 1,}', '{"a": [1,]}',
           '{"a": "line\nbreak"}', '{"a": "\\x"}', '{"a": 1}}', '[1, 2]', '"text"', '{"a": 1.}', '{"a": -}']


def feed(text):
    state = JsonObjectPrefix()
    return state, state.feed_text(text)


@pytest.mark.parametrize("text", VALID)
def test_every_prefix_of_a_json_object_is_accepted_and_the_whole_completes_it(text):
    json.loads(text)
    closed = text.rindex("}") + 1  # the object closes with its last brace
    for end in range(len(text) + 1):
        state, ok = feed(text[:end])
        assert ok, text[:end]
        assert state.complete == (end >= closed), text[:end]


@pytest.mark.parametrize("text", INVALID)
def test_what_is_no_json_object_is_refused_or_never_completes(text):
    with pytest.raises(ValueError):
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("not an object")
    state, ok = feed(text)
    assert not (ok and state.complete)


def test_nothing_but_whitespace_may_follow_the_object():
    state, ok = feed('{"a": 1}')
    assert ok and state.complete
    assert state.copy().feed_text("  \n") and not state.copy().feed_text(" x")


def test_a_copy_is_independent():
    state, _ = feed('{"a": "b')
    branch = state.copy()
    assert branch.feed_text('"}') and branch.complete
    assert not state.complete and state.feed_text('c"}') and state.complete


def test_a_string_or_a_container_past_its_bound_must_close():
    state = JsonObjectPrefix(max_string=5, max_members=2)
    assert state.feed_text('{"a": "12345')
    assert not state.copy().feed("6") and state.feed('"')
    assert state.feed_text(', "b": 1') and not state.copy().feed(",") and state.feed("}") and state.complete
    assert not JsonObjectPrefix(max_string=3).feed_text('{"long_key": 1}')


@pytest.mark.parametrize("text, cost", [("", 2), ("{", 1), ('{"a', 4), ('{"a"', 3), ('{"a":', 2), ('{"a": tr', 3),
                                        ('{"a": 1', 1), ('{"a": 1.', 2), ('{"a": [{"b": "x', 4), ('{"a": 1,', 6),
                                        ('{"a": 1}', 0)])
def test_the_closing_cost_is_what_completes_the_object(text, cost):
    state, ok = feed(text)
    assert ok and state.closing_cost() == cost
    closer = {"": "{}", "{": "}", '{"a': '":0}', '{"a"': ":0}", '{"a":': "0}", '{"a": tr': "ue}", '{"a": 1': "}",
              '{"a": 1.': "0}", '{"a": [{"b": "x': '"}]}', '{"a": 1,': '"k":0}', '{"a": 1}': ""}[text]
    assert len(closer) == cost and state.feed_text(closer) and state.complete


def test_whitespace_runs_are_bounded():
    state = JsonObjectPrefix()
    assert state.feed_text("{" + " " * 8) and not state.copy().feed(" ")
    assert state.feed_text('"a": 1 }') and state.complete
