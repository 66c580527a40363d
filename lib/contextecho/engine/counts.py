"""What one round of model calls came to, under one set of names everywhere.

Every round of every run (the targets of a grid, its judges, a questionnaire's answers,
a recall stage) reports a :class:`Counts`: the engine's :class:`~contextecho.engine.calls.RoundResult`
counts itself (``result.counts()``), a design adds how many answers it could not read, and
the run log (:mod:`contextecho.engine.manifest`) adds them up by name. Failures are data:
a failed call is counted here, never silently a score and never silently dropped.

Beside what the calls came to, what they cost in transport (:data:`TRAFFIC`):
``attempts`` made and ``http_requests`` sent by the calls computed in this round (a
retried call is one call and several attempts). These two are not part of a ``Counts``'
equality nor of :meth:`Counts.as_dict` (:meth:`Counts.traffic` gives them): the same round
comes to the same counts however many retries its calls needed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields


@dataclass(frozen=True)
class Counts:
    """The calls of one round: ``calls`` = ``cached`` + ``computed``; ``failed`` calls
    returned an error record (a stored permanent error answered from the cache included);
    ``invalid`` answers came back but could not be read (no option letter, no score);
    ``constrained`` calls asked for a structured answer (a JSON verdict:
    :attr:`~contextecho.engine.record.CallRecord.constrained`). ``attempts``: the attempts
    the ``computed`` calls made (retries included); ``http_requests``: the HTTP requests
    they sent, counted as they were sent (one per attempt of a call to a server, the
    provider clients' own retries being off; none for an in-process model or a replay)."""

    calls: int = 0
    cached: int = 0
    computed: int = 0
    failed: int = 0
    invalid: int = 0
    constrained: int = 0
    attempts: int = field(default=0, compare=False)
    http_requests: int = field(default=0, compare=False)
    prompt_tokens: int = field(default=0, compare=False)
    completion_tokens: int = field(default=0, compare=False)
    cost_usd: float = field(default=0.0, compare=False)

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def as_dict(self) -> dict[str, int]:
        """The call counts (``calls`` … ``constrained``), without the traffic."""
        return {k: int(v) for k, v in asdict(self).items() if k not in TRAFFIC + USAGE}

    def traffic(self) -> dict[str, int]:
        """``{"attempts": …, "http_requests": …}``."""
        return {k: int(getattr(self, k)) for k in TRAFFIC}

    def usage(self) -> dict[str, float]:
        """What the ``computed`` calls used: ``prompt_tokens``, ``completion_tokens`` (as the
        provider reported them) and ``cost_usd`` (LiteLLM's cost of each response; 0 where
        it has no price): what a plan is compared with."""
        return {"prompt_tokens": int(self.prompt_tokens), "completion_tokens": int(self.completion_tokens),
                "cost_usd": float(self.cost_usd)}

    def line(self, name: str) -> str:
        """``[name] calls=…, cached=…, computed=…, failed=…, invalid=…, constrained=…,
        attempts=…, http_requests=…``."""
        return f"[{name}] " + ", ".join(f"{k}={v}" for k, v in {**self.as_dict(), **self.traffic()}.items())


#: The transport fields of :class:`Counts`.
TRAFFIC = ("attempts", "http_requests")
#: The usage fields of :class:`Counts` (not part of its equality either).
USAGE = ("prompt_tokens", "completion_tokens", "cost_usd")
