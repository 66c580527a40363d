"""Which judge scores an analysis reads (the score kind: discrete verdicts or expected scores;
the primary judge's rows and the headline battery's; whether the harness's failed verdicts
count), and the drift gap on them as a table row (:func:`gap_row`)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..echo import probes
from ..echo.reference.protocol import ReferenceProtocol
from ..echo.runner import judge_model
from ..stats.drift import drift_gap
from ..stats.errors import StatsInputError
from ..stats.units import complete_units

# The judge score an analysis runs on -> its column in run_cells' frame. Both are always
# read (distributions where the judge's provider exposes token probabilities), so every
# notebook can report the other beside the chosen one.
SCORES = {"discrete": "score", "expected": "expected_score"}


def score_column(score: str) -> str:
    """The frame column of judge score ``score`` (discrete | expected)."""
    try:
        return SCORES[score]
    except KeyError:
        raise ValueError(f"unknown score {score!r}; choose from {', '.join(SCORES)}") from None


def first_judge_rows(frame: pd.DataFrame, judge: str) -> pd.DataFrame:
    """The rows the primary estimates read: ``judge``'s verdicts (``self``: each target's
    own), and the results a resumed run kept (``resumed``), which stand for their cells as
    the judge that stored them judged them (:func:`.spine.run_grid`)."""
    if not len(frame):
        return frame
    judged = frame["judge_model"] == frame["target"].map(lambda t: judge_model(judge, t))
    if "resumed" in frame:
        judged |= frame["resumed"].fillna(False).astype(bool)
    return frame[judged]


def headline_ids(name: str) -> set[str]:
    """The probe ids of the headline battery (or the one probe named)."""
    return {q.id for q in probes.battery(name)} if name in probes.BATTERIES else {name}


def headline_rows(frame: pd.DataFrame, judge: str, headline: str) -> pd.DataFrame:
    """The rows a headline estimate reads: the ``headline`` battery's probes, ``judge``'s
    verdicts or kept by a resumed run (:func:`first_judge_rows`; every judged probe when the
    battery was not asked)."""
    judged = first_judge_rows(frame[frame["item_kind"] == "probe"], judge)
    chosen = judged[judged["item"].isin(headline_ids(headline))]
    return chosen if len(chosen) else judged


def failure_column(failures: str) -> str:
    """The score column a harness statistic reads: ``score`` (valid verdicts only) or, with
    ``failures="in"``, the score the harness stored, its −1 included (the column the reference
    protocol names, :attr:`~contextecho.echo.protocol.Protocol.stored_score`)."""
    if failures == "out":
        return "score"
    if failures == "in":
        return ReferenceProtocol.stored_score
    raise ValueError(f"failures must be 'out' or 'in', got {failures!r}")


def gap_row(frame: pd.DataFrame, **options) -> dict:
    """drift_gap as a dict, or the reason it cannot be estimated."""
    data, dropped = complete_units(frame, options.get("score", "score"))
    try:
        return {**drift_gap(data, **options).to_dict(), "units_dropped": dropped, "note": ""}
    except StatsInputError as exc:
        return {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "real_mean": np.nan, "filler_mean": np.nan,
                "n_clusters": 0, "n_invalid": np.nan, "units_dropped": dropped, "note": f"not estimable: {exc}"}
