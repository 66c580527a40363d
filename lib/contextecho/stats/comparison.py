"""A candidate release against its baseline on one endpoint, and the verdict a deployer acts on.

The data are *units* paired across the two models: the same session, position, item and
sample, asked of the baseline and of the candidate. A unit's value is the candidate's minus
the baseline's on the endpoint (for the drift gap: the candidate's filler − real score minus
the baseline's, judge points; for the S2 compliance gap: the same on compliance, in
percentage points). Above zero is worse for both endpoints: the candidate drifts more.

**The test.** Sessions are the independent units (positions, items and samples of one
session share its prefix): each session's mean unit difference ``d_s``, then the paired t
tests on the ``S`` session means (df ``S − 1``, :func:`.equivalence.tost_paired`, equal to
statsmodels' ``ttost_paired``) against the margin ``M`` (``±M``), with four one-sided
p-values::

    p_lower      H0: δ <= −M    (TOST, its lower test)
    p_upper      H0: δ >= +M    (TOST, its upper test)
    p_regressed  H0: δ <= +M    vs  δ > +M   (= 1 − p_upper)
    p_improved   H0: δ >= −M    vs  δ < −M   (= 1 − p_lower)

and ``p_equivalent = max(p_lower, p_upper)``. Over the plan's endpoints each family
(equivalence, regression, improvement) is Holm-adjusted (:func:`.multiple.holm`).

**The verdict** of an endpoint, at level ``alpha`` on the Holm-adjusted p-values:

* *regressed*: ``p_regressed <= alpha``: the candidate is worse by more than the margin
  (without Holm: the one-sided (1 − α) t bound, the lower end of the (1 − 2α) interval, lies
  above +M);
* *improved*: the mirror, ``p_improved <= alpha`` (the interval lies below −M);
* *equivalent*: ``p_equivalent <= alpha``: TOST rejects both nulls (the (1 − 2α) interval
  lies inside ``(−M, +M)``);
* *inconclusive*: none of these (the interval crosses a margin), or fewer than 2 sessions.

Where every session's mean difference is the same (no spread: the t statistics are
infinite, and two sessions alike would be decisive), the one-sided tests are the exact sign
test on the session means instead: ``p = 0.5^S`` for a one-sided alternative every session
mean satisfies, else 1 (five sessions alike are needed at ``alpha`` 0.05).

At ``alpha < 0.5`` at most one holds. **Overall**: *regressed* if any endpoint regressed;
else *inconclusive* if any is; else *improved* if any improved; else *equivalent*.

Beside the t interval each endpoint carries the 95% bootstrap interval of the mean unit
difference with sessions resampled (:func:`.bootstrap.bootstrap_mean`, clustered by session):
the interval shown with the estimate; the verdict reads the tests above.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._inputs import DEFAULT_RESAMPLES, DEFAULT_SEED
from .bootstrap import bootstrap_mean
from .equivalence import tost_paired
from .errors import StatsInputError
from .multiple import holm

EQUIVALENT, IMPROVED, REGRESSED, INCONCLUSIVE = "equivalent", "improved", "regressed", "inconclusive"
VERDICTS = (EQUIVALENT, IMPROVED, REGRESSED, INCONCLUSIVE)


@dataclass(frozen=True, kw_only=True)
class EndpointTest:
    """One endpoint's paired difference candidate − baseline and its one-sided tests
    (module doc), before the multiplicity correction. p-values are NaN with fewer than
    two sessions."""

    endpoint: str
    estimate: float
    ci_low: float
    ci_high: float
    tost_low: float
    tost_high: float
    margin: float
    alpha: float
    p_lower: float
    p_upper: float
    p_regressed: float
    p_improved: float
    n_units: int
    n_sessions: int
    note: str = ""

    @property
    def p_equivalent(self) -> float:
        return max(self.p_lower, self.p_upper)


@dataclass(frozen=True, kw_only=True)
class EndpointVerdict:
    """An endpoint's test with the Holm-adjusted p-values of its three families and its verdict."""

    test: EndpointTest
    p_equivalent_holm: float
    p_regressed_holm: float
    p_improved_holm: float
    verdict: str

    def row(self) -> dict:
        t = self.test
        return {"endpoint": t.endpoint, "estimate": t.estimate, "ci_low": t.ci_low, "ci_high": t.ci_high,
                "tost_low": t.tost_low, "tost_high": t.tost_high, "margin": t.margin, "alpha": t.alpha,
                "p_lower": t.p_lower, "p_upper": t.p_upper, "p_equivalent": t.p_equivalent,
                "p_regressed": t.p_regressed, "p_improved": t.p_improved,
                "p_equivalent_holm": self.p_equivalent_holm, "p_regressed_holm": self.p_regressed_holm,
                "p_improved_holm": self.p_improved_holm, "verdict": self.verdict, "n_units": t.n_units,
                "n_sessions": t.n_sessions, "note": t.note}


def unit_differences(baseline: pd.DataFrame, candidate: pd.DataFrame, *, value: str,
                     keys: Sequence[str] = ("session", "position", "item", "replicate"), arm: str = "arm",
                     arms: tuple[str, str] = ("filler", "real"), scale: float = 1.0) -> pd.DataFrame:
    """The paired units (module doc): one row per ``keys`` that both models answered in both
    ``arms`` with a finite ``value``; ``d`` = ``scale`` × ((candidate first arm − second) −
    (baseline first arm − second)), with ``keys`` kept. A unit missing anywhere is left out."""
    missing = [c for c in (*keys, arm, value) for f in (baseline, candidate) if c not in f.columns]
    if missing:
        raise StatsInputError(f"unit_differences: column(s) {sorted(set(missing))} missing")
    first, second = arms

    def gaps(frame: pd.DataFrame) -> pd.Series:
        kept = frame[frame[arm].isin(arms) & np.isfinite(frame[value].astype(float))]
        wide = kept.groupby([*keys, arm])[value].mean().unstack(arm).reindex(columns=list(arms))
        return (wide[first] - wide[second]).dropna()

    both = pd.concat({"baseline": gaps(baseline), "candidate": gaps(candidate)}, axis=1, join="inner")
    out = both.assign(d=scale * (both["candidate"] - both["baseline"])).reset_index()
    return out[[*keys, "baseline", "candidate", "d"]]


