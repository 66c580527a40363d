"""The stored result of one model call: a success or a failure, both as data.

A call that asked for token probabilities (``logprobs``) stores them beside its text in
``logprobs``: canonical JSON, one entry per generated token, ``[token, logprob,
[[top token, logprob], ...]]`` (natural logs, the most probable first). Older records and
calls that did not ask have ``None``.

A call whose request asked for a structured answer (``response_format`` ``json_object``
or ``json_schema``) is a *constrained* call (:attr:`CallRecord.constrained` names the
format; the request is stored in ``request_json``): the embedded model meets it by
grammar-constrained decoding, an OpenAI-compatible server or a hosted provider by its own
structured output. Each round counts its constrained calls
(:attr:`contextecho.engine.counts.Counts.constrained`), so the run log says which verdicts
were constrained.

A call answered with tool calls (the request offered ``tools``) stores them in
``tool_calls``: canonical JSON of a list ``[{"id", "name", "arguments"}]``, ``arguments``
the string exactly as the provider sent it (never re-parsed nor re-serialised: a malformed
argument string is data too); :attr:`CallRecord.calls` decodes it. Such an answer may have
no text (``response_text`` ``""``): it is an answer all the same, never an empty one.
Records and shards written before the column existed read as ``None`` (no calls).

A call of a model on several servers (an endpoint with several API bases,
:mod:`contextecho.engine.routing`) stores in ``servers`` which server each attempt went
to and how it ended: JSON ``[[api_base, outcome], ...]`` in attempt order, the outcome
``"ok"`` or the attempt's error type (the server ``null`` where it is not known: the
attempt reached none, or the engine's own timeout cut it).
Servers are transport: never part of the key. Other calls, and older records, have ``None``.

A reasoning model's reasoning (a provider's ``reasoning_content``, or a ``<think>`` block
opening the reply) is stored in ``reasoning``, apart from the answer, which alone is
``response_text`` (:mod:`contextecho.engine.reasoning`); ``completion_tokens`` count both.
Other calls, and older records, have ``None``.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any, Mapping

import pyarrow as pa

OK = "ok"
ERROR = "error"
EMPTY_RESPONSE = "EmptyResponse"  # the error type of an answer that is empty or whitespace only
NO_CONTENT = "NoContent"  # the error type of an answer without any content (a null message)
NOT_STORED = "NotStored"  # the error type of a request a stored-only round found no record of (never sent)


def token_logprobs_json(choice: Any) -> str | None:
    """A response choice's token log-probabilities (OpenAI's ``choice.logprobs.content``)
    as stored in :attr:`CallRecord.logprobs`; ``None`` when the provider sent none."""
    from .hashing import canonical_json

    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if not isinstance(logprobs, dict) \
        else logprobs.get("content")
    if not content:
        return None

    def field_of(entry: Any, name: str) -> Any:
        return entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)

    return canonical_json([
        [field_of(e, "token"), float(field_of(e, "logprob")),
         [[field_of(t, "token"), float(field_of(t, "logprob"))] for t in field_of(e, "top_logprobs") or ()]]
        for e in content])


def tool_calls_json(message: Any) -> str | None:
    """A response message's tool calls (OpenAI's ``message.tool_calls``: LiteLLM objects or
    plain dicts) as stored in :attr:`CallRecord.tool_calls`; ``None`` when it has none.
    ``arguments`` are kept as sent; only a raw dict's missing (``""``) or object arguments
    are read as LiteLLM's ``Function`` reads them (``json.dumps``)."""
    from .hashing import canonical_json

    def field_of(entry: Any, name: str) -> Any:
        return entry.get(name) if isinstance(entry, Mapping) else getattr(entry, name, None)

    calls = field_of(message, "tool_calls")
    if not calls:
        return None
    decoded = []
    for index, call in enumerate(calls):
        function = field_of(call, "function")
        name, arguments = field_of(function, "name"), field_of(function, "arguments")
        if isinstance(arguments, Mapping) or arguments is None:  # as LiteLLM's Function reads them
            arguments = "" if arguments is None else json.dumps(arguments)
        if not isinstance(name, str) or not isinstance(arguments, str):
            raise TypeError(f"tool call {index} has name {type(name).__name__} and arguments "
                            f"{type(arguments).__name__}; both must be strings")
        call_id = field_of(call, "id")
        decoded.append({"id": call_id if isinstance(call_id, str) else None, "name": name,
                        "arguments": arguments})
    return canonical_json(decoded)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def utc_stamp() -> str:
    """A compact UTC time for file names that sort by creation."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")


@dataclass(frozen=True)
class CallRecord:
    """What one call produced. A failed call is a record too, never a score."""

    key: str
    model: str
    request_json: str
    status: str  # OK or ERROR
    response_text: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    attempts: int = 1
    created_at: str = ""
    logprobs: str | None = None
    tool_calls: str | None = None  # canonical JSON [{"id", "name", "arguments"}] (module doc)
    servers: str | None = None  # JSON [[API base, "ok" or error type], ...] per attempt (module doc)
    reasoning: str | None = None  # the model's reasoning, never the answer (module doc)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The tool calls of this answer, ``[{"id", "name", "arguments"}]`` in the order the
        provider sent them (``arguments`` the raw string); ``[]`` when there are none."""
        return json.loads(self.tool_calls) if self.tool_calls else []

    @property
    def constrained(self) -> str | None:
        """The structured ``response_format`` type the request asked for (``json_object``,
        ``json_schema``), or ``None`` (free text)."""
        try:
            fmt = json.loads(self.request_json or "{}").get("params", {}).get("response_format")
        except ValueError:
            return None
        kind = fmt.get("type") if isinstance(fmt, Mapping) else None
        return kind if kind and kind != "text" else None

    @property
    def blank(self) -> bool:
        """A success whose answer is empty or whitespace only and holds no tool call (older
        caches stored these)."""
        return self.status == OK and not self.tool_calls and not (self.response_text or "").strip()

    def as_empty_response(self) -> "CallRecord":
        """This blank answer as the error it is: stored, counted, retried, never scored."""
        text = self.response_text or ""
        return dataclasses.replace(
            self, status=ERROR, response_text=None, error_type=EMPTY_RESPONSE,
            error_message=f"the model answered {len(text)} character(s), all whitespace "
                          f"(finish_reason {self.finish_reason!r}): {text[:40]!r}"
                          + (f" after {len(self.reasoning)} character(s) of reasoning" if self.reasoning else ""))

    def to_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "CallRecord":
        """From a stored row (Parquet or journal JSON); unknown columns are ignored."""
        return cls(**{name: row.get(name) for name in _FIELDS if name in row})


_FIELDS = tuple(f.name for f in dataclasses.fields(CallRecord))


SCHEMA = pa.schema([
    ("key", pa.string()),
    ("model", pa.string()),
    ("request_json", pa.string()),
    ("status", pa.string()),
    ("response_text", pa.string()),
    ("finish_reason", pa.string()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("latency_s", pa.float64()),
    ("error_type", pa.string()),
    ("error_message", pa.string()),
    ("attempts", pa.int64()),
    ("created_at", pa.string()),
    ("logprobs", pa.string()),
    ("tool_calls", pa.string()),
    ("servers", pa.string()),
    ("reasoning", pa.string()),
])
assert tuple(SCHEMA.names) == _FIELDS, "schema and record drifted"
