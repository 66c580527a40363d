"""What one batch of model calls came to, under one set of names everywhere.

Every batch of every run (the targets of a grid, its judges, a questionnaire's answers,
a recall stage) reports a :class:`Counts`: the engine's :class:`~contextecho.engine.calls.BatchResult`
counts itself (``result.counts()``), a design adds how many answers it could not read, and
the run log (:mod:`contextecho.engine.manifest`) keeps one per batch. Failures are data:
a failed call is counted here, never silently a score and never silently dropped.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class Counts:
    """The calls of one batch: ``calls`` = ``cached`` + ``computed``; ``failed`` calls
    returned an error record (a stored permanent error answered from the cache included);
    ``invalid`` answers came back but could not be read (no option letter, no score);
    ``constrained`` calls asked for a structured answer (a JSON verdict:
    :attr:`~contextecho.engine.record.CallRecord.constrained`)."""

    calls: int = 0
    cached: int = 0
    computed: int = 0
    failed: int = 0
    invalid: int = 0
    constrained: int = 0

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def as_dict(self) -> dict[str, int]:
        return {k: int(v) for k, v in asdict(self).items()}

    def line(self, batch: str) -> str:
        """``[batch] calls=…, cached=…, computed=…, failed=…, invalid=…``."""
        return f"[{batch}] " + ", ".join(f"{k}={v}" for k, v in self.as_dict().items())
