"""Named errors for inputs the statistics cannot honestly summarize.

Every degenerate case (too few clusters, an arm with no valid cells, no variance,
invalid verdicts where the caller asked for none) raises one of these instead of
returning a NaN that could slip into the manuscript. All derive from
:class:`StatsInputError`, itself a :class:`ValueError`, so callers can catch one name.
"""
from __future__ import annotations


class StatsInputError(ValueError):
    """Base class: the data cannot support the requested statistic."""


class MissingColumnError(StatsInputError, KeyError):
    """A column the analysis needs is not in the frame."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EmptyArmError(StatsInputError):
    """An arm (or one arm of a unit, or one side of a pair) has no valid cells."""


class TooFewClustersError(StatsInputError):
    """Resampling or a between-group variance needs at least two clusters/groups."""


class InvalidScoreError(StatsInputError):
    """NaN (invalid or unparseable verdict) found where ``invalid='raise'``."""


class DegenerateDataError(StatsInputError):
    """The statistic is undefined on these data (no variance, all-zero pairs, ...)."""
