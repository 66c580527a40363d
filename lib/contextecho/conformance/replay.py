"""The replay client of a run-level conformance case: canned replies at the transport boundary.

Only the network client is replaced (:attr:`contextecho.engine.calls.Transport.client`):
:class:`Replay` answers each request with the case's canned reply for its (call, key),
the key coming from our cell identity (never from the request text), and keeps every
request in the form LiteLLM was given it, after our provider rules. :func:`sdk_form` is the
one documented mapping of such a request onto the harness's SDK keyword arguments
(prompt-caching markers, a hint outside the request key, are counted apart and left out of
it): Anthropic gets the leading system message as ``system``, the rest of the messages
as sent, and tools in LiteLLM's Anthropic form (:func:`anthropic_tools`); an
OpenAI-compatible endpoint gets the messages as sent, with the API base LiteLLM
uses for the provider as ``base_url`` (Cohere: LiteLLM's route is Cohere's own chat API,
not its OpenAI-compatible one); Gemini gets ``contents`` (``assistant`` re-roled
``model``, text as parts) and a ``config`` of ``max_output_tokens``, ``temperature``,
``system_instruction`` and the transport's timeout in milliseconds. Model strings are the
case's provider and model id under LiteLLM's prefix for that provider
(:func:`litellm_model`).
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator, Mapping, Protocol, Sequence

from ..echo.reference.providers import (ANTHROPIC, COHERE, GEMINI, MISTRAL, NVIDIA, OPENAI, OPENROUTER,
                                        TOGETHER, harness_provider)
from ..engine import llm
from ..engine.faults import classify
from ..echo.reference.released_answers import key_text
from ..engine.model_request import ModelRequest
from .case import CaseResult, FixtureError, field_differences, matches

#: LiteLLM's prefix for each of the harness's providers.
LITELLM_PREFIX = {ANTHROPIC: "anthropic", OPENAI: "openai", OPENROUTER: "openrouter", GEMINI: "gemini",
                  NVIDIA: "nvidia_nim", TOGETHER: "together_ai", COHERE: "cohere_chat", MISTRAL: "mistral"}
ENDPOINTS = {ANTHROPIC: "anthropic.messages.create", GEMINI: "google.genai.models.generate_content",
             COHERE: "cohere.v2.chat"}  # LiteLLM's cohere_chat route is Cohere's own chat API
OPENAI_SDK_ENDPOINT = "openai.chat.completions.create"
#: The API base LiteLLM sends each OpenAI-compatible provider's requests to (its defaults).
API_BASES = {OPENROUTER: "https://openrouter.ai/api/v1", NVIDIA: "https://integrate.api.nvidia.com/v1",
             TOGETHER: "https://api.together.xyz/v1", MISTRAL: "https://api.mistral.ai/v1",
             COHERE: "https://api.cohere.com/v2/chat"}


# ---------------------------------------------------------------- the replay client
def key_identity(key: Mapping[str, Any]) -> tuple:
    """A target request key as a cell identity: (target, position, arm, item, replicate)."""
    return (key.get("target"), key.get("position"), key.get("arm"), key.get("item"), int(key.get("replicate", 0)))


def key_fields(case: dict, call: str) -> list[str]:
    """The key fields of ``call`` requests, as the case's canned replies (else its expected
    requests) name them; none where neither has such a request."""
    for entry in [*case.get("canned_replies", []), *case["expected"].get("requests", [])]:
        if entry.get("call") == call:
            return list(entry["key"])
    return []


@dataclass
class Sent:
    seq: int
    call: str
    key: dict
    attempt: int
    model: str
    kwargs: dict
    reply: Mapping | None = None  # the canned reply spec it was answered with (none: unexpected)


class Replies(Protocol):
    """Where a replay's replies come from: the reply specs of a ``(call, key text)``, or None where
    it has none (the case's canned replies as a dict;
    :class:`~contextecho.echo.reference.released_answers.ReleasedReplies`)."""

    def get(self, ident: tuple[str, str], default: Any = None) -> list | None: ...


class UnexpectedRequest(Exception):
    """A request whose (call, key) the case has no reply for."""


@dataclass
class Replay:
    """The network client of a replayed run (module doc): canned replies by (call, key)
    (or any :class:`Replies` that gives them:
    :class:`~contextecho.echo.reference.released_answers.ReleasedReplies`)."""

    replies: Replies
    identities: dict[str, tuple[str, dict]] = field(default_factory=dict)  # target request key -> (call, key)
    judge_calls: dict[str, str] = field(default_factory=dict)  # judge model -> call kind
    # Call kind -> its key fields, where they are fewer than its cell's (the audit's: no turn).
    judge_fields: dict[str, Sequence[str]] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    # The last reply spec sent to each target cell, by cell identity (:func:`key_identity`).
    target_replies: dict[tuple, Mapping] = field(default_factory=dict)
    #: Why the requests cannot be compared, where the replies are released cells
    #: (:mod:`.released`), not the harness's canned replies; None: they are canned.
    not_in_release: str | None = None

    def empty_text_cells(self, call: str = "judge") -> set[tuple]:
        """The cells (:func:`key_identity`) whose ``call`` was answered with Anthropic text
        blocks, all empty (:func:`empty_text_reply`)."""
        return {key_identity(s.key) for s in self.sent if s.call == call and empty_text_reply(s.reply, s.model)}

    def name_target(self, key: str, fields: Sequence[str], values: Mapping[str, Any], where: str) -> None:
        """Record the request ``key`` as the target call the case's request keys name by
        ``fields``, each read from ``values`` (our cell's, in the harness's words); a field the
        values lack is the fixture's error, named at ``where``."""
        unknown = [f for f in fields if f not in values]
        if unknown:
            raise FixtureError(where, f"unknown request key field(s) {unknown}")
        self.identities[key] = ("target", {f: values[f] for f in fields})

    def identify(self, request: ModelRequest) -> tuple[str, dict] | None:
        if request.key in self.identities:
            return self.identities[request.key]
        cell = request.tag.get("cell")
        if cell in self.identities and request.model in self.judge_calls:
            call, key = self.judge_calls[request.model], self.identities[cell][1]
            fields = self.judge_fields.get(call)
            return call, ({f: key[f] for f in fields if f in key} if fields else key)
        return None

    async def __call__(self, request: ModelRequest, kwargs: dict) -> Any:
        found = self.identify(request)
        if found is None:
            self.unexpected.append(f"{request.model} request {request.key[:12]} (tag {dict(request.tag)})")
            raise UnexpectedRequest(f"no cell identity for request {request.key[:12]}")
        call, key = found
        ident = (call, key_text(key))
        attempt = self.counts[ident]
        self.counts[ident] += 1
        self.sent.append(Sent(len(self.sent), call, key, attempt, request.model, dict(kwargs)))
        specs = self.replies.get(ident)
        if specs is None:
            self.unexpected.append(f"{call} {key_text(key)}")
            raise UnexpectedRequest(f"no canned reply for {call} {key_text(key)}")
        spec = specs[min(attempt, len(specs) - 1)]
        self.sent[-1].reply = spec
        if call == "target":
            self.target_replies[key_identity(key)] = spec
        return render_reply(spec, request.model)


