"""Cold ``make paper``: every notebook's wall time and the total, from an empty call cache.

Runs ``python -m contextecho paper`` once with ``CONTEXTECHO_CACHE`` pointed at a fresh
temporary folder (so every model call is computed, as on a clean clone; the virtual
environment is already set up), reads the per-notebook times the command prints
(``<notebook>: <seconds> s -> ...``) and its ``done in <seconds> s`` line, and prints one
RESULT line per notebook and one for the total. The target is the budget for the embedded
build on two cores: 15 minutes. Takes as long as it measures (about 20 minutes);
run it alone, with nothing else on the two cores.

``RESULT cold_paper_total_s=<seconds> target=<=900``
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_LINE = re.compile(r"^\s+([a-z_]+): (\d+) s -> ")
DONE_LINE = re.compile(r"^done in (\d+) s")
TARGET_S = 900


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="contextecho-cold-") as cache:
        env = {**os.environ, "CONTEXTECHO_CACHE": cache}
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "contextecho", "paper"], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
    lines = (proc.stdout + proc.stderr).splitlines()
    if proc.returncode != 0:
        print("\n".join(lines[-30:]))
        print(f"cold make paper failed (exit {proc.returncode})")
        return 1
    total = None
    for line in lines:
        notebook = NOTEBOOK_LINE.match(line)
        if notebook:
            print(f"RESULT cold_paper_{notebook.group(1)}_s={notebook.group(2)}")
        done = DONE_LINE.match(line.strip())
        if done:
            total = int(done.group(1))
    print(f"RESULT cold_paper_wall_s={wall:.0f}")
    print(f"RESULT cold_paper_total_s={total if total is not None else round(wall)} target=<={TARGET_S}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
