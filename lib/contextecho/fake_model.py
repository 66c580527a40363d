"""``fake/<behaviour>``: a deterministic in-process model for unit tests and dry runs.

It goes through LiteLLM like any provider, so tests exercise the real call path.
The model string picks the behaviour; ``@SECONDS`` adds a delay, ``:N`` a count:

- ``fake/echo``          answers ``echo:<last message>|<digest of request>|seed=<seed>``
- ``fake/rate-limited:N`` raises a 429 on the first N attempts of each request, then echoes
- ``fake/server-error:N`` raises a 500 on the first N attempts of each request, then echoes
- ``fake/always-429``    raises a 429 every time
- ``fake/timeout``       raises a timeout every time
- ``fake/garbage``       returns a response with no content
- ``fake/auth``          raises an authentication error (a missing key)

``calls`` counts attempts per model string, so tests can check what was really called.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections import Counter

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse


def _parse(model: str) -> tuple[str, float, int]:
    behaviour, delay, count = model, 0.0, 0
    if ":" in behaviour:
        behaviour, count_text = behaviour.rsplit(":", 1)
        count = int(count_text)
    if "@" in behaviour:
        behaviour, delay_text = behaviour.split("@", 1)
        delay = float(delay_text)
    return behaviour, delay, count


class FakeProvider(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self._attempts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _answer(self, model: str, messages: list, optional_params: dict,
                model_response: ModelResponse) -> ModelResponse:
        from .llm import fill_response

        behaviour, _, count = _parse(model)
        digest = hashlib.sha256(json.dumps([model, messages, optional_params], sort_keys=True,
                                           default=str).encode()).hexdigest()[:12]
        with self._lock:
            self.calls[model] += 1
            self._attempts[digest] += 1
            attempt = self._attempts[digest]
        kwargs = dict(model=f"fake/{model}", llm_provider="fake")
        if behaviour == "always-429" or (behaviour == "rate-limited" and attempt <= count):
            raise litellm.RateLimitError(message="fake 429: slow down", **kwargs)
        if behaviour == "server-error" and attempt <= count:
            raise litellm.InternalServerError(message="fake 500", **kwargs)
        if behaviour == "timeout":
            raise litellm.Timeout(message="fake timeout", **kwargs)
        if behaviour == "auth":
            raise litellm.AuthenticationError(message="fake: FAKE_API_KEY is not set", **kwargs)
        if behaviour == "garbage":
            model_response.choices[0].message.content = None
            return model_response
        if behaviour not in ("echo", "rate-limited", "server-error"):
            raise litellm.NotFoundError(message=f"fake model {model!r} does not exist", **kwargs)
        last = messages[-1]["content"]
        last = last if isinstance(last, str) else json.dumps(last)
        text = f"echo:{last[:80]}|{digest}|seed={optional_params.get('seed')}"
        prompt_tokens = sum(len(str(m.get("content", ""))) for m in messages) // 4
        return fill_response(model_response, f"fake/{model}", text, "stop", prompt_tokens,
                             len(text) // 4)

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                   print_verbose, encoding, api_key, logging_obj, optional_params,
                   acompletion=None, litellm_params=None, logger_fn=None, headers={},
                   timeout=None, client=None) -> ModelResponse:
        time.sleep(_parse(model)[1])
        return self._answer(model, messages, optional_params, model_response)

    async def acompletion(self, model, messages, api_base, custom_prompt_dict, model_response,
                          print_verbose, encoding, api_key, logging_obj, optional_params,
                          acompletion=None, litellm_params=None, logger_fn=None, headers={},
                          timeout=None, client=None) -> ModelResponse:
        await asyncio.sleep(_parse(model)[1])
        return self._answer(model, messages, optional_params, model_response)
