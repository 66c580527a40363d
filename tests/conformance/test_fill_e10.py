"""The Fig.-1 fill runner and e10's cross-org S2 runner, run by our own panel: a resumed run
with the target as its judge (``resume_judges``, ``judges=self``) and e10's S2 request rules
(``s2_requests=e10``). The shared cases' requests and cells conform, altered copies fail on
the field that changed, and the two panel options do what they say on a scripted provider."""
from __future__ import annotations

import dataclasses
import json

import pytest

from contextecho.echo.protocols import protocol
from contextecho.echo.protocol import Positions
from contextecho.echo.reference.providers import e10_target_params
from contextecho.echo.reference.texts import PROBES_BY_ID
from contextecho.engine import llm
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.fake_model import HTTPStatusFault
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.record import NOT_STORED, OK, CallRecord
from contextecho.experiments import panel, scores, selection, spine
from contextecho.conformance.runs import run_case
from contextecho.experiments.parameters import RangeError
from contextecho.sessions.loader import load_session
from contextecho.sessions.positions import Position
from tests.conformance.conftest import case_of, write_case

FILL_CASE, E10_CASE = "panel_e15_sonnet45", "s2_e10_crossorg"
FILL_RUNNER = "experiments/e15_probes_at_crosscompaction/run_fig1_sonnet45.py"
pytestmark = pytest.mark.corpus


def _check(report, section, name):
    found = [c for c in report.checks if c.section == section and c.field == name]
    assert found, f"no check {section} {name}"
    return found[0]


@pytest.fixture(scope="module")
def fill_report(runs_dir, corpus_dir):
    return run_case(runs_dir / "cases" / f"{FILL_CASE}.json", corpus_dir)


@pytest.fixture(scope="module")
def e10_report(runs_dir, corpus_dir):
    return run_case(runs_dir / "cases" / f"{E10_CASE}.json", corpus_dir)


# ---------------------------------------------------------------- the shared cases
def test_the_fill_runner_is_run_and_its_requests_conform(fill_report):
    """The fill runner resumes from run 1's cells and judges with the target: every request
    agrees, but the two target requests the harness sends to redo a cell whose judging was
    lost (our cache answers them: declared), and the redo of the one cell our first run lost
    and the harness kept (an Anthropic judge reply of one empty text block reaches us as no
    content; the harness parses it to -1: declared for that cell alone, see
    tests/conformance/test_runs.py): the case passes."""
    assert not [c for c in fill_report.checks if c.section == "runners" and c.field == FILL_RUNNER]
    bad = [c for c in fill_report.checks if c.section == "requests" and c.status not in ("pass", "declared")
           and c.field != "set.extra.redo_of_kept_cell"]
    assert not bad, [(c.field, c.expected, c.actual) for c in bad]
    redone = _check(fill_report, "requests", "set.missing.redone_from_cache")
    assert redone.status == "declared" and {json.loads(k)["item"] for _, k, _ in redone.expected} == {"C04", "C05"}
    assert all(a == 1 for _, _, a in redone.expected)  # attempt numbers continue from run 1
    kept = _check(fill_report, "requests", "set.extra.redo_of_kept_cell").actual
    assert all((json.loads(k)["position"], json.loads(k)["item"]) == ("P1_pre_C1", "C03") for _, k, _ in kept)
    assert fill_report.passed, [(c.field, c.expected, c.actual) for c in fill_report.checks if c.status == "fail"]


def test_the_fill_runner_cells_and_forest_counts_conform(fill_report):
    assert _check(fill_report, "cells", "stored").status == "pass"  # P0_start's cells are the fill's
    assert _check(fill_report, "cells", "response_text").status == "pass"
    assert _check(fill_report, "cells", "lost_cells_contribute_nothing").status == "pass"
    forest = {c.field: c.status for c in fill_report.checks if c.field.startswith("fig2_forest_rows.")}
    assert {forest[f"fig2_forest_rows.{n}"] for n in ("n_cl", "n_pos_cl", "n_pos_fi", "cl_m", "cl_lo", "cl_hi")} \
        == {"pass"}


