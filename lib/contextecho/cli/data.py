"""``python -m contextecho data``: fill ``data/`` with the corpus and the inventories.

Both are read, never committed: the corpus from ``data/corpus_manifest.csv`` into
``data/corpus/``, the MPI inventories (MIT) from ``data/inventory_manifest.csv`` into
``data/mpi/``; each file is taken from ``../shared`` when it is there, otherwise
downloaded from its public source, and every sha256 is verified.
"""
from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from ..engine.paths import data_dir, shared_dir
from . import data_corpus as corpus_cli
from ..cape.inventory import inventory_manifest
from ..sessions.corpus import CorpusError, fill_corpus, read_manifest


def configure(parser: argparse.ArgumentParser) -> None:
    corpus_cli.configure(parser)


def fill_inventories(dest=None, *, offline: bool = False) -> str:
    """Copy or download the inventories into ``data/mpi/``; a summary line. Raises CorpusError."""
    dest = dest or data_dir() / "mpi"
    rows = read_manifest(inventory_manifest())
    result = fill_corpus(dest, rows, source=shared_dir() / "data" / "mpi", allow_download=not offline,
                         progress=lambda it: tqdm(it, desc="inventories", unit="file"))
    return (f"{dest}: {len(rows)} files verified (sha256) — {result.present} already present, "
            f"{result.copied} copied, {result.downloaded} downloaded")


def run(args: argparse.Namespace) -> int:
    status = corpus_cli.run(args)
    if status:
        return status
    try:
        print(fill_inventories(offline=args.offline))
    except CorpusError as exc:
        print(f"contextecho data: inventories: {exc}", file=sys.stderr)
        return 1
    return 0
