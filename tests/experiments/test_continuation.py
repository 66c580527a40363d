"""The tool-call continuation experiment: its arms, requests, scores and analysis, checked by
hand on small rows and end to end on the fake tool-calling model and the embedded model."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from contextecho.echo import continuation as cont
from contextecho.echo.continuation import ARMS, CONTEXTECHO, REFERENCE, Cut, gpt_source, task_kind
from contextecho.echo.protocols import protocol
from contextecho.echo.reference import continuation as e07
from contextecho.echo.reference.filler import make_filler
from contextecho.engine.record import EMPTY_RESPONSE, ERROR, OK, CallRecord
from contextecho.experiments import continuation
from contextecho.sessions.redaction import Redactor
from contextecho.stats.permutation import harness_sign_flip_p

EMAIL = "jane.roe@example.org"


def row(kind, content, mid=None):
    message = {"role": kind, "content": content}
    if mid:
        message["id"] = mid
    return {"type": kind, "message": message}


def rows_with_announcement() -> list:
    """A user instruction, a tool round, then one API response written as two lines: its text
    (announcing the call) and its tool call (the cutpoint)."""
    return [
        row("user", f"Please fix the failing test and mail {EMAIL} when done"),
        row("assistant", [{"type": "text", "text": "Reading the test."}], "m1"),
        row("assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "t.py"}}], "m1"),
        row("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "def test(): assert f() == 2"}]),
        row("assistant", [{"type": "text", "text": "Now I will run pytest on it."}], "m2"),
        row("assistant", [{"type": "tool_use", "id": "t2", "name": "Bash",
                           "input": {"command": "pytest t.py", "description": f"ask {EMAIL}"}}], "m2"),
    ]


def codex_rows() -> list:
    return [{"type": "response_item", "payload": {"type": "message", "role": "user",
                                                   "content": [{"type": "input_text", "text": "explain the parser"}]}},
            {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                   "content": [{"type": "output_text", "text": "It reads JSON."}]}}]


def cut_of(rules, redactor=None):
    rows = rows_with_announcement()
    point = e07.candidates(rows)[-1]
    return rules.cut("s", rows, point, 0, gpt_source("g", codex_rows()), redactor=redactor)


def test_each_protocol_asks_the_continuation_by_its_own_rules():
    assert protocol("reference").continuation is REFERENCE and protocol("contextecho").continuation is CONTEXTECHO


def test_the_reference_cut_shows_the_announcement_and_ours_does_not():
    ref, ours = cut_of(REFERENCE), cut_of(CONTEXTECHO)
    assert (ref.index, ref.boundary) == (5, 5) and ours.boundary == 4  # ours ends before response m2
    assert "Now I will run pytest" in ref.prefixes["recent3K"] and "Now I will run pytest" in ref.user_msg
    assert all(ref.announced.values())  # the shared final turn shows it in every arm
    assert "Now I will run pytest" not in ours.prefixes["recent3K"] + ours.user_msg
    assert not any(ours.announced.values())
    assert ref.prefixes["filler3K"] == make_filler(len(ref.prefixes["recent3K"]))
    assert ours.prefixes["gpt5_3K"] == gpt_source("g", codex_rows()).prefix(len(ours.prefixes["recent3K"]))
    assert ref.prefixes["gpt5_3K"] == gpt_source("g", codex_rows()).text  # the harness: one text for all cuts
    assert (ref.tool, ref.args["command"]) == ("Bash", "pytest t.py")


def test_a_redacted_cut_hides_the_session_and_its_ground_truth_alike():
    plain = cut_of(REFERENCE)
    hidden = cut_of(REFERENCE, redactor=Redactor())
    assert EMAIL in plain.user_msg + plain.prefixes["recent3K"] and EMAIL in plain.args["description"]
    assert EMAIL not in json.dumps([hidden.prefixes, hidden.user_msg, hidden.args])
    placeholder = hidden.args["description"].split()[-1]
    assert placeholder.startswith("<EMAIL_") and placeholder in hidden.prefixes["recent3K"]
    assert hidden.redacted and not plain.redacted


@pytest.mark.parametrize("target, form", [
    ("anthropic/claude-sonnet-4-6", "anthropic"), ("mistral/mistral-small-latest", "any"),
    ("together_ai/moonshotai/Kimi-K2.6", "required"), ("local/smollm2-135m", "required")])
def test_reference_requests_follow_the_harness_per_provider_path(target, form):
    cut = cut_of(REFERENCE)
    request = REFERENCE.request(target, cut, "recent3K", max_tokens=4096, temperature=0.7)
    p = request.params
    assert p["max_tokens"] == 4096 and [t["function"]["name"] for t in p["tools"]] == [t["name"] for t in e07.TOOLS]
    assert request.messages[0] == {"role": "system", "content": e07.SYSTEM_PROMPT}
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "user"]
    if form == "anthropic":  # text blocks, no temperature, no tool_choice
        assert "temperature" not in p and "tool_choice" not in p
        assert request.messages[1]["content"] == [{"type": "text", "text": cut.prefixes["recent3K"]}]
    else:
        assert (p["tool_choice"], p["temperature"]) == (form, 0.0)
        assert request.messages[3]["content"] == cut.user_msg
    filler = REFERENCE.request(target, cut, "filler3K").messages[1]["content"]
    filler = filler if isinstance(filler, str) else filler[0]["text"]
    # the cross-target runner's filler is 3,000 characters; Sonnet's matches recent3K
    assert filler == make_filler(len(cut.prefixes["recent3K"]) if form == "anthropic" else 3000)
    assert [m["role"] for m in REFERENCE.request(target, cut, "scratch").messages] == ["system", "user"]


def test_our_request_is_one_form_for_every_provider():
    cut = cut_of(CONTEXTECHO)
    forms = {t: CONTEXTECHO.request(t, cut, "gpt5_3K", max_tokens=64, temperature=0.3)
             for t in ("anthropic/claude-sonnet-4-6", "mistral/mistral-small-latest")}
    a, b = forms.values()
    assert a.messages == b.messages and a.params == b.params
    assert (a.params["tool_choice"], a.params["temperature"], a.params["max_tokens"]) == ("auto", 0.3, 64)
    assert a.key != CONTEXTECHO.request("anthropic/claude-sonnet-4-6", cut, "recent3K").key


def record(calls=None, status=OK, error_type=None, text=""):
    return CallRecord(key="k", model="m", request_json="{}", status=status, response_text=text if status == OK else None,
                      error_type=error_type, tool_calls=json.dumps(calls) if calls else None)


def test_outcomes_score_the_first_call_and_keep_attrition_apart_from_failures():
    cut = Cut("s", 0, 5, 5, "Bash", {"command": "ls -la"}, "go", {a: "" for a in ARMS}, {a: False for a in ARMS},
              "same_task", "debug")
    target = "mistral/mistral-small-latest"
    first = REFERENCE.outcome(record([{"id": "c", "name": "Bash", "arguments": '{"command": "ls -la"}'},
                                      {"id": "d", "name": "Read", "arguments": "{}"}]), cut, target)
    assert (first.generated, first.tool, first.match, first.similarity) == (True, "Bash", True, 1.0)
    partial = REFERENCE.outcome(record([{"id": "c", "name": "Bash", "arguments": '{"command": "ls"}'}]), cut, target)
    assert partial.similarity == 0.0  # "command=ls" vs "command=ls -la": no token in common
    prose = REFERENCE.outcome(record(text="I would list the files."), cut, target)
    assert (prose.generated, prose.tool, prose.similarity) == (True, None, None)
    empty = REFERENCE.outcome(record(status=ERROR, error_type=EMPTY_RESPONSE), cut, target)
    assert empty.generated and empty.tool is None  # an empty answer is an answer without a call
    failed = REFERENCE.outcome(record(status=ERROR, error_type="RateLimitError"), cut, target)
    assert not failed.generated
    listed = record([{"id": "c", "name": "Bash", "arguments": '["ls"]'}])
    lost = REFERENCE.outcome(listed, cut, target)
    assert not lost.generated and lost.raised[0] == "AttributeError"  # the harness's runner raises
    kept = CONTEXTECHO.outcome(listed, cut, target)
    assert (kept.generated, kept.match, kept.similarity) == (True, True, 0.0)
    pairs = record([{"id": "c", "name": "Bash", "arguments": '[["command", "ls -la"]]'}])
    assert REFERENCE.outcome(pairs, cut, "anthropic/claude-sonnet-4-6").similarity == 1.0  # dict(input)


def test_task_kinds_by_hand():
    assert task_kind("Please fix the failing build") == "debug"
    assert task_kind("add a --json flag") == "feature"
    assert task_kind("Rename the module and clean up imports") == "refactor"
    assert task_kind("commit and push") == "ops"
    assert task_kind("thanks!") == "other"
    assert cont.last_instruction("[Most recent user instruction]\nfix it\n\n[Your last reasoning]\nok") == "fix it"


def frame_of(values: dict, generated=None) -> pd.DataFrame:
    """A cell frame from ``{arm: [M2 or None per cut]}`` (one session, one target)."""
    rows = []
    for arm in ARMS:
        for cut, value in enumerate(values.get(arm, [None] * 4)):
            made = True if generated is None else generated.get((arm, cut), True)
            rows.append({"target": "t", "session": "S1", "cut": cut, "arm": arm, "generated": made,
                         "called": value is not None, "match": value is not None, "similarity": value,
                         "stratum": "same_task" if cut % 2 else "cross_task"})
    frame = pd.DataFrame(rows)
    frame["similarity"] = frame["similarity"].astype(float)
    return frame


def test_contrasts_complete_case_and_itt_by_hand():
    frame = frame_of({"recent3K": [0.5, 1.0, None, 0.25], "gpt5_3K": [0.25, None, 0.5, 0.25],
                      "filler3K": [0.0] * 4, "scratch": [None] * 4})
    rows = {(r["contrast"], r["analysis"]): r
            for r in continuation.contrast_rows(frame, n_resamples=2000, seed=42)}
    cc = rows[("recent3K − gpt5_3K", "complete_case")]
    assert (cc["n"], cc["delta"]) == (2, pytest.approx(0.125))  # cuts 0 and 3: 0.25, 0.0
    itt = rows[("recent3K − gpt5_3K", "itt")]
    assert (itt["n"], itt["delta"]) == (4, pytest.approx((0.25 + 1.0 - 0.5 + 0.0) / 4))
    assert itt["p"] == harness_sign_flip_p([0.25, 1.0, -0.5, 0.0], n_resamples=2000, seed=42)[1]
    assert itt["ci_low"] <= itt["delta"] <= itt["ci_high"]
    none = rows[("recent3K − scratch", "complete_case")]
    assert none["n"] == 0 and math.isnan(none["delta"]) and none["note"].startswith("not estimable")


def test_a_lost_runner_cut_is_lost_for_both_of_its_arms():
    frame = frame_of({"recent3K": [0.5] * 4, "scratch": [0.5] * 4, "gpt5_3K": [0.5] * 4})
    frame["raised"] = None
    frame.loc[(frame["arm"] == "recent3K") & (frame["cut"] == 1), ["raised", "generated"]] = ["AttributeError: x", False]
    lost = continuation._runner_losses(frame)
    gone = lost[~lost["generated"]]
    assert set(zip(gone["arm"], gone["cut"])) == {("recent3K", 1), ("scratch", 1)}
    analysis = continuation.harness_analysis(lost)
    assert analysis["counts"]["scratch"]["n_generated"] == 3
    assert analysis["contrasts"]["recent3K-gpt5_3K"]["itt_zero_fill"]["cuts"] == [0, 2, 3]


@pytest.mark.corpus
def test_the_experiment_runs_on_the_fake_tool_caller(tmp_path, corpus_dir):
    params = continuation.Parameters(targets=("fake/tool-call",), n_cutpoints=4, n_resamples=500,
                                     output_dir=str(tmp_path / "continuation"))
    result = continuation.run(params)
    cells = pd.read_parquet(result.output_dir / "results" / "cells.parquet")
    assert len(cells) == 4 * len(ARMS) and cells["generated"].all() and cells["called"].all()
    # the fake calls the first tool (Bash) with no arguments: M1 where the truth is Bash
    assert set(cells["tool"]) == {"Bash"}
    assert (cells["match"] == (cells["ground_truth"] == "Bash")).all()
    att = result.tables["Attrition per arm"].set_index("arm")
    assert (att["calls"] == 4).all() and (att["failed"] == 0).all()
    variables = result.variables
    assert variables["n_calls"] == 16 and variables["n_cutpoints"] == 4
    for key in ("cc_delta", "cc_ci", "itt_delta", "itt_p", "attrition_recent3K_pct", "announced_recent_pct"):
        assert key in variables
    for stem in ("contrasts", "attrition", "cutpoints"):
        assert (result.output_dir / "tables" / f"{stem}.md").is_file()
    assert (result.output_dir / "figures" / "continuation.png").is_file()
    harness = pd.read_parquet(result.output_dir / "results" / "harness_analysis.parquet")
    assert json.loads(harness["analysis"].iloc[0])["counts"]["recent3K"]["n_generated"] == 4
    again = continuation.run(params)  # a second run answers every call from the cache
    assert again.variables["n_cached"] == 16


@pytest.mark.embedded
@pytest.mark.corpus
def test_the_experiment_runs_on_the_embedded_model(tmp_path, corpus_dir):
    params = continuation.Parameters(n_cutpoints=1, max_tokens=24, n_resamples=200,
                                     output_dir=str(tmp_path / "continuation"))
    result = continuation.run(params)
    cells = pd.read_parquet(result.output_dir / "results" / "cells.parquet")
    assert len(cells) == len(ARMS) and (cells["status"] == "ok").all()
    offered = {t["name"] for t in e07.TOOLS}
    # under reference the embedded model is forced to call (tool_choice required), a tool it was offered
    assert cells["called"].all() and set(cells["tool"]) <= offered
    assert result.variables["n_failed"] == 0


@pytest.mark.embedded
@pytest.mark.server
@pytest.mark.corpus
@pytest.mark.timeout(900)
def test_the_notebook_asks_a_llama_cpp_server_for_tool_calls(tmp_path, corpus_dir):
    """The notebook through llama-cpp-python's OpenAI-compatible server with its function-calling
    handler, under our protocol (tool_choice auto; the handler has no "required"): every cell
    answered over HTTP, a call names an offered tool, and what was sent was redacted."""
    from contextecho.engine.cache import CallCache
    from contextecho.engine.local_model import MODEL_NAME
    from contextecho.engine.local_server import TOOL_CHAT_FORMAT, serve_local_model
    from contextecho.notebooks import run_notebook

    served = f"hosted_vllm/{MODEL_NAME}"
    with serve_local_model(chat_format=TOOL_CHAT_FORMAT, log_dir=tmp_path / "server") as server:
        done = run_notebook("continuation", {"targets": served, "endpoints": f"hosted_vllm/*={server.api_base}",
                                             "protocol": "contextecho", "n_cutpoints": 1, "max_tokens": 24,
                                             "n_resamples": 200}, output_dir=tmp_path / "continuation",
                            log_output=False)
    cells = pd.read_parquet(done.output_dir / "results" / "cells.parquet")
    # every arm answered: a call, prose, or an empty answer (an answer without a call, which the
    # engine counts as an EmptyResponse error and the continuation as attrition)
    assert len(cells) == len(ARMS) and cells["generated"].all() and cells["redacted"].all()
    assert set(cells.loc[cells["status"] != "ok", "error_type"]) <= {"EmptyResponse", "NoContent"}
    assert set(cells["tool"].dropna()) <= {t["name"] for t in e07.TOOLS}
    manifest = json.loads((done.output_dir / "manifest.json").read_text())
    assert manifest["batches"]["continuation:targets"]["failed"] == (cells["status"] != "ok").sum()
    with CallCache() as cache:
        sent = [json.loads((cache.lookup(k) or cache.last_error(k)).request_json) for k in cells["key"]]
    assert all(r["params"]["tool_choice"] == "auto" and len(r["params"]["tools"]) == len(e07.TOOLS) for r in sent)
    text = json.dumps([r["messages"] for r in sent])
    assert "/Users/alex" not in text and "<USER_" in text  # the session's home path, redacted