def test_the_e10_runner_conforms(e10_report):
    """e10's requests (plain strings, temperature 0, 1,024 / 8,192 / 4,096 tokens) and its
    stripped replies agree; its timeout and its lack of retries are declared (transport)."""
    assert e10_report.passed, [(c.field, c.expected, c.actual) for c in e10_report.checks if c.status == "fail"]
    declared = {c.field for c in e10_report.checks if c.status == "declared"}
    assert {"params.timeout", "set.extra.retries"} <= declared
    # (a params field is listed only where some request differs: temperatures and budgets agree)
    for name in ("params.model", "params.messages", "set.extra", "set.missing", "stored", "response_text",
                 "response_len", "lost_cells_contribute_nothing"):
        assert any(c.field == name and c.status == "pass" for c in e10_report.checks), name
    assert _check(e10_report, "tables", "note").status == "pass"


# ---------------------------------------------------------------- altered copies fail
def test_a_cell_the_fill_runner_should_skip_fails(runs_dir, corpus_dir, tmp_path):
    """Expected: the fill runner re-judges a cell run 1 stored; ours skips it: set.missing."""
    case = case_of(runs_dir, FILL_CASE)
    requests = case["expected"]["requests"]
    stored = next(r for r in requests if r["call"] == "judge" and r["key"]["position"] == "P1_pre_C1"
                  and r["key"]["item"] == "I01" and r["key"]["arm"] == "claude_session")
    requests.append({**stored, "seq": len(requests), "attempt": 1})
    report = run_case(write_case(tmp_path, case), corpus_dir)
    missing = _check(report, "requests", "set.missing")
    assert missing.status == "fail" and any(k[2] == 1 and json.loads(k[1])["item"] == "I01" for k in missing.expected)


def test_a_cell_the_fill_runner_should_not_redo_fails(runs_dir, corpus_dir, tmp_path):
    """Expected: the harness keeps P3_post_C3/filler/C04 (its redo removed); ours redoes it."""
    case = case_of(runs_dir, FILL_CASE)
    case["expected"]["requests"] = [r for r in case["expected"]["requests"] if not (
        r["attempt"] == 1 and r["key"]["position"] == "P3_post_C3" and r["key"]["item"] == "C04")]
    report = run_case(write_case(tmp_path, case), corpus_dir)
    redo = _check(report, "requests", "set.extra.redo_of_kept_cell")
    assert redo.status == "fail" and "C04" in {json.loads(k)["item"] for _, k, _ in redo.actual}
    assert not report.passed


def test_a_fill_judge_other_than_the_target_fails(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, FILL_CASE)
    for r in case["expected"]["requests"]:
        if r["call"] == "judge" and r["key"]["position"] == "P0_start":
            r["params"]["model"] = "claude-sonnet-4-6"
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert _check(report, "requests", "params.model").status == "fail"


def test_an_e10_request_at_another_temperature_fails(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, E10_CASE)
    together = next(r for r in case["expected"]["requests"] if r["client"].get("base_url", "").startswith(
        "https://api.together"))
    together["params"]["temperature"] = 0.7
    report = run_case(write_case(tmp_path, case), corpus_dir)
    check = _check(report, "requests", "params.temperature")
    assert check.status == "fail" and (check.expected, check.actual) == (0.7, 0.0)


def test_an_e10_reply_kept_unstripped_fails(runs_dir, corpus_dir, tmp_path):
    case = case_of(runs_dir, E10_CASE)
    cell = next(c for c in case["expected"]["cells"] if c["record"]["response_text"] == "ls -la")
    cell["record"]["response_text"] = "  ls -la  \n"
    report = run_case(write_case(tmp_path, case), corpus_dir)
    assert _check(report, "cells", "response_text").status == "fail"


def test_an_e10_gemini_request_at_the_target_clients_floor_fails(runs_dir, corpus_dir, tmp_path):
    """e10 calls call_gemini with its default 4,096 tokens, not TargetClient's 16,384 floor."""
    case = case_of(runs_dir, E10_CASE)
    gemini = next(r for r in case["expected"]["requests"] if "config" in r["params"])
    gemini["params"]["config"]["max_output_tokens"] = 16_384
    report = run_case(write_case(tmp_path, case), corpus_dir)
    check = _check(report, "requests", "params.config.max_output_tokens")
    assert check.status == "fail" and (check.expected, check.actual) == (16_384, 4096)


