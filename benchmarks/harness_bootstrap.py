"""Speed: the harness's position-clustered forest intervals, its draws read in bulk against its loop.

The panel forest (Fig. 3) and the stressor forests take their intervals from the harness's
two-stage bootstraps: per resample ``integers(0, P, P)`` positions from ``default_rng(seed)``,
then ``integers(0, n, n)`` indices per drawn position and array. ``contextecho.stats`` reads
those draws from the generator's 32-bit stream in bulk (``stats/harness_draws.py``); the loop
below is the harness's as its plotting scripts run it. Both give the same interval to the bit
(checked here on every repeat); the benchmark times them side by side on a forest-sized input:
``--positions`` positions of ``--scores`` scores each (the ratio's filler arm the same size),
``--resamples`` resamples, medians of ``--repeats``.

``RESULT harness_bootstrap_mean_s=<bulk> loop_s=<loop> speedup=<loop/bulk> target=>=5``, and
the same for the ratio.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from contextecho.stats.bootstrap import harness_clustered_bootstrap_mean, harness_clustered_bootstrap_ratio

sys.path.insert(0, str(Path(__file__).parent))
from _common import timed  # noqa: E402

TARGET_SPEEDUP = 5


def loop_mean(by_position, n_boot, seed):
    rng = np.random.default_rng(seed)
    arrays = [np.array(v, dtype=float) for v in by_position.values()]
    boots = np.empty(n_boot)
    for b in range(n_boot):
        means = [arrays[j][rng.integers(0, len(arrays[j]), size=len(arrays[j]))].mean()
                 for j in rng.integers(0, len(arrays), size=len(arrays))]
        boots[b] = np.mean(means)
    return float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def loop_ratio(real_by, filler_by, n_boot, seed):
    common = sorted(set(real_by) & set(filler_by))
    rng = np.random.default_rng(seed)
    real = [np.array(real_by[p], dtype=float) for p in common]
    filler = [np.array(filler_by[p], dtype=float) for p in common]
    boots = np.empty(n_boot)
    for b in range(n_boot):
        ratios = []
        for j in rng.integers(0, len(common), size=len(common)):
            r, f = real[j], filler[j]
            r_mean = r[rng.integers(0, len(r), size=len(r))].mean()
            ratios.append(r_mean / max(1.0, f[rng.integers(0, len(f), size=len(f))].mean()))
        boots[b] = float(np.mean(ratios))
    return float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=12)
    parser.add_argument("--scores", type=int, default=40)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    g = np.random.default_rng(0)
    real = {f"T{i}": g.integers(0, 4, args.scores).tolist() for i in range(args.positions)}
    filler = {f"T{i}": (g.integers(0, 3000, args.scores) * 1.0).tolist() for i in range(args.positions)}
    failed = False
    for name, bulk, loop in (
            ("mean", lambda: harness_clustered_bootstrap_mean(real, n_boot=args.resamples, seed=42),
             lambda: loop_mean(real, args.resamples, 42)),
            ("ratio", lambda: harness_clustered_bootstrap_ratio(filler, real, n_boot=args.resamples, seed=42)[1:],
             lambda: loop_ratio(filler, real, args.resamples, 42))):
        bulk_s, got = timed(bulk, args.repeats)
        loop_s, want = timed(loop, args.repeats)
        got = (got.lo, got.hi) if name == "mean" else got
        if tuple(got) != want:
            print(f"{name}: the bulk interval {got} is not the loop's {want}")
            failed = True
        print(f"{name}: bulk {bulk_s * 1000:.1f} ms, the harness's loop {loop_s * 1000:.1f} ms "
              f"({args.positions} positions x {args.scores} scores, {args.resamples} resamples)")
        print(f"RESULT harness_bootstrap_{name}_s={bulk_s:.4f} loop_s={loop_s:.4f} "
              f"speedup={loop_s / bulk_s:.1f} target=>={TARGET_SPEEDUP}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
