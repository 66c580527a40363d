"""Shared input handling: seeds, columns, invalid verdicts, finite arrays."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .errors import InvalidScoreError, MissingColumnError, StatsInputError

#: How NaN scores (invalid or unparseable verdicts) are treated.
#: ``"drop"`` removes them and reports the count (``n_invalid``), ``"zero"`` scores
#: them as 0 (intention-to-treat), ``"raise"`` raises :class:`InvalidScoreError`.
INVALID_POLICIES = ("drop", "zero", "raise")

DEFAULT_SEED = 42
DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95


def as_generator(seed: int | np.random.Generator) -> tuple[np.random.Generator, int | None]:
    """Return ``(generator, seed_to_record)``; an int becomes ``default_rng(seed)``.

    ``None`` is refused: unseeded randomness would make a manuscript number
    irreproducible.
    """
    if isinstance(seed, np.random.Generator):
        return seed, None
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed)), int(seed)
    raise TypeError(f"seed must be an int or numpy.random.Generator, not {seed!r}")


def as_columns(cols: str | Sequence[str] | None) -> tuple[str, ...]:
    if cols is None:
        return ()
    if isinstance(cols, str):
        return (cols,)
    return tuple(cols)


def require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise MissingColumnError(
            f"{what}: column(s) {missing} not in frame (has {list(frame.columns)})")


def handle_invalid(frame: pd.DataFrame, column: str, policy: str) -> tuple[pd.DataFrame, int]:
    """Apply the invalid-verdict policy to ``frame[column]``; return (frame, n_invalid)."""
    if policy not in INVALID_POLICIES:
        raise ValueError(f"invalid must be one of {INVALID_POLICIES}, not {policy!r}")
    values = pd.to_numeric(frame[column], errors="raise").astype(float)
    if np.isinf(values).any():
        raise InvalidScoreError(f"column {column!r} contains infinite values")
    bad = values.isna()
    n_invalid = int(bad.sum())
    if n_invalid == 0:
        return frame.assign(**{column: values}), 0
    if policy == "raise":
        raise InvalidScoreError(
            f"{n_invalid} NaN value(s) in {column!r} (invalid or unparseable verdicts); "
            "choose invalid='drop' (complete-case) or invalid='zero' (intention-to-treat)")
    if policy == "drop":
        return frame.loc[~bad].assign(**{column: values[~bad]}), n_invalid
    return frame.assign(**{column: values.fillna(0.0)}), n_invalid


def finite_1d(values, name: str) -> np.ndarray:
    """A 1-D float array with no NaN/inf, or :class:`InvalidScoreError`."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise StatsInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidScoreError(
            f"{name} contains {int((~np.isfinite(arr)).sum())} NaN/inf value(s); decide "
            "complete-case or intention-to-treat before testing (see attrition.py)")
    return arr


def codes(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Integer codes (0..k-1, in sorted key order) of the row combinations of
    ``columns``, and the frame of the k distinct combinations in code order."""
    columns = list(columns)
    if not columns:
        return np.zeros(len(frame), dtype=np.int64), pd.DataFrame(index=[0])
    grouped = frame.groupby(columns, sort=True, dropna=False)
    code = grouped.ngroup().to_numpy(dtype=np.int64)
    keys = grouped.size().reset_index()[columns]
    return code, keys
