"""The one call site: every model call of every experiment goes through ``generate``.

``generate(requests)`` checks the whole batch before any compute (a model string
LiteLLM cannot route, a missing API key, a request that overflows the embedded
model's context), answers cached requests from the cache, and sends the rest through
``litellm.acompletion`` with bounded concurrency and retries with backoff on rate
limits and transient errors. A call that still fails comes back as an error record:
it is stored, counted and reported, never raised past the batch, never a score
(``faults`` says which failures are retried when; an empty answer is one of them).

This retry loop is the only one: LiteLLM's and the provider SDK's own retries are off
(``num_retries=0``, ``max_retries=0`` on every call to a provider), so each attempt a
record counts is one HTTP request. A batch's manifest counts both
(:class:`~contextecho.engine.counts.Counts` ``attempts``, ``http_requests``); the requests
are counted where they are sent (every ``httpx.AsyncClient.send`` made while one of this
module's calls is in flight), so a client that retried on its own, or an attempt that
failed before it sent anything, would show. Each attempt waits at most ``Transport.timeout_s``; a
retry waits an exponential backoff with jitter, or the server's Retry-After where it is
longer, never more than ``Transport.max_delay_s``. An error message that quotes the key
sent is stored with the key masked.

A stored error is retried on the next run, except a permanent one (authentication,
bad request, not found): that answers its request until asked otherwise, with
``retry_errors=True`` or ``CONTEXTECHO_RETRY_ERRORS=1`` in the environment (what the
``--retry-errors`` flags set, so notebook kernels see it too); the manifest counts the
requests skipped so. Several processes on one cache never pay twice for a call: each
missing key is claimed in the cache, which is re-read before the call. A batch asked
``stored_only`` sends nothing: each request gets what the cache holds for it (its answer,
else its last stored error, else a ``NotStored`` error record), which is how a resumed run
reads the results an earlier run stored.

An answer may be tool calls (a request offering ``tools`` / ``tool_choice``, which are
sampling parameters and part of its key like any other): they are stored as
:attr:`CallRecord.tool_calls`, arguments as sent; such an answer without text is a
success with ``response_text`` ``""``. An answer with neither text nor tool calls is the
``NoContent`` error.

Sampling parameters go to LiteLLM untouched (no ``drop_params``). The one addition:
for the in-process backends a request without a ``seed`` gets one derived from its
request key, so replicates of a sampled request differ and each is repeatable.
"""
from __future__ import annotations

import asyncio
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
from tqdm.auto import tqdm

from . import llm
from .cache import CallCache
from .record import (ERROR, NO_CONTENT, NOT_STORED, OK, CallRecord, token_logprobs_json, tool_calls_json,
                     utc_now)
from .counts import Counts
from .endpoints import PLACEHOLDER_KEY, Endpoint, EndpointError, endpoint_for
from .faults import Fault, classify, is_permanent
from .manifest import MASK, batch_counts, finish_manifest, start_manifest
from .model_request import ModelRequest


SHARD_RECORDS = 512  # a caller's cache writes a shard once this many calls are journaled
RETRY_ERRORS_ENV = "CONTEXTECHO_RETRY_ERRORS"  # "1": retry stored permanent errors too


class ModelConfigError(ValueError):
    """The batch cannot start: an unknown model string, a missing key, an oversized request."""


@dataclass(frozen=True)
class Transport:
    """How calls are made. None of this is part of a request key."""

    concurrency: int = 4
    max_attempts: int = 5  # attempts per call, each one HTTP request
    base_delay_s: float = 1.0  # backoff before the second attempt, doubling after
    max_delay_s: float = 60.0  # the longest wait between attempts (a Retry-After included)
    timeout_s: float = 600.0  # the longest one attempt may take
    api_base: str | None = None  # one OpenAI-compatible server for every model not in `endpoints`
    prompt_caching: bool = True  # mark the shared prefix for providers that support it
    # Per model (or pattern): the server that answers it and its key's variable.
    endpoints: tuple[Endpoint, ...] = ()
    #: The network client: ``await client(request, kwargs)`` answers one attempt with a
    #: LiteLLM-shaped response (``choices[0].message.content``, ``usage``) or raises. None:
    #: ``litellm.acompletion(**kwargs)``. Conformance replays canned replies through it.
    client: Callable[[ModelRequest, dict[str, Any]], Awaitable[Any]] | None = None

    def endpoint(self, model: str) -> Endpoint | None:
        """The user-supplied server of ``model``; None for a provider's own API or in-process."""
        if llm.is_in_process(model):
            return None
        found = endpoint_for(self.endpoints, model)
        if found is None and self.api_base:
            return Endpoint(model, self.api_base)
        return found


