"""The replay client renders a canned Anthropic reply as LiteLLM's own Anthropic adapter gives
it to our call site, and LiteLLM gives one empty text block and no content block alike: the
reason the harness's reading of an empty-text verdict (−1, the cell kept) is a declared
divergence (``empty_text_verdict``), not something our judge could read."""
from __future__ import annotations

import httpx
import pytest

from contextecho.conformance.replay import empty_text_reply, render_reply

litellm = pytest.importorskip("litellm")
MODEL = "anthropic/claude-sonnet-4-6"
SPECS = [{"blocks": []}, {"blocks": [""]}, {"text": ""}, {"blocks": ["", ""]}, {"blocks": ["a", "b"]},
         {"text": "x"}, {"blocks": [" "]}]


def _litellm_message(spec):
    """LiteLLM's own Anthropic adapter on the reply the harness's fake SDK returns for ``spec``."""
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    from litellm.types.utils import ModelResponse

    texts = spec["blocks"] if "blocks" in spec else [spec["text"]]
    body = {"id": "msg_0", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": t} for t in texts], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 7, "output_tokens": 1}}
    response = AnthropicConfig().transform_parsed_response(
        completion_response=body, raw_response=httpx.Response(200, json=body), model_response=ModelResponse())
    return response


@pytest.mark.parametrize("spec", SPECS)
def test_render_reply_gives_what_litellms_anthropic_adapter_gives(spec):
    ours = render_reply(spec, MODEL).choices[0].message.content
    assert ours == _litellm_message(spec).choices[0].message.content


def test_litellm_cannot_tell_one_empty_text_block_from_no_block():
    none, empty = _litellm_message({"blocks": []}), _litellm_message({"blocks": [""]})
    for response in (none, empty):
        assert response.choices[0].message.content is None
    assert none.choices[0].message.model_dump() == empty.choices[0].message.model_dump()
    assert none.choices[0].finish_reason == empty.choices[0].finish_reason
    hidden = [{k: v for k, v in r._hidden_params.items() if k != "additional_headers"} for r in (none, empty)]
    assert hidden[0] == hidden[1]  # the raw blocks are kept nowhere (only the HTTP headers differ)


def test_empty_text_reply_is_an_anthropic_reply_of_empty_text_blocks_only():
    assert [empty_text_reply(s, MODEL) for s in SPECS] == [False, True, True, True, False, False, False]
    assert not empty_text_reply({"text": ""}, "openai/gpt-5")  # an OpenAI reply: content "" reaches us
    assert not empty_text_reply({"null": True}, MODEL) and not empty_text_reply(None, MODEL)
    assert not empty_text_reply({"raise": {"type": "RateLimitError", "message": "429"}}, MODEL)


# ---------------------------------------------------------------- a recorded SDK exception
@pytest.mark.parametrize("error_type, message, expected, transient", [
    ("APITimeoutError", "Request timed out.", "Timeout", True),  # OpenAI's and Anthropic's SDKs
    ("openai.APITimeoutError", "Request timed out.", "Timeout", True),
    ("APIConnectionError", "Connection error.", "APIConnectionError", True),
    ("ReadTimeout", "", "Timeout", True),  # httpx beneath either SDK
    ("ConnectError", "[Errno 111] Connection refused", "APIConnectionError", True),
    ("OverloadedError", "Overloaded", "ServiceUnavailableError", True),  # Anthropic's 529
    ("DeadlineExceeded", "504 Deadline Exceeded", "Timeout", True),  # Google's api-core
    ("ResourceExhausted", "Quota exceeded", "RateLimitError", True),
    ("ServerError", "503 UNAVAILABLE", "ServiceUnavailableError", True),  # google-genai: by its status
    ("ClientError", "400 INVALID_ARGUMENT", "BadRequestError", False),
    ("RateLimitError", "429 rate limited", "RateLimitError", True),  # LiteLLM's own name
    ("AuthenticationError", "invalid x-api-key", "AuthenticationError", False),
    ("NotFound", "model not found", "NotFoundError", False),
])
def test_a_recorded_sdk_exception_becomes_what_litellm_raises_for_it(error_type, message, expected, transient):
    from contextecho.engine.faults import TRANSIENT, classify
    from contextecho.conformance.replay import replay_error

    error = replay_error(error_type, message, "openai/gpt-4o-mini")
    assert type(error).__name__ == expected and isinstance(error, getattr(litellm, expected))
    assert (classify(error).kind == TRANSIENT) is transient  # so a timed-out first attempt is retried


def test_an_exception_no_sdk_names_is_a_programming_fault():
    from contextecho.engine.faults import PROGRAMMING, classify
    from contextecho.conformance.replay import replay_error

    error = replay_error("KeyError", "'choices'", "openai/gpt-4o-mini")
    assert classify(error).kind == PROGRAMMING
