"""How the judges' score distributions were read (the expected scores Σ s·p(s) rest on them):
per judge, the distributions read, invalid, failed and discrete, the flat ones, and how
often the arg-max names the parsed verdict; the primary judge's numbers for the manuscript."""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..echo.runner import distribution_summary
from ..engine.token_distribution import FLAT_ENTROPY
from ..paper.declared import Declared
from ..paper.formats import COUNT, MODEL, PERCENT, not_estimable
from ..paper.tables import Column, Table
from ..paper.variables import Variable

#: The table and the variables of :func:`distribution_report`.
DISTRIBUTIONS = Declared(
    variables=(Variable("argmax_agree_pct", PERCENT), Variable("n_flat", COUNT),
               Variable("n_distribution_ok", COUNT), Variable("n_distribution_invalid", COUNT),
               Variable("n_distribution_error", COUNT), Variable("n_distribution_discrete", COUNT),
               Variable("flat_entropy_pct", PERCENT)),
    tables=(Table("judge_distributions", "How the judges' score distributions were read", (
        Column("Judge", MODEL, "judge_model"), Column("Read", COUNT, "n_ok"), Column("Invalid", COUNT, "n_invalid"),
        Column("Failed calls", COUNT, "n_error"), Column("Discrete", COUNT, "n_discrete"),
        Column("Flat", COUNT, "n_flat"), Column("Arg-max = verdict", PERCENT, "argmax_agree_pct"))),))


def distribution_report(judged: pd.DataFrame, primary: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per judge, how its score distributions were read (:func:`distribution_summary`:
    ok / invalid / error / discrete counts, flat ones, arg-max == parsed verdict), and
    the ``primary`` judge's numbers as manuscript variables (raw; one that could not be
    estimated says why)."""
    table = distribution_summary(judged)
    if len(table):  # a judge without an arg-max to compare says why (its table row's footnote)
        table["note"] = ["" if pd.notna(a) else "no cell has both a valid verdict and a read distribution"
                         + (" (the provider returns no token probabilities)" if d else "")
                         for a, d in zip(table["argmax_agree_pct"], table["n_discrete"])]
    chosen = table[table["judge_model"] == primary] if len(table) else table
    if chosen.empty:
        return table, {"argmax_agree_pct": not_estimable(f"no distribution of {primary} was read"), "n_flat": 0,
                       "n_distribution_ok": 0, "n_distribution_invalid": 0, "n_distribution_error": 0,
                       "n_distribution_discrete": 0, "flat_entropy_pct": 100 * FLAT_ENTROPY}
    first = chosen.iloc[0]
    agree = first["argmax_agree_pct"]
    return table, {"argmax_agree_pct": not_estimable(f"no cell has both a valid verdict of {primary} and a read "
                                                     "distribution") if pd.isna(agree) else float(agree),
                   "n_flat": first["n_flat"], "n_distribution_ok": first["n_ok"],
                   "n_distribution_invalid": first["n_invalid"], "n_distribution_error": first["n_error"],
                   "n_distribution_discrete": first["n_discrete"], "flat_entropy_pct": 100 * FLAT_ENTROPY}
