"""The one call site: every model call of every experiment goes through ``generate``.

``generate(requests)`` checks the whole batch before any compute (a model string
LiteLLM cannot route, a missing API key, a request that overflows the embedded
model's context), answers cached cells from the cache, and sends the rest through
``litellm.acompletion`` with bounded concurrency and retries with backoff on rate
limits and transient errors. A call that still fails comes back as an error record:
it is stored, counted and reported, never raised past the batch, never a score.

Sampling parameters go to LiteLLM untouched (no ``drop_params``). The one addition:
for the in-process backends a request without a ``seed`` gets one derived from its
cell key, so replicates of a sampled cell differ and each is repeatable.
"""
from __future__ import annotations

import asyncio
import os
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from tqdm.auto import tqdm

from . import llm
from .cache import CellCache
from .cell import ERROR, OK, CellRecord, utc_now
from .endpoints import PLACEHOLDER_KEY, Endpoint, EndpointError, endpoint_for
from .manifest import write_manifest
from .model_request import ModelRequest


SHARD_RECORDS = 512  # a caller's cache writes a shard once this many calls are journaled


class ModelConfigError(ValueError):
    """The batch cannot start: an unknown model string, a missing key, an oversized request."""


@dataclass(frozen=True)
class Transport:
    """How calls are made. None of this is part of a cell key."""

    concurrency: int = 4
    max_attempts: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    timeout_s: float = 600.0
    api_base: str | None = None  # one OpenAI-compatible server for every model not in `endpoints`
    prompt_caching: bool = True  # mark the shared prefix for providers that support it
    # Per model (or pattern): the server that answers it and its key's variable.
    endpoints: tuple[Endpoint, ...] = ()

    def endpoint(self, model: str) -> Endpoint | None:
        """The user-supplied server of ``model``; None for a provider's own API or in-process."""
        if llm.is_in_process(model):
            return None
        found = endpoint_for(self.endpoints, model)
        if found is None and self.api_base:
            return Endpoint(model, self.api_base)
        return found


# Worth another attempt: the same request may well succeed a little later.
RETRYABLE = (
    llm.litellm.RateLimitError,
    llm.litellm.Timeout,
    llm.litellm.APIConnectionError,
    llm.litellm.ServiceUnavailableError,
    llm.litellm.InternalServerError,
    asyncio.TimeoutError,
)
# Never worth another attempt, even when a subclass of a retryable type.
FINAL = (
    llm.litellm.AuthenticationError,
    llm.litellm.BadRequestError,
    llm.litellm.NotFoundError,
    llm.litellm.PermissionDeniedError,
)


@dataclass
class BatchResult:
    records: list[CellRecord]  # one per request, in request order
    cached: list[bool]
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def n_hits(self) -> int:
        return sum(self.cached)

    @property
    def n_errors(self) -> int:
        return sum(not r.ok for r in self.records)

    def texts(self) -> list[str | None]:
        return [r.response_text if r.ok else None for r in self.records]


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
        if llm.is_in_process(model):
            continue
        try:
            endpoint = transport.endpoint(model)
        except EndpointError as exc:
            raise ModelConfigError(f"model {model!r}: {exc}") from None
        try:
            _, provider, _, api_base = litellm.get_llm_provider(
                model, api_base=endpoint.api_base if endpoint else None)
        except Exception:
            raise ModelConfigError(
                f"LiteLLM cannot route model {model!r}: use a provider-prefixed string such as "
                f"'openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'hosted_vllm/<name>' with "
                f"an endpoint, or {llm.LOCAL_MODEL!r} for the embedded model") from None
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


def _check_local(requests: Sequence[ModelRequest]) -> None:
    from .local_model import DEFAULT_MAX_TOKENS, SUPPORTED_PARAMS, shared_model

    model = shared_model()
    for index, request in enumerate(requests):
        unsupported = set(request.params) - SUPPORTED_PARAMS
        if unsupported:
            raise ModelConfigError(f"{llm.LOCAL_MODEL} does not support {sorted(unsupported)} "
                                   f"(request {request.key[:12]})")
        try:
            model.check_fits(request.messages, int(request.params.get("max_tokens") or DEFAULT_MAX_TOKENS))
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
    if explicit and isinstance(messages[-2]["content"], str):
        messages[-2]["content"] = [{"type": "text", "text": messages[-2]["content"],
                                    "cache_control": {"type": "ephemeral"}}]
    return messages


