"""Provider batch mode: the uncached requests of a round of calls, sent as batch jobs
through the provider's batch API instead of one call each (``Transport.batch``).

Which providers have a batch API here, and what LiteLLM does for each: README, 'Provider batch
mode' (:func:`batchable` decides; any other model is called one by one).

Each item of a job is the request the interactive path would send: its LiteLLM keyword
arguments (``calls.call_kwargs``, the same messages, parameters and prompt-caching marks)
are turned into the provider's request body by LiteLLM's own request transformation
(:func:`provider_request`), and its ``custom_id`` is the request key. A job's answers come back
as LiteLLM responses (OpenAI's body as LiteLLM reads a chat completion; Anthropic's message
through LiteLLM's ``AnthropicConfig``), an errored item as the LiteLLM exception the same
HTTP answer raises interactively, so the caller stores them as ordinary call records under
the same keys: a batch answer is a cache hit for an interactive rerun, and the other way round.
An item the job ended without answering (expired, cancelled, a failed job) is a
:class:`BatchIncomplete` error, retried on the next run.

**The ledger.** A job is written to ``<cache>/batches/<batch id>.json`` (provider, model,
API base, batch id, input file id, the request keys; never a key to the API) as soon as the
provider has accepted it, before any poll, and moved to ``batches/closed/`` once its answers
are stored. A run that finds an open job holding keys it needs polls that job instead of
submitting them again, so a run killed while it waited resumes where it was; a lock on the
ledger makes two processes on one cache share a job rather than submit it twice. A job that
is still running after ``max_wait_s`` (or whose polls keep failing) stops the run with
:class:`BatchError`; its entry stays open for the next run.

A job's answers for requests this run does not hold (an earlier run asked for more) cannot be
stored (their requests are not known here): a line counts them. An entry left open by a run
killed after it stored the answers and before it closed the entry holds only cached keys, so no
run needs it again; it is never polled.
"""
from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence

import httpx

from . import llm
from .faults import PERMANENT, classify
from .model_request import ModelRequest
from .progress import progress as progress_bar, say
from .record import utc_now

#: Providers whose batch API this module drives.
PROVIDERS = ("openai", "anthropic")
#: The most requests and bytes one job may hold (OpenAI: 50,000 and 200 MB; Anthropic:
#: 100,000 and 256 MB); a larger batch is split into several jobs.
LIMITS = {"openai": (50_000, 200 * 2**20), "anthropic": (100_000, 256 * 2**20)}
#: Job states after which nothing changes (Anthropic's ``ended`` reads as ``completed``).
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
OPENAI_ENDPOINT = "/v1/chat/completions"
LEDGER = "batches"  # the ledger's folder under the cache root

# What the LiteLLM call that only builds a request body is given as a key: it sends nothing.
_BODY_ONLY_KEY = "sk-body-only-never-sent"
# Given to every poll: LiteLLM's own logging of an ended job would download its results again
# (to price the job) outside this run's count of HTTP requests; this module reads them itself.
_NO_JOB_LOGGING = {"litellm_metadata": {"batch_ignore_default_logging": True}}

Outcome = Any  # a LiteLLM ModelResponse, or the exception the request's answer raises
Deliver = Callable[[str, Outcome], None]


class BatchIncomplete(Exception):
    """A request its job ended without answering (expired, cancelled, or the job failed)."""


class BatchError(RuntimeError):
    """A job that could not be followed to its end in this run; its ledger entry stays open."""


# ---------------------------------------------------------------- which models
def batch_provider(model: str) -> str | None:
    """The provider whose batch API answers ``model`` (one of :data:`PROVIDERS`), else None."""
    if llm.is_in_process(model):
        return None
    try:
        provider = llm.ensure_providers().get_llm_provider(model)[1]
    except Exception:
        return None
    return provider if provider in PROVIDERS else None


_told: set[str] = set()  # models already named as having no batch API (once per process)


