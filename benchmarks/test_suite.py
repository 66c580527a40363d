"""The test suite's wall time as ``make test`` runs it, and one test after another beside it.

Runs pytest over ``tests/`` the way ``make test`` does (one worker more than the cores, a
module to a worker, the slow modules first) and reads its closing line (``N passed ... in S s``); with
``--serial`` also in one process (``WORKERS=1``), so the two stand side by side. Takes as
long as it measures (about 10 minutes; the serial run about 20 more); run it alone, with
nothing else on the cores.

``RESULT test_suite_s=<seconds> target=<=600``
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 600
SUMMARY = re.compile(r"(\d+) passed.* in ([\d.]+)s")
# The Makefile's PYTEST: one worker more than the cores, a module to a worker, slow modules first.
PARALLEL = ["-n", str((os.cpu_count() or 1) + 1), "--dist", "loadscope", "--no-loadscope-reorder"]


def run(extra: list[str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra], cwd=ROOT,
                          env={**os.environ, "CI": "true"}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-1] if proc.stdout or proc.stderr else ""
    if proc.returncode != 0:
        print((proc.stdout + proc.stderr)[-4000:])
        raise SystemExit(f"the test suite failed (exit {proc.returncode}): {tail}")
    found = SUMMARY.search(tail)
    return wall, int(found.group(1)) if found else 0, tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serial", action="store_true", help="also run the suite in one process, for the ratio")
    args = parser.parse_args()
    wall, passed, tail = run(PARALLEL)
    print(f"make test (pytest {' '.join(PARALLEL)}): {tail}")
    if args.serial:
        serial, _, serial_tail = run(["-p", "no:xdist"])
        print(f"one process: {serial_tail}")
        print(f"RESULT test_suite_serial_s={serial:.0f}")
        print(f"RESULT test_suite_speedup={serial / wall:.2f}")
    print(f"RESULT test_suite_tests={passed}")
    print(f"RESULT test_suite_s={wall:.0f} target=<={TARGET_S}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
