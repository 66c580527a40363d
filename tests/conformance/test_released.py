"""Run-level conformance from a release (``conformance RUNS --released``): the replay answered by
the case's cells read as the authors' release; a cell the release lacks is never answered."""
from __future__ import annotations

import json

import pytest

from contextecho.__main__ import main
from contextecho.conformance.case import NOT_IN_RELEASE
from contextecho.conformance.released import REQUESTS_NOTE
from contextecho.echo.reference.released_answers import ReleasedReplies
from contextecho.echo.reference.released_answers import key_text
from contextecho.conformance.runs import run_case
from contextecho.echo.reference.judge import parse_verdict
from contextecho.echo.reference.released import import_release
from tests.conformance.conftest import case_of, status_of, write_case

KEY = {"target": "t", "position": "P0_start", "turn": 100, "arm": "claude_session", "item": "C01"}
RECORD = {"probe_id": "C01", "arm": "claude_session", "position": "P0_start", "target": "t",
          "response_text": "Sure: ls", "response_len": 8, "score": -1, "label": "parse_error",
          "reason": "KeyError: 'score'", "input_tokens": 10, "output_tokens": 2}


def _replies(tmp_path, cells: dict) -> ReleasedReplies:
    for path, record in cells.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(json.dumps(record), encoding="utf-8")
    return ReleasedReplies(import_release(tmp_path).cells)


def test_a_released_cell_answers_its_target_and_its_judge(tmp_path):
    replies = _replies(tmp_path, {"results/probes_at_crosscompaction/t/P0_start/claude_session/C01.json": RECORD})
    assert replies.get(("target", key_text(KEY))) == [{"text": "Sure: ls",
                                                       "usage": {"input_tokens": 10, "output_tokens": 2}}]
    [judge] = replies.get(("judge", key_text(KEY)))
    verdict = parse_verdict(judge["text"])  # the −1 cell is given back as the reply that fails the same way
    assert (verdict.score, verdict.label, verdict.reason) == (-1, "parse_error", "KeyError: 'score'")
    assert not replies.missing


def test_a_cell_the_release_lacks_is_missing_and_never_answered(tmp_path):
    replies = _replies(tmp_path, {"results/probes_at_crosscompaction/t/P0_start/claude_session/C01.json": RECORD})
    other = {**KEY, "arm": "filler"}
    assert replies.get(("target", key_text(other))) is None
    assert replies.get(("target", key_text({**KEY, "item": "C02"}))) is None
    assert replies.get(("cross_judge", key_text(KEY))) is None  # the audit's verdict is no probe cell's
    assert replies.missing == [("target", key_text(other)), ("target", key_text({**KEY, "item": "C02"})),
                               ("cross_judge", key_text(KEY))]
    assert replies.get(("judge", key_text(other)), "none") == "none"


def test_the_cell_naming_most_of_the_key_answers_and_a_tie_is_ambiguous(tmp_path):
    # the size sweep names no position: a key with one still finds it; two sweeps of one target tie
    size = {"probe_id": "C01", "target": "t", "size": "small", **{k: RECORD[k] for k in
                                                                  ("response_text", "response_len", "score", "label",
                                                                   "reason")}}
    replies = _replies(tmp_path, {"results/anchor_size_sweep/small/t/C01.json": size,
                                  "results/other/anchor_size_sweep/small/t/C01.json": size})
    key = {"target": "t", "position": "P5_pre_C6", "turn": 3, "arm": "small", "item": "C01"}
    assert replies.get(("target", key_text(key))) is None
    assert [a[2] for a in replies.ambiguous] == [["results/anchor_size_sweep/small/t/C01.json",
                                                  "results/other/anchor_size_sweep/small/t/C01.json"]]


@pytest.mark.corpus
def test_a_case_replayed_from_its_release_passes_with_requests_not_in_the_release(runs_dir, corpus_dir):
    report = run_case(runs_dir / "cases" / "framing_e16.json", corpus_dir, released=True)
    assert report.passed, [(c.section, c.field, c.expected, c.actual) for c in report.checks if c.status == "fail"]
    assert [(c.field, c.note) for c in report.checks if c.section == "requests"] == \
        [("set, order, attempts, params", REQUESTS_NOTE)]
    assert status_of(report, "requests", "set, order, attempts, params") == NOT_IN_RELEASE
    for name in ("import", "ambiguous", "unrenderable_verdicts", "target_cells_asked"):
        assert status_of(report, "release", name) == "pass"
    assert status_of(report, "cells", "stored") == "pass"
    assert any(c.field.startswith("framing_results") and c.status == "pass" for c in report.checks)


@pytest.mark.corpus
def test_the_tables_are_computed_from_the_released_cells(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "framing_e16")
    cell = next(c for c in case["expected"]["cells"] if c["record"]["score"] == 3)
    cell["record"]["score"] = 0  # the release says 0 where the harness's table read 3
    report = run_case(write_case(tmp_path, case), corpus_dir, released=True)
    assert not report.passed
    assert any(c.field.startswith("framing_results") and c.status == "fail" for c in report.checks)


@pytest.mark.corpus
def test_a_lost_cell_stays_lost(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "negative_controls_xorg")
    case["expected"]["cells"].pop(0)  # as if the harness had lost it
    asked_keys = {key_text(r["key"]) for r in case["expected"]["requests"] if r["call"] == "target"}
    lost = len(asked_keys) - len(case["expected"]["cells"])  # the harness's lost cell, and this one
    assert lost == 2
    report = run_case(write_case(tmp_path, case), corpus_dir, released=True)
    assert status_of(report, "cells", "lost_cells_contribute_nothing") == "pass"
    asked = next(c for c in report.checks if c.section == "release" and c.field == "target_cells_asked")
    assert asked.status == "pass" and asked.note.startswith(f"{lost} asked that the release lacks")


@pytest.mark.corpus
def test_a_case_whose_runners_write_no_cell_is_not_covered(runs_dir, corpus_dir):
    report = run_case(runs_dir / "cases" / "cross_judge_b3.json", corpus_dir, released=True)
    assert status_of(report, "case", "replay") == NOT_IN_RELEASE
    assert [c.status for c in report.checks] == [NOT_IN_RELEASE]


@pytest.mark.corpus
def test_the_cli_flag(runs_dir, corpus_dir, tmp_path, capsys):
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "s2_e10_crossorg.json").write_text((runs_dir / "cases" / "s2_e10_crossorg.json").read_text())
    assert main(["conformance", str(tmp_path), "--corpus", str(corpus_dir), "--released"]) == 0
    out = capsys.readouterr().out
    assert "replies from each case's cells read as a release" in out and "1 not in the release" in out
    assert main(["conformance", str(runs_dir.parent / "fixtures"), "--released"]) == 2
