"""Run-level conformance from a release: the replay answered by released cells, not canned replies.

``conformance RUNS --released`` checks that the authors' released cells
(:mod:`contextecho.echo.reference.released`) are enough to rerun our experiments as data. For
each case, :func:`write_release` writes the case's ``expected.cells`` as a release tree (path ->
record JSON, digests resolved), :func:`~contextecho.echo.reference.released.import_release`
reads it back, and :class:`~contextecho.echo.reference.released_answers.ReleasedReplies` answers
the replay client from those cells, as it answers a notebook run from a release (a target call
with the cell's response, a judge call with a verdict the reference reader parses back to the
cell's score, label and reason; the matching rule is that module's). A request whose cell the
release lacks is **missing** and never answered: the replay treats it as an unexpected request,
so the cell is lost, as the harness lost it; so are an ambiguous and an unrenderable one.

What a release cannot reproduce (the request-level comparisons: retries, provider errors,
attempt counts, request parameters) is reported as :data:`~.case.NOT_IN_RELEASE`, never
silently; :func:`compare` adds the release's own checks: the import (no bad, unknown or
duplicate file), no ambiguous or unrenderable cell, and the target cells asked being the
harness's. A case whose runners write no cell at all (b3) cannot be replayed from a release
(:func:`uncovered`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..echo.reference.released import ImportReport, import_release
from ..echo.reference.released_answers import ReleasedReplies, key_text
from .case import CaseResult, decode
from .replay import Replay

#: Why the request comparisons are not made for a release.
REQUESTS_NOTE = ("not covered by a release: a released cell holds the final reply only, not the requests, "
                 "retries, provider errors or attempts that made it, so the request set, order, attempt "
                 "counts and parameters are compared only by the canned replay")


def write_release(case: dict, resolve, folder: Path) -> int:
    """The case's ``expected.cells`` written under ``folder`` as the harness wrote them (path ->
    record JSON; ``resolve(record, where)`` gives a record's digested strings back); the number
    written."""
    folder.mkdir(parents=True, exist_ok=True)  # a case without cells is an empty release
    n = 0
    for cell in case["expected"].get("cells", []):
        path = folder / cell["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        record = decode(resolve(cell["record"], f"case {case['id']}: cell {cell['path']}"))
        path.write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
        n += 1
    return n


def released_replies(case: dict, resolve, workdir: Path) -> tuple[ReleasedReplies, ImportReport]:
    """The case's cells written as a release under ``workdir``, imported, and the replies they give."""
    folder = workdir / "release"
    write_release(case, resolve, folder)
    imported = import_release(folder, label=f"case {case['id']} expected.cells", revision=case.get("reference", {})
                              .get("commit") if isinstance(case.get("reference"), dict) else None)
    return ReleasedReplies(imported.cells), imported


def uncovered(case: dict, imported: ImportReport, report: CaseResult) -> bool:
    """Whether the case is one no release can answer: its runners send requests but write no
    cell file (its verdicts go to documents of its own, its ``expected.tables``: the b3
    cross-judge); if so it is reported :data:`~.case.NOT_IN_RELEASE` as a whole, not run."""
    requests = case["expected"].get("requests", [])
    if imported.cells or not requests:
        return False
    report.not_in_release("case", "replay", f"its runners send {len(requests)} requests and write no cell file a "
                          f"release holds (their results are {sorted(case['expected'].get('tables') or {})}): "
                          "no released cell answers them, so neither its requests nor its tables can be "
                          "reproduced from a release; the canned replay checks them")
    return True


def compare(case: dict, replies: ReleasedReplies, imported: ImportReport, replay: Replay, report: CaseResult,
            declared: Sequence[dict]) -> None:
    """The release's own checks (module doc)."""
    report.add("release", "import", imported.ok, 0, {k: v for k, v in imported.counts().items()
                                                      if k in ("bad", "unknown", "duplicates")}, declared,
               note=imported.describe())
    report.add("release", "ambiguous", not replies.ambiguous, [], [list(a) for a in replies.ambiguous[:10]], declared)
    report.add("release", "unrenderable_verdicts", not replies.unrenderable, [],
               [list(u) for u in replies.unrenderable[:10]], declared)
    theirs = {key_text(r["key"]) for r in case["expected"].get("requests", []) if r["call"] == "target"}
    ours = {key_text(s.key) for s in replay.sent if s.call == "target"}
    missing = {text for call, text in replies.missing if call == "target"}
    report.add("release", "target_cells_asked", ours == theirs, len(theirs), len(ours), declared,
               note=f"{len(missing)} asked that the release lacks (lost cells, never answered); "
                    f"not asked: {sorted(theirs - ours)[:5]}; asked beyond the harness: {sorted(ours - theirs)[:5]}")