# ---------------------------------------------------------------- the panel options themselves
def _fill_session(corpus_dir, runs_dir):
    return load_session(corpus_dir / case_of(runs_dir, FILL_CASE)["inputs"]["session"])


class Calls(list):
    """The selfie provider's log; ``c03_answers``: whether probe C03 is answered yet."""

    c03_answers = False


@pytest.fixture
def selfie(provider):
    """``selfie/<name>``: a target answers probe C03 with a permanent error (until
    ``c03_answers``) and C02 with a reply judge ``judge1`` fails on; a judge (``Return the
    JSON now.``) scores 2. Every call is logged as (model, target|judge, probe id)."""
    calls = Calls()

    def reply(model, messages):
        name, last = model.split("/")[-1], messages[-1]["content"]
        last = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last)
        probe = next((p for p in ("C01", "C02", "C03") if PROBES_BY_ID[p].text in last), None)
        kind = "judge" if last.endswith("Return the JSON now.") else "target"
        calls.append((name, kind, probe))
        if kind == "judge":
            if name == "judge1" and "judge-breaking" in last:
                return HTTPStatusFault(400, "judge1 refuses")
            return '{"score": 2, "label": "mostly_assistant", "reason": "ok"}'
        if probe == "C03" and not calls.c03_answers:
            return HTTPStatusFault(400, "bad request")
        return "a judge-breaking answer" if probe == "C02" else "I am an AI assistant."

    provider("selfie", reply)
    return calls


def _grid(tmp_path, session, turns, judges, resume=()):
    params = panel.Parameters(targets=("selfie/a",), judges=judges, resume_judges=resume, window=2000,
                              max_tokens=32, judge_max_tokens=64, protocol="reference",
                              output_dir=str(tmp_path / f"run{len(turns)}"))
    run = spine.start("panel", params, models=params.targets + params.judge_models(), protocol=protocol(params.protocol),
                      sessions=lambda: [session])
    run.transport = Transport(concurrency=1, max_attempts=1, base_delay_s=0.0)
    positions = Positions(chosen={session.session_id: [Position(t, f"P{t}", "chosen") for t in turns]})
    cells = selection.build(run.protocol, params, "panel", [session], ["C01", "C02", "C03"], positions=positions,
                            redact=False)
    return spine.run_grid(run, cells, judges=params.judges, judge_max_tokens=params.judge_max_tokens,
                          resume_judges=params.resume_judges)


def test_self_judge_is_each_target_and_resume_skips_stored_cells(tmp_path, corpus_dir, runs_dir, selfie):
    session = _fill_session(corpus_dir, runs_dir)
    first = _grid(tmp_path, session, [300], ("selfie/judge1",))
    assert set(first.loc[first["verdict_status"] == OK, "item"]) == {"C01"}  # C02 judge failed, C03 target failed
    selfie.clear()
    selfie.c03_answers = True  # the provider answers now: the resumed run asks C03 again
    second = _grid(tmp_path, session, [100, 300], ("self",), resume=("selfie/judge1",))
    resumed = second[second["resumed"]]
    # run 1's stored results stand: not asked, not judged again, judged as judge1 judged them
    assert set(zip(resumed["position"], resumed["item"])) == {("P300", "C01")}
    assert set(resumed["judge_model"]) == {"selfie/judge1"} and len(resumed) == 2
    assert sum(c == ("a", "target", "C01") for c in selfie) == 2  # P100's two arms only
    assert sum(c == ("a", "judge", "C01") for c in selfie) == 2
    # the rest is judged by the target itself
    new = second[~second["resumed"]]
    assert set(new["judge_model"]) == {"selfie/a"} and (new["verdict_status"] == OK).all()
    assert sum(c == ("judge1", "judge", p) for c in selfie for p in ("C01", "C02", "C03")) == 0
    # C02 at P300: its target's stored answer is judged again (the cache answers the target) ...
    assert sum(c == ("a", "target", "C02") for c in selfie) == 2  # P100 only
    assert sum(c == ("a", "judge", "C02") for c in selfie) == 4  # P100 and P300, both arms
    # ... and C03 at P300, lost to a permanent error, is asked again (the resume redoes it)
    assert sum(c == ("a", "target", "C03") for c in selfie) == 4
    primary = scores.first_judge_rows(second, "self")
    assert len(primary) == len(second) == 12


