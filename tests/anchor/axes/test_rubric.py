"""The behavioural-axes rubric (pinned texts) and its blind requests."""
from dataclasses import replace

import pytest

from contextecho.anchor.axes import rubric as axes
from contextecho.anchor.axes.rubric import AXES, AXIS_RUBRIC, AxisRubric, axis_request, card_part, cut
from contextecho.anchor.persona import CODING_ASSISTANT

# Changing any text the judge reads changes this hash: bump axes.VERSION and the pin together.
PINNED = ("axes-1.0", "c8be6a9ea0d00259")


def test_rubric_texts_are_pinned_to_their_version():
    assert (axes.VERSION, AXIS_RUBRIC.hash[:16]) == PINNED, "axis rubric changed: bump VERSION and PINNED"
    assert AXIS_RUBRIC.version == axes.VERSION and len(AXIS_RUBRIC.hash) == 64


def test_one_system_text_per_axis_naming_only_its_axis():
    assert tuple(AXIS_RUBRIC.systems) == AXES == ("role", "boundaries", "values", "style")
    for axis, text in AXIS_RUBRIC.systems.items():
        assert f"persona card: its {axis}." in text and "NOT APPLICABLE" in text
        assert axes.QUESTIONS[axis][0] in text


def test_a_changed_text_changes_the_hash_and_the_keys():
    other = replace(AXIS_RUBRIC, systems={**AXIS_RUBRIC.systems, "role": AXIS_RUBRIC.systems["role"] + " "})
    assert other.hash != AXIS_RUBRIC.hash
    assert replace(AXIS_RUBRIC, turn_chars=100).hash != AXIS_RUBRIC.hash
    base = axis_request("fake/j", "role", CODING_ASSISTANT, "ctx", "turn")
    assert axis_request("fake/j", "role", CODING_ASSISTANT, "ctx", "turn", rubric=other).key != base.key


def test_each_axis_shows_its_part_of_the_card_only():
    c = CODING_ASSISTANT
    assert card_part(c, "role") == f"You are {c.name}, {c.role}."
    for axis, items in (("boundaries", c.boundaries), ("values", c.values), ("style", c.style)):
        user = axis_request("fake/j", axis, c, "ctx", "turn").messages[1]["content"]
        others = [x for x in c.boundaries + c.values + c.style if x not in items]
        assert all(f"- {x}" in user for x in items) and not any(x in user for x in others)


def test_requests_are_blind_and_keyed_by_judge_axis_card_part_and_turn():
    c = CODING_ASSISTANT
    base = axis_request("fake/j", "style", c, "Fix the bug.", "Fixed.")
    assert [m["role"] for m in base.messages] == ["system", "user"]
    assert base.params == {"temperature": 0, "max_tokens": 64}
    assert axis_request("fake/j", "style", c, "Fix the bug.", "Fixed.").key == base.key
    changed = [axis_request("fake/k", "style", c, "Fix the bug.", "Fixed."),
               axis_request("fake/j", "values", c, "Fix the bug.", "Fixed."),
               axis_request("fake/j", "style", replace(c, style=("verbose",)), "Fix the bug.", "Fixed."),
               axis_request("fake/j", "style", c, "Fix the tests.", "Fixed."),
               axis_request("fake/j", "style", c, "Fix the bug.", "Fixed!")]
    assert len({r.key for r in changed} | {base.key}) == 6
    # A card change outside the judged part leaves the request (and its cached verdict) alone.
    assert axis_request("fake/j", "style", replace(c, values=("speed",)), "Fix the bug.", "Fixed.").key == base.key


def test_long_context_and_turn_are_cut_head_and_tail():
    context, turn = "A" * 300 + "B" * 2000 + "C" * 300, "x" * 10_000
    user = axis_request("fake/j", "role", CODING_ASSISTANT, context, turn).messages[1]["content"]
    assert "A" * 250 in user and "C" * 250 in user and "B" * 100 not in user and "[...]" in user
    assert len(cut(turn, 4000)) <= 4000 and len(cut("short", 10)) == 5
    assert '"""(none)"""' in axis_request("fake/j", "role", CODING_ASSISTANT, None, "hi").messages[1]["content"]


@pytest.mark.parametrize("turn", ["", "   \n"])
def test_an_empty_turn_is_never_sent(turn):
    with pytest.raises(ValueError, match="not judged"):
        axis_request("fake/j", "role", CODING_ASSISTANT, "ctx", turn)


def test_an_unknown_axis_is_refused():
    with pytest.raises(ValueError, match="unknown axis 'tone'"):
        AxisRubric.messages(AXIS_RUBRIC, "tone", CODING_ASSISTANT, "ctx", "turn")