def endpoint_test(endpoint: str, differences, sessions, *, margin: float, alpha: float = 0.05,
                  n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> EndpointTest:
    """The tests of one endpoint on its unit ``differences`` (candidate − baseline), each in
    the session ``sessions`` names (module doc)."""
    if not margin > 0:
        raise ValueError(f"{endpoint}: the margin must be above 0, not {margin}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"{endpoint}: alpha must be in (0, 0.5), not {alpha}")
    units = pd.DataFrame({"d": np.asarray(differences, dtype=float), "session": np.asarray(sessions)})
    units = units[np.isfinite(units["d"])]
    if units.empty:
        raise StatsInputError(f"{endpoint}: no unit holds both models' values")
    by_session = units.groupby("session", sort=True)["d"].mean()
    if len(by_session) < 2:
        return untested(endpoint, margin=margin, alpha=alpha, estimate=float(units["d"].mean()), n_units=len(units),
                        n_sessions=len(by_session),
                        note="fewer than 2 sessions: no test (sessions are the independent units)")
    tost = tost_paired(by_session.to_numpy(), margin=margin, alpha=alpha)
    boot = bootstrap_mean(units["d"].to_numpy(), units["session"].to_numpy(), n_resamples=n_resamples, seed=seed)
    p = {"p_lower": tost.p_lower, "p_upper": tost.p_upper, "p_regressed": _complement(tost.p_upper),
         "p_improved": _complement(tost.p_lower)}
    note = ""
    if np.ptp(by_session.to_numpy()) == 0:  # no spread: the sign test (module doc)
        sign = 0.5 ** len(by_session)
        mean = float(by_session.iloc[0])
        p = {"p_lower": sign if mean > -margin else 1.0, "p_upper": sign if mean < margin else 1.0,
             "p_regressed": sign if mean > margin else 1.0, "p_improved": sign if mean < -margin else 1.0}
        note = f"every session's mean difference is {mean:g}: sign test, p = 0.5^{len(by_session)}"
    return EndpointTest(endpoint=endpoint, estimate=boot.estimate, ci_low=boot.ci_low, ci_high=boot.ci_high,
                        tost_low=tost.ci_low, tost_high=tost.ci_high, margin=margin, alpha=alpha, **p,
                        n_units=len(units), n_sessions=len(by_session), note=note)


def untested(endpoint: str, *, margin: float, alpha: float, note: str, estimate: float = float("nan"),
             n_units: int = 0, n_sessions: int = 0) -> EndpointTest:
    """An endpoint without a test (too few sessions, no paired unit: ``note`` says which):
    its p-values NaN, its verdict inconclusive."""
    nan = float("nan")
    return EndpointTest(endpoint=endpoint, estimate=estimate, ci_low=nan, ci_high=nan, tost_low=nan, tost_high=nan,
                        margin=margin, alpha=alpha, p_lower=nan, p_upper=nan, p_regressed=nan, p_improved=nan,
                        n_units=n_units, n_sessions=n_sessions, note=note)


def _complement(p: float) -> float:
    """The opposite one-sided p-value (for a spread of zero, where the point decides: 1 − 0 or 1 − 1)."""
    return float(min(1.0, max(0.0, 1.0 - p)))


def verdicts(tests: Sequence[EndpointTest], *, alpha: float = 0.05) -> tuple[EndpointVerdict, ...]:
    """Each endpoint's verdict, its three families Holm-adjusted over the testable endpoints
    (module doc); an endpoint without a test is inconclusive."""
    testable = [t for t in tests if np.isfinite(t.p_lower)]
    adjusted: dict[str, Mapping[str, float]] = {}
    for family, of in (("equivalent", lambda t: t.p_equivalent), ("regressed", lambda t: t.p_regressed),
                       ("improved", lambda t: t.p_improved)):
        if testable:
            result = holm([of(t) for t in testable], labels=[t.endpoint for t in testable], alpha=alpha)
            adjusted[family] = dict(zip(result.labels, result.p_adjusted))
        else:
            adjusted[family] = {}
    out = []
    nan = float("nan")
    for t in tests:
        p = {family: adjusted[family].get(t.endpoint, nan) for family in adjusted}
        if p["regressed"] <= alpha:
            verdict = REGRESSED
        elif p["improved"] <= alpha:
            verdict = IMPROVED
        elif p["equivalent"] <= alpha:
            verdict = EQUIVALENT
        else:
            verdict = INCONCLUSIVE
        out.append(EndpointVerdict(test=t, p_equivalent_holm=p["equivalent"], p_regressed_holm=p["regressed"],
                                   p_improved_holm=p["improved"], verdict=verdict))
    return tuple(out)


def overall(endpoint_verdicts: Sequence[str]) -> str:
    """The overall verdict of the endpoints' (module doc)."""
    found = set(endpoint_verdicts)
    if not found <= set(VERDICTS):
        raise ValueError(f"unknown verdict(s) {sorted(found - set(VERDICTS))}; known: {', '.join(VERDICTS)}")
    for verdict in (REGRESSED, INCONCLUSIVE, IMPROVED):
        if verdict in found:
            return verdict
    return EQUIVALENT if found else INCONCLUSIVE
