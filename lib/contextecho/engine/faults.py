"""What a failed call means, and whether it is worth another attempt.

Every exception a call raises is classified once, here, into a ``Fault``:

- ``transient``: rate limits, timeouts, connection and server faults. Retried with
  backoff within the run, and again on the next run.
- ``permanent``: authentication, permission, bad request (a context overflow, an
  unsupported parameter, a content-policy refusal), not found, unprocessable. The same
  request fails the same way: never retried within the run, and on later runs only
  when asked (``retry_errors``); until then the stored error answers the request.
- ``programming``: an exception raised inside a provider that is neither a network
  fault nor a provider status (``ValueError``, ``TypeError``, ...). LiteLLM wraps it in
  an ``APIConnectionError``; the wrapper is looked through, so it is not retried as a
  connection error within the run. The next run retries it (the code may be fixed).

An answer that is empty or whitespace only is a fault too (``record.EMPTY_RESPONSE``):
it is stored and counted, never scored, and retried on the next run.
"""
from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass

from . import llm

TRANSIENT = "transient"
PERMANENT = "permanent"
PROGRAMMING = "programming"

_litellm = llm.litellm

# Worth another attempt: the same request may well succeed a little later.
_TRANSIENT_TYPES = (
    _litellm.RateLimitError,
    _litellm.Timeout,
    _litellm.APIConnectionError,
    _litellm.ServiceUnavailableError,
    _litellm.InternalServerError,
    asyncio.TimeoutError,
    OSError,  # ConnectionError, socket and SSL errors, TimeoutError
)
# Never worth another attempt, even when a subclass of a transient type.
_PERMANENT_TYPES = (
    _litellm.AuthenticationError,
    _litellm.BadRequestError,  # with ContextWindowExceededError, UnsupportedParamsError, ...
    _litellm.NotFoundError,
    _litellm.PermissionDeniedError,
    _litellm.UnprocessableEntityError,
)
# Raised by code, not by the network: the same call raises it again at once.
_PROGRAMMING_TYPES = (ValueError, TypeError, AttributeError, LookupError, NameError,
                      AssertionError, NotImplementedError, ArithmeticError, ImportError)
# Modules whose exceptions only wrap another one (the fault is further down the chain).
_WRAPPERS = ("litellm", "openai")

# The stored ``error_type`` of every permanent fault: the names of LiteLLM's exception
# classes under the permanent bases (a stored record carries its class name only).
PERMANENT_ERROR_TYPES = frozenset(
    cls.__name__ for _, cls in inspect.getmembers(_litellm.exceptions, inspect.isclass)
    if issubclass(cls, _PERMANENT_TYPES))


@dataclass(frozen=True)
class Fault:
    kind: str  # TRANSIENT, PERMANENT or PROGRAMMING
    error_type: str  # what the record stores
    message: str

    @property
    def retry_now(self) -> bool:
        return self.kind == TRANSIENT


def classify(exc: BaseException) -> Fault:
    """The fault behind ``exc``, looking through LiteLLM's wrappers."""
    if isinstance(exc, _PERMANENT_TYPES):
        return Fault(PERMANENT, type(exc).__name__, str(exc))
    cause = _first_cause(exc)
    if isinstance(cause, _PROGRAMMING_TYPES):
        wrapped = f" (raised inside the provider; LiteLLM reported it as {type(exc).__name__})" \
            if cause is not exc else ""
        return Fault(PROGRAMMING, type(cause).__name__, f"{cause}{wrapped}")
    if isinstance(exc, _TRANSIENT_TYPES):
        return Fault(TRANSIENT, type(exc).__name__, str(exc))
    # Anything else is no known network or provider fault: another attempt would not help.
    return Fault(PROGRAMMING, type(exc).__name__, str(exc))


def _first_cause(exc: BaseException) -> BaseException:
    """The first exception down the chain that is not a LiteLLM/OpenAI wrapper (else ``exc``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if not type(current).__module__.startswith(_WRAPPERS):
            return current
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return exc


def is_permanent(error_type: str | None) -> bool:
    """Whether a stored error is one that a later run skips unless asked to retry."""
    return error_type in PERMANENT_ERROR_TYPES
