"""``python -m contextecho audit``: your own sessions and model, from transcripts to a report.

1. **In**: the sessions (``--sessions DIR`` of transcripts, ``--session FILE``, or by
   default your own, imported from ``~/.claude/projects`` and ``~/.codex/sessions`` by
   ``import-sessions``, redacted, into ``data/own_sessions``), the target (``--model``, a
   LiteLLM model string; ``--endpoints`` for a model on a server), the judge (``--judge``,
   default the target), the size (``--quick``, the default, or ``--full``) and the protocol.
2. **Plan**, before any call: the sessions and positions chosen, then per batch and model the
   calls, those the cache already holds, the prompt and completion tokens, the cost from
   LiteLLM's price map and the time at ``--concurrency`` (:func:`contextecho.experiments.audit.plan`:
   the audit's stages with nothing sent). ``--plan`` stops here.
3. **Run**, once confirmed (``--yes`` skips the question; without a terminal to ask on, it is
   required): :mod:`contextecho.experiments.audit`, through the cache and run log the
   notebooks use (a rerun resumes), into ``--out`` (default ``runs/audit/<time>``).
4. **Report**: ``report.html`` in that folder (:mod:`contextecho.paper.report`), written
   whether the run completed or stopped, beside the per-cell Parquet.

Exit status: 0 done (or planned), 1 the run failed or was not confirmed, 2 a usage error
(a flag or parameter, no session to audit, a model that cannot be called), before any call.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..engine.paths import data_dir, runs_dir
from .confirm import confirm_run
from ..engine.record import utc_now, utc_stamp
from ..experiments.parameters import ParameterError

#: The parameters a flag sets (``-p`` may not set them again).
FLAGS = {"sessions": "--sessions/--session", "targets": "--model", "judges": "--judge", "size": "--quick/--full",
         "protocol": "--protocol", "endpoints": "--endpoints", "concurrency": "--concurrency",
         "output_dir": "--out", "plan": "--plan"}


def configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--sessions", type=Path, metavar="DIR",
                        help="a folder of Claude Code / Codex CLI transcripts (default: import your own from "
                             "~/.claude/projects and ~/.codex/sessions, redacted, into data/own_sessions)")
    source.add_argument("--session", type=Path, metavar="FILE", help="one transcript file")
    parser.add_argument("--model", help="the target: a LiteLLM model string, e.g. openai/gpt-4o-mini or "
                                        "hosted_vllm/<name> with --endpoints (default: the embedded local/smollm2-135m)")
    parser.add_argument("--judge", help="the judge, a LiteLLM model string (default: the target)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="size", action="store_const", const="quick",
                      help="the intake check (default): 3 positions a session, the Coding-Self probes, one S2 "
                           "wording, the A-anchor at the last step; about 30 probe cells a session")
    size.add_argument("--full", dest="size", action="store_const", const="full",
                      help="the panel grid: every probe, every position (start, deciles, pre/post each "
                           "compaction), the S2 stressor's ten wordings")
    parser.add_argument("--protocol", help="reference (the authors' harness, the default; Claude Code sessions) or "
                                           "contextecho (ours; Claude Code and Codex CLI)")
    parser.add_argument("--endpoints", help="models on OpenAI-compatible servers: MODEL=API_BASE[|API_BASE...][#KEY_ENV], "
                                            "comma-separated (README: Using a real provider)")
    parser.add_argument("--concurrency", type=int, help="calls in flight at once (default 1)")
    parser.add_argument("--plan", action="store_true", help="print the plan (calls, tokens, cost, time) and stop; "
                                                             "nothing is sent and no key is needed")
    parser.add_argument("-y", "--yes", action="store_true", help="run without asking after the plan")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where the report and results go "
                                                                 "(default runs/audit/<time>)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                        help="any other parameter of the audit (repeatable), e.g. -p n_sessions 5 -p window 12000")
    parser.add_argument("--claude-dir", type=Path, default=Path("~/.claude/projects"),
                        help="where the default import reads Claude Code sessions (default: ~/.claude/projects)")
    parser.add_argument("--codex-dir", type=Path, default=Path("~/.codex/sessions"),
                        help="where the default import reads Codex CLI sessions (default: ~/.codex/sessions)")
    parser.add_argument("--redact-term", action="append", default=[], metavar="TEXT",
                        help="for the default import: an extra string to redact (repeatable)")


def _fail(message: str, status: int = 2) -> int:
    print(f"contextecho audit: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    from ..engine.calls import ModelConfigError
    from ..experiments import audit

    values = {k: v for k, v in dict(args.parameter).items()}
    twice = sorted(set(values) & set(FLAGS))
    if twice:
        return _fail(f"set {', '.join(twice)} with {', '.join(FLAGS[k] for k in twice)}, not with -p")
    out = (args.out or runs_dir() / "audit" / utc_stamp()).expanduser().resolve()
    values["output_dir"] = str(out)
    for name, value in (("targets", args.model), ("size", args.size), ("protocol", args.protocol),
                        ("endpoints", args.endpoints), ("concurrency", args.concurrency)):
        if value is not None:
            values[name] = value
    values["judges"] = args.judge or (args.model.split(",")[0] if args.model else audit.Parameters.judges[0])
    given = args.sessions or args.session
    if given is not None:
        if not given.expanduser().exists():
            return _fail(f"{'--sessions' if args.sessions else '--session'}: {given} does not exist")
        values["sessions"] = str(given.expanduser().resolve())
    try:
        params = _parameters(audit.Parameters, values)
    except ParameterError as exc:
        return _fail(str(exc))
    if given is None:
        imported = import_own(args)
        if not imported.is_dir():
            return _fail(f"no session to audit: nothing was imported from {args.claude_dir} or {args.codex_dir}; "
                         "give --sessions DIR or --session FILE")
        values["sessions"] = str(imported)
        params = _parameters(audit.Parameters, values)
    try:
        audit.plan(params)
    except (ParameterError, ModelConfigError, FileNotFoundError, ValueError) as exc:
        return _fail(str(exc))
    if args.plan:
        print("audit: --plan: stopped before any call")
        return 0
    if not args.yes and (declined := confirm_run("audit", "audit", "--plan")) is not None:
        return declined
    status = 0
    try:
        audit.run(params)
    except (ParameterError, ModelConfigError) as exc:  # a key unset since the plan, say
        return _fail(str(exc))
    except Exception as exc:  # the run log says failed; the report shows what was done
        print(f"contextecho audit: the run stopped: {type(exc).__name__}: {exc}", file=sys.stderr)
        status = 1
    finally:
        if (out / "manifest.json").is_file():
            report(params, out)
    return status


def _parameters(spec, values):
    from ..experiments.parameters import coerce

    return coerce(spec, values, where="audit")


def import_own(args: argparse.Namespace) -> Path:
    """The default input: ``import-sessions`` of ``--claude-dir`` and ``--codex-dir`` into
    ``data/own_sessions`` (redacted; a file it cannot import is named and skipped)."""
    from . import import_sessions

    dest = data_dir() / "own_sessions"
    print(f"audit: importing your sessions from {args.claude_dir} and {args.codex_dir} into {dest} (redacted)")
    import_sessions.run(argparse.Namespace(claude_dir=args.claude_dir, codex_dir=args.codex_dir, dest=dest,
                                           redact_term=list(args.redact_term), dry_run=False))
    return dest


def report(params, out: Path) -> Path:
    """Write the audit's report in ``out`` and say where."""
    from ..experiments import audit
    from ..paper.report import write_report

    about = {"target": ", ".join(params.targets), "judge": ", ".join(params.judge_models()),
             "protocol": params.protocol, "size": params.size, "sessions": str(params.source),
             "written": utc_now()}
    written = write_report(out, audit.TITLE, audit.REPORT, about=about)
    if written.message:
        print(f"audit: {written.message}; the standalone page is the report", file=sys.stderr)
    print(f"audit: report {written.path} ({written.renderer}; opens offline), results in {out / 'results'}")
    return written.path