async def _call(request: ModelRequest, transport: Transport) -> CellRecord:
    litellm = llm.litellm
    kwargs: dict[str, Any] = {"timeout": transport.timeout_s, **_route_kwargs(request.model, transport)}
    messages = _mark_shared_prefix(request) if transport.prompt_caching else list(request.messages)
    params = _send_params(request)
    start = time.perf_counter()
    attempt = 0
    while True:
        attempt += 1
        try:
            response = await asyncio.wait_for(
                litellm.acompletion(model=request.model, messages=messages, **params, **kwargs),
                timeout=transport.timeout_s)
            return _record_from_response(request, response, attempt, time.perf_counter() - start)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except Exception as exc:  # failures are data
            retry = isinstance(exc, RETRYABLE) and not isinstance(exc, FINAL)
            if not retry or attempt >= transport.max_attempts:
                return _error_record(request, exc, attempt, time.perf_counter() - start)
            delay = min(transport.max_delay_s, transport.base_delay_s * 2 ** (attempt - 1))
            # Jitter spreads retries of concurrent calls; it is transport, not results.
            await asyncio.sleep(delay * (0.5 + random.random()))


def _record_from_response(request: ModelRequest, response: Any, attempts: int,
                          latency: float) -> CellRecord:
    try:
        choice = response.choices[0]
        text = choice.message.content
        if not isinstance(text, str):
            raise TypeError(f"response content is {type(text).__name__}, not text")
        usage = getattr(response, "usage", None)
    except Exception as exc:
        return _error_record(request, ValueError(f"unusable response: {exc}"), attempts, latency,
                             error_type="GarbageResponse")
    try:
        cost = None if llm.is_in_process(request.model) else \
            float(llm.litellm.completion_cost(completion_response=response))
    except Exception:
        cost = None  # LiteLLM does not know this model's price
    return CellRecord(
        key=request.key, model=request.model, request_json=request.to_json(), status=OK,
        response_text=text, finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=cost, latency_s=latency, attempts=attempts, created_at=utc_now())


def _error_record(request: ModelRequest, exc: BaseException, attempts: int, latency: float,
                  error_type: str | None = None) -> CellRecord:
    return CellRecord(
        key=request.key, model=request.model, request_json=request.to_json(), status=ERROR,
        error_type=error_type or type(exc).__name__, error_message=str(exc)[:2000],
        latency_s=latency, attempts=attempts, created_at=utc_now())


# ---------------------------------------------------------------- the batch
def _prefix_order(requests: Iterable[ModelRequest]) -> list[ModelRequest]:
    """Requests that share a prefix run back to back, so the backend can reuse it."""
    groups: dict[str, list[ModelRequest]] = defaultdict(list)
    for request in requests:
        groups[request.model + repr(request.messages[:-1])].append(request)
    return [r for group in groups.values() for r in group]


async def agenerate(requests: Sequence[ModelRequest], *, cache: CellCache | None = None,
                    transport: Transport = Transport(), progress: bool = True,
                    name: str = "generate", parameters: dict[str, Any] | None = None) -> BatchResult:
    """Answer every request, from the cache where possible. Never raises for a failed call."""
    requests = list(requests)
    own_cache = cache is None
    cache = cache if cache is not None else CellCache()
    started = utc_now()
    try:
        hits = {r.key: cache.lookup(r.key) for r in requests}
        todo = {r.key: r for r in requests if hits[r.key] is None}  # identical requests once
        if todo:
            check_models(list(todo.values()), transport)
        fresh: dict[str, CellRecord] = {}
        copies = Counter(r.key for r in requests)
        bar = tqdm(total=len(requests), desc=name, disable=not progress, unit="call")
        bar.update(sum(hits[r.key] is not None for r in requests))
        semaphore = asyncio.Semaphore(max(1, transport.concurrency))
        errors = [0]

        async def one(request: ModelRequest) -> None:
            async with semaphore:
                record = await _call(request, transport)
            cache.put(record)  # journaled at once: a crash loses only calls in flight
            fresh[request.key] = record
            bar.update(copies[request.key])
            errors[0] += not record.ok
            bar.set_postfix(errors=errors[0], refresh=False)

        await asyncio.gather(*(one(r) for r in _prefix_order(todo.values())))
        bar.close()
        records = [hits[r.key] or fresh[r.key] for r in requests]
        cached = [hits[r.key] is not None for r in requests]
        # A caller's cache gathers many batches into one shard; each call is journaled already.
        cache.flush(min_records=SHARD_RECORDS)
        result = BatchResult(records, cached)
        result.manifest = write_manifest(
            name=name, started=started, requests=requests, result=result,
            transport=transport, parameters=parameters or {})
        return result
    finally:
        if own_cache:
            cache.close()


def generate(requests: Sequence[ModelRequest], **kwargs: Any) -> BatchResult:
    """Synchronous ``agenerate``; works inside Jupyter's running event loop too."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(agenerate(requests, **kwargs))
    # A notebook already runs a loop: run the batch in a worker thread with its own.
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, agenerate(requests, **kwargs)).result()
