"""Response-length ratios against the filler arm, and the conditional-on-compliance ratio.

Seed §2.4 / Appendix E: the stressor surface reports the response-length (verbosity)
ratio of an arm against the filler arm, paired by cell coordinates, and — to show long
responses are not only non-compliant rambling — the same ratio restricted to pairs where
both responses pass the compliance test (``is_no_preamble`` for S2).

Input: the frame of :func:`run_cells` (one row per scored cell). Pairs are formed on
:data:`PAIR_ON`; unmatched or failed cells are left out of the pairs (and counted in
``frame.attrs["unpaired"]``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

PAIR_ON = ("experiment", "target", "session", "position", "intervention", "item", "replicate")


def length_ratios(frame: pd.DataFrame, reference: str = "filler") -> pd.DataFrame:
    """One row per (arm cell, reference cell) pair: ``ratio`` = arm chars / reference chars."""
    cells = frame.drop_duplicates("key")
    cells = cells[cells["status"] == "ok"]
    ref = cells[cells["arm"] == reference]
    other = cells[cells["arm"] != reference]
    cols = list(PAIR_ON) + ["response_chars", "passed"]
    pairs = other[cols + ["arm"]].merge(ref[cols], on=list(PAIR_ON), suffixes=("", "_ref"))
    pairs["ratio"] = pairs["response_chars"] / pairs["response_chars_ref"].where(
        pairs["response_chars_ref"] > 0)
    pairs["log_ratio"] = np.log(pairs["ratio"])
    pairs["both_passed"] = (pairs["passed"] == True) & (pairs["passed_ref"] == True)  # noqa: E712
    pairs.attrs["unpaired"] = int(len(other) - len(pairs))
    return pairs


def summarize_ratios(pairs: pd.DataFrame, by=("target", "arm")) -> pd.DataFrame:
    """Median ratio overall and conditional on both arms passing, with pair counts."""
    by = list(by)
    g = pairs.groupby(by)
    out = pd.DataFrame({"n_pairs": g.size(), "median_ratio": g["ratio"].median()})
    compliant = pairs[pairs["both_passed"]].groupby(by)
    out["n_both_passed"] = compliant.size().reindex(out.index, fill_value=0)
    out["median_ratio_both_passed"] = compliant["ratio"].median().reindex(out.index)
    return out.reset_index()
