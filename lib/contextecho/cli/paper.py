"""``contextecho paper``: run every notebook, merge their variables, check, render.

    contextecho paper                      # data -> every notebook -> merge -> check -> render
    contextecho paper --only panel,cape    # a subset of notebooks, then merge/check/render
    contextecho paper --check-only         # `make paper-check`: merge + check, no model calls
    contextecho paper --set window=4000    # an override for every notebook that declares it
    contextecho paper --plan [--paper-scale]  # what every notebook would call and cost; nothing sent
    contextecho paper --released DIR       # the published numbers regenerated from the released cells in DIR
"""
from __future__ import annotations

import argparse
import io
import sys
import threading
import time
from typing import TextIO

from ..engine.paths import REPO_ROOT
from ..engine.progress import PROGRESS_ENV
from ..notebooks.kernel import SharedKernel
from ..paper import manuscript, quarto
from ..paper.declared import undeclared_keys
from ..notebooks.build import NOTEBOOKS, experiment
from ..paper.outputs import DuplicateVariableError, merge_variables, GENERATED
from ..experiments.parameters import ParameterError, declared
from ..notebooks.runner import check_parameters
from ..notebooks.freshness import RELEASED

#: The notebook that reads a release (``--released DIR``: its parameter ``released``).
PUBLISHED = "published"
#: How a notebook run in the second kernel is announced (:mod:`~contextecho.notebooks.lanes`).
BESIDE = "; from the cache, in a second kernel"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", default="", help=f"comma-separated notebooks (default all: {','.join(NOTEBOOKS)})")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a parameter override for every notebook that declares KEY")
    parser.add_argument("--check-only", action="store_true",
                        help="merge the generated variables and check the manuscript; run nothing")
    parser.add_argument("--no-render", action="store_true", help="skip the Quarto render step")
    parser.add_argument("--plan", action="store_true",
                        help="print what every notebook would call (calls, cached, tokens, cost, time) and stop; "
                             "nothing is sent, no key is needed (make paper PLAN=1)")
    parser.add_argument("--paper-scale", action="store_true",
                        help="with --plan: each notebook at its documented paper scale (PAPER_SCALE)")
    parser.add_argument("--released", default="", metavar="DIR",
                        help="the authors' released cells (`released fetch` writes them): the published notebook "
                             "regenerates the paper's numbers from them and sets each beside the paper's "
                             "(make paper RELEASED=DIR); no model is called for it")
    parser.add_argument("--force", action="store_true",
                        help="run every notebook, also one whose outputs are what a run would write again "
                             "(same code, inputs and cached answers, and no failed call: skipped by default)")
    parser.add_argument("--retry-errors", action="store_true",
                        help="call again the requests whose stored error is permanent (authentication, bad request, not found); by default they are skipped and counted in the manifest")


def set_overrides(items: list[str], names: list[str]) -> dict[str, dict[str, str]]:
    """Each notebook's share of the ``--set KEY=VALUE`` items, every one checked (name, type,
    range) before anything runs; a KEY no notebook in ``names`` declares is an error."""
    malformed = [item for item in items if "=" not in item or not item.split("=", 1)[0].strip()]
    if malformed:
        raise ParameterError(f"--set takes KEY=VALUE, got {', '.join(map(repr, malformed))}")
    overrides = {k.strip(): v for k, v in (item.split("=", 1) for item in items)}
    declared_by = {name: declared(experiment(name).Parameters) for name in names}
    unused = sorted(k for k in overrides if not any(k in d for d in declared_by.values()))
    if unused:
        valid = sorted({k for d in declared_by.values() for k in d})
        raise ParameterError(f"--set {', '.join(unused)}: no notebook of {', '.join(names)} declares it; "
                             f"valid: {', '.join(valid)}")
    own = {name: {k: v for k, v in overrides.items() if k in declared_by[name]} for name in names}
    for name in names:
        check_parameters(name, own[name])
    return own


