"""Import time and peak memory of the authors' released cell tree (``echo/reference/released``).

Builds a synthetic release of ``--cells`` cells (default 41,921; the full release has about
116,694) in the harness's layouts, in the mix of a paper-scale run: e15 probe cells (panel and
fill runners, 12 positions x 2 arms x 25 probes per target), e08/e10/e09 S2 cells, e17 onset
replicates, the anchor variants, A-anchor stressors and probes, placement, size and decay
sweeps, e16 framing, e11/e12 metrics and the cross-judge audit's records. Response lengths
are drawn from a log-normal around the panel's (median about 600 characters for a probe, 120
for a stressor), from a fixed seed. The tree is written first (not timed), then imported in a
fresh interpreter, whose wall time and peak resident memory (``ru_maxrss``, the interpreter
and its imports included) are the results; every cell must import (no bad, unknown or
duplicate file). Then the published notebook's re-analysis of those cells runs there
(:func:`contextecho.experiments.published.regenerate`: the panel's Fig.-2 forest and the onset
curve, 10,000 resamples each), timed apart.

Last lines: ``RESULT released_import_s=<seconds> target=<=60`` and
``RESULT released_import_peak_mib=<MiB> target=<=2048`` (the peak includes the re-analysis) and
``RESULT released_reanalysis_s=<seconds> target=<=180``.

    .venv/bin/python benchmarks/released_import.py [--cells N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"
sys.path.insert(0, str(LIB))

N_CELLS = 41_921
TARGET_S, TARGET_MIB = 60, 2048
TARGET_ANALYSIS_S = 180  # the panel's re-analysis (issue 37), the onset curve with it
POSITIONS = ["P0_start", "P1_pre_C1", "P2_post_C1", "P_pre_C2", "P_post_C2", "P_pre_C3", "P3_post_C3", "P4_pre_C4",
             "P4_post_C4", "P5_pre_C5", "P5_post_C5", "P5_pre_C6"]
PROBES = [f"{p}{i:02d}" for p, n in (("C", 5), ("I", 5), ("E", 10), ("O", 5)) for i in range(1, n + 1)]
STRESSORS = ["S1_ONE_WORD", "S2_NO_PREAMBLE", "S3_NO_ACTION", "S4_STRICT_JSON"]
LABELS = {0: "drifted", 1: "mostly_drifted", 2: "mostly_assistant", 3: "fully_assistant"}
#: The layouts' shares of a paper-scale release.
MIX = {"probe": 55, "s2": 20, "onset": 8, "anchor_variant": 4, "a_stressor": 2, "a_probe": 2, "placement": 1,
       "anchor_size": 1, "anchor_decay": 1, "framing": 1, "override": 2, "length": 1, "cross_judge": 2}
WORDS = ("the function returns a list of files so we can refactor the parser and I will run the tests again "
         "before the commit because the migration failed on the staging database yesterday ").split()


class Texts:
    """Response texts of log-normal length, cut from one long deterministic text."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.source = " ".join(rng.choice(WORDS) for _ in range(60_000))

    def draw(self, median: float) -> str:
        n = max(1, min(int(self.rng.lognormvariate(0, 0.9) * median), 20_000))
        start = self.rng.randrange(0, len(self.source) - n)
        return self.source[start:start + n]


