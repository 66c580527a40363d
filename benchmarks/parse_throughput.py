"""Parse throughput of ``load_session`` next to plain ``json.loads`` of the same lines.

Both sides read the same bytes from disk; the baseline splits lines and decodes each
with ``json.loads``, the parser decodes them with orjson (``json.loads`` only for the
lines orjson refuses or reads differently: ``sessions.jsonl.parse_line``), checks the
encoding and the limits, and additionally builds the session (timeline, counts, steps).
Measured on the largest corpus transcripts, best of several repeats; the RESULT is the
parser's throughput over the baseline's (above 1: faster than plain ``json.loads``).

Measured 2026-12-02 (medians of 12 interleaved runs on two shared cores): 0.75, was 0.65
before the session builders were made faster and 0.45 before the orjson reader. The target is
not reached: the reader alone (orjson, the encoding and limit checks, one line at a time) runs
about as fast as the plain baseline, so any session building puts the ratio below 1; the
per-line checks for long integers and nesting depth (about a quarter of the reader) are what
is left to make cheaper.

    .venv/bin/python benchmarks/parse_throughput.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from contextecho.sessions import load_session  # noqa: E402

from _common import best_of, corpus_root  # noqa: E402

N_FILES = 5
REPEATS = 5
TARGET = 1.0


def plain_decode(path: Path) -> int:
    n = 0
    for line in path.read_bytes().split(b"\n"):
        try:
            json.loads(line)
            n += 1
        except ValueError:
            pass
    return n


def main() -> int:
    root = corpus_root()
    if root is None:
        print("no corpus found (run `make data`)", file=sys.stderr)
        return 1
    files = sorted(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size, reverse=True)[:N_FILES]
    total_mb = json_s = parse_s = 0.0
    print(f"{'file':60s} {'MB':>6s} {'json MB/s':>10s} {'parse MB/s':>11s} {'ratio':>6s}")
    for path in files:
        mb = path.stat().st_size / 1e6
        tj = best_of(lambda: plain_decode(path), REPEATS)
        tp = best_of(lambda: load_session(path, with_subagents=False), REPEATS)
        total_mb += mb
        json_s += tj
        parse_s += tp
        print(f"{path.relative_to(root).as_posix()[-60:]:60s} {mb:6.2f} {mb / tj:10.1f} {mb / tp:11.1f} {tj / tp:6.2f}")
    ratio = json_s / parse_s
    print(f"{'all ' + str(len(files)) + ' files':60s} {total_mb:6.2f} {total_mb / json_s:10.1f} "
          f"{total_mb / parse_s:11.1f} {ratio:6.2f}")
    print(f"RESULT parse_vs_json={ratio:.2f} target={TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
