"""What a failed call means, and whether it is worth another attempt.

Every exception a call raises is classified once, here, into a ``Fault``:

- ``transient``: rate limits, timeouts, connection and server faults. Retried with
  backoff within the run, and again on the next run.
- ``permanent``: authentication, permission, bad request (a context overflow, an
  unsupported parameter, a content-policy refusal), not found, unprocessable. The same
  request fails the same way: never retried within the run, and on later runs only
  when asked (``retry_errors``); until then the stored error answers the request.
- ``programming``: an exception raised inside a provider that is neither a network
  fault nor a provider status (``ValueError``, ``TypeError``, ...), or raised by the
  provider's client before it sent anything (an ``openai.OpenAIError`` that is no API
  error: missing credentials, a bad client option). LiteLLM wraps it in an
  ``APIConnectionError`` or ``InternalServerError``; the wrapper is looked through, so it
  is not retried as a network fault within the run. The next run retries it (the code or
  the configuration may be fixed).

An answer that is empty or whitespace only is a fault too (``record.EMPTY_RESPONSE``):
it is stored and counted, never scored, and retried on the next run.

A transient fault is labelled by what happened, read down the exception chain rather than
from the outermost wrapper: an HTTP 429 is ``RateLimitError`` whatever its Retry-After
(which :attr:`Fault.retry_after_s` carries, for the retry loop to honour); a connection
refused, reset or closed mid-answer is ``APIConnectionError`` (LiteLLM may wrap it as an
``InternalServerError``); a timeout, the transport's or the call site's, is ``Timeout``.
"""
from __future__ import annotations

import asyncio
import email.utils
import functools
import inspect
import time
from dataclasses import dataclass
from typing import Any, Iterator

import httpx

TRANSIENT = "transient"
PERMANENT = "permanent"
PROGRAMMING = "programming"

# Raised by code, not by the network: the same call raises it again at once.
_PROGRAMMING_TYPES = (ValueError, TypeError, AttributeError, LookupError, NameError,
                      AssertionError, NotImplementedError, ArithmeticError, ImportError)
# Modules whose exceptions only wrap another one (the fault is further down the chain).
_WRAPPERS = ("litellm", "openai")


@dataclass(frozen=True)
class _Types:
    """The exception classes each kind is told by; LiteLLM's, so imported on first use (a run
    answered from the cache never imports LiteLLM)."""

    transient: tuple[type[BaseException], ...]  # worth another attempt: it may well succeed later
    permanent: tuple[type[BaseException], ...]  # never, even when a subclass of a transient type
    permanent_names: frozenset[str]  # the stored error_type of every permanent fault
    timeouts: tuple[type[BaseException], ...]  # httpx's, the SDK's, asyncio's and the builtin timeouts


@functools.cache
def _types() -> _Types:
    import litellm

    permanent = (
        litellm.AuthenticationError,
        litellm.BadRequestError,  # with ContextWindowExceededError, UnsupportedParamsError, ...
        litellm.NotFoundError,
        litellm.PermissionDeniedError,
        litellm.UnprocessableEntityError,
    )
    # A stored record carries its class name only: the names of LiteLLM's exception classes
    # under the permanent bases.
    names = frozenset(cls.__name__ for _, cls in inspect.getmembers(litellm.exceptions, inspect.isclass)
                      if issubclass(cls, permanent))
    transient = (litellm.RateLimitError, litellm.Timeout, litellm.APIConnectionError,
                 litellm.ServiceUnavailableError, litellm.InternalServerError,
                 asyncio.TimeoutError, OSError)  # OSError: ConnectionError, socket and SSL errors, TimeoutError
    timeouts = (httpx.TimeoutException, TimeoutError, asyncio.TimeoutError, litellm.Timeout)
    return _Types(transient, permanent, names, timeouts)


# The labels of transient faults read down the chain (module doc).
RATE_LIMIT = "RateLimitError"
CONNECTION = "APIConnectionError"
TIMEOUT = "Timeout"
# Evidence down the chain: the transport could not connect or lost the connection ...
_CONNECTION_FAULTS = (httpx.NetworkError, httpx.RemoteProtocolError, ConnectionError)


@dataclass(frozen=True)
class Fault:
    kind: str  # TRANSIENT, PERMANENT or PROGRAMMING
    error_type: str  # what the record stores
    message: str
    retry_after_s: float | None = None  # the server's Retry-After, where it sent one

    @property
    def retry_now(self) -> bool:
        return self.kind == TRANSIENT


def classify(exc: BaseException) -> Fault:
    """The fault behind ``exc``, looking through LiteLLM's wrappers."""
    import openai

    types = _types()
    if isinstance(exc, types.permanent):
        return Fault(PERMANENT, type(exc).__name__, str(exc))
    cause = _first_cause(exc)
    if isinstance(cause, _PROGRAMMING_TYPES):
        wrapped = f" (raised inside the provider; LiteLLM reported it as {type(exc).__name__})" \
            if cause is not exc else ""
        return Fault(PROGRAMMING, type(cause).__name__, f"{cause}{wrapped}")
    client = next((e for e in _chain(exc) if isinstance(e, openai.OpenAIError)
                   and not isinstance(e, openai.APIError)), None)
    if client is not None:
        return Fault(PROGRAMMING, type(client).__name__,
                     f"{client} (raised by the provider's client before sending; LiteLLM reported it as "
                     f"{type(exc).__name__})")
    if isinstance(exc, types.transient):
        return Fault(TRANSIENT, _transient_label(exc), str(exc), retry_after(exc))
    # Anything else is no known network or provider fault: another attempt would not help.
    return Fault(PROGRAMMING, type(exc).__name__, str(exc))


def _transient_label(exc: BaseException) -> str:
    """What happened (module doc): a 429, a lost connection, a timeout, else the type's name."""
    chain = list(_chain(exc))
    if any(getattr(e, "status_code", None) == 429 for e in chain):
        return RATE_LIMIT
    if any(isinstance(e, _CONNECTION_FAULTS) for e in chain):
        return CONNECTION
    if any(isinstance(e, _types().timeouts) for e in chain):
        return TIMEOUT  # the SDK's, httpx's or the call site's own (asyncio.wait_for) alike
    return type(exc).__name__


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, else ``Retry-After`` in
    seconds or as an HTTP date) on any response down ``exc``'s chain; None without one."""
    for current in _chain(exc):
        response = getattr(current, "response", None)
        for headers in (getattr(current, "litellm_response_headers", None),
                        getattr(response, "headers", None), getattr(current, "headers", None)):
            seconds = _retry_after_header(headers)
            if seconds is not None:
                return seconds
    return None


def _retry_after_header(headers: Any) -> float | None:
    try:
        found = {str(k).lower(): str(v) for k, v in headers.items()} if headers else {}
    except (AttributeError, TypeError):
        return None
    try:
        if "retry-after-ms" in found:
            return max(0.0, float(found["retry-after-ms"]) / 1000)
        if "retry-after" in found:
            return max(0.0, float(found["retry-after"]))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(found.get("retry-after", ""))
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, in order."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def _first_cause(exc: BaseException) -> BaseException:
    """The first exception down the chain that is not a LiteLLM/OpenAI wrapper (else ``exc``)."""
    return next((e for e in _chain(exc) if not type(e).__module__.startswith(_WRAPPERS)), exc)


def is_permanent(error_type: str | None) -> bool:
    """Whether a stored error is one that a later run skips unless asked to retry."""
    return error_type in _types().permanent_names
