"""From answer rows to scoring trajectories and OCEAN profiles (CAPE §2).

A run's trajectory T = [s_1 … s_m] is its item scores in asking order (NaN where the
answer was invalid). A trait score S_d is the mean of the run's valid item scores for
trait d; ``n_<d>`` counts the items behind it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .inventory import TRAITS


def trajectory_matrix(answers: pd.DataFrame, run_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(n_runs, m) scores of ``run_ids``, items aligned by index in the first run's order.

    Also returns that item order. Runs must have asked the same items.
    """
    first = answers[answers["run_id"] == run_ids[0]].sort_values("position")
    order = first["item"].to_numpy()
    rows = []
    for run_id in run_ids:
        run = answers[answers["run_id"] == run_id].set_index("item")
        if set(run.index) != set(order):
            raise ValueError(f"run {run_id!r} did not ask the same items as {run_ids[0]!r}")
        rows.append(run.loc[order, "score"].to_numpy(dtype=float))
    return np.vstack(rows), order


def ocean_profiles(answers: pd.DataFrame, by: Sequence[str] = ("run_id",)) -> pd.DataFrame:
    """One row per group of ``by``: trait means O C E A N and the valid items behind each."""
    by = list(by)
    valid = answers.dropna(subset=["score"])
    means = valid.pivot_table(index=by, columns="trait", values="score", aggfunc="mean")
    counts = answers.assign(ok=answers["score"].notna()).pivot_table(
        index=by, columns="trait", values="ok", aggfunc="sum")
    out = pd.DataFrame(index=counts.index)
    for t in TRAITS:
        out[t] = means[t] if t in means else np.nan
    for t in TRAITS:
        out[f"n_{t}"] = counts[t].astype(int) if t in counts else 0
    return out.reset_index()


def ocean_matrix(answers: pd.DataFrame, run_ids: Sequence[str]) -> np.ndarray:
    """(n_runs, 5) OCEAN vectors of ``run_ids``, in that order."""
    profiles = ocean_profiles(answers[answers["run_id"].isin(run_ids)]).set_index("run_id")
    return profiles.loc[list(run_ids), list(TRAITS)].to_numpy(dtype=float)


def profile_shift(answers: pd.DataFrame, *, base: str = "context_free", other: str = "context_dependent") -> pd.DataFrame:
    """The OCEAN profile in each setting and its shift (CAPE Fig. 3b): one row per trait, the
    mean item score context-free (``cf``) and context-dependent (``cd``) over the answers to the
    same item in the same run valid in both settings (so that the shift is not which answers
    parsed), ``shift`` = cd − cf, ``n`` those answer pairs, and a note where a trait has none."""
    keys = ["run_id", "item"]
    a = answers[answers["setting"] == base].set_index(keys)[["trait", "score"]]
    b = answers[answers["setting"] == other].set_index(keys)["score"].rename("other")
    both = a.join(b, how="inner").dropna(subset=["score", "other"])
    rows = []
    for trait in TRAITS:
        scores = both[both["trait"] == trait]
        cf, cd = (float(scores[c].mean()) if len(scores) else float("nan") for c in ("score", "other"))
        rows.append({"trait": trait, "cf": cf, "cd": cd, "shift": cd - cf, "n": len(scores),
                     "note": "" if len(scores) else
                     "not estimable: no item of this trait was answered validly in both settings"})
    return pd.DataFrame(rows)
