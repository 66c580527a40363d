"""Run-level conformance of the instruction-override (e11) and length-scaling (e12) cases,
of e07's cut points in the positions files, and of a content-list reply's rendering."""
from __future__ import annotations

import pytest

from contextecho.conformance.case import load_declared
from contextecho.conformance.replay import render_reply
from contextecho.conformance.runs import check_positions, run_case
from tests.conformance.conftest import case_of, status_of, write_case

CASES = ("instruction_override_e11", "length_scaling_e12")


def test_a_mistral_content_list_is_read_as_litellm_gives_it():
    spec = {"content_list": [{"type": "thinking", "thinking": "one command"}, {"type": "text", "text": "git status"}],
            "usage": {"input_tokens": 5, "output_tokens": 2}}
    assert render_reply(spec, "mistral/mistral-small-latest").choices[0].message.content == "git status"
    # LiteLLM's response model refuses a list from any other provider: our call site reads it as unusable
    assert isinstance(render_reply(spec, "together_ai/moonshotai/Kimi-K2.6").choices[0].message.content, list)


@pytest.mark.corpus
@pytest.mark.parametrize("name", CASES)
def test_the_case_passes_whole(runs_dir, corpus_dir, name):
    report = run_case(runs_dir / "cases" / f"{name}.json", corpus_dir, load_declared())
    assert report.passed, (report.error, [(c.section, c.field, c.expected, c.actual, c.note)
                                          for c in report.checks if c.status != "pass"])
    assert status_of(report, "cells", "stored") == "pass" and status_of(report, "cells", "compliance") == "pass"


@pytest.mark.corpus
def test_a_changed_reply_fails_the_cells(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "instruction_override_e11")
    first = case["expected"]["cells"][0]["record"]
    first["compliance"] = 1 - first["compliance"]
    report = run_case(write_case(tmp_path, case), corpus_dir, load_declared())
    assert status_of(report, "cells", "compliance") == "fail"


@pytest.mark.corpus
def test_other_cut_indices_fail_the_requests(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "length_scaling_e12")
    for driver in case["harness_driver"]:
        if "PROBE_CUT_INDICES" in (driver.get("substitutions") or {}):
            driver["substitutions"]["PROBE_CUT_INDICES"] = [1, 24]
    report = run_case(write_case(tmp_path, case), corpus_dir, load_declared())
    assert status_of(report, "requests", "set.missing") == "fail"


@pytest.mark.corpus
def test_select_cutpoints_is_compared_in_every_positions_file(runs_dir, corpus_dir):
    declared = load_declared()
    for path in sorted((runs_dir / "positions").glob("*.json")):
        report = check_positions(path, corpus_dir, declared)
        ours = [c for c in report.checks if c.field.startswith("select_cutpoints")]
        assert ours and all(c.status == "pass" for c in ours), (path.name, [(c.field, c.expected, c.actual)
                                                                             for c in ours if c.status != "pass"])
        assert not any(c.status == "not_implemented" for c in report.checks)
