"""``python -m contextecho preregister``: fix a comparison of two model releases before any call.

Writes the plan file ``compare --plan`` is held to (:mod:`contextecho.experiments.preregistration`):
the targets (``--baseline``, ``--candidate``, each with its temperature), the judge and its
calibration threshold, the protocol and the sha256 of each of its instruments, the sessions
(by sha256) and positions, the cells each target is asked (count and sha256), the endpoints
(the drift gap's and the S2 compliance gap's difference candidate − baseline) with their
equivalence margins (``--drift-margin``, default ±0.08 judge points, the seed's TOST margin;
``--s2-margin``, default ±10 percentage points), alpha (0.05), Holm over the endpoints, and the
plan's own sha256. Nothing is sent: a provider model needs no key to be registered.

``--pilot DIR`` (an earlier ``compare`` run's folder) adds the sample-size plan: from the
pilot's unit differences, split into their variance between and within sessions, the sessions
a decisive verdict at the margin needs with the positions, items and samples registered
(:mod:`contextecho.stats.sample_size`), printed with its assumptions and kept in the plan.

Exit status: 0 the plan was written; 2 a usage error (a flag or parameter, a session that
cannot be read, a pilot without results), before anything is written.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..engine.paths import runs_dir
from ..engine.record import utc_stamp

#: The parameters a flag sets (``-p`` may not set them again).
FLAGS = {"sessions": "--sessions/--session", "baseline": "--baseline", "candidate": "--candidate",
         "candidate_temperature": "--candidate-temperature", "judges": "--judge", "size": "--quick/--full",
         "protocol": "--protocol", "drift_margin": "--drift-margin", "s2_margin": "--s2-margin", "alpha": "--alpha",
         "targets": "--baseline/--candidate", "preregistration": "--out", "output_dir": "(compare --out)"}


def configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--sessions", type=Path, metavar="DIR", help="a folder of Claude Code / Codex CLI transcripts")
    source.add_argument("--session", type=Path, metavar="FILE", help="one transcript file")
    parser.add_argument("--baseline", help="the release in use, a LiteLLM model string (default: the embedded "
                                           "local/smollm2-135m)")
    parser.add_argument("--candidate", help="the release to compare with it (default: the baseline)")
    parser.add_argument("--candidate-temperature", type=float, metavar="T",
                        help="the candidate's temperature (default: the baseline's, -p temperature)")
    parser.add_argument("--judge", help="the judge (default: the baseline)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="size", action="store_const", const="quick",
                      help="3 positions a session, the Coding-Self probes, one S2 wording (default)")
    size.add_argument("--full", dest="size", action="store_const", const="full",
                      help="every probe, every position, the S2 stressor's ten wordings")
    parser.add_argument("--protocol", help="reference (the default) or contextecho")
    parser.add_argument("--drift-margin", type=float, metavar="POINTS",
                        help="equivalence margin of the drift gap's difference (default 0.08 judge points)")
    parser.add_argument("--s2-margin", type=float, metavar="PP",
                        help="equivalence margin of the S2 compliance gap's difference (default 10 pp)")
    parser.add_argument("--alpha", type=float, help="level of each one-sided test (default 0.05; Holm over the "
                                                    "endpoints)")
    parser.add_argument("--pilot", type=Path, metavar="DIR",
                        help="an earlier compare run's folder: add the sample-size plan from its variance")
    parser.add_argument("--out", type=Path, metavar="PLAN",
                        help="the plan file to write (default runs/compare/preregistration-<time>.json)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                        help="any other parameter of the comparison (repeatable), e.g. -p n_sessions 5 "
                             "-p samples 3 -p window 12000")


def _fail(message: str) -> int:
    print(f"contextecho preregister: {message}", file=sys.stderr)
    return 2


def parameters(args: argparse.Namespace, out: Path):
    """The comparison's parameters from the flags (:class:`~contextecho.experiments.parameters.ParameterError`
    on a bad one)."""
    from ..experiments import compare
    from ..experiments.parameters import ParameterError, coerce

    values = dict(args.parameter)
    twice = sorted(set(values) & set(FLAGS))
    if twice:
        raise ParameterError(f"set {', '.join(twice)} with {', '.join(FLAGS[k] for k in twice)}, not with -p")
    given = args.sessions or args.session
    if not given.expanduser().exists():
        raise ParameterError(f"{'--sessions' if args.sessions else '--session'}: {given} does not exist")
    values["sessions"] = str(given.expanduser().resolve())
    baseline = args.baseline or compare.Parameters.baseline
    values.update(baseline=baseline, candidate=args.candidate or baseline, judges=args.judge or baseline,
                  preregistration=str(out))
    for name, value in (("candidate_temperature", args.candidate_temperature), ("size", args.size),
                        ("protocol", args.protocol), ("drift_margin", args.drift_margin),
                        ("s2_margin", args.s2_margin), ("alpha", args.alpha)):
        if value is not None:
            values[name] = value
    return compare.with_targets(coerce(compare.Parameters, values, where="preregister"))


def run(args: argparse.Namespace) -> int:
    from ..experiments import compare, preregistration
    from ..experiments.parameters import ParameterError

    out = (args.out or runs_dir() / "compare" / f"preregistration-{utc_stamp()}.json").expanduser().resolve()
    try:
        params = parameters(args, out)
        chosen = compare.sessions(params)
        registered = preregistration.register(params, chosen)
        if args.pilot is not None:
            registered["sample_size"] = pilot_plan(args.pilot, params, registered)
    except (ParameterError, FileNotFoundError, ValueError) as exc:
        return _fail(str(exc))
    plan = preregistration.write(out, registered)
    cells = plan["cells"]
    print(f"preregister: {len(plan['sessions'])} session(s), {len(plan['positions'])} position(s), "
          f"{cells['baseline']['n']} cells per target ({', '.join(cells['items'])}; {cells['samples']} sample(s))")
    for e in plan["endpoints"]:
        print(f"preregister: endpoint {e['name']}: margin ±{e['margin']:g} {e['unit']}")
    print(f"preregister: baseline {plan['targets']['baseline']}, candidate {plan['targets']['candidate']}, "
          f"judge {plan['judge']['model']}; alpha {plan['alpha']}, {plan['multiplicity']}")
    print(f"preregister: plan {out} (sha256 {plan['sha256']}); nothing was sent. "
          f"Next: python -m contextecho compare --plan {out}")
    return 0


def pilot_plan(folder: Path, params, registered: dict) -> list[dict]:
    """The sample-size plan of each endpoint from a pilot run's unit differences (module doc), printed."""
    import pandas as pd

    from ..experiments.compare import margin_of
    from ..experiments.parameters import ParameterError
    from ..stats.errors import StatsInputError
    from ..stats.sample_size import sessions_needed
    from ..stats.variance import variance_decomposition

    path = folder.expanduser() / "results" / "units.parquet"
    if not path.is_file():
        raise ParameterError(f"--pilot: {path} does not exist (give the folder of an earlier compare run)")
    units = pd.read_parquet(path)
    n_sessions = max(1, len(registered["sessions"]))
    rows = []
    for spec in registered["endpoints"]:
        mine = units[units["endpoint"] == spec["name"]]
        per_session = max(1, registered["cells"]["units"][spec["name"]] // n_sessions)
        try:
            parts = variance_decomposition(mine, value="d", group="session")
        except StatsInputError as exc:  # no spread (every unit alike), fewer than 2 sessions
            print(f"preregister: sample size, {spec['name']}: the pilot gives no variance to plan from ({exc})")
            rows.append({"endpoint": spec["name"], "pilot": str(folder), "note": f"no variance to plan from: {exc}"})
            continue
        plan = sessions_needed(parts.sigma2_between, parts.sigma2_within, per_session,
                               margin=margin_of(params, spec["name"]), alpha=params.alpha, power=params.power,
                               n_endpoints=len(registered["endpoints"]))
        print(f"preregister: sample size, {spec['name']}: {plan.sessions} sessions at {per_session} units a session "
              f"(at least {plan.floor} however many positions); registered: {n_sessions}")
        for line in plan.assumptions:
            print(f"preregister:   assuming {line}")
        rows.append({"endpoint": spec["name"], "sessions_needed": plan.sessions, "floor": plan.floor,
                     "units_per_session": per_session, "sigma2_between": plan.sigma2_between,
                     "sigma2_within": plan.sigma2_within, "power": plan.power, "pilot": str(folder),
                     "assumptions": list(plan.assumptions)})
    return rows
