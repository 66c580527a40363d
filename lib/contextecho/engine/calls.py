"""The one call site: every model call of every experiment goes through ``generate``.

``generate(requests)`` answers one *round*: the requests asked together. It checks the
whole round before any compute (a model string LiteLLM cannot route, a missing API key, a
request that overflows the embedded model's context), answers cached requests from the
cache, and sends the rest through
``litellm.acompletion`` with bounded concurrency and retries with backoff on rate
limits and transient errors. A call that still fails comes back as an error record:
it is stored, counted and reported, never raised past the round, never a score
(``faults`` says which failures are retried when; an empty answer is one of them).

This retry loop is the only one: LiteLLM's and the provider SDK's own retries are off
(``num_retries=0``, ``max_retries=0`` on every call to a provider), so each attempt a
record counts is one HTTP request. A round's manifest counts both
(:class:`~contextecho.engine.counts.Counts` ``attempts``, ``http_requests``); the requests
are counted where they are sent (every ``httpx.AsyncClient.send`` made while one of this
module's calls is in flight), so a client that retried on its own, or an attempt that
failed before it sent anything, would show. Each attempt waits at most ``Transport.timeout_s``; a
retry waits an exponential backoff with jitter, or the server's Retry-After where it is
longer, never more than ``Transport.max_delay_s``. An error message that quotes the key
sent is stored with the key masked.

A model on several servers (an endpoint listing several API bases) is sent through
LiteLLM's Router (:mod:`.routing`), which picks each attempt's server and retries nothing:
a server that fails an attempt is left out for ``Transport.cooldown_s``, so this loop's
next attempt goes to another; the record keeps each attempt's server and outcome
(:attr:`CallRecord.servers`). ``Transport.concurrency`` bounds the calls in flight across
all of a model's servers.

A stored error is retried on the next run, except a permanent one (authentication,
bad request, not found): that answers its request until asked otherwise, with
``retry_errors=True`` or ``CONTEXTECHO_RETRY_ERRORS=1`` in the environment (what the
``--retry-errors`` flags set, so notebook kernels see it too); the manifest counts the
requests skipped so. Several processes on one cache never pay twice for a call: each
missing key is claimed in the cache, which is re-read before the call. A round asked
``stored_only`` sends nothing: each request gets what the cache holds for it (its answer,
else its last stored error, else a ``NotStored`` error record), which is how a resumed run
reads the results an earlier run stored.

In batch mode (``Transport.batch``) the requests a round must compute for a model whose
provider has a batch API (OpenAI, Anthropic) go as batch jobs (:mod:`.batches`): each built as
:func:`call_kwargs` builds an attempt, each answer stored under its request key as a record of
one attempt, at the batch price. The other models' requests are called one by one, as always.

An answer may be tool calls (a request offering ``tools`` / ``tool_choice``, which are
sampling parameters and part of its key like any other): they are stored as
:attr:`CallRecord.tool_calls`, arguments as sent; such an answer without text is a
success with ``response_text`` ``""``. An answer with neither text nor tool calls is the
``NoContent`` error.

Sampling parameters go to LiteLLM untouched (no ``drop_params``). The one addition:
for the in-process backends a request without a ``seed`` gets one derived from its
request key, so replicates of a sampled request differ and each is repeatable.

Per-model request options (``Transport.options``, :mod:`.request_options`: a reasoning
model's switches and reasoning budget) are added to each request of their model before the
round looks at the cache: they change what the model answers, so the request with them is
the one keyed, stored and sent (a model without options: its requests as they were built).
The answer is stored apart from the reasoning (:mod:`.reasoning`).

Where only the cache may answer (``CONTEXTECHO_CACHE_ONLY=1`` in the environment: the second
kernel of ``contextecho paper``, :mod:`~contextecho.notebooks.lanes`), a round with a request
the cache does not hold raises :class:`UncachedCall` before anything is checked, loaded or
sent, and leaves no run log.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import os
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Sequence

import httpx

from . import batches, llm
from .cache import CallCache
from .record import (ERROR, NO_CONTENT, NOT_STORED, OK, CallRecord, token_logprobs_json, tool_calls_json,
                     utc_now)
from .counts import Counts
from .endpoints import PLACEHOLDER_KEY, Endpoint, EndpointError, endpoint_for
from .faults import Fault, classify, is_permanent
from .manifest import MASK, finish_manifest, round_counts, start_manifest
from .model_request import ModelRequest
from .plan import Planner, usage_from
from .progress import progress as progress_bar
from .reasoning import joined, reasoning_of, split_reasoning
from .request_options import OptionsError, RequestOptions, reasoning_on
from .routing import ANSWERED, ROUTING_STRATEGIES, Servers, servers_for, servers_json
from .usage import UsageError


SHARD_RECORDS = 512  # a caller's cache writes a shard once this many calls are journaled
RETRY_ERRORS_ENV = "CONTEXTECHO_RETRY_ERRORS"  # "1": retry stored permanent errors too
CACHE_ONLY_ENV = "CONTEXTECHO_CACHE_ONLY"  # "1": a round that would call a model raises UncachedCall


class UncachedCall(Exception):
    """A round asked, where only the cache may answer (:data:`CACHE_ONLY_ENV`), a request the
    cache does not hold; raised before any call is checked, loaded or sent."""


class ModelConfigError(UsageError, ValueError):
    """The round cannot start: an unknown model string, a missing key, an oversized request."""


#: A network client: ``await client(request, kwargs)`` answers one attempt (:attr:`Transport.client`).
Client = Callable[[ModelRequest, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Transport:
    """How calls are made. None of this is part of a request key but ``options``, which are
    added to the requests themselves (module doc)."""

    concurrency: int = 4
    max_attempts: int = 5  # attempts per call, each one HTTP request
    base_delay_s: float = 1.0  # backoff before the second attempt, doubling after
    max_delay_s: float = 60.0  # the longest wait between attempts (a Retry-After included)
    timeout_s: float = 600.0  # the longest one attempt may take
    api_base: str | None = None  # one OpenAI-compatible server for every model not in `endpoints`
    prompt_caching: bool = True  # mark the shared prefix for providers that support it
    # Per model (or pattern): the server (or servers) that answer it and its key's variable.
    endpoints: tuple[Endpoint, ...] = ()
    # A model on several servers (an endpoint with several API bases, :mod:`.routing`):
    routing: str = "least-busy"  # how LiteLLM's Router picks each attempt's server (ROUTING_STRATEGIES)
    cooldown_s: float = 30.0  # how long a server that failed an attempt is left out
    #: The network client: ``await client(request, kwargs)`` answers one attempt with a
    #: LiteLLM-shaped response (``choices[0].message.content``, ``usage``) or raises. None:
    #: ``litellm.acompletion(**kwargs)``. Conformance replays canned replies through it.
    client: Client | None = None
    #: Plan mode (:mod:`contextecho.engine.plan`): requests the cache cannot answer are written
    #: down and answered with placeholders, never sent; nothing is stored.
    planner: Planner | None = None
    #: Provider batch mode (:mod:`contextecho.engine.batches`): the uncached requests of a model
    #: whose provider has a batch API (OpenAI, Anthropic) go as batch jobs, polled every
    #: ``batch_poll_s``; a run waits at most ``batch_max_wait_s`` for a job (one still running
    #: then stays open in the ledger, and the next run resumes polling it). Other models: one by one.
    batch: bool = False
    batch_poll_s: float = 60.0
    batch_max_wait_s: float = 26 * 3600.0  # a job's 24-hour window, and some
    #: Per-model request options (:mod:`.request_options`). Unlike the rest, they are part of each
    #: request they apply to (and of its key): they are added before the round starts (module doc).
    options: RequestOptions = RequestOptions()

    def __post_init__(self) -> None:
        if self.routing not in ROUTING_STRATEGIES:
            raise ValueError(f"Transport.routing {self.routing!r}: use one of {', '.join(ROUTING_STRATEGIES)}")
        if not self.cooldown_s > 0:
            raise ValueError(f"Transport.cooldown_s {self.cooldown_s!r}: give a number of seconds above 0")

    def endpoint(self, model: str) -> Endpoint | None:
        """The user-supplied server of ``model``; None for a provider's own API or in-process."""
        if llm.is_in_process(model):
            return None
        found = endpoint_for(self.endpoints, model)
        if found is None and self.api_base:
            return Endpoint(model, self.api_base)
        return found


