"""Speed: a 10,000-resample clustered bootstrap of the drift gap on 10,000 cells.

Data: 40 sessions x 5 positions x 25 probes x 2 arms = 10,000 cells. The bootstrap
is two-level (sessions, then positions within each drawn session), the most expensive
scheme in ``contextecho.stats``; one-level (position, session) and the cell bootstrap
are timed too.

* vectorized — ``drift_gap(cells, cluster=("session", "position"),
  n_resamples=10_000)`` end to end (input checks, per-unit gaps, resampling, interval).
* loop — the same estimator written as a plain Python loop over resamples (draw
  sessions, draw positions in each, average the drawn units' filler − real means from
  their cells). It is timed on 200 resamples and extrapolated linearly to 10,000
  (the loop's cost per resample is constant), as stated in the output.

Medians of a few repeats. Last line: ``RESULT bootstrap_seconds=<value> target=1``.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from contextecho.stats import drift_gap

SESSIONS, POSITIONS, PROBES = 40, 5, 25
N_RESAMPLES = 10_000
LOOP_RESAMPLES = 200
REPEATS = 5
LOOP_REPEATS = 3


def make_cells(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    index = pd.MultiIndex.from_product(
        [[f"s{i}" for i in range(SESSIONS)], range(POSITIONS), ["filler", "real"],
         [f"C{j:02d}" for j in range(PROBES)]],
        names=["session", "position", "arm", "probe"])
    cells = index.to_frame(index=False)
    shift = rng.normal(0, 0.3, SESSIONS * POSITIONS)
    unit = cells.session.str[1:].astype(int) * POSITIONS + cells.position
    real = (cells.arm == "real").to_numpy()
    cells["score"] = 2.0 - real * (0.4 + shift[unit]) + rng.normal(0, 0.6, len(cells))
    return cells


def loop_bootstrap(cells: pd.DataFrame, n_resamples: int, seed: int) -> np.ndarray:
    """Reference: one Python iteration per resample, recomputing from cells."""
    rng = np.random.default_rng(seed)
    sessions = sorted(cells.session.unique())
    units = {}
    for (s, p), g in cells.groupby(["session", "position"]):
        filler = g.loc[g.arm == "filler", "score"].to_numpy()
        real = g.loc[g.arm == "real", "score"].to_numpy()
        units.setdefault(s, []).append((filler, real))
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        gaps = []
        for s in rng.choice(len(sessions), len(sessions)):
            positions = units[sessions[s]]
            for p in rng.choice(len(positions), len(positions)):
                filler, real = positions[p]
                gaps.append(filler.mean() - real.mean())
        out[b] = np.mean(gaps)
    return out


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def main() -> None:
    cells = make_cells()
    print(f"{len(cells)} cells: {SESSIONS} sessions x {POSITIONS} positions x {PROBES} probes "
          f"x 2 arms; {N_RESAMPLES} resamples; medians of {REPEATS} repeats")
    drift_gap(cells, cluster=("session", "position"), n_resamples=100)  # warm-up
    vec, record = timed(lambda: drift_gap(cells, cluster=("session", "position"),
                                          n_resamples=N_RESAMPLES), REPEATS)
    print(f"vectorized two-level (session>position): {vec:.3f} s  "
          f"[gap {record.estimate:.3f}, CI {record.ci_low:.3f}..{record.ci_high:.3f}, "
          f"SE {record.standard_error:.4f}]")
    for label, cluster in (("one-level position", "position"), ("one-level session", "session"),
                           ("cell (unclustered)", None)):
        t, _ = timed(lambda: drift_gap(cells, cluster=cluster, n_resamples=N_RESAMPLES), 3)
        print(f"vectorized {label}: {t:.3f} s")
    loop_t, reps = timed(lambda: loop_bootstrap(cells, LOOP_RESAMPLES, 1), LOOP_REPEATS)
    loop_full = loop_t * N_RESAMPLES / LOOP_RESAMPLES
    print(f"plain loop two-level: {loop_t:.3f} s for {LOOP_RESAMPLES} resamples "
          f"(median of {LOOP_REPEATS}) -> extrapolated {loop_full:.1f} s for {N_RESAMPLES}  "
          f"[SE from its {LOOP_RESAMPLES} resamples {np.std(reps, ddof=1):.4f}]")
    print(f"speed-up (loop / vectorized): {loop_full / vec:.0f}x")
    print(f"RESULT bootstrap_seconds={vec:.3f} target=1")


if __name__ == "__main__":
    main()