@dataclass
class BatchResult:
    records: list[CallRecord]  # one per request, in request order
    cached: list[bool]  # answered without a call (a stored success, or a skipped permanent error)
    manifest: dict[str, Any] = field(default_factory=dict)
    skipped: list[bool] = field(default_factory=list)  # a stored permanent error, not retried
    http_requests: int = 0  # sent by this batch's calls (counted as they are sent)

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
        """What this batch came to, one call per distinct request (identical requests are
        answered once); ``invalid``: answers the caller could not read."""
        first: dict[str, tuple[CallRecord, bool]] = {}
        for record, cached in zip(self.records, self.cached):
            first.setdefault(record.key, (record, cached))
        hits = sum(cached for _, cached in first.values())
        return Counts(calls=len(first), cached=hits, computed=len(first) - hits,
                      failed=sum(not record.ok for record, _ in first.values()), invalid=invalid,
                      constrained=sum(record.constrained is not None for record, _ in first.values()),
                      attempts=sum(record.attempts or 0 for record, cached in first.values() if not cached),
                      http_requests=self.http_requests)


# ---------------------------------------------------------------- preflight
# Providers that only mean something with a user-supplied server.
SERVER_PROVIDERS = ("hosted_vllm", "llamafile", "lm_studio")


def check_models(requests: Sequence[ModelRequest], transport: Transport) -> None:
    """Fail before any compute on what no retry can fix; name the culprit."""
    check_routes({r.model for r in requests}, transport)
    local = [r for r in requests if r.model == llm.LOCAL_MODEL]
    if local:
        _check_local(local)


def check_routes(models: Iterable[str], transport: Transport) -> None:
    """Every model can be routed and has its key: an unknown model string, a hosted
    provider without its key, or an endpoint whose key variable is unset stops here,
    before any call, with a message that names what to set."""
    litellm = llm.ensure_providers()
    for model in sorted(set(models)):
        try:
            endpoint = transport.endpoint(model)
        except EndpointError as exc:
            raise ModelConfigError(f"model {model!r}: {exc}") from None
        check_routable(model, endpoint.api_base if endpoint else None)
        if llm.is_in_process(model):
            continue
        _, provider, _, api_base = litellm.get_llm_provider(
            model, api_base=endpoint.api_base if endpoint else None)
        if endpoint is not None:
            if endpoint.key_env and not os.environ.get(endpoint.key_env):
                raise ModelConfigError(f"model {model!r} is served by {endpoint.api_base}, whose key "
                                       f"variable {endpoint.key_env} is not set in the environment")
            continue
        if provider in SERVER_PROVIDERS and not api_base:  # nor LiteLLM's <PROVIDER>_API_BASE
            raise ModelConfigError(
                f"model {model!r} needs a server: give its endpoint, e.g. the notebook parameter "
                f"endpoints='{model}=http://127.0.0.1:8000/v1' (make: ENDPOINTS=..., generate: --api-base)")
        missing = litellm.validate_environment(model).get("missing_keys") or []
        if missing:
            raise ModelConfigError(f"model {model!r} needs {', '.join(missing)} in the environment "
                                   f"(export {missing[0]}=...)")


def _route_kwargs(model: str, transport: Transport) -> dict[str, Any]:
    """``api_base`` and ``api_key`` of a model on a user-supplied server: the named key
    variable, else the provider's own variable where set, else a placeholder (a local
    server needs no key, but OpenAI clients refuse to send none)."""
    endpoint = transport.endpoint(model)
    if endpoint is None:
        return {}
    kwargs: dict[str, Any] = {"api_base": endpoint.api_base}
    if endpoint.key_env:
        kwargs["api_key"] = os.environ[endpoint.key_env]  # check_routes saw it set
    elif llm.litellm.validate_environment(model).get("missing_keys"):
        kwargs["api_key"] = PLACEHOLDER_KEY
    return kwargs


