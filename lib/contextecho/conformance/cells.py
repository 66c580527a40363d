"""What the run-level families share in comparing stored cells: the case's expected cells by
their identity (:func:`expected_cells`), each field over every compared
cell as one check (:func:`compare_cell_fields`), and the two replies the harness reads otherwise
than we do, each compared apart (both declared divergences of every family): a reply of several
Anthropic text blocks (:func:`multi_block_join`) and a judge's reply of empty text blocks
(:func:`empty_text_verdict`).
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Collection, Iterable, Mapping, Sequence

from ..echo.reference.judge import parse_verdict
from .case import CaseResult, matches


def expected_cells(case: dict, identify: Callable[[str, Mapping[str, Any]], tuple | None], layout: str,
                   report: CaseResult, declared: Sequence[dict]) -> dict[tuple, dict]:
    """The case's expected cell records by ``identify(path, record)``; a cell it does not read
    (None) fails as an unknown cell layout, ``layout`` saying what was expected."""
    expected: dict[tuple, dict] = {}
    for cell in case["expected"].get("cells", []):
        ident = identify(cell["path"], cell["record"])
        if ident is None:
            report.add("cells", cell["path"], False, layout, None, declared, note="unknown cell layout")
            continue
        expected[ident] = cell["record"]
    return expected


def compare_cell_fields(report: CaseResult, compared: Iterable[tuple[tuple, Mapping[str, Any], Mapping[str, Any]]],
                        fields: Sequence[str], declared: Sequence[dict], prefix: str = "",
                        tolerance: Mapping[str, float] | None = None) -> None:
    """One ``cells`` check per field of ``fields`` (named ``prefix`` + the field) over the
    ``compared`` cells, each ``(identity, expected record, our values)``: a field is compared
    where the record and our values both have it (:func:`~.case.matches`, within
    ``tolerance[field]``, else exactly); a failure counts the cells that differ and shows the
    first."""
    tolerance = tolerance or {}
    diffs: Counter = Counter()
    first: dict[str, tuple] = {}
    for ident, record, actual in compared:
        for name in fields:
            if name in record and name in actual and \
                    not matches(record[name], actual[name], tolerance.get(name, 0.0)):
                diffs[name] += 1
                first.setdefault(name, (ident, record[name], actual[name]))
    for name in fields:
        ident, e, a = first.get(name, (None, None, None))
        report.add("cells", prefix + name, diffs[name] == 0, e, a, declared,
                   note=f"{diffs[name]} cells differ; first {list(ident)}" if diffs[name] else "")


def multi_block_join(report: CaseResult, ident: tuple, record: Mapping[str, Any], response: str,
                     reply: Mapping[str, Any] | None, declared: Sequence[dict]) -> bool:
    """Whether our ``response`` is the ``reply`` spec's several text blocks joined as LiteLLM joins
    them (no separator); if so it is reported apart (``multi_block_join``: the harness joins
    them by newlines) and the cell's fields are not compared."""
    blocks = (reply or {}).get("blocks") or []
    if len(blocks) < 2 or response != "".join(blocks):
        return False
    joined = record.get("response_text") == "\n".join(blocks)
    report.add("cells", "multi_block_join", False, record.get("response_text"), response, declared,
               note=f"{list(ident)}; the harness's text is the blocks joined by newlines: {joined}")
    return True


def empty_text_verdict(report: CaseResult, ident: tuple, record: Mapping[str, Any], actual: dict,
                       empty_text: Collection[tuple], declared: Sequence[dict]) -> dict:
    """A cell whose judge answered Anthropic text blocks, all empty (``ident`` in ``empty_text``:
    :meth:`.replay.Replay.empty_text_cells`), and that we lost (LiteLLM gives that reply as no
    content, so no score): where the harness's cell holds what its judge reads from it (the
    first block, ``""``, parsed: −1), compared apart as ``empty_text_verdict`` and returned
    without the verdict's fields, the cell's others compared as usual; else ``actual`` itself."""
    if ident not in empty_text or "score" not in actual or actual["score"] is not None:
        return actual
    read = parse_verdict("")
    theirs = {"score": read.score, "label": read.label, "reason": read.reason}
    if not all(matches(record.get(name), value) for name, value in theirs.items()):
        return actual
    report.add("cells", "empty_text_verdict", False, {n: record.get(n) for n in theirs},
               {n: actual[n] for n in theirs}, declared,
               note=f"{list(ident)}: the harness's judge parses the empty text block (-1) and keeps the cell")
    return {name: value for name, value in actual.items() if name not in theirs}
