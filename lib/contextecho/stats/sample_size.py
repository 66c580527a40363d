"""How many sessions a release comparison needs for a decisive verdict at its margin.

**Model** (the comparison's units, :mod:`.comparison`): a unit difference in session ``s`` is
``δ + b_s + e``, with ``b_s`` of variance ``σ²_between`` (sessions differ) and ``e`` of
variance ``σ²_within`` (positions, items and samples differ within a session), as
:func:`.variance.variance_decomposition` estimates them from a pilot. With ``m`` units a
session (positions × items × samples) a session's mean has variance
``V = σ²_between + σ²_within / m`` and the mean over ``S`` sessions has
``SE² = V / S``.

**Decisive** at margin ``M``, level ``α`` over ``K`` endpoints (Holm's first step, the
strictest, is ``α / K``) and power ``1 − β`` (normal approximation to the t tests):

* a candidate *equal* to its baseline (``δ = 0``) is declared equivalent with power
  ``1 − β``: ``M / SE >= z(1 − α/K) + z(1 − β/2)``;
* which also makes a candidate worse by twice the margin (``δ = 2M``) declared regressed
  with power above ``1 − β`` (it needs ``M / SE >= z(1 − α/K) + z(1 − β)``).

So ``S = ceil((z(1 − α/K) + z(1 − β/2))² · V / M²)``, at least 2. More positions, items or
samples shrink only the within part: however large ``m``, ``S`` stays at least
``(z(1 − α/K) + z(1 − β/2))² σ²_between / M²`` (:attr:`SampleSizePlan.floor`). The t tests
at few sessions need a little more than this (df ``S − 1``): the plan is a lower bound there,
which the :attr:`SampleSizePlan.assumptions` say.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import norm


@dataclass(frozen=True, kw_only=True)
class SampleSizePlan:
    """The sessions needed (module doc) and what it assumed."""

    sessions: int
    floor: int
    units_per_session: int
    sigma2_between: float
    sigma2_within: float
    margin: float
    alpha: float
    power: float
    n_endpoints: int
    z: float
    session_variance: float

    def standard_error(self, sessions: int) -> float:
        """The standard error of the mean difference over ``sessions`` sessions."""
        return math.sqrt(self.session_variance / sessions)

    def decisive_margin(self, sessions: int) -> float:
        """The smallest margin at which ``sessions`` sessions are decisive (module doc)."""
        return self.z * self.standard_error(sessions)

    @property
    def assumptions(self) -> tuple[str, ...]:
        return (f"unit differences candidate − baseline vary between sessions (σ²_between {self.sigma2_between:.4g}) "
                f"and within them (σ²_within {self.sigma2_within:.4g}), independently",
                f"{self.units_per_session} paired units a session (positions × items × samples)",
                f"margin ±{self.margin:g}; α {self.alpha:g} over {self.n_endpoints} endpoint(s) "
                f"(Holm's strictest step α/{self.n_endpoints}); power {self.power:g} to call an unchanged "
                "candidate equivalent (and more to call one worse by twice the margin regressed)",
                "normal approximation: with few sessions the t tests need somewhat more")


def sessions_needed(sigma2_between: float, sigma2_within: float, units_per_session: int, *, margin: float,
                    alpha: float = 0.05, power: float = 0.8, n_endpoints: int = 1) -> SampleSizePlan:
    """The sessions a comparison needs (module doc)."""
    if sigma2_between < 0 or sigma2_within < 0:
        raise ValueError("variances cannot be negative")
    if units_per_session < 1:
        raise ValueError(f"units_per_session must be at least 1, not {units_per_session}")
    if not margin > 0:
        raise ValueError(f"the margin must be above 0, not {margin}")
    if not 0 < alpha < 0.5 or not 0 < power < 1 or n_endpoints < 1:
        raise ValueError("alpha must be in (0, 0.5), power in (0, 1), n_endpoints at least 1")
    z = float(norm.ppf(1 - alpha / n_endpoints) + norm.ppf(1 - (1 - power) / 2))
    variance = sigma2_between + sigma2_within / units_per_session
    sessions = max(2, math.ceil(z * z * variance / margin**2))
    floor = max(2, math.ceil(z * z * sigma2_between / margin**2))
    return SampleSizePlan(sessions=sessions, floor=floor, units_per_session=units_per_session,
                          sigma2_between=sigma2_between, sigma2_within=sigma2_within, margin=margin, alpha=alpha,
                          power=power, n_endpoints=n_endpoints, z=z, session_variance=variance)
