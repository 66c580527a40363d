"""``contextecho conformance DIR``: check the ``reference`` protocol against fixtures.

Runs every fixture family found in DIR (see
:mod:`contextecho.echo.reference.conformance`), prints pass/fail counts per
family and the first differences of failing cases (a unified diff for strings), and
exits 1 when any case fails or any family is missing, 2 when DIR is not a folder.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..echo.reference.conformance import FAMILIES, FamilyResult, run_conformance
from ..engine.paths import shared_dir


def default_corpus() -> Path:
    return shared_dir() / "corpus" / "real"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, help="fixture folder (the layout of "
                        "shared/reference/contextecho/fixtures)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help=f"folder the prefix cases' session paths are relative to "
                             f"(default {default_corpus()})")
    parser.add_argument("--family", action="append", choices=list(FAMILIES), default=None,
                        help="check only this family (repeatable; default: all)")
    parser.add_argument("--show", type=int, default=3, metavar="N",
                        help="failing cases to detail per family (default 3)")


def _report(family: FamilyResult, show: int) -> None:
    if family.missing:
        print(f"{family.family:7s} MISSING  ({family.path.name} not found in {family.path.parent})")
        return
    if not family.cases:
        print(f"{family.family:7s} EMPTY    ({family.path} holds no cases)")
        return
    status = "ok  " if family.ok else "FAIL"
    print(f"{family.family:7s} {status}     {family.n_passed} passed, {family.n_failed} failed "
          f"({family.path.name})")
    for case in [c for c in family.cases if not c.passed][:show]:
        print(f"  x {case.case_id}")
        if case.error:
            print(f"    {case.error}")
        for diff in case.differences:
            print("    " + diff.describe().replace("\n", "\n    "))
    hidden = family.n_failed - show
    if hidden > 0:
        print(f"  ... {hidden} more failing cases")


def run(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    if not folder.is_dir():
        print(f"conformance: {folder} is not a folder")
        return 2
    corpus = args.corpus if args.corpus is not None else default_corpus()
    print(f"conformance of protocol 'reference' with {folder} (sessions under {corpus})")
    results = run_conformance(folder, corpus, args.family)
    for family in results:
        _report(family, args.show)
    ok = all(f.ok for f in results)
    total = sum(len(f.cases) for f in results)
    failed = sum(f.n_failed for f in results)
    missing = [f.family for f in results if f.missing]
    print(f"{'PASS' if ok else 'FAIL'}: {total - failed}/{total} cases passed"
          + (f"; missing families: {', '.join(missing)}" if missing else ""))
    return 0 if ok else 1