def test_self_is_a_judge_name_of_the_panel_only_and_stands_for_every_target(scripted_models):
    p = panel.Parameters(targets=("scripted/command", "scripted/chatty"), judges=("self", "scripted/judge"))
    assert p.judge_models() == ("scripted/command", "scripted/chatty", "scripted/judge")
    with pytest.raises(RangeError, match="resume_judges"):
        panel.Parameters(targets=("scripted/command",), resume_judges=("nobody/x y",))
    with pytest.raises(RangeError, match="s2_requests"):
        panel.Parameters(targets=("scripted/command",), s2_requests="e99")


# ---------------------------------------------------------------- e10's request rules
@pytest.mark.parametrize("model, expected", [
    ("openai/gpt-5", {"max_completion_tokens": 8192}),
    ("openai/gpt-4o", {"max_tokens": 1024, "temperature": 0.0}),
    ("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", {"max_tokens": 1024, "temperature": 0.0}),
    ("gemini/gemini-2.5-pro", {"max_tokens": 4096, "temperature": 0.0}),
    ("anthropic/claude-sonnet-4-5", {"max_tokens": 1024, "temperature": 0.0}),
])
def test_e10_token_rules(model, expected):
    assert e10_target_params(model, 1024) == expected


def test_e10_cells_send_plain_strings_and_read_stripped_replies(corpus_dir, runs_dir):
    session = load_session(corpus_dir / case_of(runs_dir, E10_CASE)["inputs"]["session"])
    params = panel.Parameters(targets=("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo",), protocol="reference",
                              stressor_max_tokens=1024, window=30_000)
    positions = Positions(chosen={session.session_id: [Position(544, "P5_pre_C6", "chosen")]})
    build = {"positions": positions, "redact": False, "stressor_max_tokens": 1024}
    e10 = selection.build(protocol("reference").configured(dataclasses.replace(params, s2_requests="e10")), params,
                          "panel", [session], ["S2#01", "C01"], **build)
    e08 = selection.build(protocol("reference"), params, "panel", [session], ["S2#01", "C01"], **build)
    s2 = next(c for c in e10 if c.item.id == "S2#01")
    assert s2.request.params == {"max_tokens": 1024, "temperature": 0.0} and s2.versions["s2_requests"] == "e10"
    assert s2.request.messages[0]["role"] == "system" and all(isinstance(m["content"], str)
                                                                for m in s2.request.messages)
    # the probe cells and the e08 S2 cells are what they were
    assert [c.request.key for c in e10 if c.item.id == "C01"] == [c.request.key for c in e08 if c.item.id == "C01"]
    assert next(c for c in e08 if c.item.id == "S2#01").request.params == {"max_tokens": 1024}
    reference = protocol("reference")
    record = CallRecord(key="k", model="m", request_json="{}", status=OK, response_text="  ls -la  \n")
    assert reference.reply(record, s2) == "ls -la"
    assert reference.reply(record, next(c for c in e08 if c.item.id == "S2#01")) == "  ls -la  \n"


def test_a_stored_only_batch_sends_nothing_and_says_what_it_lacks(tmp_path):
    """What a resumed run reads the earlier results with (engine/calls.py ``stored_only``)."""
    fake = llm.ensure_providers() and llm.registered_providers()["fake"]
    ask = [ModelRequest(m, [{"role": "user", "content": "q"}]) for m in ("fake/echo", "fake/http-400", "fake/timeout")]
    with CallCache(tmp_path / "cache") as cache:
        generate(ask[:2], cache=cache, transport=Transport(max_attempts=1), progress=False)
        before = dict(fake.calls)
        result = generate(ask, cache=cache, progress=False, stored_only=True)
    assert dict(fake.calls) == before and all(result.cached)
    assert result.records[0].ok and result.records[1].error_type == "BadRequestError"
    assert result.records[2].error_type == NOT_STORED