def merge_and_check() -> list[str]:
    files = sorted(GENERATED.glob("*/variables.yml"))
    merged = merge_variables(files)
    manuscript.write_variables(merged, merge=False)
    print(f"      merged {len(files)} variables file(s) into {manuscript.VARIABLES_FILE.name}")
    declared = {name: experiment(name).MANUSCRIPT for name in NOTEBOOKS}
    return (manuscript.check_sources() + undeclared_keys(manuscript.sources(manuscript.PAPER_DIR), declared)
            + quarto.check_project())


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(NOTEBOOKS)
    unknown = sorted(set(names) - set(NOTEBOOKS))
    if unknown and not args.check_only:
        print(f"contextecho paper: unknown notebook(s) {unknown}; choose from {NOTEBOOKS}", file=sys.stderr)
        return 2
    if not args.check_only:
        if args.retry_errors:
            from ..engine.calls import retry_errors_everywhere

            retry_errors_everywhere()  # every notebook kernel inherits it
        if args.released and PUBLISHED not in names:
            print(f"contextecho paper: --released is read by the {PUBLISHED} notebook; add it to --only",
                  file=sys.stderr)
            return 2
        try:  # every override checked before anything runs (without one there is nothing to check)
            overrides = set_overrides(args.set, names) if args.set else {name: {} for name in names}
            if args.released:  # the published notebook's alone (the panel's and the onset's: --set released=DIR)
                overrides[PUBLISHED] = {**overrides[PUBLISHED], RELEASED: args.released}
                check_parameters(PUBLISHED, overrides[PUBLISHED])
        except ParameterError as exc:
            print(f"contextecho paper: {exc}", file=sys.stderr)
            return 2
        # One kernel for every notebook, reset as new before each: the imports are paid once.
        # It starts importing the experiments at once (run_notebooks).
        with SharedKernel(REPO_ROOT, {PROGRESS_ENV: "text"},
                          preload=[f"contextecho.experiments.{name}" for name in names]) as kernel:
            status = run_notebooks(args, names, overrides, kernel)
        if status is not None:
            if args.plan:
                print(f"done in {time.perf_counter() - start:.0f} s")
            return status
    return check_and_render(args, start)


def _label(names: list[str], name: str, own: dict[str, str]) -> str:
    """How the console names notebook ``name`` of ``names`` run with overrides ``own``."""
    return f"[{names.index(name) + 1}/{len(names)}] notebook {name}{f' {own}' if own else ''}"


def run_notebooks(args: argparse.Namespace, names: list[str], overrides: dict[str, dict[str, str]],
                  kernel: SharedKernel) -> int | None:
    """The data, then every notebook of ``names`` with its ``overrides`` in ``kernel`` (or, with
    ``--plan``, their plan); an exit status where the command ends here, None where the
    manuscript comes next. A notebook whose outputs are what a run would write again
    (:mod:`~contextecho.notebooks.freshness`) is not run, unless ``--force``; the others run
    (:func:`run_stale`)."""
    from ..engine.calls import ModelConfigError
    from .data import fill_inventories
    from ..notebooks import freshness
    from ..notebooks.runner import output_folder
    from ..sessions.corpus import fill_corpus

    print("[data] corpus and inventories, verifying sha256 ...", flush=True)
    filled = fill_corpus()
    print(f"      corpus: {filled.copied} copied, {filled.downloaded} downloaded, "
          f"{filled.present} already present; {fill_inventories()}")
    if args.plan:
        from ..notebooks.planning import plan_notebooks

        try:
            plan_notebooks(names, overrides, paper_scale=args.paper_scale)
        except (ParameterError, ModelConfigError) as exc:
            print(f"contextecho paper: {exc}", file=sys.stderr)
            return 2
        return 0
    shared = freshness.shared_parts()
    now = {name: freshness.inputs(name, overrides[name], shared) for name in names}
    why = {name: "--force" if args.force else freshness.stale(now[name], output_folder(name, overrides[name]))
           for name in names}
    for name in names:
        if why[name] is None:
            print(f"{_label(names, name, overrides[name])}: up to date, not run "
                  "(the code, inputs and cached answers of its last run, which had no failed call; --force runs it)",
                  flush=True)
    if not any(why.values()):
        return None
    try:
        run_stale(names, why, now, overrides, kernel)
    except (ParameterError, ModelConfigError) as exc:
        print(f"contextecho paper: {exc}", file=sys.stderr)
        return 2
    return None


