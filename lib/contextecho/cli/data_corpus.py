"""``python -m contextecho data``: fill ``data/corpus`` and verify every sha256.

Copies the files listed in ``data/corpus_manifest.csv`` from the shared corpus folder
when it exists, otherwise downloads them from the manifest's public URLs; a file that
is already present with the right sha256 is left alone, so running it twice is cheap.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from ..sessions.corpus import CorpusError, fill_corpus, local_corpus, manifest_path, read_manifest, shared_corpus


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--manifest", type=Path, default=None,
                        help=f"corpus manifest CSV (default: {manifest_path()})")
    parser.add_argument("--dest", type=Path, default=None,
                        help=f"folder to fill (default: {local_corpus()})")
    parser.add_argument("--source", type=Path, default=None,
                        help=f"local copy of the corpus to take files from (default: {shared_corpus()}); "
                             "when it does not exist, files are downloaded")
    parser.add_argument("--offline", action="store_true",
                        help="never download: fail when a file is neither present nor in --source")


def run(args: argparse.Namespace) -> int:
    try:
        rows = read_manifest(args.manifest)
        dest = args.dest or local_corpus()
        result = fill_corpus(dest, rows, source=args.source, allow_download=not args.offline,
                             progress=lambda it: tqdm(it, desc="corpus", unit="file"))
    except CorpusError as exc:
        print(f"contextecho data: {exc}", file=sys.stderr)
        return 1
    print(f"{dest}: {len(rows)} files verified (sha256) — {result.present} already present, "
          f"{result.copied} copied, {result.downloaded} downloaded")
    return 0
