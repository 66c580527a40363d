"""What a reference run sends and what it makes of a reply, per provider
(``echo/reference/providers.py``, ``echo/reference/protocol.py``; runs/README.md "Where each
params field comes from" and "Harness behaviours" 1-2)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from contextecho.echo.protocols import protocol
from contextecho.echo.reference.providers import harness_provider, judge_params, target_params
from contextecho.engine.record import EMPTY_RESPONSE, ERROR, NO_CONTENT, OK, CallRecord

REFERENCE = protocol("reference")
OURS = protocol("contextecho")


@pytest.mark.parametrize("model, asked, expected", [
    ("anthropic/claude-sonnet-4-5", 600, {"max_tokens": 600}),
    ("openai/gpt-5", 600, {"max_completion_tokens": 128_000}),
    ("openai/o3-mini", 600, {"max_completion_tokens": 128_000}),
    ("openai/gpt-4o", 600, {"max_completion_tokens": 600}),
    ("openrouter/moonshotai/kimi-k2.6", 600, {"max_tokens": 4096}),
    ("openrouter/openai/gpt-5", 600, {"max_tokens": 8192}),
    ("openrouter/openai/o4-mini", 9000, {"max_tokens": 9000}),
    ("together_ai/deepseek-ai/DeepSeek-V3", 6000, {"max_tokens": 4096}),
    ("cohere_chat/command-a-03-2025", 600, {"max_tokens": 600}),
    ("mistral/mistral-large-latest", 5000, {"max_tokens": 4096}),
    ("nvidia_nim/nvidia/llama-3.3-nemotron-super-49b-v1.5", 600, {"max_tokens": 8192}),
    ("gemini/gemini-2.5-pro", 600, {"max_tokens": 16_384, "temperature": 0.0}),
    ("vertex_ai/gemini-2.5-flash", 20_000, {"max_tokens": 20_000, "temperature": 0.0}),
    ("local/smollm2-135m", 32, {"max_tokens": 32}),
    ("hosted_vllm/Qwen/Qwen2.5-7B-Instruct", 600, {"max_tokens": 600}),
])
def test_target_token_rules(model, asked, expected):
    assert target_params(model, asked) == expected


def test_judge_settings_per_provider():
    assert judge_params("anthropic/claude-sonnet-4-6", 400) == {"max_tokens": 400}
    assert judge_params("openrouter/openai/gpt-5", 400) == {"max_tokens": 8192,
                                                           "response_format": {"type": "json_object"}}
    assert judge_params("openai/gpt-4o", 400) == {"max_completion_tokens": 400,
                                                  "response_format": {"type": "json_object"}}
    assert judge_params("hosted_vllm/x", 400)["response_format"] == {"type": "json_object"}
    assert judge_params("gemini/gemini-2.5-pro", 400) == {"max_tokens": 16_384, "temperature": 0.0}
    assert judge_params("local/smollm2-135m", 400) == {"max_tokens": 400, "response_format": {"type": "json_object"}}


def test_bare_model_names_are_read_as_litellm_reads_them():
    assert harness_provider("claude-sonnet-4-6")[0] == "anthropic"
    assert harness_provider("gpt-5")[0] == "openai"
    assert harness_provider("bedrock/anthropic.claude-3-haiku")[0] == "anthropic"


def _record(status=OK, text="answer", error_type=None):
    return CallRecord(key="k", model="m", request_json="{}", status=status, response_text=text,
                      error_type=error_type)


def _cell(target):
    """What ``Protocol.reply`` reads of a cell: its target and its versions."""
    return SimpleNamespace(target=target, versions={})


def test_an_empty_target_answer_is_judged_under_reference_and_an_error_under_ours():
    for error in (EMPTY_RESPONSE, NO_CONTENT):
        record = _record(ERROR, None, error)
        assert REFERENCE.reply(record, _cell("anthropic/claude-sonnet-4-5")) == ""
        assert REFERENCE.reply(record, _cell("openai/gpt-5")) == ""
        assert REFERENCE.reply(record, _cell("gemini/gemini-2.5-pro")) is None  # its client raises: lost
        assert OURS.reply(record, _cell("anthropic/claude-sonnet-4-5")) is None
    assert REFERENCE.reply(_record(ERROR, None, "RateLimitError"), _cell("openai/gpt-5")) is None
    assert REFERENCE.reply(_record(), _cell("x")) == OURS.reply(_record(), _cell("x")) == "answer"


def test_an_empty_verdict_is_minus_one_and_a_verdict_without_content_loses_the_cell():
    assert REFERENCE.judge_reply(_record(ERROR, None, EMPTY_RESPONSE), "anthropic/x") == ""
    assert REFERENCE.judge_reply(_record(ERROR, None, NO_CONTENT), "openai/x") is None
    read = REFERENCE.read_verdict("")
    assert read.status == "invalid" and math.isnan(read.score)
    assert (read.reference_score, read.reference_label, read.reference_reason) == \
        (-1, "parse_error", "no JSON found")
    raised = REFERENCE.read_verdict('{"score": null}')
    assert raised.reference_score is None and raised.reference_label is None
    assert OURS.judge_reply(_record(ERROR, None, EMPTY_RESPONSE), "x") is None


def test_each_cell_is_judged_by_its_own_call_under_reference():
    setup = REFERENCE.judging(["anthropic/claude-sonnet-4-6"], None)
    a = REFERENCE.judge_request(setup, "anthropic/claude-sonnet-4-6", "Who are you?", "same", {"max_tokens": 400}, "a")
    b = REFERENCE.judge_request(setup, "anthropic/claude-sonnet-4-6", "Who are you?", "same", {"max_tokens": 400}, "b")
    assert a.messages == b.messages and a.key != b.key  # the harness makes one judge call per cell


def test_only_the_reference_shortens_and_refuses_other_events():
    used = {"window_chars": 3000, "probe_max_tokens": 32, "stressor_max_tokens": 32, "judge_max_tokens": 8,
            "temperature": "provider default"}
    assert REFERENCE.shortened(used) == ["judge_max_tokens", "probe_max_tokens", "stressor_max_tokens",
                                         "window_chars"]
    assert OURS.shortened(used) == []
    with pytest.raises(ValueError, match="compactions only"):
        REFERENCE.check_events(["microcompaction"])
    OURS.check_events(["microcompaction"])
    assert REFERENCE.formats == ("claude_code",) and "codex_cli" in OURS.formats