def run_stale(names: list[str], why: dict[str, str | None], now: dict, overrides: dict[str, dict[str, str]],
              kernel: SharedKernel) -> None:
    """Run each notebook of ``names`` that ``why`` gives a reason to run, and stamp its outputs
    (``now``: its inputs). ``kernel`` runs them in order; where two or more are to run, those whose
    last run asked no model run from the cache in a second kernel beside it, and one that asks a
    model there is handed back (:mod:`~contextecho.notebooks.lanes`)."""
    from ..engine.cache import holds_records
    from ..engine.calls import CACHE_ONLY_ENV
    from ..notebooks import freshness
    from ..notebooks.lanes import Console, HandBack, handed_back, run_lanes
    from ..notebooks.runner import output_folder, run_notebook

    todo = [name for name in names if why[name] is not None]
    kernel.start()  # it imports the notebooks' modules while this process goes on
    beside = [name for name in todo if freshness.asked_no_model(output_folder(name, overrides[name]))] \
        if len(todo) > 1 and holds_records() else []
    if not beside:  # the second core is free beside the one kernel: this process imports the
        # experiments for the manuscript check meanwhile (with two kernels, after them: 2-4 s sooner)
        threading.Thread(target=lambda: [experiment(name) for name in NOTEBOOKS], daemon=True).start()
    console = Console(sys.stdout, sys.stderr)

    def header(name: str, where: str = "") -> str:
        return f"{_label(names, name, overrides[name])} ({why[name]}{where}) ..."

    def run_in(name: str, in_kernel: SharedKernel, streams: tuple[TextIO, TextIO] | None = None) -> str:
        """Run ``name`` in ``in_kernel``, its output copied to ``streams`` (default live on the
        console); the line that says where its outputs went."""
        freshness.forget(output_folder(name, overrides[name]))  # a run that stops half way leaves no stamp
        done = run_notebook(name, overrides[name], kernel=in_kernel, console=streams or console.live())
        freshness.record(now[name], done.output_dir)
        return f"      {name}: {done.wall_s:.0f} s -> {done.output_dir.relative_to(GENERATED.parent.parent)}"

    def in_order(name: str) -> None:
        console.block(header(name))
        console.block(run_in(name, kernel))

    with SharedKernel(REPO_ROOT, {PROGRESS_ENV: "text", CACHE_ONLY_ENV: "1"},
                      preload=[f"contextecho.experiments.{name}" for name in beside]) as second:
        def from_the_cache(name: str) -> None:  # its output shown as one block when it ends
            printed = io.StringIO()
            try:
                where = run_in(name, second, (printed, printed))
            except BaseException as exc:
                back = handed_back(exc)
                if back is None:  # the notebook's own failure, as the first kernel would raise it
                    console.block(header(name, BESIDE) + "\n" + printed.getvalue())
                    raise
                console.block(f"{_label(names, name, overrides[name])} {back}; it runs in the first kernel")
                raise HandBack(name) from None
            console.block("\n".join(filter(None, [header(name, BESIDE), printed.getvalue().rstrip("\n"), where])))

        if beside:
            try:
                second.start()
            except Exception as exc:  # the second kernel only saves time: without it, one kernel runs all
                console.block(f"the second kernel did not start ({type(exc).__name__}: {exc}); every notebook "
                              "runs in the first")
                beside = []
        run_lanes(todo, in_order, from_the_cache, set(beside).__contains__)


def check_and_render(args: argparse.Namespace, start: float) -> int:
    """Merge the notebooks' variables, check the manuscript, render it (unless told not to)."""
    print("[check] variables, includes, figures and alt text, identifiers and cross-references, footnotes, "
          "_quarto.yml ...", flush=True)
    try:
        problems = merge_and_check()
    except DuplicateVariableError as exc:
        print(f"contextecho paper: {exc}", file=sys.stderr)
        return 1
    if problems:
        print("contextecho paper: the manuscript has problems Quarto would only warn about, or refuse:\n  "
              + "\n  ".join(problems), file=sys.stderr)
        return 1
    print("      every variable, include, figure and cross-reference resolves, every identifier is unique; "
          "_quarto.yml passes")
    if not args.check_only and not args.no_render:
        try:
            outcome = quarto.render()
        except (manuscript.ManuscriptError, quarto.QuartoError) as exc:
            print(f"contextecho paper: {exc}", file=sys.stderr)
            return 1
        print(f"[render] {outcome.message}")
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0
