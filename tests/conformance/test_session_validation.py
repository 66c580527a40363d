"""Run-level conformance of the harness's session validation (e18 and its summary) and of the
two position plans computed from a session (e18's and run_crosssession's): the shared cases
and positions files pass, altered copies fail on the field that was altered, and e18's and
run_crosssession's row readers read hand-made Claude Code and Codex CLI records as the
harness does."""
from __future__ import annotations

import copy
import json

import pytest

from contextecho.echo.reference.role_rows import (ShortSession, crosssession_plan, crosssession_rows, e18_rows,
                                                  line_prefix, validation_plan)
from contextecho.experiments import session_validation
from contextecho.conformance.runs import check_positions, run_case
from contextecho.conformance.case import load_declared
from contextecho.stats.session_validation import ValidationCell, session_validation_summary

PLANS = ("e18_session_validation_plan", "e15_run_crosssession_plan")
pytestmark = pytest.mark.corpus


def _cases(runs_dir):
    paths = [p for p in sorted((runs_dir / "cases").glob("*.json"))
             if json.loads(p.read_text())["family"] == "session_validation"]
    assert paths
    return paths


@pytest.fixture(scope="module")
def shared_reports(runs_dir, corpus_dir):
    return {p.stem: run_case(p, corpus_dir, load_declared()) for p in _cases(runs_dir)}


def _failing(report):
    return {(c.section, c.field) for c in report.checks if c.status in ("fail", "not_expressible")}


# ---------------------------------------------------------------- the shared cases
def test_every_session_validation_case_passes_whole(shared_reports, runs_dir):
    for name, report in shared_reports.items():
        assert report.passed, (name, report.error, [(c.field, c.expected, c.actual, c.note) for c in report.checks
                                                    if c.status == "fail"])
        sections = {c.section for c in report.checks if c.status == "pass"}
        assert {"requests", "cells", "stdout", "tables"} <= sections
        # every field of the summary is compared, and what is declared is a request divergence only
        summary = json.loads((runs_dir / "cases" / f"{name}.json").read_text())["expected"]["tables"][
            "session_validation_summary"]
        compared = {c.field.split(".", 1)[1] for c in report.checks if c.field.startswith("session_validation_summary.")}
        assert compared == set(summary)
        assert {c.section for c in report.checks if c.status == "declared"} <= {"requests"}


def _altered(runs_dir, corpus_dir, tmp_path, change):
    case = json.loads(_cases(runs_dir)[0].read_text())
    change(case)
    path = tmp_path / f"{case['id']}.json"
    path.write_text(json.dumps(case))
    return run_case(path, corpus_dir, load_declared())


def test_a_changed_summary_value_fails_its_field(runs_dir, corpus_dir, tmp_path):
    def change(case):
        case["expected"]["tables"]["session_validation_summary"]["arm_means"]["filler"] += 0.5
    report = _altered(runs_dir, corpus_dir, tmp_path, change)
    assert _failing(report) == {("tables", "session_validation_summary.arm_means")}


def test_a_changed_exit_status_of_the_summary_fails(runs_dir, corpus_dir, tmp_path):
    def change(case):
        case["expected"]["tables"]["return"] = 1 - case["expected"]["tables"]["return"]
    assert _failing(_altered(runs_dir, corpus_dir, tmp_path, change)) == {("tables", "return")}


def test_a_changed_stored_cell_and_manifest_fail_their_fields(runs_dir, corpus_dir, tmp_path):
    def change(case):
        cells = case["expected"]["cells"]
        probe = next(c for c in cells if "probe_id" in c["record"])
        probe["record"]["score"] = 3 - probe["record"]["score"] if probe["record"]["score"] >= 0 else 2
        manifest = next(c for c in cells if c["path"].endswith("validation_manifest.json"))
        manifest["record"]["n_turns"] += 1
    report = _altered(runs_dir, corpus_dir, tmp_path, change)
    assert _failing(report) == {("cells", "score"), ("cells", "manifest.n_turns")}


def test_a_lost_cell_we_store_fails(runs_dir, corpus_dir, tmp_path):
    def change(case):
        cells = case["expected"]["cells"]
        cells.remove(next(c for c in cells if "probe_id" in c["record"]))
    report = _altered(runs_dir, corpus_dir, tmp_path, change)
    assert ("cells", "stored") in _failing(report)


def test_a_short_session_refuses_with_the_harness_error(runs_dir, corpus_dir, tmp_path):
    """e18 asked for more positions than the session has rows: our check refuses with e18's
    ValueError before any call, so the case's expected run (exit 0, its requests) fails."""
    def change(case):
        case["harness_driver"][0]["argv"] += ["--positions", "100000"]
    report = _altered(runs_dir, corpus_dir, tmp_path, change)
    assert {("stdout", "stdout.return"), ("requests", "set.missing")} <= _failing(report)
    refusal = next(c for c in report.checks if c.field == "stdout.return").actual
    assert refusal[0] == "raises:ValueError" and "usable turns; need 100000" in refusal[1]


