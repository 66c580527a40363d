"""Run-level conformance of the A-anchor along the trajectory (:mod:`contextecho.conformance.anchor_trajectory`):
the harness's A-anchor probe runners and its Fig.-5 forest replayed through our panel, and
cases altered so that a comparison must fail."""
from __future__ import annotations

import pytest

from contextecho.conformance import a_anchor, anchor_trajectory
from contextecho.conformance.case import FAIL, NOT_EXPRESSIBLE
from contextecho.conformance.runs import FAMILIES, FAMILY_RUNS, run_case
from tests.conformance.conftest import case_of, status_of, write_case

CASES = ("anchor_trajectory_12pos", "a_anchor_probes_xtarget")


@pytest.mark.corpus
@pytest.mark.parametrize("name", CASES)
def test_the_trajectory_cases_pass(name, runs_dir, corpus_dir):
    report = run_case(runs_dir / "cases" / f"{name}.json", corpus_dir)
    assert report.error is None, report.error
    bad = [(c.section, c.field, c.note[:200]) for c in report.checks if c.status in (FAIL, NOT_EXPRESSIBLE)]
    assert not bad, bad
    forest = [c for c in report.checks if c.field.startswith("fig5_forest_rows.")]
    assert forest and all(c.status == "pass" for c in forest)
    for name_ in ("set.missing", "set.extra", "stored", "response_text", "score", "lost_cells_contribute_nothing"):
        section = "requests" if name_.startswith("set.") else "cells"
        assert status_of(report, section, name_) == "pass"


@pytest.mark.corpus
def test_an_altered_bound_order_and_system_prompt_fail(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "a_anchor_probes_xtarget")
    rows = case["expected"]["tables"]["fig5_forest_rows"]
    rows[0]["a_hi"] += 1e-6  # a bootstrap bound is compared exactly
    rows[0], rows[1] = rows[1], rows[0]
    for request in case["expected"]["requests"]:  # the A arm's system prompt is e11's: pretend e15's
        if request["call"] == "target" and request["key"]["arm"] == "A_COMBINED" and request["key"]["target"] == "gpt-5":
            request["params"]["messages"][0]["content"] = "You are an AI assistant working on a long agentic coding task."
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "tables", "fig5_forest_rows.order") == FAIL
    a_hi = [c.status for c in report.checks if c.field == "fig5_forest_rows.a_hi"]
    assert a_hi.count(FAIL) == 1 and len(a_hi) == len(rows)
    assert any(c.section == "requests" and c.field.startswith("params.messages") and c.status == FAIL
               for c in report.checks)


@pytest.mark.corpus
def test_a_lost_anchor_cell_not_redone_fails(runs_dir, corpus_dir, tmp_path):
    """The 12-position runner redoes the A cell the A-probe runner lost, under its own system
    prompt: with that second reply a failure too, the cell the harness stored is missing."""
    case = case_of(runs_dir, "anchor_trajectory_12pos")
    for reply in case["canned_replies"]:
        key = reply["key"]
        if reply["call"] == "target" and key["arm"] == "A_COMBINED" and key["position"] == "P0_start" \
                and len(reply["reply"]) > 1:
            reply["reply"] = [reply["reply"][0]]
            break
    else:
        pytest.fail("the case has no A cell redone after a failure")
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "cells", "stored") == FAIL


def test_registered_and_delegated():
    assert "anchor_trajectory" in FAMILIES and FAMILY_RUNS["anchor_trajectory"] is anchor_trajectory.run
    probes_case = {"harness_driver": [{"runner": r} for r in anchor_trajectory.RUNNERS]}
    assert a_anchor.delegate_of(probes_case).run is anchor_trajectory.run
    assert anchor_trajectory.harness_arm("real", "A_COMBINED_E15") == "A_COMBINED"
    assert anchor_trajectory.harness_arm("real", "none") == "claude_session"
