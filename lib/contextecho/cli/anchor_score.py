"""``contextecho anchor-score``: score ANCHOR banks (ANCHOR's released layout) with a model.

Every bank is loaded and validated before the first call, so a bad file stops the run
before any compute. Each bank's files go to ``<out>/<bank_id>/``. Exit status: 0 every
bank complete, 1 a bank failed on provider errors (its files say which), 2 bad input.
"""
from __future__ import annotations

import argparse
import sys

from ..anchor.banks.bank import BankError, bank_dirs, load_bank
from ..anchor.banks.window import BANK_CONTEXTS, DEFAULT_LIMIT
from ..anchor.banks.scorer import DEFAULT_PARAMS, BankRunFailed, score_bank
from ..engine.cache import CallCache
from ..engine.calls import ModelConfigError, Transport, retry_errors_everywhere
from ..engine.paths import cache_dir


def _at_least(minimum: int):
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    return parse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bank", action="append", required=True, metavar="DIR",
                        help="a bank (persona_card.json, transcript.jsonl, items.jsonl), a folder of "
                             "banks, or ANCHOR's release root (data/examples/<bank>/); repeatable")
    parser.add_argument("--model", required=True, help="a LiteLLM model string, e.g. openai/gpt-4o-mini")
    parser.add_argument("--out", required=True, metavar="DIR", help="write <out>/<bank_id>/{per_item.jsonl,"
                        "summary.json,run_manifest.json}")
    parser.add_argument("--condition", choices=BANK_CONTEXTS, default="causal",
                        help="causal: history up to the item's source session; none: card and question "
                             "only (blind filter). Default causal")
    parser.add_argument("--limit", type=_at_least(0), default=DEFAULT_LIMIT, metavar="CHARS",
                        help=f"characters of history kept, most recent first (default {DEFAULT_LIMIT}; "
                             "0 for no limit)")
    parser.add_argument("--temperature", type=float, default=DEFAULT_PARAMS["temperature"],
                        help=f"sampling temperature (default {DEFAULT_PARAMS['temperature']})")
    parser.add_argument("--max-tokens", type=_at_least(1), default=DEFAULT_PARAMS["max_tokens"],
                        help=f"tokens to generate at most (default {DEFAULT_PARAMS['max_tokens']})")
    parser.add_argument("--allow-errors", action="store_true",
                        help="record provider errors and score the rest (errors never count as wrong); "
                             "by default any error fails the bank's run")
    parser.add_argument("--api-base", help="an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    parser.add_argument("--cache", metavar="DIR", help=f"call cache folder (default {cache_dir()})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (the summary lines still print)")
    parser.add_argument("--retry-errors", action="store_true",
                        help="call again the requests whose stored error is permanent (authentication, bad request, not found); by default they are skipped and counted in the manifest")


def _fail(message: str) -> int:
    print(f"contextecho anchor-score: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    if args.retry_errors:
        retry_errors_everywhere()
    try:
        banks = [load_bank(path) for spec in args.bank for path in bank_dirs(spec)]
    except BankError as exc:
        return _fail(str(exc))
    ids = [b.bank_id for b in banks]
    if len(set(ids)) < len(ids):
        return _fail(f"two banks share an id (their folder name): {sorted(ids)}")
    params = {"temperature": args.temperature, "max_tokens": args.max_tokens}
    status = 0
    with CallCache(args.cache) as cache:
        for bank in banks:
            out = f"{args.out}/{bank.bank_id}"
            try:
                result = score_bank(bank, args.model, out, condition=args.condition, limit=args.limit or None,
                                    params=params, allow_errors=args.allow_errors, cache=cache,
                                    transport=Transport(api_base=args.api_base), progress=not args.quiet)
            except ModelConfigError as exc:
                return _fail(str(exc))
            except BankRunFailed as exc:
                print(f"{bank.bank_id}: FAILED, {exc.run.manifest['failure_reason']} -> {out}")
                status = 1
                continue
            s = result.summary
            accuracy = "n/a" if s["accuracy"] is None else f"{s['accuracy']:.3f}"
            print(f"{bank.bank_id}: accuracy {accuracy} ({s['n_correct']}/{s['n_scored']}; "
                  f"unparsed {s['n_unparsed']}, errors {s['n_errors']}; chance {s['chance']:.2f}) "
                  f"model {args.model}, condition {args.condition} -> {out}")
    return status
