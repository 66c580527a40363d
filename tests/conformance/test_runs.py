"""Run-level conformance (``contextecho conformance <runs folder>``): the harness's whole runs
replayed through our own experiments, on the shared run fixtures and on cases altered so
that each comparison must fail."""
from __future__ import annotations

import copy
import json
import math
import shutil

import pytest

from contextecho.__main__ import main
from contextecho.echo.reference.providers import target_params
from contextecho.conformance.case import FixtureError, load_declared
from contextecho.conformance.replay import litellm_model, sdk_form
from contextecho.conformance.runs import check_positions, read_case, run_case, run_cases
from tests.conformance.conftest import case_of, status_of, write_case

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def shared_reports(runs_dir, corpus_dir):
    return {r.case_id: r for family in run_cases(runs_dir, corpus_dir) for r in family.cases}


# ---------------------------------------------------------------- the shared fixtures
def test_every_case_and_positions_file_is_reported(shared_reports, runs_dir):
    cases = {p.stem for p in (runs_dir / "cases").glob("*.json")}
    positions = {json.loads(p.read_text()).get("id", p.stem) for p in (runs_dir / "positions").glob("*.json")}
    assert cases | positions == set(shared_reports)


def test_what_we_run_sends_what_the_harness_sends(shared_reports):
    """Every request field of every case we can run agrees with the harness's or is a
    declared divergence: models, messages (prefix digests), token budgets after the provider
    rules, temperatures, response formats."""
    for report in shared_reports.values():
        # set.extra.redo_of_kept_cell follows from a cell difference, which the cells section reports;
        # not_implemented: a case whose requests the reference does not cover (SPEC §7), said so
        bad = [c for c in report.checks if c.section == "requests"
               and c.field not in ("set.missing", "set.extra.redo_of_kept_cell")
               and c.status not in ("pass", "declared", "not_implemented")]
        assert not bad, (report.case_id, [(c.field, c.expected, c.actual, c.note) for c in bad])


def test_the_onset_run_passes_whole(shared_reports):
    report = shared_reports["onset_e17_anthropic"]
    assert report.passed, [(c.field, c.expected, c.actual) for c in report.checks if c.status == "fail"]
    # the curve's intervals equal the harness figure's: its one generator, its -1s averaged in
    assert all(c.status == "pass" for c in report.checks if c.field.startswith("onset_rows."))
    assert sum(c.field.startswith("onset_rows.") for c in report.checks) == 4 * 8 * 4


def test_cross_target_panel_cells_and_forest_rows_match(shared_reports):
    report = shared_reports["panel_xtarget_floors"]
    assert status_of(report, "cells", "stored") == "pass"
    forest = [c for c in report.checks if c.field.startswith("fig2_forest_rows.")]
    assert forest and all(c.status == "pass" for c in forest)
    # the cross-judge audit re-judges the stored cells (test_cross_judge.py): the case passes
    assert report.passed


def test_s2_cells_audit_and_forest_bounds_match(shared_reports):
    report = shared_reports["s2_e08_anthropic"]
    assert {c.status for c in report.checks if c.section in ("requests", "cells")} <= {"pass", "declared"}
    tables = [c for c in report.checks if c.section == "tables"]
    assert tables and {c.status for c in tables} <= {"pass", "declared"}
    # a declared table difference is one the harness's newline join of multi-block replies explains
    assert all("joined as the harness joins" in c.note for c in tables if c.status == "declared")
    # the stressor forest's bounds are the harness's resampling, compared exactly: every target's
    # three intervals are checked, and those of the target without multi-block replies pass
    bounds = [c for c in tables if c.field.startswith("forest_stressors_no_anchor.") and c.field.endswith(".bounds")]
    assert len(bounds) == 3 * 2 and sum(c.status == "pass" for c in bounds) >= 3
    assert all(c.expected == c.actual for c in bounds if c.status == "pass")
    assert report.passed


def _forest_case(runs_dir, change):
    case = case_of(runs_dir, "s2_e08_anthropic")
    change(case["expected"]["tables"]["forest_stressors_no_anchor"])
    return case


def _nudge(rows, target, name, i):
    row = next(r for r in rows if r["target"] == target)
    row[name][i] = math.nextafter(row[name][i], math.inf)


def test_a_changed_forest_bound_fails(shared_reports, runs_dir, corpus_dir, tmp_path):
    """A bound one float step away fails (exact comparison), for a passing bound and for one
    that is a declared divergence only because it agrees with multi-block replies joined."""
    checks = [c for c in shared_reports["s2_e08_anthropic"].checks if c.field.endswith(".bounds")]
    passing = next(c.note for c in checks if c.status == "pass" and c.field.endswith("fi_c.bounds"))
    declared = next(c.note.split(":")[0] for c in checks if c.status == "declared")
    for target, name in ((passing, "fi_c"), (declared, "cl_r")):
        case = _forest_case(runs_dir, lambda rows: _nudge(rows, target, name, 2))
        report = run_case(write_case(tmp_path, case), corpus_dir)
        failing = [(c.field, c.note) for c in report.checks if c.status == "fail"]
        assert failing == [(f"forest_stressors_no_anchor.{name}.bounds", target)] and not report.passed


