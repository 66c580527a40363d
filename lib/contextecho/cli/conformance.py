"""``contextecho conformance DIR``: check the ``reference`` protocol against fixtures.

DIR is a function-level fixture folder (the layout of ``shared/reference/contextecho/fixtures``),
the tool-call continuation's (``shared/reference/contextecho/continuation``; sessions are found by
each case's path and sha256, ``--corpus`` tried first) or a run-level one
(``shared/reference/contextecho/runs``: ``cases/*.json`` and ``positions/*.json``);
:mod:`contextecho.conformance.driver` tells them apart and runs it. Prints pass/fail counts per
family (function level, continuation) or per case (run level) and the first differences of what
fails, each with the fixture file; ``--out`` writes one machine-readable result per run-level case.
``--released`` (run level) answers each case from its expected cells read as the authors' release
(:mod:`contextecho.conformance.released`) instead of its canned replies; the comparisons a release
cannot make are listed as not in the release.
Exits 1 when any case fails (run level: a failed field, an input not expressible, or a case that
cannot be read) or any family is missing, 2 when DIR is not a folder or a family is not DIR's. A
declared divergence (``data/conformance/declared_divergences.json``) is reported as such, never as
a pass, and does not fail the run.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..conformance.case import DECLARED_FILE, NOT_IN_RELEASE, CaseResult, FamilyResult, FixtureError
from ..conformance import driver


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, help="fixture folder: function-level (the layout of "
                        "shared/reference/contextecho/fixtures) or run-level (shared/reference/contextecho/runs)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help=f"folder the cases' session paths are relative to (default {driver.default_corpus()})")
    parser.add_argument("--family", action="append",
                        choices=list(dict.fromkeys(f for files in driver.FAMILIES.values() for f in files)),
                        default=None, help="function level or continuation: check only this family (repeatable; "
                                           "default: all)")
    parser.add_argument("--show", type=int, default=3, metavar="N",
                        help="failing cases (function level) or failing fields per case (run level) "
                             "to detail (default 3)")
    parser.add_argument("--released", action="store_true",
                        help="run level: answer each case from its expected cells read as a release (the "
                             "authors' released per-cell evaluations), not from its canned replies; request-level "
                             "comparisons a release cannot make are listed as not in the release")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="run level: write <case>.json (every compared field) and summary.json here")


def _report(family: FamilyResult, show: int, width: int = 7) -> None:
    if family.missing:
        print(f"{family.family:{width}s} MISSING  ({family.path.name} not found in {family.path.parent})")
        return
    if not family.cases:
        print(f"{family.family:{width}s} EMPTY    ({family.path} holds no cases)")
        return
    status = "ok  " if family.ok else "FAIL"
    print(f"{family.family:{width}s} {status}     {family.n_passed} passed, {family.n_failed} failed "
          f"({family.path.name})")
    for case in [c for c in family.cases if not c.passed][:show]:
        print(f"  x {case.case_id}")
        if case.error:
            print(f"    {case.error}")
        for check in case.checks:
            print("    " + check.describe().replace("\n", "\n    "))
    hidden = family.n_failed - show
    if hidden > 0:
        print(f"  ... {hidden} more failing cases")


def _report_case(report: CaseResult, source: Path, show: int) -> None:
    s = report.summary()
    uncovered = any(c.status == NOT_IN_RELEASE and c.section == "case" for c in report.checks)
    status = "FAIL" if not report.passed else "n/a " if uncovered else "ok  "
    print(f"{report.case_id:40s} {status} {s['pass']} passed, {s['fail']} failed, {s['declared']} declared, "
          f"{s['not_expressible']} not expressible" + (f", {s['not_in_release']} not in the release"
                                                       if s["not_in_release"] else "") + f" ({source})")
    if report.error:
        print(f"  x {report.error}")
    failing = [c for c in report.checks if c.status == "fail"]
    for check in failing[:show]:
        print(f"  x {check.section} {check.field}: expected {json.dumps(check.as_dict()['expected'])[:160]}, "
              f"got {json.dumps(check.as_dict()['actual'])[:160]}" + (f" ({check.note[:200]})" if check.note else ""))
    if len(failing) > show:
        print(f"  ... {len(failing) - show} more failed fields")
    runners = [c for c in report.checks if c.status == "not_expressible" and c.section == "runners"]
    for check in runners:
        print(f"  - not expressible: {check.field}: {check.note}")
    others = sum(c.status == "not_expressible" for c in report.checks) - len(runners)
    if others:
        print(f"  - {others} more fields not expressible (tables or cells of those runners)")
    for check in [c for c in report.checks if c.status == "declared"]:
        print(f"  ~ declared divergence {check.section} {check.field}: {check.note[:160]}")
    for check in [c for c in report.checks if c.status == "not_implemented"]:
        print(f"  . {check.field}: {check.note}")
    for check in [c for c in report.checks if c.status == NOT_IN_RELEASE]:
        print(f"  . not in the release: {check.section} {check.field}: {check.note[:200]}")


def _runs(results: list[FamilyResult], show: int, out: Path | None) -> int:
    reports = [case for family in results for case in family.cases]
    for family in results:
        for report in family.cases:
            _report_case(report, family.path / f"{report.case_id}.json", show)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for report in reports:
            (out / f"{report.case_id}.json").write_text(json.dumps(
                {**report.summary(), "checks": [c.as_dict() for c in report.checks]}, indent=1, default=repr) + "\n")
        (out / "summary.json").write_text(json.dumps([r.summary() for r in reports], indent=1) + "\n")
    failed = [r.case_id for r in reports if not r.passed]
    uncovered = [r.case_id for r in reports if any(c.status == NOT_IN_RELEASE and c.section == "case" for c in r.checks)]
    compared = len(reports) - len(uncovered)  # a case not run is no pass
    print(f"{'PASS' if not failed else 'FAIL'}: {compared - len(failed)}/{compared} cases passed"
          + (f"; {len(uncovered)} not covered by a release, not run: {', '.join(uncovered)}" if uncovered else "")
          + (f"; failing: {', '.join(failed)}" if failed else ""))
    return 0 if not failed else 1


def run(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    if not folder.is_dir():
        print(f"conformance: {folder} is not a folder")
        return 2
    kind = driver.kind_of(folder)
    if args.released and kind != driver.RUNS:
        print(f"conformance: --released replays run-level cases; {folder} is a {kind} folder")
        return 2
    unknown = [f for f in args.family or () if kind != driver.RUNS and f not in driver.FAMILIES[kind]]
    if unknown:
        print(f"conformance: {folder} is a {kind} folder; its families are {', '.join(driver.FAMILIES[kind])} "
              f"(not {', '.join(unknown)})")
        return 2
    corpus = args.corpus if args.corpus is not None else driver.default_corpus()
    if kind == driver.RUNS:
        print(f"run-level conformance of protocol 'reference' with {folder} (sessions under {corpus}; "
              f"declared divergences from {DECLARED_FILE})"
              + ("; replies from each case's cells read as a release" if args.released else ""))
    elif kind == driver.CONTINUATION:
        print(f"conformance of the tool-call continuation (protocol 'reference') with {folder} (sessions: "
              f"{args.corpus or 'each case path_from_steering_root, else ' + str(driver.default_corpus())}, by sha256)")
    else:
        print(f"conformance of protocol 'reference' with {folder} (sessions under {corpus})")
    try:
        results = driver.check(folder, args.corpus, args.family, released=args.released)
    except FixtureError as exc:  # a run-level folder without a case
        print(f"conformance: {exc}")
        return 1
    if kind == driver.RUNS:
        return _runs(results, args.show, args.out)
    width = max([7, *(len(f.family) for f in results)])
    for family in results:
        _report(family, args.show, width)
    ok = all(f.ok for f in results)
    total = sum(len(f.cases) for f in results)
    failed = sum(f.n_failed for f in results)
    missing = [f.family for f in results if f.missing]
    print(f"{'PASS' if ok else 'FAIL'}: {total - failed}/{total} cases passed"
          + (f"; missing families: {', '.join(missing)}" if missing else ""))
    return 0 if ok else 1
