"""Run-level conformance of the ``context_source`` family (e03 A1's conditions), on the shared
case and on copies altered so that each comparison must fail."""
from __future__ import annotations

import copy

import pytest

from contextecho.conformance.case import CaseResult
from contextecho.conformance.context_source import run
from contextecho.conformance.replay import Replay
from contextecho.conformance.runs import run_case
from tests.conformance.conftest import case_of

NAME = "context_source_a1"
pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def case(runs_dir):
    return case_of(runs_dir, NAME)


def _report(case, tmp_path):
    """Our family run alone, on a case held in memory (no declared divergence)."""
    report = CaseResult(case["family"], case["id"])
    run(case, tmp_path, Replay({}), report, [], tmp_path)
    return report


def _failed(report):
    return {(c.section, c.field) for c in report.checks if c.status in ("fail", "not_expressible")}


def test_the_shared_case_passes_through_the_dispatch(case, runs_dir, tmp_path):
    report = run_case(runs_dir / "cases" / f"{NAME}.json", tmp_path, declared=[])
    assert report.error is None and report.passed, _failed(report)
    passed = {(c.section, c.field) for c in report.checks if c.status == "pass"}
    n = len(case["expected"]["tables"]["conditions"])
    assert sum(c.section == "tables" and c.field == "conditions.chars" and c.status == "pass"
               for c in report.checks) == n
    assert {("tables", "conditions.labels"), ("tables", "verbatim_full.sha256"),
            ("tables", "slices.earlier_11K.sha256"), ("stdout", "conditions.chars")} <= passed
    # requests and scores are reported as not covered, never as passed (SPEC §7)
    uncovered = {c.section for c in report.checks if c.status == "not_implemented" and c.field == "coverage"}
    assert uncovered == {"requests", "scores"}


def test_a_changed_record_fails_on_the_texts(case, tmp_path):
    altered = copy.deepcopy(case)
    record = next(r for r in reversed(altered["inputs"]["gpt5_transcript"]["records"])
                  if isinstance(r["content"], str) and r["role"] == "user")
    record["content"] += "!"
    failed = _failed(_report(altered, tmp_path))
    assert ("tables", "verbatim_full.sha256") in failed and ("tables", "slices.recent_3K.sha256") in failed
    assert ("tables", "conditions.content") in failed
    assert ("tables", "slices.filler_14K.sha256") not in failed


def test_condition_order_and_sizes_are_compared(case, tmp_path):
    altered = copy.deepcopy(case)
    conditions = altered["expected"]["tables"]["conditions"]
    altered["expected"]["tables"]["conditions"] = dict(reversed(list(conditions.items())))
    altered["expected"]["stdout"][0]["lines"][-1] = altered["expected"]["stdout"][0]["lines"][-1].replace("14000", "14001")
    assert _failed(_report(altered, tmp_path)) == {("tables", "conditions.labels"), ("stdout", "conditions.chars")}


def test_a_role_and_an_unknown_table_fail(case, tmp_path):
    altered = copy.deepcopy(case)
    altered["expected"]["tables"]["conditions"]["recent3K"]["messages"][1]["role"] = "user"
    altered["expected"]["tables"]["shuffled_real"] = {}
    assert _failed(_report(altered, tmp_path)) == {("tables", "conditions.roles"), ("tables", "shuffled_real")}


def test_a_request_the_harness_sent_is_missing(case, tmp_path):
    altered = copy.deepcopy(case)
    altered["expected"]["requests"] = [{"call": "target", "key": {"condition": "scratch"}, "attempt": 0, "seq": 0}]
    assert ("requests", "set.missing") in _failed(_report(altered, tmp_path))