@dataclass(frozen=True, repr=False)
class RoundResult:
    records: list[CallRecord]  # one per request, in request order
    cached: list[bool]  # answered without a call (a stored success, or a skipped permanent error)
    manifest: dict[str, Any] = field(default_factory=dict)
    skipped: list[bool] = field(default_factory=list)  # a stored permanent error, not retried
    http_requests: int = 0  # sent by this round's calls (counted as they are sent)

    def __repr__(self) -> str:
        # What the round came to, not every record's text: ``asyncio.run`` formats its finished
        # task, result included, twice as it restores Ctrl-C's handler (Python 3.11's
        # ``signal.getsignal`` reprs a handler it cannot name), so a round of 2,000 records paid
        # for 2.4 MB of text twice, a third of the time of a round answered from the cache.
        return (f"RoundResult({len(self.records)} records: {self.n_hits} from the cache, "
                f"{self.n_errors} failed, {self.http_requests} HTTP requests)")

    @property
    def n_hits(self) -> int:
        return sum(self.cached)

    @property
    def n_errors(self) -> int:
        return sum(not r.ok for r in self.records)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped)

    def texts(self) -> list[str | None]:
        return [r.response_text if r.ok else None for r in self.records]

    def counts(self, invalid: int = 0) -> Counts:
        """What this round came to, one call per distinct request (identical requests are
        answered once); ``invalid``: answers the caller could not read."""
        first: dict[str, tuple[CallRecord, bool]] = {}
        for record, cached in zip(self.records, self.cached):
            first.setdefault(record.key, (record, cached))
        hits = sum(cached for _, cached in first.values())
        return Counts(calls=len(first), cached=hits, computed=len(first) - hits,
                      failed=sum(not record.ok for record, _ in first.values()), invalid=invalid,
                      constrained=sum(record.constrained is not None for record, _ in first.values()),
                      attempts=sum(record.attempts or 0 for record, cached in first.values() if not cached),
                      http_requests=self.http_requests,
                      prompt_tokens=sum(r.prompt_tokens or 0 for r, cached in first.values() if not cached),
                      completion_tokens=sum(r.completion_tokens or 0 for r, cached in first.values() if not cached),
                      cost_usd=sum(r.cost_usd or 0.0 for r, cached in first.values() if not cached))


