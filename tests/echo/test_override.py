"""The harness's instruction-override designs (e11, e12) under ``reference``: arms, e12's
prefix, the request, the runners' rule sets and the tables, on hand-made inputs."""
from __future__ import annotations

import pandas as pd

from contextecho.echo.reference.continuation import Cutpoint, CutpointSelection
from contextecho.echo.reference.filler import make_filler
from contextecho.echo.reference.override import (E11_ARMS, compliance, e11_contexts, e12_contexts, probe_cuts,
                                                 session_prefix)
from contextecho.echo.reference.providers import no_tools_params
from contextecho.echo.reference.requests import override_request
from contextecho.echo.reference.s2_requests import S2_REQUESTS, for_runner, override_rules
from contextecho.echo.reference.texts import (ACKNOWLEDGEMENT, PRIOR_ACKNOWLEDGEMENT, STRESSOR_SYSTEM_PROMPT)
from contextecho.engine.record import NO_CONTENT, OK, CallRecord
from contextecho.experiments import instruction_override as io


def _row(kind, content):
    return {"type": kind, "message": {"content": content}}


ROWS = [
    _row("user", "fix the parser"),
    _row("assistant", [{"type": "text", "text": "Looking."},
                       {"type": "tool_use", "name": "Bash", "input": {"command": "x" * 400}}]),
    _row("user", [{"type": "tool_result", "content": [{"type": "text", "text": "y" * 600}]}]),
    {"type": "system"},
    None,
    _row("assistant", [{"type": "tool_use", "name": "Read", "input": {"path": "a.py"}}]),
]


def test_session_prefix_renders_e12s_way():
    full = session_prefix(ROWS, 5, 100_000)
    tool_use = '[tool_use Bash: {"command": "' + "x" * 287 + "]"  # json.dumps(input)[:300]
    assert full == ("--- USER ---\nfix the parser\n\n--- ASSISTANT ---\nLooking.\n" + tool_use
                    + "\n\n--- USER ---\n[tool_result: " + "y" * 500 + "]")
    assert session_prefix(ROWS, 5, 50) == full[-50:]
    # the walk stops once 1.3 x the length was collected: the tool result alone reaches 1.3 x 300
    assert session_prefix(ROWS, 5, 300) == full[-300:] and "fix the parser" not in session_prefix(ROWS, 3, 300)


def test_e12_filler_matches_the_prefix_it_got():
    contexts = e12_contexts(ROWS, 5, 100_000)
    assert contexts["filler"] == make_filler(len(contexts["claude_session"]))


def test_e11_contexts_and_cut_choice():
    contexts = e11_contexts(ROWS, 5, "g" * 3500)
    assert list(contexts) == list(E11_ARMS) and contexts["scratch"] is None
    assert contexts["filler3K"] == make_filler(3000) and contexts["gpt5_3K"] == "g" * 3000
    selection = CutpointSelection(9, 0, 1, tuple(Cutpoint(i, "Bash", {}, 0) for i in (10, 20, 30)))
    assert [c.cut_index for c in probe_cuts(selection, (2, 0))] == [30, 10]


def test_override_request_structure():
    r = override_request("CTX", "PRIOR", "Say yes.", 512)
    assert r.system_prompt == STRESSOR_SYSTEM_PROMPT and r.max_tokens == 512
    assert [(m["role"], m["content"][0]["text"]) for m in r.messages] == [
        ("user", "CTX"), ("assistant", ACKNOWLEDGEMENT), ("user", "[Prior task context]\nPRIOR"),
        ("assistant", PRIOR_ACKNOWLEDGEMENT), ("user", "Say yes.")]
    assert [m["content"][0]["text"] for m in override_request(None, "P", "S", 1).messages][0] == \
        "[Prior task context]\nP"


def test_runner_rule_sets():
    assert for_runner("experiments/e12_session_length_scaling/run_anthropic_family.py").name == "e12"
    assert override_rules("anthropic/claude-sonnet-4-6").name == "e11"
    xtarget = override_rules("together_ai/moonshotai/Kimi-K2.6")
    assert xtarget.name == "e11_xtarget" and xtarget.max_tokens == 512 and xtarget.read("  ls \n") == "ls"
    # call_no_tools: the budget as passed, no provider cap or floor, temperature 0
    assert no_tools_params("mistral/mistral-small-latest", 512) == {"max_tokens": 512, "temperature": 0.0}
    e11 = S2_REQUESTS.get("e11")
    assert e11.params("anthropic/claude-sonnet-4-6", e11.max_tokens) == {"max_tokens": 512}
    assert not e11.strip_reply and not e11.keeps_empty("gemini/gemini-2.5-pro") and xtarget.keeps_empty("gemini/x")


def test_compliance_uses_each_stressors_scorer():
    assert compliance("S1_ONE_WORD", "Yes.") == 1 and compliance("S1_ONE_WORD", "Yes, mostly.") == 0
    assert compliance("S4_STRICT_JSON", '  {"status": "ok"}\n') == 1 and compliance("S4_STRICT_JSON", "") == 0


def _record(status=OK, text=None, error=None):
    return CallRecord(key="k", model="m", request_json="{}", status=status, response_text=text, error_type=error)


def test_reply_keeps_an_empty_answer_where_the_runner_does():
    cell = io.OverrideCell("e11", "together_ai/x", "e11_xtarget", 0, 5, "scratch", None, "S1_ONE_WORD", 0, None)
    assert io.reply(_record(text=" no "), cell) == "no"
    assert io.reply(_record("error", error=NO_CONTENT), cell) == ""
    assert io.reply(_record("error", error="RateLimitError"), cell) is None
    gemini = io.OverrideCell("e12", "gemini/gemini-2.5-pro", "e12", 0, 5, "filler", 3000, "S2_NO_PREAMBLE", 0, None)
    assert io.reply(_record("error", error=NO_CONTENT), gemini) is None


def test_tables_report_each_stressor_apart_and_lost_cells_as_asked():
    rows = [dict(design="e11", target="t", arm="scratch", stressor=s, stored=st, compliance=c, response_len=n,
                 length=None) for s, st, c, n in (("S1_ONE_WORD", True, 1, 3), ("S1_ONE_WORD", False, None, None),
                                                  ("S2_NO_PREAMBLE", True, 0, 20), ("S2_NO_PREAMBLE", True, 1, 6))]
    rows += [dict(design="e12", target="t", arm="filler", stressor="S3_NO_ACTION", stored=True, compliance=1,
                  response_len=40, length=3000)]
    table = io.arm_compliance(pd.DataFrame(rows))
    assert table[["stressor", "asked", "stored", "compliant"]].values.tolist() == [
        ["S1_ONE_WORD", 2, 1, 1], ["S2_NO_PREAMBLE", 2, 2, 1]]
    assert table["compliance_pct"].tolist() == [100.0, 50.0] and table["mean_len"].tolist() == [3.0, 13.0]
    lengths = io.length_rates(pd.DataFrame(rows))
    assert lengths[["length", "arm", "stressor", "asked"]].values.tolist() == [[3000, "filler", "S3_NO_ACTION", 1]]
