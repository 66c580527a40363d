"""``contextecho judge-check --judge MODEL``: calibrate a judge against labelled verdicts.

The judge scores every item of the calibration set under the protocol's prompt, request and
parser, through the cached call site (:mod:`contextecho.echo.calibration`), and the command
prints n, exact and within-one agreement, quadratic-weighted kappa, Spearman's rho, the
invalid rate and the confusion matrix. ``--out DIR`` writes ``per_item.jsonl`` (each item's
verdict, parsed score and status) and ``summary.json`` (the metrics). Exit status 0 when the
judge is calibrated (kappa >= 0.60 and at most 10 % invalid verdicts; the reason is in the
module doc of :mod:`contextecho.echo.calibration`), 1 when it is not, 2 when the labelled set
or the model cannot be used (before any call).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from ..echo.calibration import MAX_INVALID_RATE, MIN_KAPPA, LabelsError, calibrate, calibration_set
from ..echo.protocols import PROTOCOLS
from ..engine.calls import ModelConfigError, Transport, check_routes
from ..engine.endpoints import EndpointError, parse_endpoints


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", required=True, metavar="MODEL", help="the judge's LiteLLM model string")
    parser.add_argument("--protocol", default="reference", choices=list(PROTOCOLS.names()),
                        help="whose judge prompt, request and parser (default reference)")
    parser.add_argument("--labels", type=Path, default=None, metavar="FILE.jsonl",
                        help="a labelled set, one {probe_id, probe, response, score} object per line "
                             "(default: the protocol's prompt examples and data/judge_labels/probe_responses.jsonl)")
    parser.add_argument("--max-tokens", type=int, default=None, metavar="N",
                        help="the judge's token budget (default: the protocol's, 400 under reference)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write per_item.jsonl and summary.json here")
    parser.add_argument("--endpoint", action="append", default=[], metavar="MODEL=API_BASE[|API_BASE...][#KEY_ENV]",
                        help="the judge on an OpenAI-compatible server (repeatable)")
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight at once (default 1)")


def _number(value: float, digits: int = 3) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def run(args: argparse.Namespace) -> int:
    try:
        proto = PROTOCOLS.get(args.protocol)
        items = calibration_set(proto, args.labels)
        transport = Transport(concurrency=max(1, args.concurrency), endpoints=parse_endpoints(args.endpoint))
        check_routes([args.judge], transport)
    except (LabelsError, EndpointError, ModelConfigError, ValueError) as exc:
        print(f"judge-check: {exc}")
        return 2
    if args.max_tokens is not None and args.max_tokens < 1:
        print("judge-check: --max-tokens must be at least 1")
        return 2
    print(f"judge-check: {args.judge} under protocol {args.protocol!r} on {len(items)} labelled responses")
    result = calibrate(args.judge, items, protocol=proto, max_tokens=args.max_tokens, transport=transport)
    a = result.agreement
    print(f"  n {a.n}   valid {a.n_valid}   invalid {a.n_invalid} ({100 * a.invalid_rate:.1f}%)")
    print(f"  exact {_number(a.exact)}   within-one {_number(a.within_one)}   "
          f"quadratic kappa {_number(a.kappa_quadratic)}   Spearman rho {_number(a.spearman)}")
    print("  confusion (rows: label 0-3, columns: verdict 0-3)")
    for label, row in zip(a.categories, a.confusion):
        print(f"    {label}: " + " ".join(f"{v:4d}" for v in row))
    print(f"  {result.verdict.upper()} (threshold: quadratic kappa >= {MIN_KAPPA:.2f} and invalid "
          f"<= {100 * MAX_INVALID_RATE:.0f}%); calls {result.counts.calls}, cached {result.counts.cached}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / "per_item.jsonl").open("w", encoding="utf-8") as f:
            for row in result.items:
                score = row["score"]
                f.write(json.dumps({**row, "score": None if isinstance(score, float) and math.isnan(score)
                                    else score}, ensure_ascii=False) + "\n")
        (args.out / "summary.json").write_text(json.dumps(result.summary(), indent=1, default=str) + "\n")
        print(f"  wrote {args.out / 'per_item.jsonl'} and {args.out / 'summary.json'}")
    return 0 if result.passed else 1