# The status codes a message names -> the LiteLLM exception that provider error becomes.
_STATUS_ERRORS = (("429", "RateLimitError"), ("529", "ServiceUnavailableError"),
                  ("503", "ServiceUnavailableError"), ("502", "ServiceUnavailableError"),
                  ("500", "InternalServerError"), ("400", "BadRequestError"),
                  ("401", "AuthenticationError"), ("403", "PermissionDeniedError"), ("404", "NotFoundError"))


# The exception classes the harness's SDKs raise (OpenAI's and Anthropic's share their names;
# Google's google-genai and google-api-core; httpx's and the builtins beneath them), by class
# name -> the LiteLLM exception LiteLLM raises for each. Google's ClientError and ServerError
# carry their status in the message (read through _STATUS_ERRORS).
SDK_ERRORS = {
    "APITimeoutError": "Timeout", "DeadlineExceededError": "Timeout", "DeadlineExceeded": "Timeout",
    "ReadTimeout": "Timeout", "ConnectTimeout": "Timeout", "WriteTimeout": "Timeout", "PoolTimeout": "Timeout",
    "TimeoutException": "Timeout", "TimeoutError": "Timeout",
    "ConnectError": "APIConnectionError", "ReadError": "APIConnectionError", "WriteError": "APIConnectionError",
    "NetworkError": "APIConnectionError", "RemoteProtocolError": "APIConnectionError",
    "ConnectionError": "APIConnectionError", "ConnectionResetError": "APIConnectionError",
    "ConnectionRefusedError": "APIConnectionError", "ConnectionAbortedError": "APIConnectionError",
    "OverloadedError": "ServiceUnavailableError", "ServiceUnavailable": "ServiceUnavailableError",
    "ResourceExhausted": "RateLimitError", "TooManyRequests": "RateLimitError",
    "InternalError": "InternalServerError",
    "InvalidArgument": "BadRequestError", "Unauthenticated": "AuthenticationError", "Unauthorized": "AuthenticationError",
    "PermissionDenied": "PermissionDeniedError", "Forbidden": "PermissionDeniedError", "NotFound": "NotFoundError",
}