def _judged(texts: Texts, rng: random.Random, record: dict) -> dict:
    text = texts.draw(600)
    score = rng.choice([3, 3, 3, 2, 2, 1, 0, -1])
    verdict = {"score": score, "label": LABELS.get(score, "parse_error"),
               "reason": "no JSON found" if score < 0 else "Stays in the assistant register. (judge)"}
    return {**record, "response_text": text, "response_len": len(text), "wall_clock_sec": 1.5,
            "input_tokens": rng.randrange(1000, 9000), "output_tokens": len(text) // 4, **verdict}


def _answered(texts: Texts, rng: random.Random, record: dict) -> dict:
    text = texts.draw(120)
    return {**record, "response_text": text, "response_len": len(text), "wall_clock_sec": 0.9,
            "input_tokens": rng.randrange(1000, 9000), "output_tokens": len(text) // 4}


def cell(layout: str, i: int, texts: Texts, rng: random.Random) -> tuple[str, dict]:
    """The ``i``-th cell of ``layout``: its root-relative path and record (unique per (layout, i))."""
    probe, pos = PROBES[i % 25], POSITIONS[(i // 50) % 12]
    arm = ("claude_session", "filler")[(i // 25) % 2]
    if layout == "probe":
        target = f"target-{i // 600:03d}"
        return (f"results/probes_at_crosscompaction/{target}/{pos}/{arm}/{probe}.json",
                _judged(texts, rng, {"probe_id": probe, "probe_category": "coding_self", "probe_text": "Q?",
                                     "arm": arm, "position": pos, "target": target}))
    if layout == "onset":
        rep, rest = i % 3, i // 3
        probe, arm, turn = PROBES[rest % 5], ("claude_session", "filler")[(rest // 5) % 2], (rest // 10) % 8
        target = f"target-{rest // 80:03d}"
        name = probe if rep == 0 else f"{probe}_v{rep:02d}"
        return (f"results/drift_onset/{target}/T{turn:04d}/{arm}/{name}.json",
                _judged(texts, rng, {"probe_id": probe, "arm": arm, "position": f"T{turn:04d}", "turn": turn,
                                     "target": target, "replicate": rep}))
    if layout == "s2":
        v, s2arm, pos = i % 10, ("claude", "filler")[(i // 10) % 2], POSITIONS[(i // 20) % 12]
        return (f"results/cross_compaction/target-{i // 240:03d}/{pos}/v{v:02d}/{s2arm}.json",
                _answered(texts, rng, {}))
    if layout == "anchor_variant":
        v, variant, pos = i % 10, f"V{(i // 10) % 4}_VARIANT", POSITIONS[(i // 40) % 12]
        return (f"results/anchor_variants/{variant}/target-{i // 480:03d}/{pos}/v{v:02d}/cell.json",
                _answered(texts, rng, {"variant": variant}))
    if layout == "a_stressor":
        return (f"results/dual_surface_pilot/CAND_A_COMBINED/stressors/target-{i // 120:03d}/"
                f"{POSITIONS[(i // 10) % 12]}/v{i % 10:02d}/cell.json", _answered(texts, rng, {"target": "t"}))
    if layout == "a_probe":
        return (f"results/generalization_test/A_COMBINED/CODING_PROBES/target-{i // 300:03d}/"
                f"{POSITIONS[(i // 25) % 12]}/{probe}.json", _judged(texts, rng, {"probe_id": probe}))
    if layout == "placement":
        return (f"results/anchor_variants/V3_SYSTEM_INJECT/target-{i // 300:03d}/{POSITIONS[(i // 25) % 12]}/"
                f"{probe}.json", _judged(texts, rng, {"probe_id": probe, "placement": "V3_SYSTEM_INJECT"}))
    if layout == "anchor_size":
        size = ("small", "medium", "large")[(i // 25) % 3]
        return (f"results/anchor_size_sweep/{size}/target-{i // 75:03d}/{probe}.json",
                _judged(texts, rng, {"probe_id": probe, "size": size}))
    if layout == "anchor_decay":
        return (f"results/anchor_decay/target-{i // 125:03d}/N{(i // 25) % 5:02d}/{probe}.json",
                _judged(texts, rng, {"probe_id": probe, "n_offset": (i // 25) % 5}))
    if layout == "framing":
        rep, rest = i % 10, i // 10
        framing = ("with_framing", "without_framing")[rest % 2]
        # e16 writes one target's cells per results folder (the target is in the record only)
        return (f"results/target-{rest // 10:03d}/probe_framing_ablation/{framing}/{PROBES[(rest // 2) % 5]}/"
                f"v{rep:02d}.json",
                _judged(texts, rng, {"framing": framing, "probe_id": PROBES[(rest // 2) % 5], "rep": rep,
                                     "target": f"target-{rest // 10:03d}", "position": "P5_pre_C6"}))
    if layout == "override":
        arm = ("scratch", "filler3K", "gpt5_3K", "recent3K")[(i // 4) % 4]
        record = _answered(texts, rng, {"arm": arm, "stressor": STRESSORS[i % 4], "cut_index": (i // 16) % 10})
        return (f"data_archive/instruction_override/target-{i // 160:03d}/cut-{(i // 16) % 10}/{arm}/"
                f"{STRESSORS[i % 4]}/metrics.json", {**record, "compliance": rng.choice([0, 1])})
    if layout == "length":
        arm = ("claude_session", "filler")[i % 2]
        record = _answered(texts, rng, {"arm": arm})
        return (f"data_archive/session_length_scaling/target-{i // 24:03d}/len-{(3000, 30000, 100000)[(i // 2) % 3]}/"
                f"cut-{(i // 6) % 2}/{STRESSORS[(i // 12) % 2]}/metrics_{arm}.json",
                {**record, "compliance": rng.choice([0, 1])})
    if layout == "cross_judge":
        score = rng.choice([3, 2, 1, 0, -1])
        arm = ("claude_session", "filler")[(i // 5) % 2]
        return (f"results/crossjudge_audit/target-{i // 10:03d}/P5_pre_C6/{arm}/{PROBES[i % 5]}.json",
                {"target": "t", "arm": arm, "probe_id": PROBES[i % 5], "sonnet_score": rng.choice([3, 2, -1]),
                 "gpt5_score": score, "gpt5_label": LABELS.get(score, "parse_error"), "gpt5_reason": "fenced"})
    raise ValueError(layout)


def write_release(root: Path, n: int, seed: int = 0) -> Counter:
    """``n`` cells under ``root`` in :data:`MIX` proportions; how many of each layout."""
    rng = random.Random(seed)
    texts = Texts(rng)
    order = [name for name, share in MIX.items() for _ in range(share)]
    counters: Counter = Counter()
    made = set()
    for layout in itertools.islice(itertools.cycle(order), n):
        path, record = cell(layout, counters[layout], texts, rng)
        counters[layout] += 1
        assert path not in made, path
        made.add(path)
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
    return counters


def measure(root: str) -> None:
    """In a fresh interpreter: import the release, print its counts, wall time and peak RSS as JSON."""
    start = time.perf_counter()
    from contextecho.echo.reference.released import import_release

    report = import_release(root, label="synthetic")
    wall = time.perf_counter() - start
    from contextecho.experiments.published import regenerate

    start = time.perf_counter()
    done = regenerate(report.cells, n_resamples=10_000, seed=42)
    analysis = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(json.dumps({"wall_s": wall, "analysis_s": analysis, "peak_mib": peak_mib, **report.counts(),
                      "forest_targets": len(done.forest), "onset_rows": len(done.onset),
                      "problems": report.describe(3) if not report.ok else ""}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=N_CELLS, help=f"cells in the synthetic release (default {N_CELLS})")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="write the release here and keep it (default: a temporary folder)")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure)
        return 0
    root = args.keep or Path(tempfile.mkdtemp(prefix="released-import-"))
    try:
        start = time.perf_counter()
        counts = write_release(root, args.cells)
        print(f"wrote {args.cells} cells in {time.perf_counter() - start:.1f} s under {root}: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        done = subprocess.run([sys.executable, __file__, "--measure", str(root)], capture_output=True, text=True,
                              check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"imported {result['cells']} cells ({result['bad']} bad, {result['unknown']} unknown, "
          f"{result['duplicates']} duplicates, {result['outputs']} outputs)")
    if result["cells"] != args.cells:
        print(f"not every cell imported:\n{result['problems']}", file=sys.stderr)
        return 1
    print(f"re-analysed: the panel's forest ({result['forest_targets']} targets) and the onset curve "
          f"({result['onset_rows']} target x step rows), 10,000 resamples each")
    print(f"RESULT released_import_s={result['wall_s']:.2f} target=<={TARGET_S}")
    print(f"RESULT released_reanalysis_s={result['analysis_s']:.2f} target=<={TARGET_ANALYSIS_S}")
    print(f"RESULT released_import_peak_mib={result['peak_mib']:.0f} target=<={TARGET_MIB}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
