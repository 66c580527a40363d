"""The harness's provider rules: what a reference request sends per provider.

The harness does not send the token budget its runners ask for: ``harness/clients.py``
floors or caps it per provider (``:250-296``, ``:367``), and its judge
(``harness/judge.py:125-175``) sends other settings to Anthropic than to an
OpenAI-compatible judge. These functions apply the same rules to a LiteLLM model string
(``runs/README.md``, "Where each params field comes from"):

==============================  =============================================================
provider (LiteLLM prefix)       target request
==============================  =============================================================
``anthropic`` (``bedrock``      ``max_tokens`` as asked
with a Claude model)
``openai``                      ``max_completion_tokens``: ``max(asked, 128000)`` for a model
                                id starting ``gpt-5``, ``o3`` or ``o4``, else as asked
``openrouter``                  ``max_tokens = max(asked, 4096)``, at least 8192 when the id
                                holds ``gpt-5``, ``/o3`` or ``/o4``
``together_ai``                 ``max_tokens = min(asked, 4096)``
``cohere``, ``mistral``         ``max_tokens = min(asked, 4096)``
``nvidia_nim``                  ``max_tokens = max(asked, 8192)``
``gemini``, ``vertex_ai``       ``max_tokens = max(asked, 16384)`` and ``temperature = 0.0``
(a Gemini model)                (``call_gemini``'s default, ``clients_gemini.py:50``)
anything else (the embedded     ``max_tokens`` as asked: the harness never ran these, so no
model, vLLM, llama.cpp)         rule of its applies
==============================  =============================================================

The judge: Anthropic gets ``max_tokens`` as asked (the harness's 400) and no
``response_format``; an OpenAI-compatible judge gets ``response_format={"type":
"json_object"}`` (``judge.py:157``) — OpenRouter with the harness's ``max_tokens=8192``,
any other with its provider's target rule applied to the budget; a Gemini judge gets
its target rule (the harness has no Gemini judge; a thinking model at 400 tokens returns
nothing). An in-process judge (the embedded model, the fakes) is spoken to in the OpenAI
form: the budget and ``json_object``, which the embedded model honours by constrained
decoding (:mod:`contextecho.engine.json_constraint`), so its verdict is valid JSON.

Messages: the harness's Anthropic client sends each turn as a list of text blocks and the
system prompt apart (``clients.py:158-170``); every OpenAI-compatible client joins the
blocks into one string (``:221, 232``), the system prompt first. :func:`provider_messages`
gives the same two forms (LiteLLM moves the leading system message to Anthropic's
``system`` and Gemini's ``system_instruction``); either form has the same request key.

e10's cross-org S2 runner (``experiments/e10_cross_org/run_xtarget_v2.py:66-112``) does not
use ``TargetClient`` and has token rules of its own (:func:`e10_target_params`): its own
OpenAI-compatible call with ``max_tokens`` as asked (its 1,024) and ``temperature=0.0``, for a
model id starting ``gpt-5`` no temperature and ``max_completion_tokens=8192`` instead; a
Gemini model through ``call_gemini`` with that function's defaults, 4,096 output tokens at
temperature 0.0 (``clients_gemini.py:43-50``). :mod:`.s2_requests` names both rule sets.

An empty reply: the harness judges an empty Anthropic or OpenAI-compatible answer
(``clients.py:309``), while its Gemini client raises on one (``clients_gemini.py:155-167``)
and the cell is lost (:func:`judges_empty_reply`).
"""
from __future__ import annotations

from typing import Any

from ...engine import llm
from ...engine.json_constraint import JSON_OBJECT
from ...engine.model_request import strip_cache_markers

ANTHROPIC, OPENAI, OPENROUTER, GEMINI = "anthropic", "openai", "openrouter", "gemini"
TOGETHER, COHERE, MISTRAL, NVIDIA = "together", "cohere", "mistral", "nvidia"
IN_PROCESS, OTHER = "in-process", "other"

#: LiteLLM provider prefix -> the harness's provider name.
PREFIXES = {"anthropic": ANTHROPIC, "openai": OPENAI, "openrouter": OPENROUTER, "gemini": GEMINI,
            "together_ai": TOGETHER, "cohere": COHERE, "cohere_chat": COHERE, "mistral": MISTRAL,
            "nvidia_nim": NVIDIA}
REASONING_PREFIXES = ("gpt-5", "o3", "o4")
OPENAI_REASONING_FLOOR = 128_000
OPENROUTER_FLOOR, OPENROUTER_REASONING_FLOOR = 4096, 8192
CAP_4096 = 4096
NVIDIA_FLOOR = 8192
GEMINI_FLOOR = 16_384
GEMINI_TEMPERATURE = 0.0
OPENROUTER_JUDGE_MAX_TOKENS = 8192
#: e10's request rules (run_xtarget_v2.py:66-112) and call_gemini's defaults (clients_gemini.py:43-50).
E10_TEMPERATURE = 0.0
E10_REASONING_PREFIX = "gpt-5"
E10_REASONING_MAX_COMPLETION_TOKENS = 8192
GEMINI_CALL_MAX_TOKENS = 4096


