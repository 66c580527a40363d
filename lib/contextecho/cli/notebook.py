"""``contextecho notebook NAME [-p KEY VALUE]...``: run one notebook with papermill.

``contextecho notebook --build`` regenerates ``notebooks/*.ipynb`` from the experiments'
parameter dataclasses.
"""
from __future__ import annotations

import argparse
import sys

from ..notebooks.build import NOTEBOOKS, write_all
from ..experiments.parameters import ParameterError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", choices=NOTEBOOKS, help="the notebook to run")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("KEY", "VALUE"), help="override a parameter (repeatable)")
    parser.add_argument("--output-dir", default=None, help="default paper/_generated/<name>")
    parser.add_argument("--build", action="store_true", help="regenerate notebooks/*.ipynb and exit")
    parser.add_argument("--plan", action="store_true",
                        help="print what the notebook would call (calls, cached, tokens, cost, time) and stop; "
                             "nothing is sent, no key is needed (the same as -p plan true, without a kernel)")
    parser.add_argument("--retry-errors", action="store_true",
                        help="call again the requests whose stored error is permanent (authentication, bad request, not found); by default they are skipped and counted in the manifest")


def run(args: argparse.Namespace) -> int:
    if args.build:
        for path in write_all():
            print(f"wrote {path}")
        return 0
    if not args.name:
        print("contextecho notebook: name a notebook: " + ", ".join(NOTEBOOKS), file=sys.stderr)
        return 2
    from ..engine.calls import ModelConfigError
    from ..notebooks.runner import run_notebook

    if args.retry_errors:
        from ..engine.calls import retry_errors_everywhere

        retry_errors_everywhere()  # the kernel inherits it
    overrides = dict(args.parameter)
    if args.plan:
        from ..notebooks.planning import plan_notebooks

        if args.output_dir:
            overrides["output_dir"] = args.output_dir
        try:
            plan_notebooks([args.name], {args.name: overrides})
        except (ParameterError, ModelConfigError) as exc:
            print(f"contextecho notebook: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        done = run_notebook(args.name, overrides, output_dir=args.output_dir)
    except (ParameterError, ModelConfigError) as exc:
        print(f"contextecho notebook: {exc}", file=sys.stderr)
        return 2
    print(f"{args.name}: done in {done.wall_s:.0f} s -> {done.output_dir}")
    return 0
