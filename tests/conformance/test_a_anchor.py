"""Run-level conformance of the ``a_anchor`` family (:mod:`contextecho.conformance.a_anchor`):
the harness's e04 anchor runners replayed through our anchored grids, and cases altered so
that a comparison must fail."""
from __future__ import annotations

import pytest

from contextecho.conformance import a_anchor
from contextecho.conformance.case import FAIL, NOT_EXPRESSIBLE
from contextecho.conformance.runs import FAMILIES, FAMILY_RUNS, run_case
from tests.conformance.conftest import case_of, status_of, write_case

CASES = ("a_anchor_variants_sonnet46", "a_anchor_size_decay")


@pytest.mark.corpus
@pytest.mark.parametrize("name", CASES)
def test_the_anchor_cases_pass(name, runs_dir, corpus_dir):
    report = run_case(runs_dir / "cases" / f"{name}.json", corpus_dir)
    assert report.error is None, report.error
    bad = [(c.section, c.field, c.note[:200]) for c in report.checks if c.status in (FAIL, NOT_EXPRESSIBLE)]
    assert not bad, bad
    sections = {c.section for c in report.checks}
    assert {"requests", "cells", "tables"} <= sections


@pytest.mark.corpus
def test_an_altered_reply_and_table_fail(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "a_anchor_size_decay")
    case["expected"]["tables"]["anchor_decay"]["means"][0] += 0.5
    for reply in case["canned_replies"]:
        if reply["call"] == "target" and reply["key"]["arm"] == "large" and reply["key"]["item"] == "C02":
            reply["reply"] = [{"text": "altered reply"}]
            break
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "tables", "anchor_decay.means") == FAIL
    assert status_of(report, "cells", "anchored.response_text") == FAIL


def test_registered():
    assert "a_anchor" in FAMILIES and FAMILY_RUNS["a_anchor"] is a_anchor.run


def test_a_case_of_another_modules_runners_is_delegated(monkeypatch):
    seen = []
    monkeypatch.setattr(a_anchor, "DELEGATES", [a_anchor.Delegate(("x/run_a.py", "x/run_b.py"),
                                                                  lambda *args: seen.append(args[0]["id"]))])
    case = {"id": "c", "harness_driver": [{"runner": "x/run_a.py"}, {"runner": "plotting/p.py"}]}
    a_anchor.run(case, None, None, None, (), None)
    assert seen == ["c"]
    assert a_anchor.delegate_of({"harness_driver": [{"runner": "x/run_a.py"}, {"runner": "y.py"}]}) is None


def test_cell_identity_reads_each_anchored_layout():
    ident = a_anchor.cell_identity
    assert ident("results/anchor_variants/V1_BEHAVIORAL/t/P0_start/v03/cell.json", {"variant": "V1_BEHAVIORAL"}) == \
        ("t", "P0_start", "V1_BEHAVIORAL", "S2_v03")
    assert ident("results/dual_surface_pilot/CAND_A_COMBINED/stressors/t/P1/v00/cell.json", {}) == \
        ("t", "P1", "A_COMBINED", "S2_v00")
    assert ident("results/anchor_variants/V3_SYSTEM_INJECT/t/P/C01.json", {"probe_id": "C01"}) \
        == ("t", "P", "V3_SYSTEM_INJECT", "C01")
    assert ident("results/anchor_size_sweep/large/t/C02.json", {"size": "large"}) == ("t", None, "large", "C02")
    assert ident("results/anchor_decay/t/N05/C03.json", {"n_offset": 5}) == ("t", None, "N05", "C03")
    # a probe cell of e15's layout is not an anchored one
    assert ident("results/probes_at_crosscompaction/t/P/claude_session/C01.json", {}) is None
    assert ident("results/cross_compaction/t/P0_start/v00/claude.json", {}) == ("t", "P0_start", "claude_session",
                                                                                 "S2_v00")
    assert ident("results/other/t/x.json", {"score": 1}) is None
