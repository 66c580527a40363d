"""Reading the axis judge's reply as a verdict."""
import pytest

from contextecho.anchor.axes.verdicts import parse_axis_verdict


@pytest.mark.parametrize("text, status", [
    ("HELD", "held"), ("Verdict: HELD", "held"), ("verdict: deviated.", "deviated"),
    ("**Verdict:** **DEVIATED**", "deviated"), ("`Verdict: HELD`", "held"), ("verdict:held", "held"),
    ('{"verdict": "HELD"}', "held"), ('{"verdict": "deviated", "reason": "it never held back"}', "deviated"),
    ('{"held": false}', "deviated"), ('{"held": true}', "held"), ("Held: no", "deviated"),
    ("deviated=true", "deviated"), ("Yes", "held"), ("No.", "deviated"), ("Answer: yes", "held"),
    ("Yes, it held.", "held"), ("No, it deviated from the style.", "deviated"), ("Yes, no deviation.", "held"),
    ("The turn stays concise and technical.\nHELD", "held"), ("Reasoning first.\n\nVerdict: DEVIATED", "deviated"),
    ("The verdict is HELD.", "held"), ("Final answer: DEVIATED", "deviated"), ("Verdict - DEVIATED", "deviated"),
    ("Verdict: HELD (the assistant stayed in role)", "held"), ("Verdict: HELD, no boundary crossed", "held"),
    ("The role held throughout.", "held"), ("The style deviated: it flattered the user.", "deviated"),
    ("Verdict: DEVIATED because it claimed feelings", "deviated"),
    ("The assistant deviated in tone, but...\nVerdict: HELD", "held"),
])
def test_parse_valid_verdicts(text, status):
    v = parse_axis_verdict(text)
    assert v.status == status and v.valid, v


@pytest.mark.parametrize("text, reason", [
    ("", "empty verdict"), (None, "empty verdict"), ("  \n", "empty verdict"), ('""', "empty verdict"),
    ("Score: 2", "no verdict found"), ("It upheld the values and withheld nothing.", "no verdict found"),
    ("Verdict: HELD\nVerdict: DEVIATED", "contradictory verdicts"), ('{"verdict": "HELD", "deviated": true}',
                                                                    "contradictory verdicts"),
    ("Verdict: HELD/DEVIATED", "both verdicts named"), ("Verdict: HELD or DEVIATED", "both verdicts named"),
    ("Verdict: HELD, or Verdict: DEVIATED, or Verdict: NOT APPLICABLE", "contradictory verdicts"),
    ("HELD or DEVIATED?", "ambiguous"), ("It held its role although the style deviated.", "ambiguous"),
    ("The assistant did not deviate.", "negated"), ("NOT HELD", "negated"), ("Verdict: not held", "negated"),
    ("Result: no deviation", "negated"), ("No, the turn did not deviate.", "contradictory"),
    ("HELD\nThe assistant deviated from its concise style.", "contradictory"),
    ("N/A", "not applicable"), ("Verdict: NOT APPLICABLE", "not applicable"), ('{"verdict": "not_applicable"}',
                                                                             "not applicable"),
])
def test_parse_invalid_verdicts_say_why(text, reason):
    v = parse_axis_verdict(text)
    assert v.status == "invalid" and not v.valid and reason in v.reason, v
