"""The anchor notebook's all-four-axes headline sentence, and the budget each axes judge and
validator is asked at (pure functions: no model, no corpus)."""
from __future__ import annotations

import pandas as pd

from contextecho.anchor.axes.report import all_axes_rates
from contextecho.anchor.axes.rubric import AXES
from contextecho.anchor.axes.turns import FORK, REAL, JudgedTurn
from contextecho.anchor.persona import CODING_ASSISTANT
from contextecho.experiments.anchor import MANUSCRIPT, all_held_sentence
from contextecho.experiments.anchor_axes import axes_judge_params, judge_jobs
from contextecho.paper.outputs import manuscript_value

JUDGE = "j/a"
ALL, ONE_OFF, UNDECIDED = ["held"] * 4, ["held", "deviated", "held", "held"], ["held", "error", "held", "held"]


def frame(real, fork):
    """Axis rows of the primary judge: ``real`` and ``fork`` are ``(session, statuses)`` per turn."""
    return pd.DataFrame([{"turn_id": f"{source}{t}", "judge_model": JUDGE, "source": source, "session": session,
                          "step": t, "target": "recorded" if source == REAL else "x/target", "axis": axis,
                          "status": status}
                         for source, turns in ((REAL, real), (FORK, fork))
                         for t, (session, statuses) in enumerate(turns) for axis, status in zip(AXES, statuses)])


def sentence(real, fork):
    """The sentence as the stage writes it: the values first, as the manuscript writes them."""
    rates = all_axes_rates(frame(real, fork), ci=True, n_resamples=400, seed=3).set_index("source")
    written = {}
    for source, row in rates.iterrows():
        for template, value in (("axes_all_held_{source}", row.all_held_rate),
                                ("axes_all_held_ci_{source}", (row.ci_low, row.ci_high))):
            written[template.format(source=source)] = manuscript_value(MANUSCRIPT.variable(template), value,
                                                                       row.ci_note or "no decided turn")
    return all_held_sentence(written, rates, JUDGE)


def test_the_sentence_gives_each_source_its_count_share_and_interval():
    said = sentence([("a", ALL), ("a", ONE_OFF), ("b", ALL), ("b", UNDECIDED)], [("a", ALL), ("b", ONE_OFF)])
    assert said.startswith("Under the primary judge (j/a) 2 of the 3 decided real turns (0.67, 95% CI [")
    assert "and 1 of the 2 decided forked turns (0.50, 95% CI [0.00, 1.00]) held all four axes (1 more had no " \
           "deviation but an axis without a valid verdict)" in said


def test_a_source_without_a_decided_turn_or_an_interval_says_so():
    said = sentence([("a", ALL), ("a", ONE_OFF)], [("a", UNDECIDED)])
    assert "1 of the 2 decided real turns (0.50, no interval: bootstrap by" in said
    assert "; no forked turn was decided;" in said


def test_a_share_that_cannot_vary_measures_nothing():
    none = sentence([("a", ONE_OFF), ("b", ONE_OFF), ("b", UNDECIDED)], [("a", ONE_OFF)])
    assert none == ("On this build the share of turns holding all four axes measures nothing: none of the 3 turns "
                    "decided under j/a held all four: each deviated on at least one axis (1 more had no deviation but an "
                    "axis without a valid verdict), so the share does not vary between turns; a capable judge and "
                    "the notebook's paper-scale set would make it a measurement.")
    every = sentence([("a", ALL)], [("b", ALL)])
    assert "measures nothing: every one of the 2 turns decided under j/a held all four, so" in every
    undecided = sentence([("a", UNDECIDED)], [("a", UNDECIDED)])
    assert "measures nothing: no turn has a valid verdict from j/a on every axis, nor a deviation (2 turns " \
           "undecided); a capable judge would" in undecided


def test_each_judge_is_asked_at_its_providers_budget_and_the_embedded_one_as_before():
    """The embedded judge's request is the one it always was (its cached verdicts still answer
    it); a Gemini judge, a thinking model, gets the reference protocol's floor of 16,384."""
    assert axes_judge_params("local/smollm2-135m", 8) == {"temperature": 0, "max_tokens": 8}
    assert axes_judge_params("anthropic/claude-sonnet-4-5", 400) == {"temperature": 0, "max_tokens": 400}
    assert axes_judge_params("gemini/gemini-2.5-flash", 400) == {"temperature": 0.0, "max_tokens": 16384}
    assert axes_judge_params("openai/gpt-4.1", 400) == {"temperature": 0, "max_completion_tokens": 400}
    turn = JudgedTurn(REAL, "s", 3, "u3", "recorded", "Run the tests.", "Two fail.")
    jobs = judge_jobs([turn], ["local/smollm2-135m", "gemini/gemini-2.5-flash"], CODING_ASSISTANT, 8)
    assert [(j.judge, j.request.params["max_tokens"]) for j in jobs] == \
        [("local/smollm2-135m", 8)] * 4 + [("gemini/gemini-2.5-flash", 16384)] * 4
