"""Fixtures for the statistics tests: small tidy cell frames with known structure."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest


def make_cells(n_sessions=3, n_positions=6, n_probes=5, gap=0.5, position_sd=0.3,
               noise_sd=0.5, seed=0) -> pd.DataFrame:
    """Cells with a true drift gap ``gap`` plus a random per-(session, position) shift."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sessions):
        for p in range(n_positions):
            shift = rng.normal(0, position_sd)
            for arm in ("filler", "real"):
                for probe in range(n_probes):
                    mean = 2.0 if arm == "filler" else 2.0 - gap + shift
                    rows.append(dict(target="t", session=f"s{s}", position=p, arm=arm,
                                     category="coding-self" if probe < 3 else "identity",
                                     probe=f"C0{probe}", replicate=0,
                                     score=mean + rng.normal(0, noise_sd)))
    return pd.DataFrame(rows)


@pytest.fixture
def cells() -> pd.DataFrame:
    return make_cells()


@pytest.fixture(name="make_cells")
def make_cells_fixture():
    """The frame factory itself (test modules cannot import conftest under importlib)."""
    return make_cells


@pytest.fixture(name="percentile")
def percentile_fixture():
    """Linear-interpolation percentile, by hand (numpy's default method)."""
    def percentile(values, q):
        ordered = sorted(values)
        at = (len(ordered) - 1) * q / 100
        low = math.floor(at)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (at - low) * (ordered[high] - ordered[low])
    return percentile
