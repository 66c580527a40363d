"""Run-level conformance of the negative controls (``run_negative_controls.py``, through the
panel's drive) and of e16's probe-framing ablation (:mod:`contextecho.conformance.framing`):
the shared cases pass, and cases altered so that a comparison must fail do fail."""
from __future__ import annotations

import pytest

from contextecho.conformance.case import FixtureError
from contextecho.conformance.framing import case_framings
from contextecho.conformance.runs import FAMILIES, run_case
from tests.conformance.conftest import case_of, status_of, write_case

CASES = {"negative_controls": "negative_controls_xorg", "framing": "framing_e16"}


def test_both_families_are_known():
    assert set(CASES) <= set(FAMILIES)


def test_case_framings_are_read_as_ours():
    assert case_framings({"with_framing": "PROBE_FRAMING + '\\n\\n'", "without_framing": ""}, "c") == {
        "with_framing": "framed", "without_framing": "bare"}
    with pytest.raises(FixtureError, match="neither"):
        case_framings({"odd": "Please answer:"}, "c")


@pytest.mark.corpus
@pytest.mark.parametrize("family", sorted(CASES))
def test_the_shared_case_passes(family, runs_dir, corpus_dir):
    report = run_case(runs_dir / "cases" / f"{CASES[family]}.json", corpus_dir)
    assert report.error is None, report.error
    assert report.passed, [(c.section, c.field, c.expected, c.actual, c.note) for c in report.checks
                           if c.status not in ("pass", "declared")]
    assert status_of(report, "cells", "stored") == "pass"
    assert status_of(report, "requests", "params.messages") == "pass"


@pytest.mark.corpus
def test_a_negative_control_with_another_text_fails(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, CASES["negative_controls"])
    for r in case["expected"]["requests"]:
        if r["call"] == "judge" and r["key"]["item"] == "N01":
            r["params"]["messages"][0]["content"] = r["params"]["messages"][0]["content"].replace("7 times 8", "7x8")
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "requests", "params.messages") == "fail"


@pytest.mark.corpus
def test_a_framing_summary_that_differs_fails(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, CASES["framing"])
    results = case["expected"]["tables"]["framing_results"]
    results["with_framing"]["C01"]["scores"] = [3, 3]
    results["without_framing"]["_overall"]["n"] += 1
    case["expected"]["tables"]["framing_effect"] += 0.5
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert not report.passed
    failed = {c.field for c in report.checks if c.status == "fail"}
    assert {"framing_results.probe.scores", "framing_results.overall.n", "framing_effect"} <= failed
    assert status_of(report, "tables", "framing_results._meta.framing_effect_overall") == "pass"
