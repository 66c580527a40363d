"""Endpoints: which OpenAI-compatible server answers which model, and where its key is.

Open-weight models at scale are served by vLLM or llama.cpp's server behind an
OpenAI-compatible API. An endpoint names the model strings it serves, the server's
API base (or several, separated by ``|``) and, optionally, the environment variable that
holds its key::

    MODEL=API_BASE              hosted_vllm/Qwen/Qwen2.5-7B-Instruct=http://gpu1:8000/v1
    MODEL=API_BASE#KEY_ENV      openai/my-model=https://llm.example.org/v1#MY_SERVER_KEY
    PATTERN=API_BASE            hosted_vllm/*=http://127.0.0.1:8000/v1   (``*`` and ``?`` match)
    MODEL=API_BASE|API_BASE...  hosted_vllm/*=http://gpu1:8000/v1|http://gpu2:8000/v1

Several API bases are several servers of the same model (vLLM replicas, llama.cpp
servers on several machines), all reached with the one key: each attempt of a call goes to
one of them, picked by LiteLLM's Router, and a server that fails an attempt is left out
for a while, so the retry goes to another (:mod:`contextecho.engine.routing`). The same
server listed twice is an error.

Several endpoints are separated by commas (a notebook's ``endpoints`` parameter,
``make ... ENDPOINTS=``, ``paper --set endpoints=``). A model string matches an
endpoint named exactly after it first, else the first pattern that matches it.

Keys never appear in an endpoint, so nothing secret reaches a notebook, a request key or a
run manifest: the key is read from ``KEY_ENV`` at call time. Without ``KEY_ENV`` the
provider's own variable is used where it is set (``OPENAI_API_KEY`` for ``openai/...``,
as LiteLLM does), and otherwise a placeholder key is sent: local servers need none. An
API base (any of an endpoint's) that carries a credential anywhere is refused with a
message saying to name a key variable instead: user info (``https://user:pass@host``, a user name alone too), a
query parameter named like one (``api_key=``, ``key=``, ``code=``, ``token=``, ``sig=``,
...) or whose value looks like a key, a path segment that looks like a key (``/sk-...``,
a long random token: :func:`contextecho.engine.manifest.looks_like_key`); so is a
``KEY_ENV`` that looks like a key rather than a variable's name. Every refusal shows the
endpoint masked (:func:`contextecho.engine.manifest.masked_text`), never as given, and
is raised outside any handler, so no exception down its chain holds the value either.

Endpoints are transport settings (:class:`contextecho.engine.calls.Transport`), never part of a
request key: the same request to the same model is the same record wherever it is served.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Iterable, Sequence
from urllib.parse import parse_qsl, unquote, urlsplit

from .manifest import has_key, looks_like_key, masked_text
from .usage import UsageError

# Sent as the bearer token to a server that needs no key (OpenAI clients insist on one).
PLACEHOLDER_KEY = "contextecho-no-key"

SYNTAX = "MODEL=API_BASE[|API_BASE...][#KEY_ENV], comma-separated"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Query parameters that carry a credential by name (Azure Functions' ``code``, signed URLs' ``sig``).
_SECRET_QUERY = re.compile(r"key|token|secret|passw|pwd|sig|auth|credential|code|session|cookie|"
                           r"access|bearer", re.IGNORECASE)


class EndpointError(UsageError, ValueError):
    """An endpoint that cannot be used as given: bad syntax, a URL with credentials."""


@dataclass(frozen=True)
class Endpoint:
    """The OpenAI-compatible servers of the models ``model`` names (a string or a pattern):
    ``api_bases``, one or more (one may be given as a plain string)."""

    model: str
    api_bases: tuple[str, ...]
    key_env: str | None = None

    def __post_init__(self) -> None:
        if not self.model or "=" in self.model or "," in self.model:
            raise EndpointError(f"endpoint model {masked_text(repr(self.model))}: give a LiteLLM model "
                                "string or a pattern such as 'hosted_vllm/*' (no '=' or ',')")
        bases = (self.api_bases,) if isinstance(self.api_bases, str) else tuple(self.api_bases)
        object.__setattr__(self, "api_bases", bases)
        if not self.api_bases:
            raise EndpointError(f"endpoint for {masked_text(repr(self.model))}: no API base; "
                                f"expected {SYNTAX}")
        for api_base in self.api_bases:
            _check_api_base(api_base)
        servers = [b.rstrip("/") for b in self.api_bases]
        twice = sorted({b for b in servers if servers.count(b) > 1})
        if twice:
            raise EndpointError(f"endpoint for {masked_text(repr(self.model))}: API base "
                                f"{masked_text(twice[0])!r} is listed twice; list each server once")
        if self.key_env is not None and (not _ENV_NAME.fullmatch(self.key_env) or looks_like_key(self.key_env)):
            raise EndpointError(f"endpoint for {masked_text(repr(self.model))}: what follows '#' "
                                f"({len(self.key_env)} characters, not shown) is not an environment variable name "
                                "(letters, digits and '_'); name the variable that holds the key, "
                                "never the key itself")

    @property
    def is_pattern(self) -> bool:
        return any(c in self.model for c in "*?[")

    def matches(self, model: str) -> bool:
        return fnmatch.fnmatchcase(model, self.model) if self.is_pattern else model == self.model

    def text(self) -> str:
        """The endpoint in the parameter syntax (it holds no secret)."""
        return f"{self.model}={'|'.join(self.api_bases)}" + (f"#{self.key_env}" if self.key_env else "")


def _check_api_base(api_base: str) -> None:
    # Every refusal is raised here, outside the handler, so nothing down its chain holds the URL.
    problem = credential_in_url(api_base)
    if problem is None:
        return
    shown = masked_text(api_base)
    if problem == "not a URL":
        raise EndpointError(f"API base {shown!r} is not a URL (its host or port cannot be read)")
    if problem == "not http":
        raise EndpointError(f"API base {shown!r} must be an http(s) URL such as http://127.0.0.1:8000/v1")
    if problem == "fragment":
        raise EndpointError(f"API base {shown!r} has a fragment; the key variable follows a "
                            "single '#' after the last API base: MODEL=API_BASE[|API_BASE...]#KEY_ENV")
    raise EndpointError(f"API base {shown!r} carries credentials ({problem}), which would be stored "
                        "in notebooks and run manifests; put the key in an environment variable and "
                        "name it: MODEL=API_BASE#KEY_ENV")


def credential_in_url(url: str) -> str | None:
    """What keeps ``url`` from being an API base, in words: ``"not a URL"``, ``"not http"``,
    where it carries a credential (``"user info"``, ``"query parameter 2"``, ``"path
    segment 3"``), ``"fragment"``; None for a usable one. It never quotes the URL."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        return "not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not http"
    if parts.username is not None or parts.password is not None:
        return "user info"
    for number, (name, value) in enumerate(parse_qsl(parts.query, keep_blank_values=True), start=1):
        if _SECRET_QUERY.search(name) or has_key(name) or has_key(value):
            return f"query parameter {number}"
    if parts.query and not parse_qsl(parts.query, keep_blank_values=True):
        return "a query that is not NAME=VALUE pairs"
    for number, segment in enumerate((s for s in parts.path.split("/") if s), start=1):
        if has_key(unquote(segment)):
            return f"path segment {number}"
    if parts.fragment:
        return "fragment"
    return None


def parse_endpoint(text: str) -> Endpoint:
    """``MODEL=API_BASE[|API_BASE...][#KEY_ENV]`` as an :class:`Endpoint`; a bad one raises
    naming it (masked)."""
    model, sep, rest = text.strip().partition("=")
    if not sep or not model.strip() or not rest.strip():
        raise EndpointError(f"endpoint {masked_text(repr(text))}: expected {SYNTAX}, e.g. "
                            "'hosted_vllm/Qwen/Qwen2.5-7B-Instruct=http://127.0.0.1:8000/v1'")
    api_bases, hash_, key_env = rest.strip().partition("#")
    if hash_ and not key_env:
        raise EndpointError(f"endpoint {masked_text(repr(text))}: nothing after '#'; name the key's "
                            "environment variable")
    bases = tuple(b.strip() for b in api_bases.split("|"))
    if not all(bases):
        raise EndpointError(f"endpoint {masked_text(repr(text))}: an empty API base; separate "
                            "several with a single '|': MODEL=API_BASE|API_BASE")
    return Endpoint(model.strip(), bases, key_env or None)


def parse_endpoints(items: str | Iterable[str]) -> tuple[Endpoint, ...]:
    """Endpoints from a comma-separated string or a sequence of ``MODEL=API_BASE[|API_BASE...][#KEY_ENV]``.

    The same model (or pattern) named twice is an error: its servers are listed in one
    endpoint, separated by ``|``.
    """
    texts = items.split(",") if isinstance(items, str) else [t for item in items for t in str(item).split(",")]
    endpoints = tuple(parse_endpoint(t) for t in texts if t.strip())
    seen: dict[str, Endpoint] = {}
    for endpoint in endpoints:
        if endpoint.model in seen:
            raise EndpointError(f"model {endpoint.model!r} has two endpoints: "
                                f"{'|'.join(seen[endpoint.model].api_bases)} and {'|'.join(endpoint.api_bases)}; "
                                "list several servers of one model in one endpoint, separated by '|'")
        seen[endpoint.model] = endpoint
    return endpoints


def endpoint_for(endpoints: Sequence[Endpoint], model: str) -> Endpoint | None:
    """The endpoint named exactly after ``model``, else the first pattern matching it."""
    exact = [e for e in endpoints if not e.is_pattern and e.model == model]
    if exact:
        return exact[0]
    return next((e for e in endpoints if e.is_pattern and e.matches(model)), None)