def replay_error(error_type: str, message: str, model: str) -> Exception:
    """The exception LiteLLM raises for a provider error of ``error_type`` (module doc of
    :mod:`contextecho.engine.faults`: its class decides whether it is retried): LiteLLM's own
    class of that name, else the SDK class's (:data:`SDK_ERRORS`), else the status code or the
    words its message names; an error none of these names is a programming fault."""
    litellm = llm.litellm
    name = error_type.rsplit(".", 1)[-1]  # a qualified name (openai.APITimeoutError) by its class
    if not hasattr(litellm, name):
        lowered = message.lower()
        name = SDK_ERRORS.get(name) or next((cls for code, cls in _STATUS_ERRORS if code in message), None) or \
            ("Timeout" if "timeout" in lowered or "timed out" in lowered else
             "ServiceUnavailableError" if "overloaded" in lowered else None)
    provider = llm.provider_of(model) or "unknown"
    if name in ("BadRequestError", "NotFoundError", "Timeout"):
        return getattr(litellm, name)(message, model=model, llm_provider=provider)
    if name == "PermissionDeniedError":
        import httpx
        return litellm.PermissionDeniedError(message, provider, model,
                                             response=httpx.Response(403, request=httpx.Request("POST", "http://x")))
    if name and hasattr(litellm, name):
        return getattr(litellm, name)(message, llm_provider=provider, model=model)
    return type(error_type, (Exception,), {})(message)  # no provider status: a programming fault


def render_reply(spec: Mapping[str, Any], model: str) -> Any:
    """A canned reply spec as the LiteLLM response our call site reads: text as the message
    content, Anthropic content blocks joined as LiteLLM joins them (no separator), null
    content as none, an Anthropic reply without text (no blocks, or empty ones) as none
    (LiteLLM's adapter gives ``content=merged_text or None``, with nothing else in the
    response that tells one empty text block from no block: :func:`empty_text_reply`),
    ``raise`` as the provider error, an OpenAI-compatible content list as LiteLLM gives it
    (:func:`content_list_text`)."""
    if "raise" in spec:
        raise replay_error(spec["raise"]["type"], spec["raise"].get("message", ""), model)
    if "blocks" in spec:
        text = "".join(spec["blocks"])
    elif "content_list" in spec:
        text = content_list_text(spec["content_list"], model)
    elif spec.get("null"):
        text = None
    else:
        text = spec["text"]
    if harness_provider(model)[0] == ANTHROPIC and not text:
        text = None  # LiteLLM's Anthropic adapter: ``content=merged_text or None``
    usage = spec.get("usage") or {}
    return SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=text), finish_reason="stop")],
        usage=SimpleNamespace(prompt_tokens=usage.get("input_tokens"), completion_tokens=usage.get("output_tokens")))