def test_the_panel_judge_reply_of_an_empty_text_block_is_a_targeted_declared_divergence(shared_reports):
    """LiteLLM gives an Anthropic reply of one empty text block as no content, as it gives one
    without blocks; the harness parses the empty text (-1) and keeps the cell. The cell, the
    judge request that redoes it and the forest fields it moves are each declared, and only
    because they agree once that reply is read the harness's way."""
    report = shared_reports["panel_e15_sonnet45"]
    assert report.passed
    cell = [c for c in report.checks if c.field == "empty_text_verdict"]
    assert len(cell) == 1 and cell[0].status == "declared" and cell[0].expected["score"] == -1 \
        and cell[0].actual["score"] is None
    assert status_of(report, "requests", "set.extra.redo_of_empty_text_verdict") == "declared"
    assert status_of(report, "requests", "set.extra.redo_of_kept_cell") == "pass"
    fig2 = [c for c in report.checks if c.field.startswith("fig2_forest_rows.") and c.status == "declared"]
    assert fig2 and all("empty-text judge replies are read as the harness reads them" in c.note for c in fig2)
    assert all(status_of(report, "cells", n) == "pass" for n in ("score", "label", "reason"))


def _panel_case_with(runs_dir, change):
    case = case_of(runs_dir, "panel_e15_sonnet45")
    empty = next(r for r in case["canned_replies"] if r["call"] == "judge"
                 and any(spec.get("text") == "" or spec.get("blocks") == [""] for spec in r["reply"]))
    change(case, empty)
    return case


@pytest.mark.parametrize("change", ["no_blocks", "a_verdict", "expected_score"])
def test_a_changed_empty_text_judge_reply_fails(runs_dir, corpus_dir, tmp_path, change):
    """The declaration covers an empty text block only: a judge reply without blocks (the harness
    loses that cell), a reply with a verdict, or a stored score the empty text does not parse
    to, each leave the harness's stored −1 unexplained: the cell and the forest fail."""
    def alter(case, empty):
        key = empty["key"]
        if change == "no_blocks":
            empty["reply"] = [{"blocks": [], "usage": empty["reply"][0].get("usage", {})}]
        elif change == "a_verdict":
            empty["reply"] = [{"text": '{"score": 2, "label": "x", "reason": "y"}'}]
        else:
            cell = next(c for c in case["expected"]["cells"] if c["record"].get("probe_id") == key["item"]
                        and c["record"].get("position") == key["position"] and c["record"].get("arm") == key["arm"]
                        and c["record"].get("target") == key["target"])
            cell["record"]["score"] = 0
    report = run_case(write_case(tmp_path, _panel_case_with(runs_dir, alter)), corpus_dir)
    assert not report.passed and status_of(report, "cells", "score") == "fail"
    assert not any(c.field == "empty_text_verdict" for c in report.checks)
    if change != "expected_score":  # the forest rows were computed with that cell read as -1
        assert any(c.field.startswith("fig2_forest_rows.") and c.status == "fail" for c in report.checks)


def test_runners_we_cannot_express_are_named_with_a_reason(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "onset_e17_anthropic")
    case["harness_driver"].append({"runner": "experiments/e99_unknown/run.py", "entry": "main()"})
    report = run_case(write_case(tmp_path, case), corpus_dir)
    runner = [c for c in report.checks if c.section == "runners" and c.field == "experiments/e99_unknown/run.py"]
    assert runner and runner[0].status == "not_expressible" and runner[0].note and not report.passed


def test_every_hard_coded_position_renders_the_harness_prefix(shared_reports):
    positions = [r for r in shared_reports.values() if r.family == "positions"]
    assert len(positions) >= 2
    for report in positions:
        assert report.passed and report.count("pass") > 0
        assert report.count("not_implemented") == 0  # select_cutpoints too is compared (test_instruction_override.py)
        assert any(c.field.startswith("select_cutpoints.") for c in report.checks)


def test_provider_rules_give_each_harness_request_its_budget(runs_dir):
    """target_params against every TargetClient request of every case (harness/clients.py)."""
    seen = set()
    for path in sorted((runs_dir / "cases").glob("*.json")):
        for request in json.loads(path.read_text())["expected"]["requests"]:
            call = request["harness_call"]
            if "TargetClient" not in call.get("function", ""):
                continue
            model = litellm_model(call["provider"], call["model_id"])
            ours = sdk_form(model, {"messages": [{"role": "user", "content": "x"}],
                                    **target_params(model, call["max_tokens_passed_to_step"])})["params"]
            theirs = request["params"]
            for key in ("max_tokens", "max_completion_tokens", "temperature"):
                assert ours.get(key) == theirs.get(key), (model, key, ours, theirs)
            if "config" in theirs:
                for key in ("max_output_tokens", "temperature"):
                    assert ours["config"].get(key) == theirs["config"].get(key), (model, key)
            seen.add(call["provider"])
    assert {"anthropic", "openai", "openrouter", "gemini", "nvidia", "together", "cohere", "mistral"} <= seen