# ---------------------------------------------------------------- the positions files
def test_every_positions_file_plans_as_e18_and_run_crosssession(runs_dir, corpus_dir):
    paths = sorted((runs_dir / "positions").glob("*.json"))
    assert paths
    for path in paths:
        report = check_positions(path, corpus_dir, load_declared())
        assert report.passed, (path.name, [(c.field, c.expected, c.actual) for c in report.checks if c.status == "fail"])
        checked = [c for c in report.checks if c.field.startswith(PLANS)]
        assert {c.field.split(".")[0] for c in checked} == set(PLANS)
        assert all(c.status == "pass" or c.field.endswith(".return.kind") and c.status == "declared" for c in checked)
        assert not any(c.status == "not_implemented" and c.field in PLANS for c in report.checks)


def _altered_positions(runs_dir, corpus_dir, tmp_path, name, change):
    data = json.loads((runs_dir / "positions" / name).read_text())
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return check_positions(path, corpus_dir, load_declared())


def _with(runs_dir, predicate):
    for path in sorted((runs_dir / "positions").glob("*.json")):
        data = json.loads(path.read_text())
        if predicate(data):
            return path.name
    pytest.skip("no positions file of that kind")


def test_a_changed_plan_entry_fails(runs_dir, corpus_dir, tmp_path):
    name = _with(runs_dir, lambda d: d["e18_session_validation_plan"]["runs"]["default_12"]["plan"]
                 and d["e15_run_crosssession_plan"]["pos_lines"])

    def change(data):
        data["e18_session_validation_plan"]["runs"]["default_12"]["plan"][1][1] += 1
        data["e15_run_crosssession_plan"]["pos_lines"][2] += 1
        data["e18_session_validation_plan"]["runs"]["quick_3"]["prefixes"][1]["prefix_len"] += 1
    report = _altered_positions(runs_dir, corpus_dir, tmp_path, name, change)
    assert _failing(report) == {("positions", "e18_session_validation_plan.default_12.plan"),
                                ("positions", "e15_run_crosssession_plan.pos_lines"),
                                ("positions", "e18_session_validation_plan.quick_3.prefixes")}


def test_a_short_sessions_error_is_compared(runs_dir, corpus_dir, tmp_path):
    name = _with(runs_dir, lambda d: isinstance(d["e18_session_validation_plan"]["runs"]["default_12"]["return"], dict)
                 and "SystemExit" in d["e15_run_crosssession_plan"]["return"])

    def change(data):
        data["e18_session_validation_plan"]["runs"]["default_12"]["return"]["message"] += "!"
        data["e15_run_crosssession_plan"]["return"]["SystemExit"] += "!"
    report = _altered_positions(runs_dir, corpus_dir, tmp_path, name, change)
    assert _failing(report) == {("positions", "e18_session_validation_plan.default_12.return"),
                                ("positions", "e15_run_crosssession_plan.return.message")}


def test_a_plan_that_should_refuse_fails(runs_dir, corpus_dir, tmp_path):
    name = _with(runs_dir, lambda d: d["e18_session_validation_plan"]["runs"]["positions_5"]["return"] == 0)

    def change(data):
        data["e18_session_validation_plan"]["runs"]["positions_5"]["return"] = {
            "raises": "ValueError", "message": "session has only 3 usable turns; need 5"}
    report = _altered_positions(runs_dir, corpus_dir, tmp_path, name, change)
    assert _failing(report) == {("positions", "e18_session_validation_plan.positions_5.return")}


# ---------------------------------------------------------------- the row readers (hand-made records)
CLAUDE_CODE = [
    {"type": "summary", "summary": "an earlier session"},
    {"type": "user", "message": {"role": "user", "content": "  Fix the build, s'il vous plaît  "}},
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Looking."}, {"type": "text", "text": ""},
        {"type": "tool_use", "name": "Bash", "input": {"command": "ls é" + "x" * 600}}]}},
    {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}},
    {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
    {"type": "user", "message": {"role": "assistant", "content": [{"type": "tool_use", "input": {}}]}},
    {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}},
]
CODEX = [
    {"type": "session_meta", "payload": {"id": "x", "cwd": "/w"}},
    {"type": "response_item", "payload": {"type": "message", "role": "developer",
                                          "content": [{"type": "input_text", "text": "<permissions>"}]}},
    {"type": "response_item", "payload": {"type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": "add a test"}]}},
    {"type": "event_msg", "payload": {"type": "user_message", "message": "add a test"}},
    {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{}"}},
    {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                          "content": [{"type": "output_text", "text": "Done."},
                                                      {"type": "output_text", "text": " "}]}},
]


