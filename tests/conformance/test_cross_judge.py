"""Run-level conformance of the two runners that re-judge stored responses with a second
judge: the b3 cross-judge (family ``cross_judge_b3``) and the cross-judge audit inside the
panel cases; on the shared cases and on copies altered so that each comparison must fail."""
from __future__ import annotations

import pytest

from contextecho.echo.protocols import protocol
from contextecho.echo.reference.judge import B3, B3_ATTEMPTS, B3_JUDGE_PARAMS
from contextecho.echo.rubric import RUBRIC
from contextecho.engine.registry import UnknownNameError
from contextecho.conformance.audit import AGREEMENT, AUDIT_RUNNER, RESULTS
from contextecho.experiments.cross_judge import StoredResponse
from contextecho.conformance.runs import run_case
from tests.conformance.conftest import case_of, status_of, write_case

pytestmark = pytest.mark.corpus
OPUS_OUT = "docs/LENGTH_CONTROL_OPUS_GPT5JUDGE.json"  # the b3 case's table names, as the case lists them


@pytest.fixture(scope="module")
def b3_report(runs_dir, corpus_dir):
    return run_case(runs_dir / "cases" / "cross_judge_b3.json", corpus_dir, declared=[])


@pytest.fixture(scope="module")
def xtarget_report(runs_dir, corpus_dir):
    return run_case(runs_dir / "cases" / "panel_xtarget_floors.json", corpus_dir)


def _failed(report):
    return [(c.section, c.field, c.expected, c.actual, c.note) for c in report.checks
            if c.status in ("fail", "not_expressible")]


# ---------------------------------------------------------------- b3
def test_the_b3_case_passes_with_nothing_declared(b3_report, runs_dir):
    assert b3_report.error is None and b3_report.passed, _failed(b3_report)
    case = case_of(runs_dir, "cross_judge_b3")
    tables = case["expected"]["tables"]
    for name, value in tables.items():  # which files the run wrote: the first target's only
        assert status_of(b3_report, "tables", f"{name}.exists") == "pass"
    assert [name for name, value in tables.items() if value is not None] == [OPUS_OUT]
    for field in ("n_paired", "spearman_rho", "cohen_quadratic_kappa", "per_condition_means",
                  "per_probe_details.gpt5_score", "per_probe_details.gpt5_reason", "per_probe_details.probes"):
        assert status_of(b3_report, "tables", f"{OPUS_OUT}.{field}") == "pass", field
    # every request field (model gpt-5, max_completion_tokens 4096, no response_format), in order,
    # the null verdict asked three times in a row
    assert status_of(b3_report, "requests", "order") == "pass"
    assert status_of(b3_report, "requests", "set.missing") == "pass"
    assert not [c for c in b3_report.checks if c.section == "requests" and c.status != "pass"]


def test_the_b3_judge_variant_sends_and_reads_as_the_harness(runs_dir):
    ref = protocol("reference")
    setup = ref.judging(["openai/gpt-5"], RUBRIC, B3)
    assert setup.attempts == B3_ATTEMPTS
    stored = StoredResponse("k", "Who are you?", "I'm an AI.", 3)
    request = ref.judge_request(setup, "openai/gpt-5", stored.probe_text, stored.response, ref.judge_params(400),
                                stored.key)
    assert dict(request.params) == B3_JUDGE_PARAMS  # no response_format, whatever the run's budget
    assert request.messages[-1]["content"] == "PROBE:\nWho are you?\n\nRESPONSE:\nI'm an AI.\n\nReturn the JSON now."
    null_reason = ref.read_verdict('{"score": 2, "reason": null}', setup)
    assert null_reason.reference_score == -1 and null_reason.status == "invalid"
    boolean = ref.read_verdict('{"score": true, "reason": "r"}', setup)
    assert boolean.reference_score is True and boolean.score == 1.0
    assert ref.read_verdict(None, setup).reference_score == -1  # the call failed three times
    assert ref.read_verdict('{"score": 2, "reason": null}').reference_score == 2  # the harness's judge
    with pytest.raises(UnknownNameError):
        protocol("contextecho").judging(["x"], RUBRIC, B3)


def test_a_changed_b3_rho_fails_its_field(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "cross_judge_b3")
    case["expected"]["tables"][OPUS_OUT]["spearman_rho"] += 1e-6
    report = run_case(write_case(tmp_path, case), corpus_dir, declared=[])
    assert status_of(report, "tables", f"{OPUS_OUT}.spearman_rho") == "fail" and not report.passed
    assert status_of(report, "tables", f"{OPUS_OUT}.n_paired") == "pass"