def check_routable(model: str, api_base: str | None = None) -> None:
    """Raise :class:`ModelConfigError` unless ``model`` names a model LiteLLM can route:
    a provider it knows, or an in-process one that serves that name."""
    litellm = llm.ensure_providers()
    if llm.is_in_process(model):
        if llm.provider_of(model) != llm.LOCAL_PROVIDER or model == llm.LOCAL_MODEL:
            return  # fake/<behaviour>: any name (the stand-in answers unknown ones with an error)
    else:
        try:
            litellm.get_llm_provider(model, api_base=api_base)
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
    litellm = llm.litellm
    if len(messages) < 2 or llm.is_in_process(request.model):
        return messages
    try:
        explicit = litellm.utils.supports_prompt_caching(request.model) and \
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


async def _attempts(request: ModelRequest, transport: Transport) -> CallRecord:
    litellm = llm.litellm
    kwargs: dict[str, Any] = {"timeout": transport.timeout_s, **_route_kwargs(request.model, transport)}
    if sends_http(request.model, transport):
        kwargs.update(NO_CLIENT_RETRIES)
    messages = _mark_shared_prefix(request) if transport.prompt_caching else list(request.messages)
    params = _send_params(request)
    start = time.perf_counter()
    attempt = 0
    while True:
        attempt += 1
        call = {"model": request.model, "messages": messages, **params, **kwargs}
        try:
            response = await asyncio.wait_for(
                transport.client(request, call) if transport.client else litellm.acompletion(**call),
                timeout=transport.timeout_s)
            return _record_from_response(request, response, attempt, time.perf_counter() - start)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except Exception as exc:  # failures are data
            fault = _without_key(classify(exc), kwargs.get("api_key"))
            if not fault.retry_now or attempt >= transport.max_attempts:
                return _error_record(request, fault, attempt, time.perf_counter() - start)
            # Jitter spreads retries of concurrent calls; it is transport, not results.
            await asyncio.sleep(retry_delay(attempt, transport, fault.retry_after_s, 0.5 + random.random()))


def _without_key(fault: Fault, key: str | None) -> Fault:
    """``fault`` with the key sent masked wherever its message quotes it."""
    if not key or key == PLACEHOLDER_KEY or key not in fault.message:
        return fault
    return dataclasses.replace(fault, message=fault.message.replace(key, MASK))


def _record_from_response(request: ModelRequest, response: Any, attempts: int,
                          latency: float) -> CallRecord:
    try:
        choice = response.choices[0]
        text = choice.message.content
        tool_calls = tool_calls_json(choice.message)
        if text is None and tool_calls is None:  # a null message: not an answer, not retried
            usage = getattr(response, "usage", None)  # its tokens were spent all the same
            return dataclasses.replace(
                _error_record(request, Fault("garbage", NO_CONTENT, "the answer has no content (null)"),
                              attempts, latency),
                finish_reason=getattr(choice, "finish_reason", None),
                prompt_tokens=getattr(usage, "prompt_tokens", None),
                completion_tokens=getattr(usage, "completion_tokens", None))
        text = "" if text is None else text  # tool calls without text: an answer all the same
        if not isinstance(text, str):
            raise TypeError(f"response content is {type(text).__name__}, not text")
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
        tool_calls=tool_calls)
    return record.as_empty_response() if record.blank else record


def _not_stored(request: ModelRequest) -> CallRecord:
    """What a ``stored_only`` batch answers a request the cache holds nothing for."""
    return CallRecord(key=request.key, model=request.model, request_json=request.to_json(), status=ERROR,
                      error_type=NOT_STORED, error_message="no stored call (a stored-only batch sends nothing)",
                      attempts=0, created_at=utc_now())


def _error_record(request: ModelRequest, fault: Fault, attempts: int, latency: float) -> CallRecord:
    return CallRecord(
        key=request.key, model=request.model, request_json=request.to_json(), status=ERROR,
        error_type=fault.error_type, error_message=fault.message[:2000],
        latency_s=latency, attempts=attempts, created_at=utc_now())


# ---------------------------------------------------------------- the batch
def _prefix_order(requests: Iterable[ModelRequest]) -> list[ModelRequest]:
    """Requests that share a prefix run back to back, so the backend can reuse it."""
    groups: dict[str, list[ModelRequest]] = defaultdict(list)
    for request in requests:
        groups[request.model + repr(request.messages[:-1])].append(request)
    return [r for group in groups.values() for r in group]


def retry_errors_everywhere() -> None:
    """Retry stored permanent errors in every batch of this process and of the notebook
    kernels it starts (``--retry-errors``): they inherit the environment."""
    os.environ[RETRY_ERRORS_ENV] = "1"


def retry_errors_default() -> bool:
    """Whether stored permanent errors are retried when the caller does not say."""
    return os.environ.get(RETRY_ERRORS_ENV, "").strip().lower() in ("1", "true", "yes")