# ---------------------------------------------------------------- each comparison can fail
def test_a_changed_expected_budget_fails_its_field(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "onset_e17_anthropic")
    case["expected"]["requests"][0]["params"]["max_tokens"] = 599
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "requests", "params.max_tokens") == "fail" and not report.passed


def test_a_changed_table_value_fails_its_field(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "onset_e17_anthropic")
    row = case["expected"]["tables"]["onset_rows"]["claude-sonnet-4-5"][2]
    row["g_lo"] = row["g_lo"] + 1e-6  # beyond the 1e-9 tolerance
    report = run_case(write_case(tmp_path, case), corpus_dir)
    fails = [c for c in report.checks if c.field == "onset_rows.g_lo" and c.status == "fail"]
    assert len(fails) == 1 and "turn 25" in fails[0].note


def test_a_request_without_a_canned_reply_is_unexpected(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "onset_e17_anthropic")
    case["canned_replies"] = [r for r in case["canned_replies"]
                              if not (r["call"] == "judge" and r["key"]["turn"] == 5)]
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "requests", "unexpected") == "fail"


def test_a_changed_stored_cell_fails(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, "onset_e17_anthropic")
    cell = next(c for c in case["expected"]["cells"] if c["record"].get("score") == 3)
    cell["record"]["score"] = 2
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert status_of(report, "cells", "score") == "fail"


def test_a_divergence_is_declared_only_when_the_file_says_so(runs_dir, corpus_dir, tmp_path):
    path = write_case(tmp_path, case_of(runs_dir, "onset_e17_anthropic"))
    undeclared = run_case(path, corpus_dir, declared=[])
    assert status_of(undeclared, "requests", "params.tools") == "fail"
    declared = run_case(path, corpus_dir, declared=load_declared())
    assert status_of(declared, "requests", "params.tools") == "declared" and declared.passed
    assert all(d["reason"] for d in load_declared())


def test_unknown_family_and_unrecoverable_digest_fail(runs_dir, corpus_dir, tmp_path):
    case = copy.deepcopy(case_of(runs_dir, "onset_e17_anthropic"))
    case["family"] = "mystery"
    with pytest.raises(FixtureError, match="unknown family 'mystery'"):
        run_case(write_case(tmp_path, case), corpus_dir)
    case = case_of(runs_dir, "onset_e17_anthropic")
    case["canned_replies"][0]["reply"] = [{"text": {"$digest": {"sha256": "0" * 64, "len": 5000}}}]
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert report.error and "nowhere in the case" in report.error and not report.passed


def test_a_malformed_case_names_its_file_and_line(tmp_path, corpus_dir):
    (tmp_path / "cases").mkdir()
    bad = tmp_path / "cases" / "bad.json"
    bad.write_text('{"id": "bad",\n  "family": }')
    with pytest.raises(FixtureError, match=r"bad\.json:2: not valid JSON"):
        read_case(bad)
    [cases] = run_cases(tmp_path, corpus_dir)
    assert cases.cases[0].error and not cases.cases[0].passed


def test_a_changed_position_prefix_fails(runs_dir, corpus_dir, tmp_path):
    source = sorted((runs_dir / "positions").glob("positions_entire_*.json"))[0]
    data = json.loads(source.read_text())
    data["hard_coded_positions_resolved_on_this_session"]["e08_POSITIONS"]["values"][0]["prefix_len"] += 1
    path = tmp_path / source.name
    path.write_text(json.dumps(data))
    report = check_positions(path, corpus_dir)
    assert not report.passed and report.count("fail") == 1


# ---------------------------------------------------------------- the command
def test_the_command_exits_0_on_a_passing_folder_and_1_on_a_failing_one(runs_dir, corpus_dir, tmp_path, capsys):
    shutil.copytree(runs_dir / "positions", tmp_path / "positions")
    (tmp_path / "cases").mkdir()
    shutil.copy(runs_dir / "cases" / "onset_e17_anthropic.json", tmp_path / "cases")
    assert main(["conformance", str(tmp_path), "--corpus", str(corpus_dir), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "declared divergence requests params.tools" in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {s["case"] for s in summary} >= {"onset_e17_anthropic"}
    detail = json.loads((tmp_path / "out" / "onset_e17_anthropic.json").read_text())
    assert detail["passed"] and any(c["status"] == "declared" for c in detail["checks"])
    case = case_of(runs_dir, "onset_e17_anthropic")
    case["expected"]["requests"][0]["params"]["max_tokens"] = 599
    (tmp_path / "failing").mkdir()
    write_case(tmp_path / "failing", case)
    assert main(["conformance", str(tmp_path / "failing"), "--corpus", str(corpus_dir)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert main(["conformance", str(tmp_path / "nowhere")]) == 2
