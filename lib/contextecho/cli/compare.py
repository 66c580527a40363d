"""``python -m contextecho compare --plan PLAN.json``: two model releases under a pre-registration,
and a verdict a CI job can act on.

1. **In**: the plan ``preregister`` wrote (its sha256 checked: an edited plan is refused).
2. **Check**, before any call: what the code would ask now (instruments, judge, sessions,
   positions, cells ...) is recomputed and compared with the plan, field by field
   (:mod:`contextecho.experiments.preregistration`); a field that differs is refused, naming
   it, unless ``--allow-deviation FIELD`` allows it (each one allowed is in the report).
3. **Plan**: the calls, those the cache holds, tokens, cost and time; ``--dry-run`` stops here.
4. **Run**, once confirmed (``--yes``; without a terminal it is required):
   :mod:`contextecho.experiments.compare` through the cache and run log the notebooks use,
   into ``--out`` (default ``runs/compare/<time>``).
5. **Report**: ``report.html`` (self-contained, opens offline): the verdicts with their
   intervals, the pre-registration and its sha256, the deviations, the sample-size check.

Verdicts (per endpoint, then overall; :mod:`contextecho.stats.comparison`): *equivalent*
(within the margin: both one-sided tests reject), *improved* / *regressed* (better / worse
by more than the margin), *inconclusive* (none of these).

Exit status: 0 equivalent or improved (or ``--dry-run``: planned); 1 regressed, or the run
failed or was not confirmed (stderr says which); 2 a usage error (a flag, an unreadable or
edited plan, a deviation not allowed, a model that cannot be called), before any call;
3 inconclusive.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from ..engine.paths import runs_dir
from .confirm import confirm_run
from ..engine.record import utc_now, utc_stamp

EQUIVALENT_OR_IMPROVED, REGRESSED, USAGE, INCONCLUSIVE = 0, 1, 2, 3
#: The exit status of each overall verdict.
STATUS = {"equivalent": EQUIVALENT_OR_IMPROVED, "improved": EQUIVALENT_OR_IMPROVED, "regressed": REGRESSED,
          "inconclusive": INCONCLUSIVE}


#: This command's exit statuses (its -h), the shared ones' meanings narrowed to a verdict.
EXIT_STATUS = (f"exit status: {EQUIVALENT_OR_IMPROVED} equivalent or improved (or --dry-run: planned, nothing sent); "
               f"{REGRESSED} regressed, or the run failed or was not confirmed (stderr says which); {USAGE} a usage "
               "error before any call (a flag, an unreadable or edited plan, a deviation not allowed, a model without "
               f"its key or route); {INCONCLUSIVE} inconclusive; 130 interrupted (Ctrl-C)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXIT_STATUS
    parser.add_argument("--plan", type=Path, required=True, metavar="PLAN.json",
                        help="the plan preregister wrote (required)")
    parser.add_argument("--allow-deviation", action="append", default=[], metavar="FIELD",
                        help="run although the code now differs from the plan in FIELD (repeatable; one of "
                             "targets, judge, protocol, instruments, sessions, positions, cells, endpoints, alpha, "
                             "multiplicity, parameters); recorded in the report")
    parser.add_argument("--dry-run", action="store_true", help="check the plan, print the calls and stop; nothing "
                                                               "is sent and no key is needed")
    parser.add_argument("-y", "--yes", action="store_true", help="run without asking after the plan")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where the report and results go "
                                                                 "(default runs/compare/<time>)")
    parser.add_argument("--endpoints", help="models on OpenAI-compatible servers (as audit --endpoints; not "
                                            "registered: where a model runs does not change what it is asked)")
    parser.add_argument("--concurrency", type=int, help="calls in flight at once (default 1)")


def _fail(message: str, status: int = USAGE) -> int:
    print(f"contextecho compare: {message}", file=sys.stderr)
    return status


def parameters(args: argparse.Namespace, plan: dict, out: Path):
    """The registered parameters with the run's own (where it goes, how fast, what it may deviate in)."""
    from ..experiments import compare
    from ..experiments.parameters import coerce

    values = {k: v for k, v in plan["parameters"].items() if k in {f.name for f in dataclasses.fields(compare.Parameters)}}
    values.update(output_dir=str(out), preregistration=str(args.plan.expanduser().resolve()),
                  allow_deviation=tuple(args.allow_deviation))
    for name, value in (("endpoints", args.endpoints), ("concurrency", args.concurrency)):
        if value is not None:
            values[name] = value
    return coerce(compare.Parameters, values, where="compare")


def run(args: argparse.Namespace) -> int:
    from ..engine.calls import ModelConfigError
    from ..experiments import compare, preregistration
    from ..experiments.parameters import ParameterError

    out = (args.out or runs_dir() / "compare" / utc_stamp()).expanduser().resolve()
    try:
        plan = preregistration.read(args.plan.expanduser())
        params = parameters(args, plan, out)
        compare.plan(params)
    except (ParameterError, ModelConfigError, FileNotFoundError, ValueError) as exc:
        return _fail(str(exc))
    if args.dry_run:
        print("compare: --dry-run: the plan holds; stopped before any call")
        return 0
    if not args.yes and (declined := confirm_run("compare", "comparison", "--dry-run")) is not None:
        return declined
    try:
        compare.run(params)
    except (ParameterError, ModelConfigError) as exc:
        return _fail(str(exc))
    except Exception as exc:  # the run log says failed; the report shows what was done
        print(f"contextecho compare: the run stopped: {type(exc).__name__}: {exc}", file=sys.stderr)
        if (out / "manifest.json").is_file():
            report(params, plan, out)
        return REGRESSED
    report(params, plan, out)
    verdict = compare.overall_verdict(out)
    print(f"compare: overall verdict {verdict} (exit status {STATUS[verdict]})")
    return STATUS[verdict]


def report(params, plan: dict, out: Path) -> Path:
    """Write the comparison's report in ``out`` (the standalone page) and say where."""
    from ..experiments import compare
    from ..paper.report import write_report

    roles = params.roles()
    about = {"baseline": f"{roles['baseline'][0]} (temperature {roles['baseline'][1]:g})",
             "candidate": f"{roles['candidate'][0]} (temperature {roles['candidate'][1]:g})",
             "judge": ", ".join(params.judge_models()), "protocol": params.protocol,
             "pre-registration": f"{params.preregistration} (sha256 {plan['sha256']}, registered "
                                 f"{plan.get('registered')})",
             "deviations allowed": ", ".join(params.allow_deviation) or "none", "written": utc_now()}
    written = write_report(out, compare.TITLE, compare.REPORT, about=about, quarto=False)
    print(f"compare: report {written.path} (opens offline), results in {out / 'results'}")
    return written.path
