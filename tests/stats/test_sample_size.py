"""The comparison's sample-size plan on a hand-computed case, and that it is decisive in simulation."""
from __future__ import annotations

import math

import numpy as np
import pytest

from contextecho.stats.comparison import EQUIVALENT, endpoint_test, verdicts
from contextecho.stats.sample_size import sessions_needed


def test_hand_computed_case():
    # V = 0.02 + 0.3 / 10 = 0.05; z(0.95) + z(0.9) = 1.644854 + 1.281552 = 2.926405;
    # S = ceil(2.926405² · 0.05 / 0.08²) = ceil(8.563846 · 7.8125) = ceil(66.905) = 67.
    plan = sessions_needed(0.02, 0.3, 10, margin=0.08)
    assert plan.z == pytest.approx(2.926405, abs=1e-6)
    assert plan.session_variance == pytest.approx(0.05)
    assert plan.sessions == 67
    assert plan.floor == math.ceil(8.563846 * 0.02 / 0.0064)  # 27: more positions cannot go below it
    assert plan.decisive_margin(67) <= 0.08 < plan.decisive_margin(66)
    assert any("σ²_between 0.02" in line for line in plan.assumptions)
    # Two endpoints: Holm's strictest step, α / 2: z(0.975) + z(0.9) = 1.959964 + 1.281552
    assert sessions_needed(0.02, 0.3, 10, margin=0.08, n_endpoints=2).sessions == \
        math.ceil((1.959964 + 1.281552) ** 2 * 0.05 / 0.0064)


def test_at_least_two_sessions_and_bad_inputs():
    assert sessions_needed(0.0, 0.001, 100, margin=1.0).sessions == 2
    for bad in (dict(margin=0), dict(margin=0.1, alpha=0.5), dict(margin=0.1, power=1.0)):
        with pytest.raises(ValueError):
            sessions_needed(0.02, 0.3, 10, **bad)
    with pytest.raises(ValueError, match="units_per_session"):
        sessions_needed(0.02, 0.3, 0, margin=0.1)


def test_the_planned_size_is_decisive_about_as_often_as_planned():
    """An unchanged candidate at the planned size is called equivalent in about 80% of
    simulated runs (t tests: a little less than the normal approximation promises)."""
    plan = sessions_needed(0.01, 0.2, 8, margin=0.1)
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(200):
        b = rng.normal(0, 0.1, plan.sessions)
        d = (b[:, None] + rng.normal(0, np.sqrt(0.2), (plan.sessions, 8))).ravel()
        s = np.repeat(np.arange(plan.sessions), 8)
        hits += verdicts([endpoint_test("d", d, s, margin=0.1, n_resamples=20)])[0].verdict == EQUIVALENT
    assert 0.65 <= hits / 200 <= 0.95
