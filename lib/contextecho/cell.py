"""The stored result of one model call: a success or a failure, both as data."""
from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass
from typing import Any, Mapping

import pyarrow as pa

OK = "ok"
ERROR = "error"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def utc_stamp() -> str:
    """A compact UTC time for file names that sort by creation."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")


@dataclass(frozen=True)
class CellRecord:
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

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "CellRecord":
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: (None if _is_missing(v) else v) for k, v in row.items() if k in names}
        return cls(**values)


def _is_missing(value: Any) -> bool:
    # pandas/pyarrow give NaN for missing floats; a real NaN is never a stored value.
    return isinstance(value, float) and value != value


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
])
assert SCHEMA.names == [f.name for f in dataclasses.fields(CellRecord)], "schema and record drifted"
