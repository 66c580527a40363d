"""Attrition-aware paired contrasts: complete-case and intention-to-treat, both reported.

A unit (a cutpoint, a session) is *attempted* in both arms. A cell may be invalid
(NaN: unparseable verdict, prose instead of a tool call) or missing (no row: an
omitted or failed call). Two analyses of the same contrast ``a − b``:

* **complete-case** — units where both arms have at least one valid cell; arm value
  = mean of its valid cells.
* **intention-to-treat** — every attempted unit; invalid and missing cells are scored
  ``itt_fill`` (0 by default, the paper's "unparseable or omitted call scored as 0"),
  arm value = mean of its (filled) cells.

Both are :class:`PairedContrast` records (estimate, bootstrap CI over units, paired
sign-flip or Wilcoxon p-value) inside one :class:`AttritionReport` with the counts.
The attempted units are ``units`` when given (a list of keys, or a frame of the unit
columns), else every unit that appears in ``cells`` in any arm.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from ._inputs import DEFAULT_SEED, as_columns, as_generator, require_columns
from .errors import EmptyArmError, StatsInputError
from .paired import paired_contrast
from .records import AttritionReport


def _attempted(cells: pd.DataFrame, keys: list[str], units) -> pd.MultiIndex:
    if units is None:
        frame = cells[keys].drop_duplicates()
    elif isinstance(units, pd.DataFrame):
        require_columns(units, keys, "attrition_contrast units")
        frame = units[keys].drop_duplicates()
    else:
        frame = pd.DataFrame(list(units), columns=keys).drop_duplicates()
    return pd.MultiIndex.from_frame(frame.sort_values(keys))


def attrition_contrast(cells: pd.DataFrame, *, arms: tuple[str, str], value: str = "score",
                       arm: str = "arm", unit: Sequence[str] = ("position",), units=None,
                       itt_fill: float = 0.0, seed: int | np.random.Generator = DEFAULT_SEED,
                       **options) -> AttritionReport:
    """Complete-case and intention-to-treat versions of the paired contrast
    ``arms[0] − arms[1]`` (module docstring); ``options`` go to :func:`paired_contrast`."""
    keys = list(as_columns(unit))
    require_columns(cells, [value, arm, *keys], "attrition_contrast")
    if len(arms) != 2 or arms[0] == arms[1]:
        raise ValueError("arms must be two different arm labels")
    frame = cells.loc[cells[arm].isin(arms), [*keys, arm, value]].copy()
    frame[value] = pd.to_numeric(frame[value], errors="raise").astype(float)
    attempted = _attempted(cells, keys, units)
    frame = frame.loc[pd.MultiIndex.from_frame(frame[keys]).isin(attempted)]
    if len(attempted) == 0:
        raise EmptyArmError("no attempted units")
    present = frame.groupby([*keys, arm]).size().unstack(arm).reindex(
        index=attempted, columns=list(arms))
    invalid = frame[value].isna()
    n_invalid = {a: int((invalid & (frame[arm] == a)).sum()) for a in arms}
    n_missing = {a: int(present[a].isna().sum()) for a in arms}

    valid = frame.loc[~invalid].groupby([*keys, arm])[value].mean().unstack(arm)
    valid = valid.reindex(index=attempted, columns=list(arms))
    complete = valid.dropna()
    filled = frame.assign(**{value: frame[value].fillna(itt_fill)})
    itt = filled.groupby([*keys, arm])[value].mean().unstack(arm)
    itt = itt.reindex(index=attempted, columns=list(arms)).fillna(itt_fill)

    rng, recorded = as_generator(seed)
    if complete.empty:
        raise EmptyArmError("no unit has valid cells in both arms (complete-case undefined)")
    if len(complete) < 2:
        raise StatsInputError("complete-case analysis needs at least 2 complete units")
    cc = paired_contrast(complete[arms[0]], complete[arms[1]], seed=rng,
                         n_invalid=sum(n_invalid.values()), **options)
    tt = paired_contrast(itt[arms[0]], itt[arms[1]], seed=rng,
                         n_invalid=sum(n_invalid.values()), **options)
    cc, tt = replace(cc, seed=recorded), replace(tt, seed=recorded)  # one seed for both
    return AttritionReport(
        complete_case=cc, intention_to_treat=tt, n_units=len(attempted),
        n_complete=len(complete), n_invalid_a=n_invalid[arms[0]],
        n_invalid_b=n_invalid[arms[1]], n_missing_a=n_missing[arms[0]],
        n_missing_b=n_missing[arms[1]], itt_fill=float(itt_fill))