# ---------------------------------------------------------------- preflight
# Providers that only mean something with a user-supplied server.
SERVER_PROVIDERS = ("hosted_vllm", "llamafile", "lm_studio")


def check_models(requests: Sequence[ModelRequest], transport: Transport) -> None:
    """Fail before any compute on what no retry can fix; name the culprit. A plan
    (``transport.planner``) needs no key: it sends nothing."""
    check_routes({r.model for r in requests}, transport, sending=transport.planner is None)
    local = [r for r in requests if r.model == llm.LOCAL_MODEL]
    if local:
        _check_local(local)


def check_routes(models: Iterable[str], transport: Transport, *, sending: bool = True) -> None:
    """Every model can be routed and has its key: an unknown model string, a hosted
    provider without its key, or an endpoint whose key variable is unset stops here,
    before any call, with a message that names what to set. ``sending`` false: the model
    strings only, no key and no server needed (a plan, which sends nothing, can be made
    before the keys are set and the servers started)."""
    for model in sorted(set(models)):
        try:
            endpoint = transport.endpoint(model)
        except EndpointError as exc:
            raise ModelConfigError(f"model {model!r}: {exc}") from None
        api_base = endpoint.api_bases[0] if endpoint else None  # every server of a model: one provider
        check_routable(model, api_base)
        if llm.is_in_process(model):
            continue
        litellm = llm.ensure_providers()
        _, provider, _, api_base = litellm.get_llm_provider(model, api_base=api_base)
        if endpoint is not None:
            if sending and endpoint.key_env and not os.environ.get(endpoint.key_env):
                raise ModelConfigError(f"model {model!r} is served by {'|'.join(endpoint.api_bases)}, whose key "
                                       f"variable {endpoint.key_env} is not set in the environment")
            continue
        if sending and provider in SERVER_PROVIDERS and not api_base:  # nor LiteLLM's <PROVIDER>_API_BASE
            raise ModelConfigError(
                f"model {model!r} needs a server: give its endpoint, e.g. the notebook parameter "
                f"endpoints='{model}=http://127.0.0.1:8000/v1' (make: ENDPOINTS=..., generate: --api-base)")
        missing = litellm.validate_environment(model).get("missing_keys") or [] if sending else []
        if missing:
            raise ModelConfigError(f"model {model!r} needs {', '.join(missing)} in the environment "
                                   f"(export {missing[0]}=...)")


def _route_kwargs(model: str, transport: Transport) -> dict[str, Any]:
    """``api_base`` and ``api_key`` of a model on a user-supplied server: the named key
    variable, else the provider's own variable where set, else a placeholder (a local
    server needs no key, but OpenAI clients refuse to send none). A model on several
    servers gets its first API base here; its Router sends each attempt to one of them
    (:func:`_servers`)."""
    endpoint = transport.endpoint(model)
    if endpoint is None:
        return {}
    kwargs: dict[str, Any] = {"api_base": endpoint.api_bases[0]}
    if endpoint.key_env:
        kwargs["api_key"] = os.environ[endpoint.key_env]  # check_routes saw it set
    elif llm.litellm.validate_environment(model).get("missing_keys"):
        kwargs["api_key"] = PLACEHOLDER_KEY
    return kwargs


