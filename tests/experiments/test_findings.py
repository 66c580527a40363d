"""Each section's sentence is generated from its numbers: the plain sentence that an estimate
measures nothing where it is degenerate (no variance, every verdict the same, nothing recalled,
no complete case), the result where it is not; a reason named once."""
import numpy as np
import pandas as pd

from contextecho.experiments import (anchor, cape, compaction, continuation, cross_session, instruction_override,
                                     intervention_effects, panel)
from contextecho.engine.llm import LOCAL_MODEL
from contextecho.paper.formats import not_estimable
from contextecho.sessions.positions import session_order

NOTHING = "On this build "


def test_the_panel_says_what_its_judge_lets_the_discrete_gap_say():
    written = {"invalid_pct": "31.7%", "judge_distinct_scores": 4, "judge_modal_score": 0, "judge_modal_pct": "58.5%",
               "judge_calibrated": "not calibrated", "judge_kappa": "0.03", "judge_calibration_n": 65}
    weak = panel.judge_reading(written, 41)
    assert weak.startswith("The judge is not calibrated (quadratic kappa 0.03)") and "58.5%" in weak
    assert panel.judge_reading({**written, "judge_distinct_scores": 1}, 41).startswith(NOTHING)
    assert "no valid verdict" in panel.judge_reading(written, 0)
    assert panel.judge_reading({**written, "judge_calibrated": "calibrated", "judge_kappa": "0.81"}, 41) == (
        "The judge is calibrated (quadratic kappa 0.81 on 65 labelled responses), so the gap reads the target's "
        "register.")


def test_the_abstract_and_the_limitations_name_what_the_run_ran():
    """On the embedded model alone they say its numbers say nothing about capable models; with
    a hosted target they name the models instead, and never call a capable model tiny."""
    local, hosted = LOCAL_MODEL, "openai/gpt-4o"
    assert "none of its numbers says anything about capable models" in panel.build_note((local,), (local,))
    named = panel.build_note((hosted,), (hosted,))
    assert named.startswith(f"This build runs the whole pipeline on {hosted}, judged by {hosted};")
    assert "tiny" not in named and "capable" not in named
    assert "tiny embedded CPU model" in panel.build_note((hosted, local), (hosted,))
    written = {"judge_calibrated": "not calibrated", "invalid_pct": "31.7%"}
    embedded = panel.limitations_note((local,), (local,), written)
    assert embedded.startswith("The embedded target and judge is a 135M-parameter model")
    assert embedded.endswith("The judge is not calibrated, and 31.7% of its verdicts were failures (the harness's −1).")
    assert panel.limitations_note((local,), (hosted,), written).startswith("The embedded target is")
    capable = panel.limitations_note((hosted,), (hosted,), {**written, "judge_calibrated": "calibrated"})
    assert "135M" not in capable and "The judge is calibrated" in capable


def _contrast(analysis, n, positive=0, negative=0):
    return {"analysis": analysis, "n": n, "positive": positive, "negative": negative}


def test_the_tool_use_contrast_measures_nothing_without_a_complete_case_and_spread():
    why = not_estimable("no cutpoint where both returned a call")
    flat = pd.DataFrame([_contrast("complete_case", 0), _contrast("itt", 2)])
    said = continuation.finding(flat, {"cc_delta": why, "cc_ci": why, "cc_p": why}, 2, "t/m")
    assert said.startswith(NOTHING + "the tool-use contrast (recent3K − gpt5_3K) of t/m measures nothing: at none "
                           "of the 2 cutpoints") and said.count("not estimable") == 0
    spread = pd.DataFrame([_contrast("complete_case", 3, 2, 1), _contrast("itt", 5, 3, 1)])
    written = {"cc_delta": "0.125", "cc_ci": "[0.000, 0.250]", "cc_p": "0.500", "itt_delta": "0.100",
               "itt_ci": not_estimable("one unit"), "itt_p": "0.625"}
    assert continuation.finding(spread, written, 5, "t/m") == (
        "For t/m, over the 3 cutpoints where both arms returned a call of the right tool (complete case) Δ M2 "
        "(recent3K − gpt5_3K) is 0.125 (95% CI [0.000, 0.250]; sign-flip p = 0.500); scoring a missing or "
        "unparseable call 0 over 5 cutpoints (intention to treat) gives 0.100 (without an interval: one unit; "
        "p = 0.625).")