def content_list_text(blocks: list, model: str) -> Any:
    """An OpenAI-compatible reply whose ``content`` is a list of blocks, as LiteLLM gives it to
    our call site: from Mistral, LiteLLM's own Mistral adapter
    (``MistralConfig._handle_content_list_to_str_conversion``: the text block's text, the
    thinking apart), a thinking block written with its text as a string being given in the
    API's shape first (a list of text chunks, which is what the adapter reads); from any
    other provider the list as it came, which LiteLLM's response model refuses and our call
    site reads as an unusable answer (the cell is lost)."""
    if harness_provider(model)[0] != MISTRAL:
        return blocks
    from litellm.llms.mistral.chat.transformation import MistralConfig

    shaped = [{**b, "thinking": [{"type": "text", "text": b["thinking"]}]}
              if isinstance(b, dict) and b.get("type") == "thinking" and isinstance(b.get("thinking"), str)
              else b for b in json.loads(json.dumps(blocks))]
    converted = MistralConfig._handle_content_list_to_str_conversion({"choices": [{"message": {"content": shaped}}]})
    return converted["choices"][0]["message"]["content"]


def empty_text_reply(spec: Mapping[str, Any] | None, model: str) -> bool:
    """An Anthropic reply of one or more text blocks, all empty (``{"text": ""}`` is one
    empty block). The harness's judge reads its first block (``judge.py:137``): ``""``, a
    verdict that parses (−1), so it keeps the cell. LiteLLM gives it to us as it gives a reply
    without any content block, on which the harness's judge raises (the cell is lost):
    content ``None`` (:func:`render_reply`), the same ``provider_specific_fields`` and hidden
    parameters, so our call site reads both as no content (the declared ``empty_text_verdict``)."""
    if not spec or harness_provider(model)[0] != ANTHROPIC or "raise" in spec or spec.get("null"):
        return False
    blocks = spec["blocks"] if "blocks" in spec else [spec.get("text")]
    return bool(blocks) and all(b == "" for b in blocks)


# ---------------------------------------------------------------- the SDK form of our requests
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))


