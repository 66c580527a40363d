"""``contextecho paraphrases --model MODEL``: write the CAPE items' candidate paraphrases for review.

The paraphrasing factor (CAPE §3.1, item 6) asks every item in two other wordings. This
command asks ``MODEL`` for two paraphrases of every item of the inventory through the cached
call site (:func:`contextecho.cape.paraphrase.generate_paraphrases`: a rerun is free) and
writes the review file: one row per item, the original beside its two paraphrases and an
empty ``review`` column. A person reads it, fixes a paraphrase in place or writes
``rejected`` in ``review``; the ``cape`` notebook then reads it (its ``paraphrases``
parameter, or this default path of the model) and records the file's sha256.

An existing review file is never overwritten (a review would be lost) unless ``--force``.
Exit status 0 when every item has both paraphrases, 1 when some could not be read (listed:
review them by hand), 2 when nothing could be asked.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..cape.inventory import load_inventory
from ..cape.paraphrase import generate_paraphrases, paraphrase_path, write_paraphrases
from ..engine.cache import CallCache
from ..engine.calls import ModelConfigError, Transport, check_routes
from ..engine.endpoints import EndpointError, parse_endpoints
from ..sessions.corpus import sha256_file


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="the LiteLLM model string that writes the paraphrases (the paper: GPT-4)")
    parser.add_argument("--inventory", default="mpi_120", metavar="NAME|FILE.csv",
                        help="the inventory whose items are paraphrased (default mpi_120)")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE.csv",
                        help="the review file (default data/mpi/paraphrases/<inventory>__<model>.csv, "
                             "git-ignored: it holds the items' text)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing review file")
    parser.add_argument("--endpoint", action="append", default=[], metavar="MODEL=API_BASE[|API_BASE...][#KEY_ENV]",
                        help="the model on an OpenAI-compatible server (repeatable)")
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight at once (default 1)")


def run(args: argparse.Namespace) -> int:
    try:
        inventory = load_inventory(args.inventory)
        transport = Transport(concurrency=max(1, args.concurrency), endpoints=parse_endpoints(args.endpoint))
        check_routes([args.model], transport)
    except (EndpointError, ModelConfigError, FileNotFoundError, ValueError) as exc:
        print(f"paraphrases: {exc}")
        return 2
    path = args.out or paraphrase_path(inventory, args.model)
    if path.exists() and not args.force:
        print(f"paraphrases: {path} exists (it may hold a review); --force overwrites it")
        return 2
    print(f"paraphrases: {len(inventory.items)} items of {inventory.name} by {args.model}")
    with CallCache() as cache:
        table = generate_paraphrases(inventory, args.model, cache=cache, transport=transport, progress=True)
    write_paraphrases(table, path)
    unread = table[table["status"] != "ok"]
    print(f"wrote {path} (sha256 {sha256_file(path)[:12]}): {len(table) - len(unread)} items with both "
          f"paraphrases, {len(unread)} without")
    for row in unread.itertuples():
        print(f"  item {row.item}: {row.status}; write its two paraphrases by hand or mark it rejected")
    print("next: review the file (fix a paraphrase in place, or write 'rejected' in its review column), then run "
          f"the cape notebook with factors including paraphrasing (parameter paraphrases={path} if you moved it)")
    return 1 if len(unread) else 0
