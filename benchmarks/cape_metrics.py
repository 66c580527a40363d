"""TC and OC computation time for one CAPE factor: three 120-item trajectories (TC) and
the three 600-point OCEAN permutation series (OC). Target: under 2 s per factor.

Synthetic Likert trajectories (seeded), three distinct runs so no fit is shared.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import timed  # noqa: E402

import numpy as np  # noqa: E402

from contextecho.cape.consistency import ocean_consistency, trajectory_consistency  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(20240601)
    base = rng.integers(1, 6, 120)
    runs = np.vstack([np.where(rng.random(120) < 0.2, rng.integers(1, 6, 120), base) for _ in range(3)])
    traits = np.tile(np.arange(5), 24)
    ocean = np.vstack([[run[traits == t].mean() for t in range(5)] for run in runs])
    tc_s, tc = timed(lambda: trajectory_consistency(runs), repeats=3)
    oc_s, oc = timed(lambda: ocean_consistency(ocean), repeats=3)
    print(f"TC of 3 x 120-item trajectories: {tc_s:7.3f} s  (TC = {tc.value:.3f})")
    print(f"OC of 3 x 600-point series:      {oc_s:7.3f} s  (OC = {oc.value:.3f})")
    print(f"RESULT tc_oc_seconds={tc_s + oc_s:.3f} target=2")


if __name__ == "__main__":
    main()