def _session(tmp_path, records, name="s.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n\nnot json\n",
                    encoding="utf-8")
    return path


def test_e18_rows_of_claude_code_and_codex_records(tmp_path):
    rows = e18_rows(_session(tmp_path, CLAUDE_CODE + CODEX))
    payload = json.dumps({"command": "ls é" + "x" * 600}, ensure_ascii=False)[:500]
    assert [(r.role, r.content) for r in rows] == [
        ("user", "Fix the build, s'il vous plaît"),
        ("assistant", f"Looking.\n[tool_use Bash: {payload}]"),
        ("user", "[tool_result: a b]"),
        ("assistant", "[tool_use ?: {}]"),  # the message's role over the record's type
        ("user", "add a test"),
        ("assistant", "Done."),
    ]
    assert line_prefix(rows, 1) == f"[user] Fix the build, s'il vous plaît\n\n[assistant] {rows[1].content}"
    assert line_prefix(rows, 5, window=12) == "[assistant] Done."[-12:]


def test_run_crosssession_rows_of_the_same_records(tmp_path):
    rows = crosssession_rows(_session(tmp_path, CLAUDE_CODE + CODEX))
    payload = json.dumps({"command": "ls é" + "x" * 600})[:200]  # ASCII escapes, 200 characters
    assert [(r.role, r.content) for r in rows] == [
        ("user", "Fix the build, s'il vous plaît"),
        ("assistant", f"Looking.\n[tool_use Bash: {payload}]"),
        ("user", "[tool_result: a b]"),
        ("user", "[tool_use ?: {}]"),  # the record's type is the role; no Codex record counts
    ]


def test_plans_round_half_to_even_and_refuse_short_sessions():
    assert validation_plan(6, 3) == (("P00", 0), ("P01", 2), ("P02", 5))  # round(2.5) == 2
    assert validation_plan(4, 3) == (("P00", 0), ("P01", 2), ("P02", 3))  # round(1.5) == 2
    with pytest.raises(ShortSession, match="session has only 2 usable turns; need 3"):
        validation_plan(2, 3)
    with pytest.raises(ShortSession, match="--positions must be at least 2"):
        validation_plan(10, 1)
    assert [row for _, row in crosssession_plan(25)] == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22]
    assert crosssession_plan(12)[-1] == ("P11", 11)
    with pytest.raises(ShortSession, match="Session has only 11 turns, need at least 12"):
        crosssession_plan(11)


def test_the_summary_keeps_minus_one_out_of_the_means():
    cells = [ValidationCell("P00", "real", "C01", 2), ValidationCell("P00", "real", "C02", -1),
             ValidationCell("P00", "filler", "C01", 3), ValidationCell("P01", "filler", "C06", 1),
             ValidationCell("P01", "real", "C03", None, readable=False)]
    s = session_validation_summary(cells, root="r", expected_positions=2, probes=2)
    assert (s["json_files"], s["parse_errors"], s["invalid_scores"], s["scored_cells"]) == (5, 1, 1, 3)
    assert s["arm_means"] == {"claude_session": 2.0, "filler": 2.0} and s["completion_rate"] == 3 / 8
    p00, p01 = s["trajectory"]
    assert p00["gap"] == 1.0 and p00["claude_session_n"] == 1
    assert p01["claude_session_mean"] is None and "gap" not in p01 and p01["filler_coding_mean"] is None
    assert {(m["position"], m["arm"], m["missing_count"]) for m in s["missing"]} == \
        {("P00", "filler", 1), ("P01", "claude_session", 1), ("P01", "filler", 1)}
    assert s["acceptable"] is False


def test_the_check_runs_end_to_end_on_a_small_session(tmp_path):
    """The reusable check (what the audit command will call): a Codex CLI session, the quick
    plan, an in-process target and judge; the fake judge's echo never parses, so every stored
    cell is invalid and the session is not acceptable."""
    records = [CODEX[0]] + [copy.deepcopy(CODEX[2 + (i % 2) * 3]) for i in range(6)]
    params = session_validation.Parameters(session=str(_session(tmp_path, records)), quick=True,
                                           targets=("fake/echo",), judges=("fake/echo",),
                                           output_dir=str(tmp_path / "out"))
    result = session_validation.validate_session(params)
    manifest, summary = result.manifests["fake/echo"], result.summaries["fake/echo"]
    assert manifest["n_turns"] == 6 and [p["turn_index"] for p in manifest["positions"]] == [0, 2, 5]
    assert manifest["cells_expected"] == 30 and manifest["n_probes"] == 5
    assert (summary["json_files"], summary["invalid_scores"], summary["acceptable"]) == (30, 30, False)
    assert result.complete
    written = json.loads((tmp_path / "out" / "results" / "summary.json").read_text())
    assert written["fake/echo"]["expected_cells"] == 30
