"""``python -m contextecho released``: the authors' released per-cell dataset, fetched and verified.

``released fetch`` downloads one revision of the Hugging Face dataset
``contextecho2026/persona-drift-contextecho`` into ``data/released/<revision>`` (git-ignored;
a rerun resumes), or with ``--from DIR`` uses a copy made on another machine (linked, not
copied). It then checks the tree against the checksum lists it ships, counts its cells and
sessions next to the paper's counts for that revision, and writes a receipt beside the tree.
``released status`` prints the receipts.

Exit status: 0 when the tree is verified, or as verified as its own lists allow (files no
list covers, or no list at all, are said); 1 when a file fails its sha256 or a listed file is
absent; 2 when nothing could be fetched (huggingface.co unreachable, a bad folder).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from ..echo.reference.release_fetch import (RELEASE_REPO, Receipt, ReleaseError, ReleaseUnreachable,
                                            download_release, link_release, make_receipt, read_receipt,
                                            receipt_path)
from ..engine.paths import released_dir
from ..paper.published import PublishedError, load_published

DEFAULT_REVISION = "v1.0"
#: The published numbers that state each revision's counts (data/published/numbers.jsonl).
PAPER_COUNTS = {"v1.0": {"cells": "appW.v1.n_cells", "sessions": "appW.v1.n_sessions"},
                "v2.0": {"cells": "appW.v2.n_cells", "sessions": "appW.v2.n_sessions"}}
UNREACHABLE = ("huggingface.co cannot be reached from this machine; fetch on a connected machine "
               "and pass --from DIR")


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = sub.add_parser("fetch", help="download (or link) a revision, verify it and write its receipt",
                           description=f"Download a revision of the Hugging Face dataset {RELEASE_REPO} "
                                       "(resumable), or link a copy made elsewhere; verify it against the "
                                       "checksum lists it ships; count its cells and sessions; write a receipt.")
    fetch.add_argument("--revision", default=DEFAULT_REVISION, metavar="REV",
                       help=f"tag, branch or commit of the dataset (default {DEFAULT_REVISION}; v2.0 is the "
                            "57-session corpus)")
    fetch.add_argument("--dir", type=Path, default=None, metavar="DIR",
                       help="where the tree goes (default data/released/<REV>, git-ignored); the receipt is "
                            "written beside it as DIR.receipt.json")
    fetch.add_argument("--from", dest="source", type=Path, default=None, metavar="DIR",
                       help="use a copy already on this machine (its root holds results/ and data/): DIR is "
                            "linked as the tree, not copied, and nothing is downloaded")
    fetch.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                       help="how long to wait for huggingface.co to answer before giving up (default 10)")
    status = sub.add_parser("status", help="print the receipt of a fetched tree",
                            description="Print the receipt of a fetched tree: revision, source, when, counts, "
                                        "verification.")
    status.add_argument("--dir", type=Path, default=None, metavar="DIR",
                        help="the tree whose receipt is printed (default: every tree under data/released/)")
    status.add_argument("--all", action="store_true",
                        help="list every file behind each problem, not the first ten")


def _expected(revision: str) -> dict[str, int] | None:
    ids = PAPER_COUNTS.get(revision)
    if ids is None:
        return None
    try:
        numbers = {n.id: n for n in load_published()}
    except PublishedError as exc:
        print(f"released: the paper's counts are not compared ({exc})", file=sys.stderr)
        return None
    return {key: int(numbers[i].value) for key, i in ids.items() if i in numbers}


def _print(receipt: Receipt, *, limit: int = 10) -> None:
    commit = f" (commit {receipt.commit})" if receipt.commit else ""
    print(f"{receipt.tree}: {receipt.repo}@{receipt.revision}{commit}")
    print(f"  from {receipt.source}, {receipt.when}")
    for line in receipt.count_lines() + receipt.verification.lines(limit=limit):
        print(f"  {line}")


def _fetch(args: argparse.Namespace) -> int:
    dest = args.dir or released_dir(args.revision)
    try:
        if args.source is not None:
            source, commit = str(link_release(args.source, dest)), None
        else:
            print(f"released: {RELEASE_REPO}@{args.revision} from huggingface.co into {dest} (a rerun resumes)")
            commit = download_release(args.revision, dest, timeout=args.timeout)
            source = "huggingface.co"
        receipt = make_receipt(dest, revision=args.revision, commit=commit, source=source,
                               expected=_expected(args.revision),
                               progress=lambda it: tqdm(it, desc="sha256", unit="file"))
    except ReleaseUnreachable as exc:
        print(f"released: {UNREACHABLE} ({exc})", file=sys.stderr)
        return 2
    except ReleaseError as exc:
        print(f"released: {exc}", file=sys.stderr)
        return 2
    _print(receipt)
    print(f"  receipt: {receipt_path(dest)}")
    return 1 if receipt.verification.status == "failed" else 0


def _status(args: argparse.Namespace) -> int:
    limit = sys.maxsize if args.all else 10
    if args.dir is not None:
        trees = [args.dir]
    else:
        root = released_dir(DEFAULT_REVISION).parent
        trees = sorted(p.with_name(p.name.removesuffix(".receipt.json")) for p in root.glob("*.receipt.json"))
        if not trees:
            print(f"released: no receipt under {root} (run `released fetch`)", file=sys.stderr)
            return 2
    try:
        for tree in trees:
            _print(read_receipt(tree), limit=limit)
    except ReleaseError as exc:
        print(f"released: {exc}", file=sys.stderr)
        return 2
    return 0


def run(args: argparse.Namespace) -> int:
    return _fetch(args) if args.action == "fetch" else _status(args)