async def agenerate(requests: Sequence[ModelRequest], *, cache: CallCache | None = None,
                    transport: Transport = Transport(), progress: bool = True,
                    name: str = "generate", parameters: dict[str, Any] | None = None,
                    retry_errors: bool | None = None, stored_only: bool = False) -> BatchResult:
    """Answer every request, from the cache where possible. Never raises for a failed call.

    ``retry_errors``: also call again the requests whose stored error is permanent
    (default: ``CONTEXTECHO_RETRY_ERRORS`` in the environment, else no). ``stored_only``:
    call nothing; a request without a stored answer gets its last stored error, else a
    ``NotStored`` error record (module doc)."""
    requests = list(requests)
    retry_errors = retry_errors_default() if retry_errors is None else retry_errors
    own_cache = cache is None
    cache = cache if cache is not None else CallCache()
    manifest = start_manifest(name=name, started=utc_now(), requests=requests, transport=transport,
                              parameters=parameters or {}, retry_errors=retry_errors)
    try:
        stored: dict[str, CallRecord] = {}  # answered without a call
        skipped: set[str] = set()  # a stored permanent error, not retried
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
        todo = {r.key: r for r in requests if r.key not in stored}  # identical requests once
        if todo:
            check_models(list(todo.values()), transport)
        fresh: dict[str, CallRecord] = {}
        from_others: set[str] = set()  # computed meanwhile by another writer on this cache
        copies = Counter(r.key for r in requests)
        bar = tqdm(total=len(requests), desc=name, disable=not progress, unit="call")
        bar.update(sum(r.key in stored for r in requests))
        semaphore = asyncio.Semaphore(max(1, transport.concurrency))
        errors = [0]
        sent = [0]  # HTTP requests the calls sent

        async def one(request: ModelRequest) -> None:
            while True:
                async with semaphore:
                    claim = cache.try_claim(request.key)
                    if claim is not None:
                        with claim:
                            record = _answered_meanwhile(cache, request.key, retry_errors)
                            if record is not None:
                                from_others.add(request.key)
                                if not record.ok:
                                    skipped.add(request.key)  # its permanent error, just stored
                            else:
                                record, requests_sent = await _call(request, transport)
                                cache.put(record)  # journaled at once: a crash loses only calls in flight
                                sent[0] += requests_sent
                        break
                # Another writer is computing this key: wait for it, then look again.
                await cache.claim_released(request.key)
            fresh[request.key] = record
            bar.update(copies[request.key])
            errors[0] += not record.ok
            bar.set_postfix(errors=errors[0], refresh=False)

        await asyncio.gather(*(one(r) for r in _prefix_order(todo.values())))
        bar.close()
        records = [stored.get(r.key) or fresh[r.key] for r in requests]
        cached = [r.key in stored or r.key in from_others for r in requests]
        result = BatchResult(records, cached, skipped=[r.key in skipped for r in requests],
                             http_requests=sent[0])
        # A caller's cache gathers many batches into one shard; each call is journaled already.
        cache.flush(min_records=SHARD_RECORDS)
        result.manifest = finish_manifest(
            manifest, status="complete", **batch_counts(result),
            skipped_permanent_errors=result.n_skipped,
            answered_by_other_writers=len(from_others))
        return result
    except BaseException as exc:
        finish_manifest(manifest, status="failed", failure=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    finally:
        if own_cache:
            cache.close()


def _answered_meanwhile(cache: CallCache, key: str, retry_errors: bool) -> CallRecord | None:
    """What another writer stored for ``key`` since this batch looked (its claim is ours now)."""
    cache.refresh()
    error = cache.last_error(key)
    return cache.lookup(key) or (error if error is not None and is_permanent(error.error_type)
                                 and not retry_errors else None)


def generate(requests: Sequence[ModelRequest], **kwargs: Any) -> BatchResult:
    """Synchronous ``agenerate``; works inside Jupyter's running event loop too."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_loop = False
    else:
        in_loop = True
    # ``faults.classify`` reads an exception's chain, and an exception raised while another
    # is being handled chains to that one (here: a caller's). Such a batch, and one inside
    # a running loop (a notebook), runs in a worker thread with its own loop and no
    # exception in hand; any other runs here, where Ctrl-C stops it at once.
    if not in_loop and sys.exc_info()[1] is None:
        return asyncio.run(agenerate(requests, **kwargs))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, agenerate(requests, **kwargs)).result()
