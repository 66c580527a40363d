"""A LiteLLM response filled in by an in-process provider (the embedded model, the fake).

An answer that is tool calls is sent the OpenAI way: ``message.tool_calls`` (ids
``call_<i>``, in order), no content (``None``), finish reason ``tool_calls``.
"""
from __future__ import annotations

import time
from typing import Sequence

import litellm
from litellm.types.utils import ChatCompletionMessageToolCall, Function, ModelResponse


def fill_response(response: ModelResponse, model: str, text: str, finish_reason: str,
                  prompt_tokens: int, completion_tokens: int,
                  tool_calls: Sequence[tuple[str, str]] = ()) -> ModelResponse:
    """``response`` with one choice's text, its finish reason, the token usage and the time.
    ``tool_calls``: (name, arguments string) pairs; when there are any they are the answer
    (module doc) and ``text`` and ``finish_reason`` are not sent."""
    response.model = model
    message = response.choices[0].message
    if tool_calls:
        message.content = None
        message.tool_calls = [
            ChatCompletionMessageToolCall(id=f"call_{i}", type="function",
                                          function=Function(name=name, arguments=arguments))
            for i, (name, arguments) in enumerate(tool_calls)]
        response.choices[0].finish_reason = "tool_calls"
    else:
        message.content = text
        response.choices[0].finish_reason = finish_reason
    response.usage = litellm.Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                   total_tokens=prompt_tokens + completion_tokens)
    response.created = int(time.time())
    return response
