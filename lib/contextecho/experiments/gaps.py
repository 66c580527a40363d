"""The drift gap as an experiment reports it per group of judged rows: the estimate with its
interval (:func:`contextecho.stats.drift.drift_gap`, on the units complete in both arms), or
why it cannot be estimated."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..stats.drift import drift_gap
from ..stats.errors import StatsInputError
from ..stats.units import complete_units


def gap_row(frame: pd.DataFrame, **options) -> dict:
    """drift_gap as a dict, or the reason it cannot be estimated."""
    data, dropped = complete_units(frame, options.get("score", "score"))
    try:
        return {**drift_gap(data, **options).to_dict(), "units_dropped": dropped, "note": ""}
    except StatsInputError as exc:
        return {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "real_mean": np.nan, "filler_mean": np.nan,
                "n_clusters": 0, "n_invalid": np.nan, "units_dropped": dropped, "note": f"not estimable: {exc}"}
