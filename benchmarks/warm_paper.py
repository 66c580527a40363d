"""Warm ``make paper``: every model call answered from the cache, from the command to ``done``.

Runs ``python -m contextecho paper --no-render`` (Quarto's render is not ours to time) on the
project's call cache; when a notebook still computes calls (a cold or partly cold cache) the
run is repeated, so the times printed are of runs that only read. Two are measured side by
side: ``--force``, every notebook executed again from the cache (what a warm run costs after a
change to the library, which every notebook reads), and the plain run that follows it, where
every notebook is up to date and is not run (``notebooks/freshness.py``). The first run of a
cold cache takes as long as a cold ``make paper``; run it alone.

``RESULT warm_paper_s=<seconds> target=<=30`` (the plain run: nothing changed) and
``RESULT warm_paper_forced_s=<seconds> target=<=30`` (every notebook executed)
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 30
COMPUTED = re.compile(r"\bcomputed=([1-9]\d*)")


def paper(*flags: str) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "contextecho", "paper", "--no-render", *flags], cwd=ROOT,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print((proc.stdout + proc.stderr)[-4000:])
        raise SystemExit(f"make paper failed (exit {proc.returncode})")
    return wall, proc.stdout + proc.stderr


def main() -> int:
    forced, log = paper("--force")
    if COMPUTED.search(log):
        print(f"the cache was not warm (a run computed calls, {forced:.0f} s); running again")
        forced, log = paper("--force")
        if COMPUTED.search(log):
            raise SystemExit("the second run computed calls too: the cache does not answer them")
    for line in log.splitlines():
        if re.match(r"^\s+[a-z_]+: \d+ s -> ", line):
            print(line.strip())
    plain, log = paper()
    ran = [line for line in log.splitlines() if re.match(r"^\[\d+/\d+\] notebook .*\.\.\.$", line)]
    if ran:
        print("notebooks the plain run executed (none expected):\n  " + "\n  ".join(ran))
    print(f"RESULT warm_paper_s={plain:.1f} target=<={TARGET_S}")
    print(f"RESULT warm_paper_forced_s={forced:.1f} target=<={TARGET_S}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
