"""The harness's A-anchor instruments (:mod:`contextecho.echo.reference.anchors`), checked by hand."""
from __future__ import annotations

import pytest

from contextecho.echo.reference import anchors
from contextecho.echo.reference.texts import (ACKNOWLEDGEMENT, PROBE_MAX_TOKENS, PROBE_SYSTEM_PROMPT,
                                              STRESSOR_MAX_TOKENS, STRESSOR_SYSTEM_PROMPT, framed)


def texts(messages):
    return [(m["role"], m["content"][0]["text"]) for m in messages]


def test_a_combined_is_four_turns_between_the_acknowledgement_and_the_request():
    assert texts(anchors.A_COMBINED.messages("P", "R")) == [
        ("user", "P"), ("assistant", ACKNOWLEDGEMENT), ("user", anchors.ANCHOR_A_USER), ("assistant", "Understood."),
        ("user", "list files in the current directory"), ("assistant", "ls"), ("user", "R")]
    assert texts(anchors.A_COMBINED.messages("", "R"))[0] == ("user", anchors.ANCHOR_A_USER)
    assert all(len(m["content"]) == 1 and m["content"][0]["type"] == "text"
               for m in anchors.A_COMBINED.messages("P", "R"))


def test_a_combined_requests_of_the_three_runners():
    stressor = anchors.a_combined_request("P", "S")
    assert (stressor.system_prompt, stressor.max_tokens) == (STRESSOR_SYSTEM_PROMPT, STRESSOR_MAX_TOKENS)
    probe = anchors.a_combined_probe_request("P", "C01")
    assert (probe.system_prompt, probe.max_tokens) == (STRESSOR_SYSTEM_PROMPT, PROBE_MAX_TOKENS)
    assert probe.messages[-1]["content"][0]["text"] == framed("C01")
    twelve = anchors.a_combined_probe_request("P", "C01", system_prompt=PROBE_SYSTEM_PROMPT)
    assert twelve.system_prompt == PROBE_SYSTEM_PROMPT and twelve.messages == probe.messages


def test_variant_v3_and_the_placement_ablation_are_different_system_prompts():
    v3 = anchors.VARIANTS[3]
    assert v3.system_prompt(STRESSOR_SYSTEM_PROMPT) == STRESSOR_SYSTEM_PROMPT + "\n\n" + anchors.ANCHOR_V0_TEXT
    assert texts(v3.messages("P", "R")) == [("user", "P"), ("assistant", ACKNOWLEDGEMENT), ("user", "R")]
    assert anchors.SYSTEM_PROMPT_V3 == PROBE_SYSTEM_PROMPT + " " + anchors.ANCHOR_A_USER
    assert anchors.SYSTEM_PROMPT_V3.endswith("Here is an example of the format I want for bash requests:")
    assert texts(anchors.PLACEMENT_V3.messages("", "R")) == [("user", "R")]
    assert [v.name for v in anchors.VARIANTS] == ["V0_BASELINE", "V1_BEHAVIORAL", "V2_IN_CONTEXT", "V3_SYSTEM_INJECT"]
    assert anchors.VARIANTS[0].system_prompt(STRESSOR_SYSTEM_PROMPT) == STRESSOR_SYSTEM_PROMPT


def test_sizes_and_decay():
    assert len(anchors.size_anchor("small").messages("P", "R")) == 5
    assert anchors.size_anchor("medium").messages("P", "R") == anchors.A_COMBINED.messages("P", "R")
    assert texts(anchors.size_anchor("large").messages("", "R"))[-3:] == [
        ("user", "show me the running python processes"), ("assistant", "ps aux | grep python"), ("user", "R")]
    with pytest.raises(KeyError):
        anchors.size_anchor("huge")
    assert anchors.decay_anchor(0).messages("P", "R") == anchors.A_COMBINED.messages("P", "R")
    n21 = texts(anchors.decay_anchor(21).messages("P", "R"))
    assert len(n21) == 7 + 2 * 21
    # the 21st exchange cycles back to the first generic turn
    assert n21[-3:-1] == [("user", "Run the tests."), ("assistant", "OK.")]
    assert n21[-5:-3] == [("user", "Run those too."), ("assistant", "Done.")]


@pytest.fixture()
def reference_session(sessions):
    from contextecho.echo.reference.transcript import read_session
    return read_session(sessions[0].path)


def test_anchored_reference_cells(reference_session):
    from contextecho.echo.protocol import Positions
    from contextecho.echo.reference.cells import build_reference_cells
    from contextecho.sessions.positions import Position

    asked = Positions(chosen={reference_session.session_id: [Position(5, "p", "case")]})
    plain = build_reference_cells("x", "anthropic/claude-sonnet-4-6", [reference_session], asked, items=["C01"],
                                  tag={"protocol": "reference"}, redact=False)
    cells = build_reference_cells("x", "anthropic/claude-sonnet-4-6", [reference_session], asked, items=["C01", "S2#01"],
                                  tag={"protocol": "reference"}, redact=False, arms=("real",), anchor="PLACEMENT_V3")
    assert [(c.arm, c.intervention) for c in cells] == [("real", "PLACEMENT_V3")] * 2
    probe, stressor = (c.request.messages for c in cells)
    assert probe[0] == {"role": "system", "content": anchors.SYSTEM_PROMPT_V3}
    assert stressor[0]["content"] == STRESSOR_SYSTEM_PROMPT + " " + anchors.ANCHOR_A_USER
    assert cells[0].request.key != plain[0].request.key
    with pytest.raises(KeyError):
        build_reference_cells("x", "anthropic/claude-sonnet-4-6", [reference_session], asked, items=["C01"],
                              tag={}, anchor="NO_SUCH_ANCHOR")