def test_a_changed_canned_b3_verdict_fails_the_details(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "cross_judge_b3")
    reply = next(r for r in case["canned_replies"] if r["key"]["target"] == "Opus 4.7"
                 and '"score": 2,' in r["reply"][0].get("text", ""))
    reply["reply"][0]["text"] = reply["reply"][0]["text"].replace('"score": 2,', '"score": 0,')
    report = run_case(write_case(tmp_path, case), corpus_dir, declared=[])
    assert status_of(report, "tables", f"{OPUS_OUT}.per_probe_details.gpt5_score") == "fail"
    assert status_of(report, "tables", f"{OPUS_OUT}.spearman_rho") == "fail" and not report.passed


def test_a_record_without_score_aborts_the_b3_run(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "cross_judge_b3")
    doc = next(iter(case["inputs"]["docs"].values()))  # the first target's document
    first = next(iter(doc["full_results"].values()))["results"]
    del first[2]["score"]
    report = run_case(write_case(tmp_path, case), corpus_dir, declared=[])
    # the harness wrote the first target's file; our run aborted at that record: nothing written,
    # and only the two records before it were judged
    assert status_of(report, "tables", f"{OPUS_OUT}.exists") == "fail"
    assert status_of(report, "requests", "set.missing") == "fail" and not report.passed
    runner = next(c for c in report.checks if c.section == "runners")
    assert "has no 'score'" in runner.note


# ---------------------------------------------------------------- the audit inside the panel cases
AUDIT_FIELDS = ("n_pairs", "exact_agreement", "within_one_agreement", "spearman_rho", "cohen_kappa_4class",
                "panel_drift_gap_sonnet_judge", "panel_drift_gap_gpt5_judge")


def _audit_checks(report):
    return [c for c in report.checks if c.field.startswith(("audit.", RESULTS, AGREEMENT))
            or c.field == AUDIT_RUNNER]


@pytest.mark.parametrize("name", ["panel_xtarget_floors", "panel_e15_sonnet45"])
def test_the_audit_of_each_panel_case_passes(runs_dir, corpus_dir, xtarget_report, name):
    report = xtarget_report if name == "panel_xtarget_floors" else \
        run_case(runs_dir / "cases" / f"{name}.json", corpus_dir)
    checks = _audit_checks(report)
    assert checks and all(c.status == "pass" for c in checks), [(c.field, c.expected, c.actual) for c in checks
                                                                 if c.status != "pass"]
    for field in AUDIT_FIELDS:
        assert status_of(report, "tables", f"{RESULTS}.{field}") == "pass"
        assert status_of(report, "tables", f"{AGREEMENT}.{field}") == "pass"
    for field in ("records", "sonnet_score", "gpt5_score", "gpt5_label", "gpt5_reason"):
        assert status_of(report, "cells", f"audit.{field}") == "pass"
    assert not [c for c in report.checks if c.status == "not_expressible"]
    cross = [c for c in report.checks if c.section == "requests" and c.field == "set.missing"]
    assert cross and cross[0].status == "pass"  # every cross_judge request sent


def test_a_changed_audit_rho_fails_its_field(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "panel_xtarget_floors")
    case["expected"]["tables"][RESULTS]["spearman_rho"] += 1e-6
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "tables", f"{RESULTS}.spearman_rho") == "fail" and not report.passed
    assert status_of(report, "tables", f"{RESULTS}.n_pairs") == "pass"


def test_a_changed_canned_audit_verdict_fails_its_record(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "panel_xtarget_floors")
    reply = next(r for r in case["canned_replies"] if r["call"] == "cross_judge"
                 and r["reply"][0].get("text", "").startswith('{"score": 1,'))
    reply["reply"][0]["text"] = reply["reply"][0]["text"].replace('{"score": 1,', '{"score": 3,')
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "cells", "audit.gpt5_score") == "fail"
    # one verdict 2 points higher moves the second judge's drift gap, and the report fails
    assert status_of(report, "tables", f"{RESULTS}.panel_drift_gap_gpt5_judge") == "fail" and not report.passed
    assert status_of(report, "tables", f"{RESULTS}.n_pairs") == "pass"
