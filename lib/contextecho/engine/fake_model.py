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
- ``fake/empty``         answers ``""``; ``fake/whitespace`` answers spaces and newlines
- ``fake/value-error``   raises ``ValueError`` inside the provider (``fake/type-error``: ``TypeError``)
- ``fake/http-<code>``   fails as a provider answering HTTP ``<code>`` does (LiteLLM maps the
                         status: 400 bad request, 401 authentication, 404 not found, 500 ...)
- ``fake/tool-call``     answers ONE tool call when the request offers ``tools`` and its
                         ``tool_choice`` is not ``"none"``: the first tool's name with arguments
                         ``{}``, unless the last user message holds a line ``CALL <name> <json>``
                         (the first such line): then that name and that text verbatim as the
                         arguments, valid JSON or not (``CALL <name>`` alone: ``{}``). Without
                         tools, with ``tool_choice`` ``"none"``, or when the last user message
                         contains ``PROSE``, it answers the text ``prose:<digest of request>``.
                         A named ``tool_choice`` does not change the name (it is a stand-in).
- ``fake/think``         answers as a reasoning model without a reasoning parser does: a
                         ``<think>`` block (:data:`THINKING`, which names option (A) and a
                         score of 0) and then the answer: the text after ``ANSWER `` on a line
                         of the last user message (the first such line), else ``(B)``; its
                         completion tokens count both.
- ``fake/json``          answers the text after ``JSON `` on a line of the last user message
                         (the last such line) verbatim, valid JSON or not; else ``{}``.

``calls`` counts attempts per model string, so tests can check what was really called.
With ``CONTEXTECHO_FAKE_CALL_LOG`` set, every attempt also appends one line (``<pid>
<model> <request digest>``) to that file, so calls from several processes can be counted.
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import Counter

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse

from .hashing import content_hash
from .responses import fill_response


def _parse(model: str) -> tuple[str, float, int]:
    behaviour, delay, count = model, 0.0, 0
    if ":" in behaviour:
        behaviour, count_text = behaviour.rsplit(":", 1)
        count = int(count_text)
    if "@" in behaviour:
        behaviour, delay_text = behaviour.split("@", 1)
        delay = float(delay_text)
    return behaviour, delay, count


CALL_LOG_ENV = "CONTEXTECHO_FAKE_CALL_LOG"


class HTTPStatusFault(Exception):
    """What a provider's client raises for an HTTP error status (LiteLLM maps ``status_code``)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


def _log_call(model: str, digest: str) -> None:
    path = os.environ.get(CALL_LOG_ENV)
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:  # one write of one short line with O_APPEND: lines of concurrent processes never mix
        os.write(fd, f"{os.getpid()} {model} {digest}\n".encode())
    finally:
        os.close(fd)


def _text_of(message: dict) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def _prompt_tokens(messages: list) -> int:
    return sum(len(str(m.get("content", ""))) for m in messages) // 4


JSON_LINE = "JSON "  # a line of the last user message that scripts ``fake/json``'s answer
ANSWER_LINE = "ANSWER "  # a line of the last user message that scripts ``fake/think``'s answer
THINKING = "The first option that comes to mind is (A) Very Accurate. Score: 0. But let me reconsider."
CALL_LINE = "CALL "  # a line of the last user message that scripts ``fake/tool-call``'s call


def _tool_call_answer(model: str, messages: list, optional_params: dict,
                      model_response: ModelResponse, digest: str) -> ModelResponse:
    """``fake/tool-call`` (module doc)."""
    tools = optional_params.get("tools") or []
    users = [m for m in messages if m.get("role") == "user"]
    last = _text_of(users[-1]) if users else ""
    if not tools or optional_params.get("tool_choice") == "none" or "PROSE" in last:
        text = f"prose:{digest}"
        return fill_response(model_response, f"fake/{model}", text, "stop", _prompt_tokens(messages),
                             len(text) // 4)
    name, arguments = tools[0]["function"]["name"], "{}"
    scripted = next((line for line in last.splitlines() if line.startswith(CALL_LINE)), None)
    if scripted is not None:
        parts = scripted[len(CALL_LINE):].split(" ", 1)
        name = parts[0]
        arguments = parts[1] if len(parts) > 1 else "{}"
    return fill_response(model_response, f"fake/{model}", "", "tool_calls", _prompt_tokens(messages),
                         max(1, len(name + arguments) // 4), tool_calls=[(name, arguments)])


class FakeProvider(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self._attempts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _answer(self, model: str, messages: list, optional_params: dict,
                model_response: ModelResponse) -> ModelResponse:
        behaviour, _, count = _parse(model)
        digest = content_hash([model, messages, optional_params], default=str)[:12]
        with self._lock:
            self.calls[model] += 1
            self._attempts[digest] += 1
            attempt = self._attempts[digest]
        _log_call(model, digest)
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
        if behaviour in ("empty", "whitespace"):
            text = "" if behaviour == "empty" else "  \n\t \n"
            return fill_response(model_response, f"fake/{model}", text, "stop", 1, 0)
        if behaviour == "value-error":
            raise ValueError(f"fake {model}: a bug inside the provider")
        if behaviour == "type-error":
            raise TypeError(f"fake {model}: a bug inside the provider")
        if behaviour.startswith("http-"):
            raise HTTPStatusFault(int(behaviour[5:]), f"fake {model}: HTTP {behaviour[5:]}")
        if behaviour == "think":
            users = [m for m in messages if m.get("role") == "user"]
            lines = _text_of(users[-1]).splitlines() if users else []
            answer = next((line[len(ANSWER_LINE):] for line in lines if line.startswith(ANSWER_LINE)), "(B)")
            text = f"<think>{THINKING}</think>\n\n{answer}"
            return fill_response(model_response, f"fake/{model}", text, "stop", _prompt_tokens(messages),
                                 len(text) // 4)
        if behaviour == "json":
            users = [m for m in messages if m.get("role") == "user"]
            lines = _text_of(users[-1]).splitlines() if users else []
            text = next((line[len(JSON_LINE):] for line in reversed(lines) if line.startswith(JSON_LINE)), "{}")
            return fill_response(model_response, f"fake/{model}", text, "stop", _prompt_tokens(messages),
                                 max(1, len(text) // 4))
        if behaviour == "tool-call":
            return _tool_call_answer(model, messages, optional_params, model_response, digest)
        if behaviour not in ("echo", "rate-limited", "server-error"):
            raise litellm.NotFoundError(message=f"fake model {model!r} does not exist", **kwargs)
        text = f"echo:{_text_of(messages[-1])[:80]}|{digest}|seed={optional_params.get('seed')}"
        return fill_response(model_response, f"fake/{model}", text, "stop", _prompt_tokens(messages),
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