def strip_markers(messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The messages without prompt-caching markers (``cache_control``: a hint to the
    provider, outside the request key; :func:`compare_requests` counts them apart)."""
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if k != "cache_control"}
        if isinstance(m.get("content"), list):
            m["content"] = [{k: v for k, v in part.items() if k != "cache_control"} if isinstance(part, dict)
                            else part for part in m["content"]]
        out.append(m)
    return out


def has_markers(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any("cache_control" in m or any(isinstance(p, dict) and "cache_control" in p
                                           for p in (m.get("content") if isinstance(m.get("content"), list) else []))
               for m in messages)


def anthropic_tools(params: Mapping[str, Any]) -> dict:
    """``tools`` and ``tool_choice`` of ``params`` (OpenAI form, as we give LiteLLM) in the form
    LiteLLM sends Anthropic (its own ``AnthropicConfig.map_openai_params``), less the
    ``"type": "custom"`` it writes on every client tool: the Messages API's default for a tool
    without a type, which the harness's SDK call leaves out."""
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    given = {k: params[k] for k in ("tools", "tool_choice") if k in params}
    if not given:
        return {}
    mapped = AnthropicConfig().map_openai_params(dict(given), {}, "claude-sonnet-4-6", False)
    if "tools" in mapped:
        mapped["tools"] = [{k: v for k, v in tool.items() if not (k == "type" and v == "custom")}
                           for tool in mapped["tools"]]
    return {k: mapped[k] for k in ("tools", "tool_choice") if k in mapped}


def sdk_form(model: str, kwargs: Mapping[str, Any], *, with_timeout: bool = False) -> dict:
    """``{endpoint, client, params}`` of one request we gave LiteLLM (module doc).
    ``with_timeout``: an OpenAI-compatible request carries the transport's timeout too, as
    the harness's continuation runners pass one to ``chat.completions.create``."""
    provider, model_id = harness_provider(model)
    messages = strip_markers(kwargs.get("messages", []))
    sampling = {k: kwargs[k] for k in ("max_tokens", "max_completion_tokens", "temperature", "response_format",
                                       "tools", "tool_choice", "top_p", "seed") if k in kwargs}
    if provider == ANTHROPIC:
        sampling.update(anthropic_tools(sampling))
        system = [m for m in messages if m["role"] == "system"]
        params = {"model": model_id, **({"system": _text(system[0]["content"])} if system else {}),
                  "messages": [m for m in messages if m["role"] != "system"], **sampling}
        return {"endpoint": ENDPOINTS[ANTHROPIC], "client": {}, "params": params}
    if provider == GEMINI:
        system = [m for m in messages if m["role"] == "system"]
        contents = [{"role": "model" if m["role"] == "assistant" else m["role"],
                     "parts": [{"text": _text(m["content"])}]} for m in messages if m["role"] != "system"]
        config = {"$type": "GenerateContentConfig"}
        if "max_tokens" in sampling:
            config["max_output_tokens"] = sampling["max_tokens"]
        if "temperature" in sampling:
            config["temperature"] = sampling["temperature"]
        if "timeout" in kwargs:
            config["http_options"] = {"$type": "HttpOptions", "timeout": int(1000 * kwargs["timeout"])}
        if system:
            config["system_instruction"] = _text(system[0]["content"])
        return {"endpoint": ENDPOINTS[GEMINI], "client": {},
                "params": {"model": model_id, "contents": contents, "config": config}}
    client = {"base_url": API_BASES[provider]} if provider in API_BASES else {}
    timeout = {"timeout": kwargs["timeout"]} if with_timeout and "timeout" in kwargs else {}
    return {"endpoint": ENDPOINTS.get(provider, OPENAI_SDK_ENDPOINT), "client": client,
            "params": {"model": model_id, "messages": messages, **sampling, **timeout}}


def litellm_model(provider: str, model_id: str) -> str:
    """The LiteLLM model string of a harness (provider, model id)."""
    if provider not in LITELLM_PREFIX:
        raise FixtureError(f"provider {provider!r}", f"no LiteLLM prefix here (known: {', '.join(LITELLM_PREFIX)})")
    return f"{LITELLM_PREFIX[provider]}/{model_id}"


@contextlib.contextmanager
def replay_environment(models: Sequence[str]) -> Iterator[None]:
    """A fresh call cache, and a dummy key for each provider whose key is missing, as the
    fixture generator gave the harness (never a real key: nothing leaves this process)."""
    saved = dict(os.environ)
    litellm = llm.ensure_providers()
    with tempfile.TemporaryDirectory(prefix="contextecho-replay-") as tmp:
        os.environ["CONTEXTECHO_CACHE"] = str(Path(tmp) / "cache")
        for model in models:
            for name in litellm.validate_environment(model).get("missing_keys") or []:
                os.environ[name] = "fixture-dummy-not-a-key"
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


# ---------------------------------------------------------------- comparing the requests
def _earlier_reply(replay: Replay, k: tuple) -> Mapping[str, Any] | None:
    """The canned reply given to the attempt before request ``k`` (call, key, attempt)."""
    specs = replay.replies.get(k[:2])
    return specs[min(k[2] - 1, len(specs) - 1)] if specs and k[2] >= 1 else None


def _redone_from_cache(replay: Replay, k: tuple, ours: Mapping[tuple, Sent]) -> bool:
    """A target request the harness sent again to redo a cell whose judging was lost, which
    our call cache answered: we sent its earlier attempt and it was answered, and the cell
    was judged again since (more judge requests of the cell than target requests)."""
    reply = _earlier_reply(replay, k)
    if k[0] != "target" or reply is None or "raise" in reply or (k[0], k[1], k[2] - 1) not in ours:
        return False
    sent = Counter(s.call for s in replay.sent if key_text(s.key) == k[1])
    return sum(n for call, n in sent.items() if call != "target") > sent["target"]


def _transient_retry(replay: Replay, k: tuple, ours: Mapping[tuple, Sent]) -> bool:
    """A request that repeats one whose reply was a transient error (our call site retries it)."""
    reply = _earlier_reply(replay, k)
    if reply is None or "raise" not in reply:
        return False
    error = replay_error(reply["raise"]["type"], reply["raise"].get("message", ""), ours[k].model)
    return classify(error).retry_now


def _redo_of_kept_cell(k: tuple, index: Mapping[tuple, Mapping], ours: Mapping[tuple, Sent]) -> bool:
    """A request of ours that redoes a cell the harness kept: it asked attempt ``n - 1`` of
    the same call and nothing of the cell after it, while we asked again (our earlier run
    lost a cell the harness stored; the cell comparison reports why)."""
    before = index.get((k[0], k[1], k[2] - 1))
    return k[2] >= 1 and before is not None and (k[0], k[1], k[2] - 1) in ours and not any(
        r["seq"] > before["seq"] for (_, text, _), r in index.items() if text == k[1])


def _joined_as_ours(value: Any, blocks: Sequence[str]) -> Any:
    """``value`` with the harness's newline join of ``blocks`` replaced by LiteLLM's (none)."""
    if isinstance(value, str):
        return value.replace("\n".join(blocks), "".join(blocks))
    if isinstance(value, dict):
        return {k: _joined_as_ours(v, blocks) for k, v in value.items()}
    if isinstance(value, list):
        return [_joined_as_ours(v, blocks) for v in value]
    return value


def compare_requests(case: dict, replay: Replay, report: CaseResult, declared: Sequence[dict]) -> None:
    """Set, order and every ``params`` field of the requests (SPEC §3). Differences with a
    cause of their own are reported under their own field, so that a declared divergence
    names exactly them: ``set.missing.redone_from_cache`` (a target request the harness sent
    to redo a cell whose judging was lost, which our call cache answers), ``set.extra.retries``
    (our call site's retries of a transient error, where the harness's runner retries none),
    ``set.extra.redo_of_kept_cell`` (a resumed run of ours redoing a cell that our earlier run
    lost and the harness kept: it follows from that cell's difference, which the cell
    comparison reports), ``set.extra.redo_of_empty_text_verdict`` (such a redo of a judge call
    whose earlier reply was Anthropic text blocks, all empty: :func:`empty_text_reply`) and ``params.messages.multi_block_join`` (a judge request quoting a reply of several
    Anthropic text blocks, which LiteLLM joined without the harness's newlines)."""
    if replay.not_in_release is not None:  # answered from released cells: no request of the harness to compare
        report.not_in_release("requests", "set, order, attempts, params", replay.not_in_release)
        return
    expected = case["expected"].get("requests", [])
    index = {(r["call"], key_text(r["key"]), r["attempt"]): r for r in expected}
    ours = {(s.call, key_text(s.key), s.attempt): s for s in replay.sent}
    missing = sorted(set(index) - set(ours))
    extra = sorted(set(ours) - set(index))
    redone = [k for k in missing if _redone_from_cache(replay, k, ours)]
    retries = [k for k in extra if _transient_retry(replay, k, ours)]
    kept = [k for k in extra if k not in retries and _redo_of_kept_cell(k, index, ours)]
    empty = [k for k in kept if k[0] != "target" and empty_text_reply(ours[(k[0], k[1], k[2] - 1)].reply,
                                                                        ours[(k[0], k[1], k[2] - 1)].model)]
    kept = [k for k in kept if k not in empty]
    missing = [k for k in missing if k not in redone]
    extra = [k for k in extra if k not in retries and k not in kept and k not in empty]
    report.add("requests", "set.missing", not missing, [list(k) for k in missing[:20]], len(missing), declared)
    report.add("requests", "set.extra", not extra, len(extra), [list(k) for k in extra[:20]], declared)
    report.add("requests", "set.missing.redone_from_cache", not redone, [list(k) for k in redone[:20]], 0, declared)
    report.add("requests", "set.extra.retries", not retries, 0, [list(k) for k in retries[:20]], declared)
    report.add("requests", "set.extra.redo_of_kept_cell", not kept, 0, [list(k) for k in kept[:20]], declared,
               note="cells the harness kept and our earlier run lost (see the cell comparison)" if kept else "")
    report.add("requests", "set.extra.redo_of_empty_text_verdict", not empty, 0, [list(k) for k in empty[:20]],
               declared, note="judge requests redoing a cell whose earlier judge reply was empty text blocks "
                               "(see cells empty_text_verdict)" if empty else "")
    report.add("requests", "unexpected", not replay.unexpected, [], replay.unexpected[:20], declared)
    shared = [k for k in index if k in ours]
    order_e = [k for k in sorted(shared, key=lambda k: index[k]["seq"])]
    order_a = [k for k in sorted(shared, key=lambda k: ours[k].seq)]
    report.add("requests", "order", order_e == order_a, len(order_e),
               sum(a != b for a, b in zip(order_e, order_a)), declared,
               note="" if order_e == order_a else "requests in another order (content compared apart)")
    first_target = {}
    for s in replay.sent:
        if s.call == "target":
            first_target.setdefault(key_text(s.key), s.seq)
    early = [[s.call, s.key] for s in replay.sent
             if s.call != "target" and s.seq < first_target.get(key_text(s.key), -1)]
    report.add("requests", "target_before_judge", not early, [], early[:10], declared,
               note="within each cell the target request comes before its judge requests")
    marked = sum(has_markers(s.kwargs.get("messages", [])) for s in replay.sent)
    report.add("requests", "cache_control", not marked, 0, marked, declared,
               note=f"{marked} requests mark their shared prefix for the provider's prompt cache")
    diffs: Counter = Counter()
    examples: dict[str, tuple] = {}
    seen: set[str] = {"params.model", "params.messages"}
    for k in shared:
        exp, got = index[k], sdk_form(ours[k].model, ours[k].kwargs)
        provider = harness_provider(ours[k].model)[0]
        for part in ("endpoint", "client"):
            name = f"{part}[{provider}]"
            seen.add(name)
            if not matches(exp[part], got[part]):
                diffs[name] += 1
                examples.setdefault(name, (k, exp[part], got[part]))
        blocks = replay.target_replies.get(key_identity(ours[k].key), {}).get("blocks") or []
        for name, e, a in field_differences(exp["params"], got["params"], "params."):
            if name == "params.config" and isinstance(e, dict) and isinstance(a, dict):
                found = field_differences(e, a, "params.config.")  # Gemini's: each setting apart
            elif name == "params.messages" and k[0] != "target" and len(blocks) > 1 \
                    and matches(_joined_as_ours(e, blocks), a):
                found = [("params.messages.multi_block_join", e, a)]  # the judge quotes the joined reply
            else:
                found = [(name, e, a)]
            for sub, e_, a_ in found:
                diffs[sub] += 1
                examples.setdefault(sub, (k, e_, a_))
    for name in sorted(set(diffs) | seen):
        k, e, a = examples.get(name, (None, None, None))
        report.add("requests", name, diffs[name] == 0, e, a, declared,
                   note=f"{diffs[name]} of {len(shared)} requests differ; first {list(k) if k else ''}"
                   if diffs[name] else f"{len(shared)} requests")
