"""How concentrated a judge's valid verdicts are: its modal score and that score's share.

A judge that gives one score to almost everything cannot show a gap; the manuscript says
how often the modal score was given beside the estimates."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .errors import EmptyArmError
from .records import Record


@dataclass(frozen=True, kw_only=True)
class ScoreSpread(Record):
    """The modal score of ``n`` valid verdicts, its share (%) and how many distinct scores."""

    n: int
    modal_score: float
    modal_pct: float
    n_distinct: int


def score_spread(scores: pd.Series) -> ScoreSpread:
    """The modal score among the valid (non-NaN) ``scores`` (ties: the smallest), its share in
    percent and the number of distinct scores; :class:`EmptyArmError` when none is valid."""
    valid = scores.dropna()
    if valid.empty:
        raise EmptyArmError("the judge gave no valid verdict")
    counts = valid.value_counts().sort_index(kind="stable").sort_values(ascending=False, kind="stable")
    return ScoreSpread(n=int(len(valid)), modal_score=float(counts.index[0]),
                       modal_pct=100.0 * float(counts.iloc[0]) / len(valid), n_distinct=int(len(counts)))