def harness_provider(model: str) -> tuple[str, str]:
    """``(provider, model id)`` of a LiteLLM model string as the harness names them."""
    prefix = llm.provider_of(model)
    model_id = model.split("/", 1)[1] if prefix else model
    if llm.is_in_process(model):
        return IN_PROCESS, model_id
    if prefix in ("bedrock", "vertex_ai"):
        if "claude" in model_id:
            return ANTHROPIC, model_id
        if "gemini" in model_id:
            return GEMINI, model_id
        return OTHER, model_id
    if not prefix:  # LiteLLM's own inference for a bare name
        if model_id.startswith("claude"):
            return ANTHROPIC, model_id
        if model_id.startswith(("gpt-", "o1", "o3", "o4")):
            return OPENAI, model_id
        if model_id.startswith("gemini"):
            return GEMINI, model_id
    return PREFIXES.get(prefix, OTHER), model_id


def target_params(model: str, max_tokens: int) -> dict[str, Any]:
    """The sampling parameters of a reference target request for ``model`` (module doc)."""
    provider, model_id = harness_provider(model)
    if provider == OPENAI:
        floor = OPENAI_REASONING_FLOOR if model_id.startswith(REASONING_PREFIXES) else 0
        return {"max_completion_tokens": max(max_tokens, floor)}
    if provider == OPENROUTER:
        tokens = max(max_tokens, OPENROUTER_FLOOR)
        if "gpt-5" in model_id or "/o3" in model_id or "/o4" in model_id:
            tokens = max(tokens, OPENROUTER_REASONING_FLOOR)
        return {"max_tokens": tokens}
    if provider in (TOGETHER, COHERE, MISTRAL):
        return {"max_tokens": min(max_tokens, CAP_4096)}
    if provider == NVIDIA:
        return {"max_tokens": max(max_tokens, NVIDIA_FLOOR)}
    if provider == GEMINI:
        return {"max_tokens": max(max_tokens, GEMINI_FLOOR), "temperature": GEMINI_TEMPERATURE}
    return {"max_tokens": max_tokens}


def e10_target_params(model: str, max_tokens: int) -> dict[str, Any]:
    """The sampling parameters of e10's S2 target request for ``model`` (module doc)."""
    provider, model_id = harness_provider(model)
    if provider == GEMINI:
        return {"max_tokens": GEMINI_CALL_MAX_TOKENS, "temperature": GEMINI_TEMPERATURE}
    if model_id.startswith(E10_REASONING_PREFIX):
        return {"max_completion_tokens": E10_REASONING_MAX_COMPLETION_TOKENS}
    return {"max_tokens": max_tokens, "temperature": E10_TEMPERATURE}


def provider_messages(model: str, request: Any) -> list[dict]:
    """The chat messages of a :class:`~.requests.TargetRequest` in the form the harness's
    client for ``model``'s provider sends (module doc)."""
    if harness_provider(model)[0] == ANTHROPIC:
        return request.chat_messages()
    return strip_cache_markers(request.chat_messages())


def plain_messages(model: str, request: Any) -> list[dict]:
    """The chat messages of a :class:`~.requests.TargetRequest` as plain strings, the system
    prompt first, whatever the provider (e10's own OpenAI-compatible call)."""
    return strip_cache_markers(request.chat_messages())


def judge_params(model: str, max_tokens: int) -> dict[str, Any]:
    """The sampling parameters of a reference judge request for ``model`` (module doc)."""
    provider, _ = harness_provider(model)
    if provider == ANTHROPIC:
        return {"max_tokens": max_tokens}
    if provider == IN_PROCESS:  # spoken to in the OpenAI form; the embedded model constrains its output
        return {"max_tokens": max_tokens, "response_format": dict(JSON_OBJECT)}
    if provider == GEMINI:
        return target_params(model, max_tokens)
    if provider == OPENROUTER:
        return {"max_tokens": OPENROUTER_JUDGE_MAX_TOKENS, "response_format": dict(JSON_OBJECT)}
    return {**target_params(model, max_tokens), "response_format": dict(JSON_OBJECT)}


def judges_empty_reply(model: str) -> bool:
    """Whether the harness judges an empty answer of ``model`` (Gemini's client raises)."""
    return harness_provider(model)[0] != GEMINI


#: e11's cross-target call (``run_xtarget.py:54-84``, ``call_no_tools``): temperature 0.
NO_TOOLS_TEMPERATURE = 0.0


def no_tools_params(model: str, max_tokens: int) -> dict[str, Any]:
    """The sampling parameters of e11's cross-target request (``call_no_tools``): the budget
    as passed, whatever the provider (no floor or cap of its), at temperature 0."""
    return {"max_tokens": max_tokens, "temperature": NO_TOOLS_TEMPERATURE}
