"""Run-level conformance from a release: the replay answered by released cells, not canned replies.

``conformance RUNS --released`` checks that the authors' released cells
(:mod:`contextecho.echo.reference.released`) are enough to rerun our experiments as data. For
each case, :func:`write_release` writes the case's ``expected.cells`` as a release tree (path ->
record JSON, digests resolved), :func:`~contextecho.echo.reference.released.import_release`
reads it back, and :class:`ReleasedReplies` answers the replay client from those cells:

* a **target** call gets the cell's ``response_text`` (and its token counts where stored);
* a **judge** call gets a verdict text that the reference verdict reader parses back to the
  cell's ``score``/``label``/``reason`` (:func:`~contextecho.echo.reference.judge.verdict_text`:
  a −1 cell as the reply that fails the same way), a **cross_judge** call the audit record's
  second verdict (``gpt5_*``) the same way;
* a request whose cell the release lacks is **missing** and never answered: the replay treats
  it as an unexpected request, so the cell is lost, as the harness lost it.

A request key names its cell as README "Request keys" says: the target (its folder, or the
record's ``target``/``model_id``), the item, and each of position, arm, replicate, session,
cut index and length that both the key and the cell's layout name (:data:`MATCHED`); the
harness's turn numbers (``turn``, ``turn_index``) are the position's, which the cell names by
label. Where several cells fit, the one naming the most of the key's fields answers; a tie is
*ambiguous* and is not answered either.

What a release cannot reproduce (the request-level comparisons: retries, provider errors,
attempt counts, request parameters) is reported as :data:`~.case.NOT_IN_RELEASE`, never
silently; :func:`compare` adds the release's own checks: the import (no bad, unknown or
duplicate file), no ambiguous or unrenderable cell, and the target cells asked being the
harness's. A case whose runners write no cell at all (b3) cannot be replayed from a release
(:func:`uncovered`).
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Sequence

from ..echo.reference.judge import verdict_text
from ..echo.reference.released import CROSS_JUDGE, PROBE, STRESSOR, ImportReport, ReleasedCell, import_release
from .case import CaseResult, decode
from .replay import Replay, key_text

#: The key fields compared with a cell's identity where both name one (module doc).
MATCHED = ("position", "arm", "replicate", "session", "cut_index", "length")
#: The cells that answer each call kind.
ANSWERS = {"target": (PROBE, STRESSOR), "judge": (PROBE,), "cross_judge": (CROSS_JUDGE,)}
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


def _names(cell: ReleasedCell) -> set[str]:
    """The names a request key may give the cell's target: its folder's, the record's own."""
    return {cell.identity.target} | {v for k in ("target", "model_id") if isinstance(v := cell.stored.get(k), str)}


class ReleasedReplies:
    """The replay's replies (``(call, key text) -> [reply spec]``, a :class:`~.replay.Replies`) read
    from released cells (module doc); what it could not answer is kept in ``missing``, ``ambiguous``
    and ``unrenderable`` (each ``(call, key text)``, with the candidate paths for an ambiguous one)."""

    def __init__(self, cells: Sequence[ReleasedCell]) -> None:
        self._index: dict[tuple[str, str], list[ReleasedCell]] = defaultdict(list)
        for cell in cells:
            self._index[(cell.kind, cell.identity.item)].append(cell)
        self.missing: list[tuple[str, str]] = []
        self.ambiguous: list[tuple[str, str, list[str]]] = []
        self.unrenderable: list[tuple[str, str, str]] = []

    def cell(self, call: str, key: Mapping[str, Any]) -> ReleasedCell | list[ReleasedCell] | None:
        """The cell that answers ``call`` for ``key``; a list where several fit equally; None where none."""
        best, found = -1, []
        for kind in ANSWERS.get(call, ()):
            for cell in self._index.get((kind, key.get("item")), ()):
                ident = cell.identity
                if key.get("target") not in _names(cell) or ident.replicate != int(key.get("replicate", 0)):
                    continue
                named = [f for f in MATCHED if f in key and getattr(ident, f) is not None]
                if any(getattr(ident, f) != key[f] for f in named):
                    continue
                if len(named) > best:
                    best, found = len(named), [cell]
                elif len(named) == best:
                    found.append(cell)
        return found[0] if len(found) == 1 else found or None

    def reply(self, call: str, cell: ReleasedCell) -> dict | None:
        """The reply spec of ``cell`` for ``call``; None where its verdict reads back otherwise."""
        if call == "target":
            spec: dict[str, Any] = {"text": cell.response_text}
            if cell.input_tokens is not None or cell.output_tokens is not None:
                spec["usage"] = {"input_tokens": cell.input_tokens, "output_tokens": cell.output_tokens}
            return spec
        text = verdict_text(cell.score, cell.label, cell.reason)
        return None if text is None else {"text": text}

    def get(self, ident: tuple[str, str], default: Any = None) -> list | None:
        call, text = ident
        found = self.cell(call, json.loads(text))
        if isinstance(found, list):
            self.ambiguous.append((call, text, [c.provenance.path for c in found]))
            return default
        if found is None:
            self.missing.append(ident)
            return default
        spec = self.reply(call, found)
        if spec is None:
            self.unrenderable.append((call, text, found.provenance.path))
            return default
        return [spec]



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
