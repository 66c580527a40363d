"""``contextecho paper``: run every notebook, merge their variables, check, render.

    contextecho paper                      # data -> every notebook -> merge -> check -> render
    contextecho paper --only panel,cape    # a subset of notebooks, then merge/check/render
    contextecho paper --check-only         # `make paper-check`: merge + check, no model calls
    contextecho paper --set window=4000    # an override for every notebook that declares it
"""
from __future__ import annotations

import argparse
import sys
import time

from . import manuscript
from .notebooks import NOTEBOOKS, DuplicateVariableError, ParameterError, declared, experiment, merge_variables
from .notebooks.outputs import GENERATED


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", default="", help=f"comma-separated notebooks (default all: {','.join(NOTEBOOKS)})")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a parameter override for every notebook that declares KEY")
    parser.add_argument("--check-only", action="store_true",
                        help="merge the generated variables and check the manuscript; run nothing")
    parser.add_argument("--no-render", action="store_true", help="skip the Quarto render step")


def merge_and_check() -> list[str]:
    files = sorted(GENERATED.glob("*/variables.yml"))
    merged = merge_variables(files)
    manuscript.write_variables(merged, merge=False)
    print(f"      merged {len(files)} variables file(s) into {manuscript.VARIABLES_FILE.name}")
    return manuscript.check_sources()


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    if not args.check_only:
        from .calls import ModelConfigError
        from .data_cli import fill_inventories
        from .notebooks import run_notebook
        from .sessions.corpus import fill_corpus

        names = [n.strip() for n in args.only.split(",") if n.strip()] or list(NOTEBOOKS)
        unknown = sorted(set(names) - set(NOTEBOOKS))
        if unknown:
            print(f"contextecho paper: unknown notebook(s) {unknown}; choose from {NOTEBOOKS}", file=sys.stderr)
            return 2
        overrides = dict(item.split("=", 1) for item in args.set)
        print("[data] corpus and inventories, verifying sha256 ...", flush=True)
        filled = fill_corpus()
        print(f"      corpus: {filled.copied} copied, {filled.downloaded} downloaded, "
              f"{filled.present} already present; {fill_inventories()}")
        for number, name in enumerate(names, start=1):
            own = {k: v for k, v in overrides.items() if k in declared(experiment(name).Parameters)}
            print(f"[{number}/{len(names)}] notebook {name} {own or ''} ...", flush=True)
            try:
                done = run_notebook(name, own)
            except (ParameterError, ModelConfigError) as exc:
                print(f"contextecho paper: {exc}", file=sys.stderr)
                return 2
            print(f"      {name}: {done.wall_s:.0f} s -> {done.output_dir.relative_to(GENERATED.parent.parent)}",
                  flush=True)
    print("[check] variables, includes, figures, cross-references ...", flush=True)
    try:
        problems = merge_and_check()
    except DuplicateVariableError as exc:
        print(f"contextecho paper: {exc}", file=sys.stderr)
        return 1
    if problems:
        print("contextecho paper: the manuscript refers to outputs the pipeline did not produce:\n  "
              + "\n  ".join(problems), file=sys.stderr)
        return 1
    print("      every variable, include, figure and cross-reference resolves")
    if not args.check_only and not args.no_render:
        try:
            outcome = manuscript.render()
        except manuscript.ManuscriptError as exc:
            print(f"contextecho paper: {exc}", file=sys.stderr)
            return 1
        print(f"[render] {outcome.message}")
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0