def check_routable(model: str, api_base: str | None = None) -> None:
    """Raise :class:`ModelConfigError` unless ``model`` names a model LiteLLM can route:
    a provider it knows, or an in-process one that serves that name."""
    if llm.is_in_process(model):  # no LiteLLM needed to tell (a run the cache answers never imports it)
        if llm.provider_of(model) != llm.LOCAL_PROVIDER or model == llm.LOCAL_MODEL:
            return  # fake/<behaviour>: any name (the stand-in answers unknown ones with an error)
    else:
        try:
            llm.ensure_providers().get_llm_provider(model, api_base=api_base)
            return
        except Exception:
            pass
    raise ModelConfigError(
        f"LiteLLM cannot route model {model!r}: use a provider-prefixed string such as "
        f"'openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'hosted_vllm/<name>' with "
        f"an endpoint, or {llm.LOCAL_MODEL!r} for the embedded model")


# Sampling temperatures each provider accepts; the OpenAI-style range is the default.
# Anthropic's API (and Claude on Bedrock / Vertex) takes 0..1. The embedded model's
# sampler divides the logits by the temperature (0 is greedy); 0..2 like OpenAI's, as
# above 2 its 135M-parameter distribution is close to uniform noise.
TEMPERATURE_RANGES = {"anthropic": (0.0, 1.0), llm.LOCAL_PROVIDER: (0.0, 2.0)}
OPENAI_TEMPERATURE_RANGE = (0.0, 2.0)


def temperature_range(model: str) -> tuple[float, float]:
    """The (low, high) sampling temperature ``model``'s provider accepts."""
    provider = llm.provider_of(model)
    if provider in ("bedrock", "vertex_ai") and "claude" in model:
        provider = "anthropic"
    elif not provider and model.startswith("claude"):
        provider = "anthropic"
    return TEMPERATURE_RANGES.get(provider, OPENAI_TEMPERATURE_RANGE)


def _check_local(requests: Sequence[ModelRequest]) -> None:
    from .local_model import DEFAULT_MAX_TOKENS, SUPPORTED_PARAMS, shared_model

    model = shared_model()
    for index, request in enumerate(requests):
        unsupported = set(request.params) - SUPPORTED_PARAMS
        if unsupported:
            raise ModelConfigError(f"{llm.LOCAL_MODEL} does not support {sorted(unsupported)} "
                                   f"(request {request.key[:12]})")
        try:
            model.check_fits(request.messages, int(request.params.get("max_tokens") or DEFAULT_MAX_TOKENS),
                             bool(request.params.get("continue_final_message")),
                             tools=request.params.get("tools"), tool_choice=request.params.get("tool_choice"))
        except ValueError as exc:
            raise ModelConfigError(f"request {request.key[:12]}: {exc}") from None


# ---------------------------------------------------------------- one call
def _send_params(request: ModelRequest) -> dict[str, Any]:
    params = dict(request.params)
    if llm.is_in_process(request.model) and params.get("seed") is None:
        params["seed"] = int(request.key[:8], 16)
    return params


