"""Endpoints: which OpenAI-compatible server answers which model, and where its key is.

Open-weight models at scale are served by vLLM or llama.cpp's server behind an
OpenAI-compatible API. An endpoint names the model strings it serves, the server's
API base and, optionally, the environment variable that holds its key::

    MODEL=API_BASE              hosted_vllm/Qwen/Qwen2.5-7B-Instruct=http://gpu1:8000/v1
    MODEL=API_BASE#KEY_ENV      openai/my-model=https://llm.example.org/v1#MY_SERVER_KEY
    PATTERN=API_BASE            hosted_vllm/*=http://127.0.0.1:8000/v1   (``*`` and ``?`` match)

Several endpoints are separated by commas (a notebook's ``endpoints`` parameter,
``make ... ENDPOINTS=``, ``paper --set endpoints=``). A model string matches an
endpoint named exactly after it first, else the first pattern that matches it.

Keys never appear in an endpoint, so nothing secret reaches a notebook, a request key or a
run manifest: the key is read from ``KEY_ENV`` at call time. Without ``KEY_ENV`` the
provider's own variable is used where it is set (``OPENAI_API_KEY`` for ``openai/...``,
as LiteLLM does), and otherwise a placeholder key is sent: local servers need none. An
API base that carries credentials itself (``https://user:pass@host``, ``?api_key=...``)
is refused with a message saying to name a key variable instead.

Endpoints are transport settings (:class:`contextecho.engine.calls.Transport`), never part of a
request key: the same request to the same model is the same record wherever it is served.
"""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Iterable, Sequence
from urllib.parse import parse_qsl, urlsplit

from .manifest import masked

# Sent as the bearer token to a server that needs no key (OpenAI clients insist on one).
PLACEHOLDER_KEY = "contextecho-no-key"

SYNTAX = "MODEL=API_BASE[#KEY_ENV], comma-separated"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_QUERY = re.compile(r"key|token|secret|password|passwd|sig|auth|credential", re.IGNORECASE)


class EndpointError(ValueError):
    """An endpoint that cannot be used as given: bad syntax, a URL with credentials."""


@dataclass(frozen=True)
class Endpoint:
    """One OpenAI-compatible server for the models ``model`` names (a string or a pattern)."""

    model: str
    api_base: str
    key_env: str | None = None

    def __post_init__(self) -> None:
        if not self.model or "=" in self.model or "," in self.model:
            raise EndpointError(f"endpoint model {self.model!r}: give a LiteLLM model string or a "
                                "pattern such as 'hosted_vllm/*' (no '=' or ',')")
        _check_api_base(self.api_base)
        if self.key_env is not None and not _ENV_NAME.fullmatch(self.key_env):
            raise EndpointError(f"endpoint for {self.model!r}: {self.key_env!r} is not an environment "
                                "variable name (letters, digits and '_'; the key itself never goes here)")

    @property
    def is_pattern(self) -> bool:
        return any(c in self.model for c in "*?[")

    def matches(self, model: str) -> bool:
        return fnmatch.fnmatchcase(model, self.model) if self.is_pattern else model == self.model

    def text(self) -> str:
        """The endpoint in the parameter syntax (it holds no secret)."""
        return f"{self.model}={self.api_base}" + (f"#{self.key_env}" if self.key_env else "")


def _check_api_base(api_base: str) -> None:
    try:
        parts = urlsplit(api_base)
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError as exc:
        raise EndpointError(f"API base {api_base!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"API base {api_base!r} must be an http(s) URL such as "
                            "http://127.0.0.1:8000/v1")
    secret = parts.password is not None or any(_SECRET_QUERY.search(k) for k, _ in parse_qsl(parts.query))
    if parts.username is not None or secret:
        raise EndpointError(f"API base of {masked(api_base)} carries credentials, which would be "
                            "stored in notebooks and run manifests; put the key in an environment "
                            "variable and name it: MODEL=API_BASE#KEY_ENV")
    if parts.fragment:
        raise EndpointError(f"API base {api_base!r} has a fragment; the key variable follows a "
                            "single '#': MODEL=API_BASE#KEY_ENV")


def parse_endpoint(text: str) -> Endpoint:
    """``MODEL=API_BASE[#KEY_ENV]`` as an :class:`Endpoint`; a bad one raises naming it."""
    model, sep, rest = text.strip().partition("=")
    if not sep or not model.strip() or not rest.strip():
        raise EndpointError(f"endpoint {text!r}: expected {SYNTAX}, e.g. "
                            "'hosted_vllm/Qwen/Qwen2.5-7B-Instruct=http://127.0.0.1:8000/v1'")
    api_base, hash_, key_env = rest.strip().partition("#")
    if hash_ and not key_env:
        raise EndpointError(f"endpoint {text!r}: nothing after '#'; name the key's environment variable")
    return Endpoint(model.strip(), api_base, key_env or None)


def parse_endpoints(items: str | Iterable[str]) -> tuple[Endpoint, ...]:
    """Endpoints from a comma-separated string or a sequence of ``MODEL=API_BASE[#KEY_ENV]``.

    The same model (or pattern) named twice is an error: one server per model string.
    """
    texts = items.split(",") if isinstance(items, str) else [t for item in items for t in str(item).split(",")]
    endpoints = tuple(parse_endpoint(t) for t in texts if t.strip())
    seen: dict[str, Endpoint] = {}
    for endpoint in endpoints:
        if endpoint.model in seen:
            raise EndpointError(f"model {endpoint.model!r} has two endpoints: "
                                f"{seen[endpoint.model].api_base} and {endpoint.api_base}")
        seen[endpoint.model] = endpoint
    return endpoints


def endpoint_for(endpoints: Sequence[Endpoint], model: str) -> Endpoint | None:
    """The endpoint named exactly after ``model``, else the first pattern matching it."""
    exact = [e for e in endpoints if not e.is_pattern and e.model == model]
    if exact:
        return exact[0]
    return next((e for e in endpoints if e.is_pattern and e.matches(model)), None)


def key_from_environment(endpoint: Endpoint) -> str | None:
    """The key named by ``endpoint.key_env``; None when it names none (or it is unset)."""
    return os.environ.get(endpoint.key_env) or None if endpoint.key_env else None
