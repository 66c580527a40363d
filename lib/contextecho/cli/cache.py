"""``contextecho cache``: what the call cache holds, and what it could not read.

It only reads: journals of dead writers are read, not adopted, and nothing is deleted
(the next run that writes adopts them)."""
from __future__ import annotations

import argparse
import warnings
from collections import Counter

from ..engine.cache import CacheWarning, CallCache
from ..engine.paths import cache_dir


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", default=None, help=f"cache folder (default {cache_dir()})")


def run(args: argparse.Namespace) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheWarning)
        cache = CallCache(args.dir, read_only=True)
    table = cache.to_table(include_errors=True).to_pandas()
    report = cache.report
    print(f"cache: {cache.root}")
    print(f"  shards {report.shards}, journals {report.journals} "
          f"(read, not adopted: the next run that writes adopts those of dead writers)")
    print(f"  records {len(cache)} ok, {cache.n_errors} failing (retried on the next run), "
          f"{report.duplicate_records} duplicate records read once")
    if len(table):
        per_model = table.groupby(["model", "status"]).size().unstack(fill_value=0)
        tokens = table.groupby("model")[["prompt_tokens", "completion_tokens"]].sum()
        print(per_model.join(tokens).to_string())
        errors = Counter(table.loc[table.status == "error", "error_type"])
        if errors:
            print("  errors by type: " + ", ".join(f"{k} {v}" for k, v in errors.most_common()))
    for warning in caught:
        print(f"  WARNING {warning.message}")
    return 1 if report.bad_shards else 0
