"""``contextecho judge-check --judge MODEL``: calibrate a judge against labelled verdicts.

The judge scores every item of the calibration set under the protocol's prompt, request and
parser, through the cached call site (:mod:`contextecho.echo.calibration`), and the command
prints n, exact and within-one agreement, quadratic-weighted kappa, Spearman's rho, the
invalid rate and the confusion matrix. ``--out DIR`` writes ``per_item.jsonl`` (each item's
verdict, parsed score and status) and ``summary.json`` (the metrics). Exit status 0 when the
judge is calibrated (kappa >= 0.60 and at most 10 % invalid verdicts; the reason is in the
module doc of :mod:`contextecho.echo.calibration`), 1 when it is not, 2 when the labelled set
or the model cannot be used (before any call).

``--rubric axes`` calibrates the behavioural-axes judge instead
(:mod:`contextecho.experiments.axes_calibration`): HELD/DEVIATED on the labelled turns of
``data/axes_labels/axes_labels.jsonl`` (or ``--labels``), asked through the anchor notebook's
request builder and verdict reader; it prints n, the invalid rate, agreement, Cohen's kappa and
the confusion matrix, under the same threshold and exit statuses.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from ..experiments.anchor_axes import axes_judge_params
from ..experiments.axes_calibration import AXES_LABELS, CATEGORIES, calibrate_axes, read_axes_labels
from ..echo.calibration import MAX_INVALID_RATE, MIN_KAPPA, Calibration, LabelsError, calibrate, calibration_set
from ..echo.reference.judge import JUDGE_MAX_TOKENS
from ..echo.protocols import PROTOCOLS
from ..engine.calls import ModelConfigError, Transport, check_routes
from ..engine.endpoints import EndpointError, parse_endpoints


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", required=True, metavar="MODEL", help="the judge's LiteLLM model string")
    parser.add_argument("--rubric", default="score", choices=list(RUBRICS),
                        help="score: the 0-3 drift rubric (default); axes: ANCHOR's HELD/DEVIATED behavioural axes")
    parser.add_argument("--protocol", default="reference", choices=list(PROTOCOLS.names()),
                        help="whose judge prompt, request and parser (default reference; the 0-3 rubric only)")
    parser.add_argument("--labels", type=Path, default=None, metavar="FILE.jsonl",
                        help="a labelled set, one {probe_id, probe, response, score} object per line "
                             "(default: the protocol's prompt examples and data/judge_labels/probe_responses.jsonl); "
                             "under --rubric axes one {id, axis, user, turn, label, note} object per line "
                             f"(default: {AXES_LABELS.relative_to(AXES_LABELS.parents[2])})")
    parser.add_argument("--max-tokens", type=int, default=None, metavar="N",
                        help="the judge's token budget (default: the protocol's, 400 under reference; "
                             f"{JUDGE_MAX_TOKENS} under --rubric axes, the anchor notebook's at paper scale)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write per_item.jsonl and summary.json here")
    parser.add_argument("--endpoint", action="append", default=[], metavar="MODEL=API_BASE[|API_BASE...][#KEY_ENV]",
                        help="the judge on an OpenAI-compatible server (repeatable)")
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight at once (default 1)")


def _number(value: float, digits: int = 3) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


#: What ``--rubric`` names: the 0-3 drift rubric, or the behavioural axes.
RUBRICS = ("score", "axes")


def run(args: argparse.Namespace) -> int:
    axes = getattr(args, "rubric", "score") == "axes"
    try:
        proto = PROTOCOLS.get(args.protocol)
        items = read_axes_labels(args.labels or AXES_LABELS) if axes else calibration_set(proto, args.labels)
        transport = Transport(concurrency=max(1, args.concurrency), endpoints=parse_endpoints(args.endpoint))
        check_routes([args.judge], transport)
    except (LabelsError, EndpointError, ModelConfigError, ValueError) as exc:
        print(f"judge-check: {exc}")
        return 2
    if args.max_tokens is not None and args.max_tokens < 1:
        print("judge-check: --max-tokens must be at least 1")
        return 2
    if axes:
        print(f"judge-check: {args.judge} on the behavioural axes, {len(items)} labelled turns")
        result = calibrate_axes(args.judge, items, params=axes_judge_params(args.judge, args.max_tokens or JUDGE_MAX_TOKENS),
                                transport=transport)
        _print_axes(result)
    else:
        print(f"judge-check: {args.judge} under protocol {args.protocol!r} on {len(items)} labelled responses")
        result = calibrate(args.judge, items, protocol=proto, max_tokens=args.max_tokens, transport=transport)
        _print_scores(result)
    if args.out is not None:
        _write(result, args.out)
    return 0 if result.passed else 1


def _print_counts(result: Calibration) -> None:
    a = result.agreement
    print(f"  n {a.n}   valid {a.n_valid}   invalid {a.n_invalid} ({100 * a.invalid_rate:.1f}%)")


def _print_verdict(result: Calibration, kappa: str) -> None:
    print(f"  {result.verdict.upper()} (threshold: {kappa} >= {MIN_KAPPA:.2f} and invalid "
          f"<= {100 * MAX_INVALID_RATE:.0f}%); calls {result.counts.calls}, cached {result.counts.cached}")


def _print_axes(result: Calibration) -> None:
    a = result.agreement
    names = {v: k for k, v in CATEGORIES.items()}
    _print_counts(result)
    print(f"  agreement {_number(a.exact)}   Cohen's kappa {_number(a.kappa)}")
    print("  confusion (rows: label, columns: verdict " + ", ".join(names[c] for c in a.categories) + ")")
    for label, row in zip(a.categories, a.confusion):
        print(f"    {names[label]:>8}: " + " ".join(f"{v:4d}" for v in row))
    _print_verdict(result, "kappa")


def _print_scores(result: Calibration) -> None:
    a = result.agreement
    _print_counts(result)
    print(f"  exact {_number(a.exact)}   within-one {_number(a.within_one)}   "
          f"quadratic kappa {_number(a.kappa_quadratic)}   Spearman rho {_number(a.spearman)}")
    print("  confusion (rows: label 0-3, columns: verdict 0-3)")
    for label, row in zip(a.categories, a.confusion):
        print(f"    {label}: " + " ".join(f"{v:4d}" for v in row))
    _print_verdict(result, "quadratic kappa")


def _write(result: Calibration, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "per_item.jsonl").open("w", encoding="utf-8") as f:
        for row in result.items:
            score = row["score"]
            f.write(json.dumps({**row, "score": None if isinstance(score, float) and math.isnan(score)
                                else score}, ensure_ascii=False) + "\n")
    (out / "summary.json").write_text(json.dumps(result.summary(), indent=1, default=str) + "\n")
    print(f"  wrote {out / 'per_item.jsonl'} and {out / 'summary.json'}")
