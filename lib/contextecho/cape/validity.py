"""Construct validity (CAPE Table 5, App. B Experiment C): does each metric tell the
context-free and context-dependent settings apart?

The *units* are the finest at which both settings are measured: a sensitivity factor's run
(its variant triple, one row of :func:`~.analyses.factor_consistency` per setting), paired
by (factor, run) across the two settings. CAPE pairs per model and factor; with one target
its factor runs are the units. For each metric (TAR, ED, TC, OC), over the units where both
settings have it, with ``d = context-dependent − context-free``:

- paired t-test: ``scipy.stats.ttest_rel(cd, cf)``, two-sided;
- Wilcoxon signed-rank: ``scipy.stats.wilcoxon`` of ``d`` (two-sided, zero differences
  dropped, ``zero_method="wilcox"``: :func:`contextecho.stats.wilcoxon_test`);
- one-way ANOVA: ``scipy.stats.f_oneway(cf, cd)``, the two settings as independent groups.
  With two groups F = t² of Student's unpaired t-test, so its p is that test's (CAPE's
  Table 5 prints the same p for its t-test and its ANOVA in every row, which only an
  unpaired t-test gives in general: its t-test was most likely unpaired);
- Cohen's d_z, the paired form: ``mean(d) / sd(d)``, ``sd`` with ``ddof=1``, so that the
  paired t statistic is ``d_z · √n``; positive where the metric is higher context-dependent.

A statistic that is undefined is NaN with the reason in the row's note, never a crash:
fewer than two units (every statistic); every difference the same (the t-test and d_z: no
standard deviation); every difference zero (Wilcoxon too); the metric constant within each
setting (the ANOVA: no variance within the groups).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..stats.errors import DegenerateDataError
from ..stats.permutation import wilcoxon_test
from .administer import CONTEXT_DEPENDENT, CONTEXT_FREE
from .analyses import METRICS

#: What identifies a unit measured in both settings (a factor's run: one variant triple).
UNITS = ("factor", "run")
#: The statistics of one metric, each a column of :func:`construct_validity`, and how a note names it.
TESTS = {"t_p": "the t-test", "wilcoxon_p": "the Wilcoxon test", "anova_p": "the ANOVA", "d": "Cohen's d_z"}
#: Why every statistic is undefined with fewer than two units (format with n).
TOO_FEW = "only {n} factor {runs} the metric in both settings, and a test needs two"
#: Differences (and spreads) within this of zero are zero: float noise of metrics that are fractions.
TOLERANCE = 1e-12


def paired_statistics(base, other) -> tuple[dict[str, float], dict[str, str]]:
    """The four statistics of the paired values ``base`` (context-free) and ``other``
    (context-dependent), in the order of the units (module doc): ``t_p``, ``wilcoxon_p``,
    ``anova_p``, ``d``; and why each undefined one is (``{statistic: reason}``)."""
    cf, cd = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    if cf.shape != cd.shape or cf.ndim != 1:
        raise ValueError(f"need two paired 1-d series of the same length, got shapes {cf.shape} and {cd.shape}")
    if np.isnan(cf).any() or np.isnan(cd).any():
        raise ValueError("a paired value is missing: leave out the units without both values first")
    n = len(cf)
    values = dict.fromkeys(TESTS, float("nan"))
    if n < 2:
        return values, dict.fromkeys(TESTS, TOO_FEW.format(n=n, runs="run has" if n == 1 else "runs have"))
    why: dict[str, str] = {}
    d = cd - cf
    d[np.isclose(d, 0, rtol=0, atol=TOLERANCE)] = 0.0  # 0.3 - 0.2 - 0.1 is no difference
    if np.all(d == 0):
        why.update(dict.fromkeys(("t_p", "wilcoxon_p", "d"), f"the metric is the same in both settings in all {n} "
                                                             "factor runs"))
    elif np.allclose(d, d[0], rtol=0, atol=TOLERANCE):
        why.update(dict.fromkeys(("t_p", "d"), f"the difference is the same in all {n} factor runs, so its standard "
                                               "deviation is zero"))
    if "t_p" not in why:
        values["t_p"] = float(stats.ttest_rel(cd, cf).pvalue)
        values["d"] = float(d.mean() / d.std(ddof=1))
    if "wilcoxon_p" not in why:
        try:
            values["wilcoxon_p"] = wilcoxon_test(d).p_value
        except DegenerateDataError:  # every difference zero: said above already
            why["wilcoxon_p"] = f"the metric is the same in both settings in all {n} factor runs"
    if all(np.allclose(x, x[0], rtol=0, atol=TOLERANCE) for x in (cf, cd)):
        why["anova_p"] = "the metric does not vary within either setting"
    else:
        values["anova_p"] = float(stats.f_oneway(cf, cd).pvalue)
    return values, why


def note(why: dict[str, str]) -> str:
    """The row note of the undefined statistics (``""``: none), each reason named once:
    ``not estimable: the t-test and Cohen's d_z as <reason>; the ANOVA as <reason>``."""
    if not why:
        return ""
    by_reason: dict[str, list[str]] = {}
    for statistic in TESTS:
        if statistic in why:
            by_reason.setdefault(why[statistic], []).append(TESTS[statistic])
    if len(by_reason) == 1 and len(why) == len(TESTS):
        return f"not estimable: {next(iter(by_reason))}"
    parts = [(", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]) + f" as {reason}"
             for reason, names in by_reason.items()]
    return "not estimable: " + "; ".join(parts)


def paired_units(consistency: pd.DataFrame, metric: str, *, base: str = CONTEXT_FREE,
                 other: str = CONTEXT_DEPENDENT) -> pd.DataFrame:
    """The units (:data:`UNITS`) where both settings have ``metric``, in the order of the
    rows: columns factor, run, ``base``, ``other``."""
    asked = consistency[consistency["setting"].isin([base, other])] if len(consistency) else consistency
    if not len(asked):
        return pd.DataFrame(columns=[*UNITS, base, other])
    wide = asked.pivot_table(index=list(UNITS), columns="setting", values=metric, aggfunc="first", sort=False)
    for setting in (base, other):
        if setting not in wide.columns:
            wide[setting] = np.nan
    return wide[[base, other]].dropna().reset_index().rename_axis(columns=None)


def construct_validity(consistency: pd.DataFrame, *, base: str = CONTEXT_FREE,
                       other: str = CONTEXT_DEPENDENT) -> pd.DataFrame:
    """Table 5: one row per metric (TAR, ED, TC, OC) of ``consistency`` (the rows of
    :func:`~.analyses.factor_consistency`): metric, n (units), the two settings' means
    (``cf``, ``cd``), ``t_p``, ``wilcoxon_p``, ``anova_p``, ``d`` (module doc) and a note
    naming every undefined statistic and why; ``attrs["why"]``: metric -> {statistic: reason}
    of the undefined ones (a manuscript value's reason)."""
    rows, reasons = [], {}
    for metric in METRICS:
        units = paired_units(consistency, metric, base=base, other=other) if metric in consistency else \
            pd.DataFrame(columns=[*UNITS, base, other])
        values, why = paired_statistics(units[base].to_numpy(dtype=float), units[other].to_numpy(dtype=float))
        rows.append({"metric": metric.upper(), "n": len(units),
                     "cf": float(units[base].mean()) if len(units) else float("nan"),
                     "cd": float(units[other].mean()) if len(units) else float("nan"), **values, "note": note(why)})
        reasons[metric.upper()] = why
    frame = pd.DataFrame(rows)
    frame.attrs["why"] = reasons
    return frame