def _mark_shared_prefix(request: ModelRequest) -> list[dict]:
    """Mark the prefix (all but the last message) for providers that cache prompts on request."""
    messages = [dict(m) for m in request.messages]
    if len(messages) < 2 or llm.is_in_process(request.model):
        return messages
    try:
        explicit = llm.litellm.utils.supports_prompt_caching(request.model) and \
            llm.provider_of(request.model) in ("anthropic", "bedrock", "vertex_ai")
    except Exception:
        explicit = False
    content = messages[-2]["content"]
    if explicit and isinstance(content, str):
        messages[-2]["content"] = [{"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}]
    elif explicit and isinstance(content, list) and content and isinstance(content[-1], dict) \
            and content[-1].get("type") == "text":
        messages[-2]["content"] = [*content[:-1], {**content[-1], "cache_control": {"type": "ephemeral"}}]
    return messages


# Sent with every call that goes through LiteLLM to a provider: no retries but ours.
NO_CLIENT_RETRIES = {"num_retries": 0, "max_retries": 0}

# The HTTP requests sent by the call in flight in this context (module doc).
_REQUESTS_SENT: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "contextecho_requests_sent", default=None)


def _count_sent_requests() -> None:
    """Make ``httpx.AsyncClient.send`` (what LiteLLM's handlers and the provider SDKs send
    every request with) count into the call in flight; once per process, and only inside
    a call of :func:`_call` (elsewhere it is untouched)."""
    send = httpx.AsyncClient.send
    if getattr(send, "counts_for_contextecho", False):
        return

    @functools.wraps(send)
    async def counted(self, request, *args, **kwargs):
        sent = _REQUESTS_SENT.get()
        if sent is not None:
            sent[0] += 1
        return await send(self, request, *args, **kwargs)

    counted.counts_for_contextecho = True
    httpx.AsyncClient.send = counted


_count_sent_requests()


def sends_http(model: str, transport: Transport) -> bool:
    """Whether a call of ``model`` goes to a provider's server through LiteLLM: not to an
    in-process model or any other provider registered in this process, nor to a replay
    ``client`` (those are not sent :data:`NO_CLIENT_RETRIES`)."""
    return transport.client is None and not llm.is_in_process(model) \
        and llm.provider_of(model) not in llm.registered_providers()


def retry_delay(attempt: int, transport: Transport, retry_after_s: float | None = None,
                jitter: float = 1.0) -> float:
    """Seconds to wait after failed attempt number ``attempt``: the backoff
    ``base_delay_s * 2 ** (attempt - 1)`` (at most ``max_delay_s``) times ``jitter``; a
    server's Retry-After where it is longer, up to ``max_delay_s``."""
    backoff = min(transport.max_delay_s, transport.base_delay_s * 2 ** (attempt - 1)) * jitter
    if retry_after_s is None:
        return backoff
    return min(transport.max_delay_s, max(retry_after_s, backoff))


async def _call(request: ModelRequest, transport: Transport) -> tuple[CallRecord, int]:
    """The call's record and the HTTP requests it sent."""
    sent = [0]
    token = _REQUESTS_SENT.set(sent)
    try:
        return await _attempts(request, transport), sent[0]
    finally:
        _REQUESTS_SENT.reset(token)


def _servers(model: str, transport: Transport, api_key: str | None) -> Servers | None:
    """The Router of ``model`` where its endpoint lists several API bases and its calls go
    through LiteLLM (:mod:`.routing`), built once per process; None for any other model."""
    endpoint = transport.endpoint(model)
    if endpoint is None or len(endpoint.api_bases) < 2 or not sends_http(model, transport):
        return None
    return servers_for(model, endpoint.api_bases, api_key, routing=transport.routing,
                       cooldown_s=transport.cooldown_s)


def call_kwargs(request: ModelRequest, transport: Transport) -> dict[str, Any]:
    """What an attempt of ``request`` passes to ``litellm.acompletion``: the model, the
    messages (the shared prefix marked for prompt caching), the sampling parameters, and
    the transport's timeout, retries (none but ours) and server. A batch job's items are
    built from the same (:mod:`.batches`)."""
    kwargs: dict[str, Any] = {"timeout": transport.timeout_s, **_route_kwargs(request.model, transport)}
    if sends_http(request.model, transport):
        kwargs.update(NO_CLIENT_RETRIES)
    messages = _mark_shared_prefix(request) if transport.prompt_caching else list(request.messages)
    return {"model": request.model, "messages": messages, **_send_params(request), **kwargs}


async def _attempts(request: ModelRequest, transport: Transport) -> CallRecord:
    litellm = llm.litellm
    call = call_kwargs(request, transport)
    servers = _servers(request.model, transport, call.get("api_key"))
    start = time.perf_counter()
    attempt = 0
    tried: list[tuple[str | None, str]] = []  # on several servers: each attempt's server and outcome
    while True:
        attempt += 1
        try:
            if transport.client:
                sent = transport.client(request, call)
            elif servers is not None:
                sent = servers.acompletion(call)
            else:
                sent = litellm.acompletion(**call)
            response = await asyncio.wait_for(sent, timeout=transport.timeout_s)
            record = _record_from_response(request, response, attempt, time.perf_counter() - start)
            if servers is not None:
                tried.append((servers.server_of(response), ANSWERED if record.ok else record.error_type))
            return _with_servers(record, tried)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except Exception as exc:  # failures are data
            fault = _without_key(classify(exc), call.get("api_key"))
            if servers is not None:
                tried.append((servers.server_of(exc), fault.error_type))
            if not fault.retry_now or attempt >= transport.max_attempts:
                return _with_servers(_error_record(request, fault, attempt, time.perf_counter() - start), tried)
            # Jitter spreads retries of concurrent calls; it is transport, not results.
            await asyncio.sleep(retry_delay(attempt, transport, fault.retry_after_s, 0.5 + random.random()))


def _with_servers(record: CallRecord, tried: list[tuple[str | None, str]]) -> CallRecord:
    """``record`` with the server and outcome of each attempt, for a model on several servers."""
    return dataclasses.replace(record, servers=servers_json(tried)) if tried else record


def _without_key(fault: Fault, key: str | None) -> Fault:
    """``fault`` with the key sent masked wherever its message quotes it."""
    if not key or key == PLACEHOLDER_KEY or key not in fault.message:
        return fault
    return dataclasses.replace(fault, message=fault.message.replace(key, MASK))


def _record_from_response(request: ModelRequest, response: Any, attempts: int,
                          latency: float | None) -> CallRecord:
    try:
        choice = response.choices[0]
        text = choice.message.content
        tool_calls = tool_calls_json(choice.message)
        reasoning = reasoning_of(choice.message)
        if text is None and tool_calls is None:  # a null message: not an answer, not retried
            usage = getattr(response, "usage", None)  # its tokens were spent all the same
            return dataclasses.replace(
                _error_record(request, Fault("garbage", NO_CONTENT, "the answer has no content (null)"),
                              attempts, latency),
                finish_reason=getattr(choice, "finish_reason", None),
                prompt_tokens=getattr(usage, "prompt_tokens", None),
                completion_tokens=getattr(usage, "completion_tokens", None), reasoning=reasoning)
        text = "" if text is None else text  # tool calls without text: an answer all the same
        if not isinstance(text, str):
            raise TypeError(f"response content is {type(text).__name__}, not text")
        text, inline = split_reasoning(text.lstrip() if reasoning else text,  # the answer alone (.reasoning)
                                       thinking=reasoning_on(request.params))
        reasoning = joined(reasoning, inline)
        usage = getattr(response, "usage", None)
    except Exception as exc:
        return _error_record(request, Fault("garbage", "GarbageResponse", f"unusable response: {exc}"),
                             attempts, latency)
    try:
        cost = None if llm.is_in_process(request.model) else \
            float(llm.litellm.completion_cost(completion_response=response))
    except Exception:
        cost = None  # LiteLLM does not know this model's price
    record = CallRecord(
        key=request.key, model=request.model, request_json=request.to_json(), status=OK,
        response_text=text, finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=cost, latency_s=latency, attempts=attempts, created_at=utc_now(),
        logprobs=token_logprobs_json(choice) if request.params.get("logprobs") else None,
        tool_calls=tool_calls, reasoning=reasoning)
    return record.as_empty_response() if record.blank else record


def _not_stored(request: ModelRequest) -> CallRecord:
    """What a ``stored_only`` round answers a request the cache holds nothing for."""
    return CallRecord(key=request.key, model=request.model, request_json=request.to_json(), status=ERROR,
                      error_type=NOT_STORED, error_message="no stored call (a stored-only round sends nothing)",
                      attempts=0, created_at=utc_now())


def _error_record(request: ModelRequest, fault: Fault, attempts: int, latency: float | None) -> CallRecord:
    return CallRecord(
        key=request.key, model=request.model, request_json=request.to_json(), status=ERROR,
        error_type=fault.error_type, error_message=fault.message[:2000],
        latency_s=latency, attempts=attempts, created_at=utc_now())


# ---------------------------------------------------------------- the round
def _prefix_order(requests: Iterable[ModelRequest]) -> list[ModelRequest]:
    """Requests that share a prefix run back to back, so the backend can reuse it."""
    groups: dict[str, list[ModelRequest]] = defaultdict(list)
    for request in requests:
        groups[request.model + repr(request.messages[:-1])].append(request)
    return [r for group in groups.values() for r in group]


def retry_errors_everywhere() -> None:
    """Retry stored permanent errors in every round of this process and of the notebook
    kernels it starts (``--retry-errors``): they inherit the environment."""
    os.environ[RETRY_ERRORS_ENV] = "1"


def _switched_on(variable: str) -> bool:
    return os.environ.get(variable, "").strip().lower() in ("1", "true", "yes")


def retry_errors_default() -> bool:
    """Whether stored permanent errors are retried when the caller does not say."""
    return _switched_on(RETRY_ERRORS_ENV)


async def agenerate(requests: Sequence[ModelRequest], *, cache: CallCache | None = None,
                    transport: Transport = Transport(), progress: bool = True,
                    name: str = "generate", parameters: dict[str, Any] | None = None,
                    retry_errors: bool | None = None, stored_only: bool = False) -> RoundResult:
    """Answer every request, from the cache where possible. Never raises for a failed call.

    ``retry_errors``: also call again the requests whose stored error is permanent
    (default: ``CONTEXTECHO_RETRY_ERRORS`` in the environment, else no). ``stored_only``:
    call nothing; a request without a stored answer gets its last stored error, else a
    ``NotStored`` error record (module doc). What the cache cannot answer is planned
    (:func:`_planned`, plan mode) or called (:func:`_called`)."""
    try:  # each with its model's options (module doc)
        requests = [transport.options.apply(r) for r in requests]
    except OptionsError as exc:
        raise ModelConfigError(str(exc)) from None
    retry_errors = retry_errors_default() if retry_errors is None else retry_errors
    own_cache = cache is None
    cache = cache if cache is not None else CallCache()
    manifest = start_manifest(name=name, started=utc_now(), requests=requests, transport=transport,
                              parameters=parameters or {}, retry_errors=retry_errors)
    try:
        stored, skipped = _stored(requests, cache, transport.planner, retry_errors=retry_errors,
                                  stored_only=stored_only)
        todo = {r.key: r for r in requests if r.key not in stored}  # identical requests once
        if todo and transport.planner is None and _switched_on(CACHE_ONLY_ENV):
            raise UncachedCall(f"round {name!r}: {len(todo)} of its {len(requests)} requests are not in the "
                               f"cache, and {CACHE_ONLY_ENV} is set: nothing is called")
        if todo:
            check_models(list(todo.values()), transport)
        if transport.planner is not None:
            return _planned(requests, stored, skipped, transport.planner, name, cache, manifest)
        return await _called(requests, stored, skipped, list(todo.values()), cache, transport, manifest,
                             name=name, progress=progress, retry_errors=retry_errors)
    except UncachedCall:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(manifest["path"])  # nothing was asked: no round to log
        raise
    except BaseException as exc:
        finish_manifest(manifest, status="failed", failure=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    finally:
        if own_cache:
            cache.close()


def _stored(requests: list[ModelRequest], cache: CallCache, planner: Planner | None, *, retry_errors: bool,
            stored_only: bool) -> tuple[dict[str, CallRecord], set[str]]:
    """The requests answered without a call, by key, and the keys among them answered by a
    stored permanent error (skipped, not retried): a stored success; a stored permanent error
    unless ``retry_errors``; with ``stored_only`` the last stored error, else a ``NotStored``
    record; in a plan, a placeholder given earlier in it (the run's cache will hold it)."""
    stored: dict[str, CallRecord] = {}
    skipped: set[str] = set()
    for request in requests:
        hit = cache.lookup(request.key)
        error = cache.last_error(request.key)
        if hit is None and error is not None and is_permanent(error.error_type) and not retry_errors:
            hit = error
            skipped.add(request.key)
        if hit is None and stored_only:
            hit = error if error is not None else _not_stored(request)
        if hit is not None:
            stored[request.key] = hit
    if planner is not None:
        stored.update({r.key: hit for r in requests if r.key not in stored
                       and (hit := planner.answered(r.key)) is not None})
    return stored, skipped


def _planned(requests: list[ModelRequest], stored: dict[str, CallRecord], skipped: set[str], planner: Planner,
             name: str, cache: CallCache, manifest: dict[str, Any]) -> RoundResult:
    """Plan mode: the round written down, its uncached requests answered by the planner's
    placeholders (nothing sent, nothing stored)."""
    if planner.usage is None:
        planner.usage = usage_from(cache.usage())
    fresh = planner.plan_round(name, requests, set(stored))
    records = [stored.get(r.key) or fresh[r.key] for r in requests]
    result = RoundResult(records, [r.key in stored for r in requests],
                         skipped=[r.key in skipped for r in requests])
    return dataclasses.replace(result, manifest=finish_manifest(manifest, status="planned", **round_counts(result)))


@dataclass
class _Answering:
    """The calls of one round as they finish: their records, counted on its progress bar."""

    bar: Any
    copies: Counter  # how many of the round's requests each key answers
    fresh: dict[str, CallRecord] = field(default_factory=dict)
    from_others: set[str] = field(default_factory=set)  # computed meanwhile by another writer on this cache
    sent: list[int] = field(default_factory=lambda: [0])  # HTTP requests the calls sent
    errors: int = 0

    def finished(self, record: CallRecord) -> None:
        self.fresh[record.key] = record
        self.bar.update(self.copies[record.key])
        self.errors += not record.ok
        self.bar.set_postfix(errors=self.errors, refresh=False)


async def _called(requests: list[ModelRequest], stored: dict[str, CallRecord], skipped: set[str],
                  todo: list[ModelRequest], cache: CallCache, transport: Transport, manifest: dict[str, Any], *,
                  name: str, progress: bool, retry_errors: bool) -> RoundResult:
    """The round with ``todo`` called: one by one (:func:`_one_by_one`), or, in batch mode, those
    of models with a batch API through batch jobs (:func:`_through_jobs`) and the others one by one."""
    answering = _Answering(progress_bar(total=len(requests), desc=name, disable=not progress, unit="call"),
                           Counter(r.key for r in requests))
    answering.bar.update(sum(r.key in stored for r in requests))
    jobs = batches.batchable(todo) if transport.batch and transport.client is None else []
    in_jobs = {r.key for r in jobs}
    await asyncio.gather(
        _one_by_one([r for r in todo if r.key not in in_jobs], cache, transport, answering, skipped, retry_errors),
        *([_through_jobs(jobs, cache, transport, answering, progress)] if jobs else []))
    answering.bar.close()
    records = [stored.get(r.key) or answering.fresh[r.key] for r in requests]
    cached = [r.key in stored or r.key in answering.from_others for r in requests]
    result = RoundResult(records, cached, skipped=[r.key in skipped for r in requests],
                         http_requests=answering.sent[0])
    # A caller's cache gathers many rounds into one shard; each call is journaled already.
    cache.flush(min_records=SHARD_RECORDS)
    return dataclasses.replace(result, manifest=finish_manifest(
        manifest, status="complete", **round_counts(result), skipped_permanent_errors=result.n_skipped,
        answered_by_other_writers=len(answering.from_others)))


async def _one_by_one(requests: list[ModelRequest], cache: CallCache, transport: Transport,
                      answering: _Answering, skipped: set[str], retry_errors: bool) -> None:
    """Call each request (those sharing a prefix back to back, ``transport.concurrency`` at a
    time), its key claimed in the cache first: what another writer stored for it meanwhile is
    taken instead of a call (``skipped`` gains a permanent error taken so)."""
    semaphore = asyncio.Semaphore(max(1, transport.concurrency))

    async def one(request: ModelRequest) -> None:
        while True:
            async with semaphore:
                claim = cache.try_claim(request.key)
                if claim is not None:
                    with claim:
                        record = _answered_meanwhile(cache, request.key, retry_errors)
                        if record is not None:
                            answering.from_others.add(request.key)
                            if not record.ok:
                                skipped.add(request.key)  # its permanent error, just stored
                        else:
                            record, requests_sent = await _call(request, transport)
                            cache.put(record)  # journaled at once: a crash loses only calls in flight
                            answering.sent[0] += requests_sent
                    break
            # Another writer is computing this key: wait for it, then look again.
            await cache.claim_released(request.key)
        answering.finished(record)

    await asyncio.gather(*(one(r) for r in _prefix_order(requests)))


async def _through_jobs(requests: list[ModelRequest], cache: CallCache, transport: Transport,
                        answering: _Answering, progress: bool) -> None:
    """Answer ``requests`` through the providers' batch jobs (:mod:`.batches`), each sent as
    :func:`call_kwargs` builds it. Each answer is stored as the interactive path stores it (one
    attempt, no latency of its own, the cost at the batch price), then ``finished``; the HTTP
    requests the jobs take (uploads, polls, downloads) are counted as ``sent``."""
    by_key = {r.key: r for r in requests}
    calls = {r.key: call_kwargs(r, transport) for r in requests}

    def deliver(key: str, outcome: Any) -> None:
        request = by_key[key]
        if isinstance(outcome, BaseException):
            record = _error_record(request, _without_key(classify(outcome), calls[key].get("api_key")), 1, None)
        else:
            record = _record_from_response(request, outcome, 1, None)
            if record.ok:
                record = dataclasses.replace(record, cost_usd=batches.batch_cost(outcome, request.model))
        cache.put(record)  # journaled at once, before the job is closed
        answering.finished(record)

    token = _REQUESTS_SENT.set(answering.sent)
    try:
        await batches.answer(calls, ledger=batches.Ledger(cache.root / batches.LEDGER), deliver=deliver,
                             poll_s=transport.batch_poll_s, max_wait_s=transport.batch_max_wait_s,
                             max_attempts=transport.max_attempts, progress=progress)
    finally:
        _REQUESTS_SENT.reset(token)


def _answered_meanwhile(cache: CallCache, key: str, retry_errors: bool) -> CallRecord | None:
    """What another writer stored for ``key`` since this round looked (its claim is ours now)."""
    cache.refresh()
    error = cache.last_error(key)
    return cache.lookup(key) or (error if error is not None and is_permanent(error.error_type)
                                 and not retry_errors else None)


def generate(requests: Sequence[ModelRequest], **kwargs: Any) -> RoundResult:
    """Synchronous ``agenerate``; works inside Jupyter's running event loop too."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_loop = False
    else:
        in_loop = True
    # ``faults.classify`` reads an exception's chain, and an exception raised while another
    # is being handled chains to that one (here: a caller's). Such a round, and one inside
    # a running loop (a notebook), runs in a worker thread with its own loop and no
    # exception in hand; any other runs here, where Ctrl-C stops it at once.
    if not in_loop and sys.exc_info()[1] is None:
        return asyncio.run(agenerate(requests, **kwargs))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, agenerate(requests, **kwargs)).result()