def batchable(requests: Iterable[ModelRequest]) -> list[ModelRequest]:
    """The requests whose model has a batch API here; for each other model a line, once per
    process, says its calls are made one by one."""
    requests = list(requests)
    others = sorted({r.model for r in requests if batch_provider(r.model) is None} - _told)
    for model in others:
        say(f"batch mode: {model} has no batch API here (only {', '.join(PROVIDERS)} do); "
            "its calls are made one by one")
        _told.add(model)
    return [r for r in requests if batch_provider(r.model) is not None]


# ---------------------------------------------------------------- request bodies
def provider_request(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The body LiteLLM would send for ``litellm.acompletion(**kwargs)``, and the
    ``anthropic-beta`` header it would send with it (None without one): the call is run up to
    the point where the request is built (LiteLLM's raw-request capture) and stops there,
    sending nothing. What LiteLLM raises while building it (an unsupported parameter, say)
    propagates, as it would interactively. OpenAI's ``extra_body`` is merged in, as its
    client merges it."""
    from litellm.litellm_core_utils.litellm_logging import Logging

    logging = Logging(model=kwargs["model"], messages=list(kwargs["messages"]), stream=False,
                      call_type="completion", litellm_call_id=f"batch-{uuid.uuid4()}", start_time=datetime.now(),
                      function_id="batch-body", log_raw_request_response=True, raw_request_only=True)
    try:
        llm.litellm.completion(**{**kwargs, "api_key": _BODY_ONLY_KEY}, litellm_logging_obj=logging)
    except Exception:
        captured = logging.model_call_details.get("raw_request_typed_dict") or {}
        if not isinstance(captured.get("raw_request_body"), dict):
            raise  # stopped before the body was built: the request's own error
    else:
        raise RuntimeError(f"LiteLLM completed a call for {kwargs['model']} that was only to build its body")
    body = dict(captured["raw_request_body"])
    body.update(body.pop("extra_body", None) or {})
    headers = {str(k).lower(): v for k, v in (captured.get("raw_request_headers") or {}).items()}
    return body, headers.get("anthropic-beta")


# ---------------------------------------------------------------- the ledger
@dataclass(frozen=True)
class Job:
    """One batch job as the ledger keeps it."""

    provider: str
    model: str
    api_base: str | None  # where it was submitted (None: the provider's own API)
    batch_id: str
    input_file_id: str | None  # OpenAI's uploaded input file; None for Anthropic
    keys: tuple[str, ...]  # the request keys, one per item (its custom_id)
    submitted_at: str
    status: str = "open"  # open, else the job's last state (completed, expired, ...)
    closed_at: str | None = None

    @property
    def file_name(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", self.batch_id) + ".json"


class Ledger:
    """The open jobs of one cache (module doc), one JSON file each."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.closed_dir = self.root / "closed"

    def path(self, job: Job) -> Path:
        return self.root / job.file_name

    def open_jobs(self) -> list[Job]:
        """The jobs submitted and not yet closed, oldest first."""
        jobs = []
        for path in sorted(self.root.glob("*.json")) if self.root.is_dir() else ():
            data = json.loads(path.read_text())
            jobs.append(Job(**{**data, "keys": tuple(data["keys"])}))
        return sorted(jobs, key=lambda job: job.submitted_at)

    def write(self, job: Job) -> Path:
        """Store ``job`` durably (a complete file or none) and return its path."""
        self.root.mkdir(parents=True, exist_ok=True)
        return _write_json(self.path(job), asdict(job))

    def close(self, job: Job, status: str) -> Job:
        """Move ``job`` to ``closed/`` with its last state."""
        closed = replace(job, status=status, closed_at=utc_now())
        self.closed_dir.mkdir(parents=True, exist_ok=True)
        _write_json(self.closed_dir / job.file_name, asdict(closed))
        self.path(job).unlink(missing_ok=True)
        return closed

    @asynccontextmanager
    async def lock(self) -> AsyncIterator[None]:
        """Held while a process looks for open jobs and submits new ones, so two processes
        never submit the same requests (the wait runs in a thread, off the event loop)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "ab") as handle:
            await asyncio.to_thread(fcntl.flock, handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _write_json(path: Path, data: dict) -> Path:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temp, "w") as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return path


# ---------------------------------------------------------------- the providers' APIs
def _mapped(exc: BaseException, provider: str, model: str) -> BaseException:
    """``exc`` as the LiteLLM exception the interactive path raises for the same failure
    (LiteLLM's own exception mapping; an HTTP status read from a bare ``httpx`` error first)."""
    if isinstance(exc, tuple(llm.litellm.LITELLM_EXCEPTION_TYPES)):
        return exc
    from litellm.litellm_core_utils.exception_mapping_utils import exception_type

    if isinstance(exc, httpx.HTTPStatusError):
        exc = _provider_error(provider, exc.response.status_code, exc.response.text)
    try:
        exception_type(model=model.split("/", 1)[-1], original_exception=exc, custom_llm_provider=provider)
    except Exception as mapped:
        return mapped
    return exc


def _provider_error(provider: str, status: int, message: str) -> Exception:
    if provider == "anthropic":
        from litellm.llms.anthropic.common_utils import AnthropicError

        return AnthropicError(status_code=status, message=message)
    from litellm.llms.openai.common_utils import OpenAIError

    return OpenAIError(status_code=status, message=message)


class _OpenAI:
    """OpenAI's Batch API through LiteLLM."""

    name = "openai"

    def __init__(self, model: str, api_base: str | None, api_key: str | None) -> None:
        self.model = model
        self.route = {"custom_llm_provider": "openai", "max_retries": 0,
                      **({"api_base": api_base} if api_base else {}), **({"api_key": api_key} if api_key else {})}

    @staticmethod
    def line(key: str, body: dict) -> dict:
        return {"custom_id": key, "method": "POST", "url": OPENAI_ENDPOINT, "body": body}

    async def submit(self, lines: list[bytes], betas: Iterable[str]) -> tuple[str, str]:
        """Upload the input file and create the job: ``(batch id, input file id)``."""
        upload = await llm.litellm.acreate_file(file=("batch.jsonl", b"".join(lines), "application/jsonl"),
                                                purpose="batch", **self.route)
        job = await llm.litellm.acreate_batch(completion_window="24h", endpoint=OPENAI_ENDPOINT,
                                              input_file_id=upload.id, **self.route)
        return job.id, upload.id

    async def retrieve(self, batch_id: str) -> Any:
        return await llm.litellm.aretrieve_batch(batch_id=batch_id, **self.route, **_NO_JOB_LOGGING)

    async def results(self, job: Any, bodies: Mapping[str, dict]) -> dict[str, Outcome]:
        outcomes: dict[str, Outcome] = {}
        for file_id in (job.output_file_id, job.error_file_id):
            if not file_id:
                continue
            content = await llm.litellm.afile_content(file_id=file_id, **self.route)
            for line in _jsonl(content.content):
                outcomes[line["custom_id"]] = self._outcome(line)
        return outcomes

    def _outcome(self, line: dict) -> Outcome:
        from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import (
            convert_to_model_response_object)
        from litellm.types.utils import ModelResponse

        response = line.get("response")
        if not response:  # no answer at all: the job expired or was cancelled before this item
            error = line.get("error") or {}
            return BatchIncomplete(f"{error.get('code') or 'no response'}: {error.get('message') or ''}".strip())
        if response.get("status_code") != 200:
            return _mapped(_provider_error("openai", int(response.get("status_code") or 500),
                                           json.dumps(response.get("body"))), "openai", self.model)
        try:
            return convert_to_model_response_object(response_object=response["body"],
                                                    model_response_object=ModelResponse())
        except Exception as exc:
            return exc


class _Anthropic:
    """Anthropic's Message Batches: created here (LiteLLM cannot), polled and read through LiteLLM."""

    name = "anthropic"

    def __init__(self, model: str, api_base: str | None, api_key: str | None) -> None:
        from litellm.llms.anthropic.common_utils import AnthropicModelInfo

        self.model = model
        self.api_base = api_base
        self.api_key = api_key or AnthropicModelInfo.get_api_key()
        self.route = {"custom_llm_provider": "anthropic", **({"api_base": api_base} if api_base else {}),
                      **({"api_key": self.api_key} if self.api_key else {})}

    @staticmethod
    def line(key: str, body: dict) -> dict:
        return {"custom_id": key, "params": body}

    async def submit(self, lines: list[bytes], betas: Iterable[str]) -> tuple[str, None]:
        """Create the Message Batch, with the beta features its items use (LiteLLM sends them
        as a header with each interactive request; a batch takes them once, for all its items)."""
        from litellm.llms.anthropic.batches.transformation import AnthropicBatchesConfig
        from litellm.llms.anthropic.common_utils import merge_anthropic_beta_headers
        from litellm.llms.custom_httpx.http_handler import get_async_httpx_client
        from litellm.types.utils import LlmProviders

        config = AnthropicBatchesConfig()
        url = config.get_complete_batch_url(api_base=self.api_base, api_key=self.api_key, model=self.model,
                                            optional_params={}, litellm_params={}, data={})
        headers = config.validate_environment(headers={}, model=self.model, messages=[], optional_params={},
                                              litellm_params={}, api_key=self.api_key, api_base=self.api_base)
        for beta in betas:
            headers["anthropic-beta"] = merge_anthropic_beta_headers(headers.get("anthropic-beta"), beta)
        payload = b'{"requests": [' + b",".join(line.rstrip(b"\n") for line in lines) + b"]}"
        client = get_async_httpx_client(llm_provider=LlmProviders.ANTHROPIC)
        response = await client.post(url=url, headers=headers, data=payload)
        response.raise_for_status()
        return response.json()["id"], None

    async def retrieve(self, batch_id: str) -> Any:
        return await llm.litellm.aretrieve_batch(batch_id=batch_id, **self.route, **_NO_JOB_LOGGING)

    async def results(self, job: Any, bodies: Mapping[str, dict]) -> dict[str, Outcome]:
        content = await llm.litellm.afile_content(file_id=job.id, **self.route)
        return {line["custom_id"]: self._outcome(line, bodies.get(line["custom_id"]))
                for line in _jsonl(content.content)}

    def _outcome(self, line: dict, body: dict | None) -> Outcome:
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig, JsonModeRequest
        from litellm.llms.anthropic.common_utils import ANTHROPIC_ERROR_STATUS_CODE_MAP
        from litellm.types.utils import ModelResponse

        result = line.get("result") or {}
        kind = result.get("type")
        if kind == "errored":
            error = (result.get("error") or {}).get("error") or {}
            status = ANTHROPIC_ERROR_STATUS_CODE_MAP.get(error.get("type", ""), 500)
            return _mapped(_provider_error("anthropic", status, json.dumps(result.get("error"))),
                           "anthropic", self.model)
        if kind != "succeeded":
            return BatchIncomplete(f"the job ended without an answer for this request ({kind})")
        message = result.get("message") or {}
        # As LiteLLM reads an interactive answer: JSON mode where a response format was asked,
        # its schema read from the tool LiteLLM added for it.
        tools = (body or {}).get("tools")
        json_mode = bool(body and ("output_format" in body or JsonModeRequest(tools=tools).tool_schema()))
        try:
            return AnthropicConfig().transform_parsed_response(
                completion_response=message, raw_response=httpx.Response(200, json=message),
                model_response=ModelResponse(), json_mode=json_mode or None,
                response_format_schema=JsonModeRequest(tools=tools).tool_schema() if json_mode else None)
        except Exception as exc:
            return exc


def _jsonl(data: bytes) -> Iterator[dict]:
    for line in data.splitlines():
        if line.strip():
            yield json.loads(line)


def _api(provider: str, model: str, api_base: str | None, api_key: str | None) -> _OpenAI | _Anthropic:
    return (_OpenAI if provider == "openai" else _Anthropic)(model, api_base, api_key)


# ---------------------------------------------------------------- answering
async def answer(calls: Mapping[str, Mapping[str, Any]], *, ledger: Ledger, deliver: Deliver,
                 poll_s: float, max_wait_s: float, max_attempts: int, progress: bool = True) -> None:
    """Answer every call (request key -> its ``litellm.acompletion`` keyword arguments, each
    model's provider in :data:`PROVIDERS`) through batch jobs: ``deliver(key, outcome)`` once
    per key, as its job ends. Jobs of the ledger that hold some of these keys are followed,
    not submitted again. ``poll_s``: the wait between polls (and between tries of a failed
    submission); ``max_wait_s``: the longest this run follows a job; ``max_attempts``: tries of
    an operation that fails transiently (a submission, a poll that keeps failing)."""
    if not poll_s > 0:
        raise ValueError(f"Transport.batch_poll_s {poll_s!r}: give the seconds between polls, above 0")
    if not max_wait_s >= 0:
        raise ValueError(f"Transport.batch_max_wait_s {max_wait_s!r}: give the seconds a run may wait, 0 or more")
    by_model: dict[str, dict[str, Mapping[str, Any]]] = {}
    for key, kwargs in calls.items():
        by_model.setdefault(kwargs["model"], {})[key] = kwargs
    follow = _Follow(ledger, deliver, poll_s, max_wait_s, max_attempts, progress)
    await asyncio.gather(*(follow.model(model, model_calls) for model, model_calls in by_model.items()))


@dataclass
class _Follow:
    ledger: Ledger
    deliver: Deliver
    poll_s: float
    max_wait_s: float
    max_attempts: int
    progress: bool

    async def model(self, model: str, calls: Mapping[str, Mapping[str, Any]]) -> None:
        provider = batch_provider(model)
        if provider is None:
            raise ValueError(f"model {model!r} has no batch API here (only {', '.join(PROVIDERS)} do)")
        first = next(iter(calls.values()))
        api_base, api_key = first.get("api_base"), first.get("api_key")
        bodies, betas, unbuilt = await asyncio.to_thread(self._bodies, model, calls)
        for key, exc in unbuilt.items():  # answered at once with what LiteLLM raised
            self.deliver(key, exc)
        async with self.ledger.lock():
            resumed = [job for job in self.ledger.open_jobs()
                       if (job.provider, job.model) == (provider, model) and not calls.keys().isdisjoint(job.keys)]
            for job in resumed:
                say(f"batch job {job.batch_id} resumed ({provider}, {model}, {len(job.keys)} requests, "
                    f"submitted {job.submitted_at}); ledger {self.ledger.path(job)}")
            held = {key for job in resumed for key in job.keys}
            new = [key for key in calls if key in bodies and key not in held]
            submitted = await self._submit(_api(provider, model, api_base, api_key), model, api_base, new, bodies,
                                           betas)
        await asyncio.gather(*(self._follow(_api(provider, model, job.api_base, api_key), job, calls, bodies)
                               for job in resumed + submitted))

    def _bodies(self, model: str, calls: Mapping[str, Mapping[str, Any]]
                ) -> tuple[dict[str, dict], dict[str, str], dict[str, Exception]]:
        """Each call's provider body and beta header (where it has one), and what LiteLLM
        raised for a call whose body it cannot build."""
        bodies, betas, unbuilt = {}, {}, {}
        for key, kwargs in progress_bar(calls.items(), desc=f"batch bodies {model}", unit="request",
                                disable=not self.progress, leave=False):
            try:
                bodies[key], beta = provider_request(kwargs)
            except Exception as exc:
                unbuilt[key] = exc
                continue
            if beta:
                betas[key] = beta
        return bodies, betas, unbuilt

    async def _submit(self, api: _OpenAI | _Anthropic, model: str, api_base: str | None, keys: list[str],
                      bodies: Mapping[str, dict], betas: Mapping[str, str]) -> list[Job]:
        jobs = []
        limit_requests, limit_bytes = LIMITS[api.name]
        lines = [(key, json.dumps(api.line(key, bodies[key]), ensure_ascii=False).encode() + b"\n") for key in keys]
        for chunk in _chunks(lines, limit_requests, limit_bytes):
            chunk_keys = [key for key, _ in chunk]
            try:
                batch_id, input_file_id = await self._tries(
                    lambda: api.submit([line for _, line in chunk], sorted({betas[k] for k in chunk_keys if k in betas})),
                    api.name, model)
            except Exception as exc:  # nothing submitted: each request's answer is this error
                for key in chunk_keys:
                    self.deliver(key, exc)
                continue
            job = Job(api.name, model, api_base, batch_id, input_file_id, tuple(chunk_keys), utc_now())
            path = self.ledger.write(job)
            say(f"batch job {batch_id} submitted ({api.name}, {model}, {len(chunk_keys)} requests"
                + (f", input file {input_file_id}" if input_file_id else "") + f"); ledger {path}")
            jobs.append(job)
        return jobs

    async def _tries(self, operation: Callable[[], Any], provider: str, model: str) -> Any:
        """``await operation()``, tried again after ``poll_s`` while it fails transiently, at
        most ``max_attempts`` times; the last failure raised as LiteLLM would raise it."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await operation()
            except (KeyboardInterrupt, asyncio.CancelledError):
                raise
            except Exception as exc:
                mapped = _mapped(exc, provider, model)
                if not classify(mapped).retry_now or attempt >= self.max_attempts:
                    raise mapped from exc
            await asyncio.sleep(self.poll_s)

    async def _follow(self, api: _OpenAI | _Anthropic, job: Job, calls: Mapping[str, Any],
                      bodies: Mapping[str, dict]) -> None:
        """Poll ``job`` until it ends, deliver its answers, close it."""
        deadline = time.monotonic() + self.max_wait_s
        where = f"batch job {job.batch_id} ({job.provider}, {job.model}; ledger {self.ledger.path(job)})"
        bar = progress_bar(total=len(job.keys), desc=f"batch {job.batch_id}", unit="request", disable=not self.progress)
        try:
            while True:
                try:
                    state = await self._tries(lambda: api.retrieve(job.batch_id), job.provider, job.model)
                except Exception as exc:
                    kind = "permanently" if classify(exc).kind == PERMANENT else f"{self.max_attempts} times"
                    raise BatchError(f"{where}: polling failed {kind} ({exc}); its entry stays open: "
                                     f"run again to resume it, or remove the entry to submit its requests anew") from exc
                counts = state.request_counts
                if counts is not None:
                    bar.n = min(len(job.keys), (counts.completed or 0) + (counts.failed or 0))
                bar.set_postfix(status=state.status, refresh=True)
                if state.status in ENDED:
                    break
                if time.monotonic() >= deadline:
                    raise BatchError(f"{where}: still {state.status} after {self.max_wait_s:g} s "
                                     f"(the most a run waits, Transport.batch_max_wait_s); its entry stays open: "
                                     f"run again to resume polling it")
                await asyncio.sleep(min(self.poll_s, max(0.0, deadline - time.monotonic())))
            try:
                outcomes = await self._tries(lambda: api.results(state, bodies), job.provider, job.model)
            except Exception as exc:
                raise BatchError(f"{where}: {state.status}, but its results could not be read ({exc}); its "
                                 f"entry stays open: run again to read them") from exc
        finally:
            bar.close()
        missing = BatchIncomplete(f"batch job {job.batch_id} ended {state.status} without an answer for this request")
        for key in job.keys:
            if key in bodies:  # one of this run's calls, not answered already (its body unbuilt)
                self.deliver(key, outcomes.get(key, missing))
        unknown = sum(key not in calls for key in job.keys)
        if unknown:
            say(f"batch job {job.batch_id}: {unknown} answers for requests this run does not hold were "
                "not stored (an earlier run asked for them)")
        self.ledger.close(job, state.status)


def _chunks(lines: Sequence[tuple[str, bytes]], max_requests: int, max_bytes: int) -> Iterator[list]:
    """``lines`` in runs of at most ``max_requests`` lines and ``max_bytes`` bytes."""
    chunk: list[tuple[str, bytes]] = []
    size = 0
    for key, line in lines:
        if chunk and (len(chunk) >= max_requests or size + len(line) > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append((key, line))
        size += len(line)
    if chunk:
        yield chunk


def batch_cost(response: Any, model: str) -> float | None:
    """What an answer of a batch job costs at the provider's batch price (LiteLLM's price map:
    the batch rates where it has them, else half the interactive price); None where it has no
    price for ``model``."""
    try:
        return float(llm.litellm.completion_cost(completion_response=response, model=model,
                                                 call_type="aretrieve_batch"))
    except Exception:
        return None
