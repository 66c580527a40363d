"""A LiteLLM response filled in by an in-process provider (the embedded model, the fake)."""
from __future__ import annotations

import time

import litellm
from litellm.types.utils import ModelResponse


def fill_response(response: ModelResponse, model: str, text: str, finish_reason: str,
                  prompt_tokens: int, completion_tokens: int) -> ModelResponse:
    """``response`` with one choice's text, its finish reason, the token usage and the time."""
    response.model = model
    response.choices[0].message.content = text
    response.choices[0].finish_reason = finish_reason
    response.usage = litellm.Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                   total_tokens=prompt_tokens + completion_tokens)
    response.created = int(time.time())
    return response