def test_the_a_anchor_finding_says_when_every_verdict_is_one_score():
    written = {"a_anchor_effect": "0.50", "a_anchor_ci": "[0.00, 1.00]"}
    same = intervention_effects.probe_finding(pd.Series([2.0, 2.0, np.nan, 2.0]), written, "t")
    assert same.startswith(NOTHING) and "3 valid verdicts" in same and "was 2.00" in same
    assert intervention_effects.probe_finding(pd.Series([1.0, 2.0]), written, "t") == (
        "For t the A-anchor changed the judge score by 0.50 points (95% CI [0.00, 1.00]).")
    assert "no valid verdict" in intervention_effects.probe_finding(pd.Series([np.nan]), written, "t")


def test_recall_and_retention_sentences_follow_their_numbers():
    written = {"recall_modal_letter": "A", "recall_modal_pct": "100.0%", "recall_asked": 11, "recall_chance": "0.25",
               "recall_accuracy_long_context": "0.00", "recall_accuracy_retrieval": "0.50"}
    nothing = anchor.recall_sentences(written, {"long_context": 0.0, "retrieval": 0.0})
    assert nothing["recall_finding"].startswith(NOTHING + "trajectory recall measures nothing")
    assert nothing["recall_bias"].startswith("With history the target named option A in 100.0%")
    some = anchor.recall_sentences({**written, "recall_modal_pct": "30.0%"}, {"long_context": 0.0, "retrieval": 0.5})
    assert some["recall_finding"] == ("Pooled over families, accuracy on the 11 blind-kept items was 0.00 with the "
                                      "long-context window and 0.50 with retrieval of the most relevant earlier turns, "
                                      "against a chance level of 0.25.")
    assert some["recall_bias"].startswith("With history the target's answers spread over the letters")
    why = not_estimable("R is undefined")
    retained = {f"retention_final_{arm}_{facet}": (why if facet in "EN" else "1.00")
                for arm in anchor.RETENTION_ARMS for facet in "OCEAN"}
    said = anchor.retention_sentence(retained)
    assert said.count("R is undefined") == 1 and said.endswith("for E and N on both prefixes it is not estimable: "
                                                               "R is undefined")


def test_the_format_comparison_names_its_reason_once_and_what_one_session_each_means():
    why = not_estimable("one position")
    table = pd.DataFrame({"target": ["t", "t"], "n_sessions": [1, 1]})
    said = cross_session.format_finding({"format_gap_claude_code": why, "format_gap_codex_cli": why,
                                         "format_difference": not_estimable("no gap")}, table, "t")
    assert said.startswith("The drift gap on Claude Code and on Codex CLI is not estimable: one position; so their "
                           "difference is not estimable either.") and "compares two sessions" in said
    both = cross_session.format_finding({"format_gap_claude_code": "0.50", "format_gap_codex_cli": "0.10",
                                         "format_difference": "−0.40"}, table.assign(n_sessions=3), "t")
    assert both == ("The drift gap is 0.50 on Claude Code and 0.10 on Codex CLI; their difference (Codex CLI − "
                    "Claude Code) is −0.40.")


def test_power_one_cut_point_and_an_empty_table1_row_are_said_from_the_numbers():
    row = pd.Series({"tost_ci_low": -2.71, "tost_ci_high": 4.13, "events": 2})
    assert "no mean change could have been shown equivalent" in compaction.power_note(row, 0.08)
    narrow = pd.Series({"tost_ci_low": -0.05, "tost_ci_high": 0.05, "events": 40})
    assert "could show equivalence" in compaction.power_note(narrow, 0.08)
    assert instruction_override.reading(1, 1, (1000, 3000)).startswith("With one cut point each rate is one cell's")
    assert instruction_override.reading(10, 10, (3000, 200_000)) == ("Each e11 rate is over 10 cut points and each "
                                                                      "e12 rate over 10.")
    t1 = pd.DataFrame({("context_free", "tar"): [np.nan, 1.0], ("context_dependent", "tar"): [0.5, 1.0]},
                      index=["option_order", "stability"])
    notes = cape._long(t1).set_index(["factor", "setting"])["note"]
    assert notes[("option_order", "context-free")] == cape.NOT_COMPARABLE and notes[("stability", "context-free")] == ""


def test_positions_pooled_over_sessions_are_in_session_order():
    pairs = [("P0_start", 100), ("c1_pre", 310), ("c1_post", 410), ("P0_start", 100), ("c1_post", 442),
             ("c1_pre", 342)]
    assert session_order(pairs) == ["P0_start", "c1_pre", "c1_post"]
