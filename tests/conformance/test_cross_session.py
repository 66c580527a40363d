"""Run-level conformance of the cross-session family (run_crosssession's probes and e09's S2 on
other sessions, the cross-session figure and the S2 audit): the shared cases pass whole,
altered copies fail on the field that was altered; and the cross-session experiment's pieces
(run_crosssession's positions and prefixes under ``reference``, the figure's trajectories and
gaps, the audit's session labels, e09's request rules) on hand-made inputs."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from contextecho.conformance.case import load_declared
from contextecho.conformance.runs import run_case
from tests.conformance.conftest import status_of
from contextecho.echo.instruments import UNIFORM_SCHEMES
from contextecho.echo.protocol import Positions
from contextecho.echo.protocols import protocol
from contextecho.echo.reference.role_rows import CROSSSESSION, crosssession_rows, line_prefix
from contextecho.echo.reference.s2_requests import S2_REQUESTS, for_runner
from contextecho.experiments import cross_session as xs
from contextecho.stats.judge_free import StressorCell, harness_audit_session, harness_compliance_audit

CASES = ("cross_session_sonnet45", "cross_session_e09_s2")


def _failing(report):
    return {(c.section, c.field) for c in report.checks if c.status in ("fail", "not_expressible")}


@pytest.fixture(scope="module")
def shared_reports(runs_dir, corpus_dir):
    return {name: run_case(runs_dir / "cases" / f"{name}.json", corpus_dir, load_declared()) for name in CASES}


def _altered(runs_dir, corpus_dir, tmp_path, name, change):
    case = json.loads((runs_dir / "cases" / f"{name}.json").read_text())
    change(case)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(case))
    return run_case(path, corpus_dir, load_declared())


# ---------------------------------------------------------------- the shared cases
@pytest.mark.corpus
def test_the_shared_cross_session_cases_pass_whole(shared_reports):
    for name, report in shared_reports.items():
        assert report.passed, (name, report.error, [(c.section, c.field, c.expected, c.actual, c.note)
                                                    for c in report.checks if c.status != "pass"])
        assert {"requests", "cells", "tables"} <= {c.section for c in report.checks if c.status == "pass"}
        assert {c.section for c in report.checks if c.status == "declared"} <= {"requests"}
    figure = shared_reports["cross_session_sonnet45"]
    assert sum(c.field == "crosssession_per_pos.rows" for c in figure.checks) == 3  # one per panel
    assert {c.field for c in figure.checks if c.section == "plans"} == {"n_turns", "pos_step", "pos_labels",
                                                                         "pos_lines"}
    audit = shared_reports["cross_session_e09_s2"]
    ratios = [c.note for c in audit.checks if c.field.startswith("audit_compliance.ratios_by_session.")]
    assert set(ratios) == {"Session 2", "Session 3"}  # e09's sessions as the audit labels them


@pytest.mark.corpus
def test_a_changed_trajectory_gap_or_plan_fails_its_field(runs_dir, corpus_dir, tmp_path):
    def change(case):
        case["expected"]["tables"]["crosssession_per_pos"][1]["rows"][0][1] += 0.5
        case["expected"]["tables"]["crosssession_gaps"][2]["gap"] += 0.01
        case["expected"]["plans"]["session_proeng"]["pos_lines"][3] += 1
    report = _altered(runs_dir, corpus_dir, tmp_path, "cross_session_sonnet45", change)
    assert _failing(report) == {("tables", "crosssession_per_pos.rows"), ("tables", "crosssession_gaps.gap"),
                                ("plans", "pos_lines")}


@pytest.mark.corpus
def test_a_changed_cell_or_audit_label_fails(runs_dir, corpus_dir, tmp_path):
    def change(case):
        cells = case["expected"]["cells"]
        cells[0]["record"]["response_len"] += 1
        per_session = case["expected"]["tables"]["audit_compliance"]["per_session"]
        per_session["Session 4"] = per_session.pop("Session 3")  # the audit reads proeng as Session 3
    report = _altered(runs_dir, corpus_dir, tmp_path, "cross_session_e09_s2", change)
    assert ("cells", "response_len") in _failing(report)
    assert ("tables", "audit_compliance.per_session") in _failing(report)


@pytest.mark.corpus
def test_a_runner_we_do_not_run_is_not_expressible(runs_dir, corpus_dir, tmp_path):
    def change(case):
        case["harness_driver"].append({"runner": "experiments/e99_unknown/run.py"})
    report = _altered(runs_dir, corpus_dir, tmp_path, "cross_session_e09_s2", change)
    assert ("runners", "experiments/e99_unknown/run.py") in _failing(report)


# ---------------------------------------------------------------- the experiment's pieces
def _session(tmp_path, n_rows: int):
    path = tmp_path / "session.jsonl"
    lines = [json.dumps({"type": "summary", "summary": "not a row"})]
    for i in range(n_rows):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(json.dumps({"type": role, "message": {"role": role, "content": [{"type": "text",
                                                                                     "text": f"row {i}"}]}}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_reference_crosssession_positions_and_prefixes_are_run_crosssessions(tmp_path):
    reference = protocol("reference")
    session = reference.read_session(_session(tmp_path, 27))
    planned = reference.positions(session, xs.PLAN)
    assert [(p.label, p.step) for p in planned] == [(f"P{i:02d}", 2 * i) for i in range(12)]  # 27 // 12 = 2
    params = xs.Parameters(**xs.PAPER_SCALE, sessions=())
    cells = xs.build(reference, params, xs.NAME, [session], ["C01"], positions=xs.PLAN, redact=False)
    rows = crosssession_rows(session.path)
    real = {c.position: [m for m in c.request.messages if m["role"] == "user"] for c in cells if c.arm == "real"}
    # P00 is the first row alone: its prefix is the session's first message
    assert real["P00"][0]["content"][0]["text"] == "[user] row 0" == line_prefix(rows, 0)
    assert real["P05"][0]["content"][0]["text"] == line_prefix(rows, 10)
    assert {c.step for c in cells} == {2 * i for i in range(12)}


def test_our_protocol_asks_crosssession_as_uniform_positions():
    assert CROSSSESSION in UNIFORM_SCHEMES
    assert Positions(CROSSSESSION, n=12) == xs.PLAN


def _frame(rows):
    return pd.DataFrame([{"item_kind": "probe", "item": item, "arm": arm, "position": pos, "reference_score": score}
                         for pos, arm, item, score in rows])


def test_per_position_sorts_labels_keeps_minus_one_and_needs_both_arms():
    frame = _frame([
        ("P_pre_C2", "real", "C01", 2), ("P_pre_C2", "filler", "C01", -1),
        ("P5_pre_C6", "real", "C01", 0), ("P5_pre_C6", "real", "C02", 1), ("P5_pre_C6", "filler", "C01", 1),
        ("P1_pre_C1", "real", "C01", 3),  # no filler score: the position is left out
        ("P1_pre_C1", "filler", "C01", math.nan),  # lost (the parse raised)
        ("P0_start", "real", "E02", 0), ("P0_start", "filler", "E02", 3)])  # not a Coding-Self probe
    table = xs.per_position(frame)
    assert table.values.tolist() == [["P5_pre_C6", 0.5, 1.0], ["P_pre_C2", 2.0, -1.0]]  # byte order: '5' < '_'
    assert xs.gap(table) == pytest.approx((1.0 - 1.0) / 2 - (0.5 + 2.0) / 2)
    assert math.isnan(xs.gap(xs.per_position(pd.DataFrame())))
    valid_only = xs.per_position(frame.assign(score=frame["reference_score"].where(frame["reference_score"] >= 0)),
                                 failures="out")
    assert valid_only.values.tolist() == [["P5_pre_C6", 0.5, 1.0]]  # the -1 dropped: P_pre_C2 has no filler


def test_the_audit_labels_e09_sessions_as_the_harness_does():
    assert [harness_audit_session(s) for s in (None, "chainassemble", "proeng", "other")] == \
        ["Session 1", "Session 2", "Session 3", None]
    cells = [StressorCell("t", harness_audit_session(label), "P5_pre_C6", "S2_v00", arm, ok, n)
             for label in ("chainassemble", "proeng") for arm, ok, n in (("real", False, 30), ("filler", True, 10))]
    audit = harness_compliance_audit(cells, sessions=["Session 1", "Session 2", "Session 3"])
    # the same position in two sessions is two pairs, one per session
    assert audit["per_session"] == {"Session 1": {"real": [0, 0], "filler": [0, 0]},
                                    "Session 2": {"real": [0, 1], "filler": [1, 1]},
                                    "Session 3": {"real": [0, 1], "filler": [1, 1]}}
    assert audit["ratios_by_session"]["Session 3"]["raw_ratio"] == 3.0


def test_e09_sends_e08s_s2_requests():
    e09, e08 = for_runner("experiments/e09_cross_session/run.py"), S2_REQUESTS.get("e08")
    assert e09 is S2_REQUESTS.get("e09") and not e09.strip_reply
    for model in ("anthropic/claude-haiku-4-5", "openai/gpt-4o", "gemini/gemini-2.5-pro"):
        assert e09.params(model, 1024) == e08.params(model, 1024)


@pytest.mark.corpus
def test_an_empty_text_judge_reply_is_the_declared_reading(runs_dir, corpus_dir, tmp_path):
    """A judge reply of one empty Anthropic text block: the harness parses it (−1) and keeps the
    cell; LiteLLM gives us no content and we lose it. The cell is the declared
    ``empty_text_verdict``, and the figure's rows agree once that cell is read as the harness
    reads it."""
    from contextecho.echo.reference.judge import parse_verdict
    verdict = parse_verdict("")
    key = {"session": "session_proeng", "target": "claude-sonnet-4-5", "position": "P01", "turn_index": 23,
           "arm": "filler", "item": "C02"}

    def change(case):
        reply = next(r for r in case["canned_replies"] if r["call"] == "judge" and r["key"] == key)
        reply["reply"] = [{"blocks": [""], "usage": {"input_tokens": 1, "output_tokens": 1}}]
        cell = next(c for c in case["expected"]["cells"]
                    if c["path"].endswith("probes_at_crosscompaction_proeng/claude-sonnet-4-5/P01/filler/C02.json"))
        old = cell["record"]["score"]
        cell["record"].update(score=verdict.score, label=verdict.label, reason=verdict.reason)
        panel = case["expected"]["tables"]["crosssession_per_pos"][2]
        row = next(r for r in panel["rows"] if r[0] == "P01")
        row[2] += (verdict.score - old) / 2  # two Coding-Self probes per arm at proeng's positions
        gaps = case["expected"]["tables"]["crosssession_gaps"][2]
        gaps["gap"] += (verdict.score - old) / 2 / len(panel["rows"])
    report = _altered(runs_dir, corpus_dir, tmp_path, "cross_session_sonnet45", change)
    assert status_of(report, "cells", "empty_text_verdict") == "declared"
    assert status_of(report, "cells", "stored") == "pass"
    rows = [c.status for c in report.checks if c.field == "crosssession_per_pos.rows"]
    assert rows == ["pass", "pass", "declared"]
    assert status_of(report, "tables", "crosssession_gaps.gap") == "declared"
    assert not _failing(report)
