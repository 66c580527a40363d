"""Units of a paired design: one snapshot (session, position) of one target, scored under
both arms (real, filler); which units are complete, and each unit's gap."""
from __future__ import annotations

import pandas as pd


#: The two arms of the paired design (a frame may hold other arms beside them: they are no part of a unit).
PAIRED = ("real", "filler")


def complete_units(frame: pd.DataFrame, score: str = "score") -> tuple[pd.DataFrame, int]:
    """Keep (session, position) units with a valid score in both arms, those arms' rows
    only; count the rest."""
    frame = frame[frame["arm"].isin(PAIRED)]
    valid = frame[frame[score].notna()]
    arms = valid.groupby(["session", "position"])["arm"].nunique()
    keep = arms[arms == 2].index
    units = frame.set_index(["session", "position"]).index
    dropped = frame.groupby(["session", "position"]).ngroups - len(keep)
    return frame[units.isin(keep)], int(dropped)


def unit_gaps(frame: pd.DataFrame, by=("target", "session", "position", "step"),
              score: str = "score") -> pd.DataFrame:
    """Per unit (one snapshot of one session for one target): filler mean − real mean of
    the valid ``score`` values, with the number of valid cells per arm. Units lacking an
    arm get NaN."""
    valid = frame[frame[score].notna()]
    means = valid.pivot_table(index=list(by), columns="arm", values=score, aggfunc="mean")
    counts = valid.pivot_table(index=list(by), columns="arm", values=score, aggfunc="count")
    all_units = frame[list(by)].drop_duplicates().set_index(list(by)).index
    means = means.reindex(all_units)
    counts = counts.reindex(all_units).fillna(0)
    out = pd.DataFrame(index=all_units)
    for arm in PAIRED:
        out[f"{arm}_mean"] = means[arm] if arm in means.columns else float("nan")
        out[f"n_{arm}"] = counts[arm].astype(int) if arm in counts.columns else 0
    out["gap"] = out["filler_mean"] - out["real_mean"]
    return out.reset_index()
