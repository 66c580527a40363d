"""Run-level conformance of the ``consolidate`` family: the harness's panel consolidation
recomputed by :func:`contextecho.stats.consolidation.consolidate_contrasts`, on the shared case
and on copies altered so that each comparison must fail."""
from __future__ import annotations

import copy
import json
import math

import pytest

from contextecho.echo.reference.consolidation import CONDITIONS, TARGETS
from contextecho.engine.paths import shared_dir
from contextecho.conformance.consolidate import harness_outputs, run
from contextecho.conformance.runs import run_case
from contextecho.conformance.replay import Replay
from contextecho.conformance.case import CaseResult, decode

CASE = shared_dir() / "reference" / "contextecho" / "runs" / "cases" / "consolidate_12model_perm.json"
pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def case(missing_shared_data):
    if not CASE.is_file():
        missing_shared_data(f"consolidate run fixture not found at {CASE}")
    return json.loads(CASE.read_text(encoding="utf-8"))


def _report(case, tmp_path):
    report = CaseResult(case["family"], case["id"])
    run(case, tmp_path, Replay({}), report, [], tmp_path)
    return report


def _failed(report):
    return {(c.field, c.note) for c in report.checks if c.status in ("fail", "not_expressible")}


def _fields(report, status="fail"):
    return {c.field for c in report.checks if c.status == status}


def test_the_shared_case_passes_through_the_dispatch(case, corpus_dir):
    report = run_case(CASE, corpus_dir, declared=[])
    assert report.error is None and report.passed, _failed(report)
    rows = decode(case["expected"]["tables"]["consolidated_json"])["rows"]
    for name in ("delta", "p_raw", "n", "p_holm_within", "p_holm_panel"):
        checks = [c for c in report.checks if c.field == f"consolidated_json.{name}"]
        assert len(checks) == len(rows) and all(c.status == "pass" for c in checks), name
    # every compute_contrast call, p-values compared exactly
    calls = case["expected"]["tables"]["compute_contrast_calls"]
    assert sum(c.field == "compute_contrast_calls.p_raw" for c in report.checks) == len(calls)
    assert {"n_contrasts", "stdout.skipped", "stdout", "consolidated_md", "return"} <= _fields(report, "pass")


def test_the_skipped_targets_are_those_the_case_lacks(case):
    ours = harness_outputs(decode(case["inputs"]["docs"]), TARGETS, CONDITIONS)
    skipped = [line.split(":")[0].removeprefix("Skipping ") for line in case["expected"]["tables"]["stdout"]
               if line.startswith("Skipping ")]
    assert ours.skipped == skipped and skipped


def test_a_changed_delta_fails_on_its_row(case, tmp_path):
    altered = copy.deepcopy(case)
    row = altered["expected"]["tables"]["consolidated_json"]["rows"][0]
    row["delta"] += 1e-6
    report = _report(altered, tmp_path)
    assert _failed(report) == {("consolidated_json.delta", f"{row['target']} / {row['condition']}")}


def test_a_changed_n_fails_on_its_row(case, tmp_path):
    altered = copy.deepcopy(case)
    row = altered["expected"]["tables"]["consolidated_json"]["rows"][1]
    row["n"] += 1
    report = _report(altered, tmp_path)
    assert _failed(report) == {("consolidated_json.n", f"{row['target']} / {row['condition']}")}


def test_a_p_value_is_compared_exactly(case, tmp_path):
    """We claim the harness's resampling, so the last digit of a p-value counts."""
    altered = copy.deepcopy(case)
    call = next(c for c in altered["expected"]["tables"]["compute_contrast_calls"]
                if isinstance(c["result"][1], float) and 0 < c["result"][1] < 1)
    call["result"][1] += 1e-12
    report = _report(altered, tmp_path)
    failed = [c for c in report.checks if c.status == "fail"]
    assert [c.field for c in failed] == ["compute_contrast_calls.p_raw"]
    assert "harness's resampling" in failed[0].note


def test_a_missing_doc_is_skipped_and_fails_where_the_harness_did_not_skip_it(case, tmp_path):
    altered = copy.deepcopy(case)
    present = [k for k in altered["inputs"]["docs"]]
    del altered["inputs"]["docs"][present[-1]]
    report = _report(altered, tmp_path)
    failed = _fields(report)
    assert {"stdout.skipped", "stdout", "consolidated_json.rows", "n_contrasts",
            "compute_contrast_calls.order", "consolidated_md"} <= failed
    skipped = next(c for c in report.checks if c.field == "stdout.skipped")
    assert len(skipped.actual) == len(skipped.expected) + 1


def test_unknown_expected_fields_fail(case, tmp_path):
    altered = copy.deepcopy(case)
    tables = altered["expected"]["tables"]
    tables["consolidated_ci"] = {"lo": 0.1}
    tables["consolidated_json"]["rows"][2]["ci_lo"] = 0.0
    tables["consolidated_json"]["bootstrap"] = 1
    altered["expected"]["figures"] = []
    report = _report(altered, tmp_path)
    assert {"consolidated_ci", "consolidated_json.ci_lo", "consolidated_json.bootstrap", "figures"} == _fields(report)


def test_another_runner_or_input_is_not_expressible(case, tmp_path):
    altered = copy.deepcopy(case)
    altered["harness_driver"].append({"runner": "analysis/other.py"})
    altered["inputs"]["session"] = "x.jsonl"
    report = _report(altered, tmp_path)
    assert {c.field for c in report.checks if c.status == "not_expressible"} == {"analysis/other.py", "session"}


def test_a_substituted_target_list_is_what_main_reads(case, tmp_path):
    """A driver's TARGETS substitution replaces the harness's list (held-out cases)."""
    altered = copy.deepcopy(case)
    altered["harness_driver"][0]["substitutions"] = {"TARGETS": [["GPT-4o", "CONTENT_POSITION_GPT4O.json"]]}
    report = _report(altered, tmp_path)
    rows = next(c for c in report.checks if c.field == "consolidated_json.rows")
    assert rows.status == "fail" and {t for t, _ in rows.actual} == {"GPT-4o"}


def test_main_stops_where_its_formatting_raises():
    """A run's own paired result without a p-value: main's headline line raises, so it
    writes neither file and the case's return names the exception."""
    run_ = {"paired_vs_scratch": {"recent3K": {"mean_diff_vs_scratch": -0.5}}, "full_results": {}}
    ours = harness_outputs({"docs/a.json": run_}, [("A", "a.json"), ("B", None)], ["recent3K", "filler14K"])
    assert ours.returned["raises"] == "TypeError"
    assert ours.consolidated_json is None and ours.consolidated_md is None and ours.stdout == []
    assert ours.calls[0]["result"] == [-0.5, None, 25]
    assert math.isnan(ours.calls[1]["result"][0]) and ours.calls[1]["result"][2] == 0
