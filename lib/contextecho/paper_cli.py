"""``contextecho paper``: regenerate every artifact of the manuscript, check it, render it."""
from __future__ import annotations

import argparse
import sys
import time

from . import manuscript
from .calls import ModelConfigError
from .data_cli import fill_inventories
from .pilot import PilotConfig, pilot_table, run_pilot
from .sessions.corpus import fill_corpus


def configure(parser: argparse.ArgumentParser) -> None:
    defaults = PilotConfig()
    parser.add_argument("--model", default=defaults.model, help=f"target model (default {defaults.model})")
    parser.add_argument("--sessions", type=int, default=defaults.n_sessions, help="sessions in the pilot")
    parser.add_argument("--positions", type=int, default=defaults.n_positions, help="uniform positions per session")
    parser.add_argument("--window", type=int, default=defaults.window,
                        help="prefix window in characters (the embedded model's context limits it)")


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    print("[1/3] data: corpus and inventories, verifying sha256 ...", flush=True)
    filled = fill_corpus()
    print(f"      corpus: {filled.copied} copied, {filled.downloaded} downloaded, "
          f"{filled.present} already present")
    print(f"      {fill_inventories()}")
    print("[2/3] pilot: identity probe on real snapshots vs no prefix ...", flush=True)
    config = PilotConfig(model=args.model, n_sessions=args.sessions, n_positions=args.positions,
                         window=args.window)
    try:
        frame, variables = run_pilot(config)
    except ModelConfigError as exc:
        print(f"contextecho paper: {exc}", file=sys.stderr)
        return 2
    manuscript.GENERATED_DIR.mkdir(parents=True, exist_ok=True)
    frame.to_csv(manuscript.GENERATED_DIR / "pilot_cells.csv", index=False)
    (manuscript.GENERATED_DIR / "pilot_table.md").write_text(pilot_table(frame))
    manuscript.write_variables({"pilot": variables})
    print(f"      {variables['n_cells']} cells, {variables['n_errors']} errors, "
          f"{variables['cache_hits']} from the cache -> paper/_generated/")
    print("[3/3] manuscript: checking sources, rendering ...", flush=True)
    try:
        outcome = manuscript.render()
    except manuscript.ManuscriptError as exc:
        print(f"contextecho paper: {exc}", file=sys.stderr)
        return 1
    print(f"      {outcome.message}")
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0
