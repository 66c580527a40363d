"""The authors' released per-cell evaluations, read as data: the harness's cell files.

The release (Hugging Face ``contextecho2026/persona-drift-contextecho``) is laid out as the
harness's runners write their cells (``results/<experiment>/.../<cell>.json``, with
``data/sessions/``). Each runner has its own layout (``shared/reference/contextecho/runs``,
README "Request keys" and ``expected.cells``); :data:`LAYOUTS` names every one, the path
pattern that tells it and the fields its record must hold:

================  ======================================================================  ===========
layout            path (under a result root)                                              kind
================  ======================================================================  ===========
``cross_judge``   ``results/crossjudge_audit/<target>/<position>/<arm>/<probe>.json``    cross_judge
``placement``     ``.../anchor_variants/<variant>/<target>/<position>/<probe>.json``      probe
``anchor_variant`` ``.../anchor_variants/<variant>/<target>/<position>/vNN/cell.json``    stressor
``a_stressor``    ``.../dual_surface_pilot/CAND_<anchor>/stressors/<target>/<position>/vNN/cell.json``  stressor
``a_probe``       ``.../generalization_test/<anchor>/CODING_PROBES/<target>/<position>/<probe>.json``  probe
``anchor_size``   ``.../anchor_size_sweep/<size>/<target>/<probe>.json``                  probe
``anchor_decay``  ``.../anchor_decay/<target>/N<offset>/<probe>.json``                    probe
``framing``       ``.../probe_framing_ablation/<framing>/<probe>/vNN.json`` (target: record)  probe
``override``      ``.../instruction_override/<target>/cut-<line>/<arm>/<stressor>/metrics.json``  stressor
``length``        ``.../session_length_scaling/<target>/len-<n>/cut-<line>/<stressor>/metrics_<arm>.json``  stressor
``s2``            ``<experiment>/<target>/<position>/vNN/(claude|filler).json`` (e08, e10, e09)  stressor
``probe``         ``<experiment>/<target>/<position>/(claude_session|filler)/<probe>[_vNN].json``  probe
================  ======================================================================  ===========

(e15 and its fill and cross-target runners, e17's replicates ``_vNN``, the negative controls,
12pos, run_crosssession's ``probes_at_crosscompaction_<session>`` and e18's
``session_validation*/<label>`` are all the ``probe`` layout.) The analysis outputs and
manifests the runners write beside their cells (:data:`OUTPUT_FILES`) are listed, not read.

:func:`import_release` walks the result roots (:data:`RESULT_ROOTS`) once, reads each file
once (its bytes hashed, then decoded), and makes each good cell a :class:`ReleasedCell`: its
identity under ``reference`` (:class:`CellIdentity`, the harness's own names: the target as
its folder names it, the arm and item as the request keys name them), the stored fields and
its provenance. A file that is not valid JSON, lacks a field its layout needs or holds one of
the wrong type is a *bad cell*; a file no layout knows is an *unknown layout*; a second file
with an identity already read is a *duplicate* (the first, in path order, is kept). Each is
counted and named with its path and reason in the :class:`ImportReport`; none stops the import.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

#: The folders the harness's runners write under (``REPO_ROOT``-relative).
RESULT_ROOTS = ("results", "results_v2_candidate", "data_archive")
DEFAULT_LABEL = "contextecho2026/persona-drift-contextecho"
#: The results folders of the panel's and the onset's cells, as the harness's runners and
#: plotting scripts name them (``run_probes_at_crosscompaction.py``, ``run_onset.py``).
PANEL_CELLS = "results/probes_at_crosscompaction"
ONSET_CELLS = "results/drift_onset"
PROBE, STRESSOR, CROSS_JUDGE = "probe", "stressor", "cross_judge"
#: What a harness arm file of e08's layout names (``claude.json`` is the ``claude_session`` arm).
S2_ARMS = {"claude": "claude_session", "filler": "filler"}
#: Files the runners and loaders write beside their cells that are not cells: analysis
#: results (the crossjudge audit's, the anchor analyses', e16's summary) and e18's manifest.
OUTPUT_FILES = re.compile(r"(?:^|/)(?:[A-Z0-9_]*RESULTS|validation_manifest)\.json$")

_TEXT = (str,)
_INT = "int"  # an int that is no bool


class BadCell(ValueError):
    """A cell file that cannot be read as its layout's record (the reason names why)."""


@dataclass(frozen=True)
class CellIdentity:
    """One cell under ``reference``: where the harness wrote it and what it asked.

    ``experiment`` is the results folder (root-relative: ``results/probes_at_crosscompaction``,
    ``data_archive/cross_session/proeng``, ...); ``target`` as the folder names it (e16: the
    record); ``arm`` and ``item`` as the harness's request keys name them (``claude_session``,
    ``filler``, an anchor variant, ``A_COMBINED``, a size, ``N05``, a framing, an e11 context arm;
    a probe id, ``S2_vNN``, a stressor label); ``intervention`` the anchor or framing design of
    the layout, where it has one; ``position`` None where the layout does not name one (the
    anchor size and decay sweeps, e11, e12); ``session`` the runner's name for its session
    (run_crosssession, e18, e09); ``cut_index`` and ``length`` e11's and e12's."""

    experiment: str
    target: str
    position: str | None
    arm: str
    item: str
    replicate: int = 0
    intervention: str | None = None
    session: str | None = None
    cut_index: int | None = None
    length: int | None = None


@dataclass(frozen=True)
class Provenance:
    """Where a cell came from: the release, its revision, the file and its bytes' sha256."""

    release: str
    revision: str | None
    path: str
    sha256: str


@dataclass(frozen=True)
class ReleasedCell:
    """A released cell: identity, the stored fields, provenance. ``score``/``label``/``reason``
    are the judge's verdict (a cross-judge record: the second judge's, ``gpt5_*``; its
    ``sonnet_score`` stays in ``stored``); ``compliance`` e11's and e12's scorer; ``stored``
    the whole record as written (read only)."""

    identity: CellIdentity
    layout: str
    kind: str
    response_text: str | None
    response_len: int | None
    score: int | None
    label: str | None
    reason: str | None
    compliance: int | None
    input_tokens: int | None
    output_tokens: int | None
    stored: Mapping[str, Any]
    provenance: Provenance


@dataclass(frozen=True)
class Problem:
    """A file the import did not take, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class ImportReport:
    """What :func:`import_release` read: the good cells (path order), and every file it did
    not take: ``bad`` cells, ``unknown`` layouts, ``duplicates`` (the reason names the file
    kept), and the ``outputs`` beside the cells (analysis results, manifests)."""

    release: str
    revision: str | None
    root: str
    cells: tuple[ReleasedCell, ...]
    bad: tuple[Problem, ...]
    unknown: tuple[Problem, ...]
    duplicates: tuple[Problem, ...]
    outputs: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.bad or self.unknown or self.duplicates)

    def counts(self) -> dict[str, int]:
        return {"cells": len(self.cells), "bad": len(self.bad), "unknown": len(self.unknown),
                "duplicates": len(self.duplicates), "outputs": len(self.outputs)}

    def describe(self, limit: int = 5) -> str:
        """The counts, then the first ``limit`` files of each problem with their reasons."""
        lines = [f"{self.release}@{self.revision or '-'} ({self.root}): " +
                 ", ".join(f"{n} {k}" for k, n in self.counts().items())]
        for name, problems in (("bad", self.bad), ("unknown layout", self.unknown), ("duplicate", self.duplicates)):
            lines += [f"  {name}: {p.path}: {p.reason}" for p in problems[:limit]]
            if len(problems) > limit:
                lines.append(f"  ... {len(problems) - limit} more {name}")
        return "\n".join(lines)


# ---------------------------------------------------------------- layouts
@dataclass(frozen=True)
class Layout:
    """One runner's cell layout: its path ``pattern`` (root-relative), the ``kind`` of cell,
    the record's required fields with their types, and how a match names the identity."""

    name: str
    pattern: re.Pattern
    kind: str
    required: Mapping[str, Any]
    identity: Callable[[re.Match, Mapping[str, Any]], CellIdentity]


_JUDGED = {"response_text": _TEXT, "response_len": _INT, "score": _INT, "label": _TEXT, "reason": _TEXT}
_ANSWERED = {"response_text": _TEXT, "response_len": _INT}
_COMPLIANCE = {**_ANSWERED, "compliance": _INT}
_AUDITED = {"sonnet_score": _INT, "gpt5_score": _INT, "gpt5_label": _TEXT, "gpt5_reason": _TEXT}
_ROOT = "(?:" + "|".join(RESULT_ROOTS) + ")"
_SEG = r"[^/]+"


def _v(m: re.Match, name: str = "v") -> int:
    return int(m[name])


def _record_text(record: Mapping[str, Any], name: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value:
        raise BadCell(f"the layout names its {name} in the record: {name!r} missing or not a string")
    return value


def _e09_session(experiment: str) -> str | None:
    m = re.fullmatch(r".*/cross_session/([^/]+)", experiment)
    return m[1] if m else None


def _probe_session(record: Mapping[str, Any]) -> str | None:
    value = record.get("session")
    return value if isinstance(value, str) else None


LAYOUTS: tuple[Layout, ...] = (
    Layout("cross_judge", re.compile(rf"^(?P<exp>results/crossjudge_audit)/(?P<target>{_SEG})/(?P<position>{_SEG})/"
                                     rf"(?P<arm>{_SEG})/(?P<item>{_SEG})\.json$"), CROSS_JUDGE, _AUDITED,
           lambda m, r: CellIdentity(m["exp"], m["target"], m["position"], m["arm"], m["item"])),
    Layout("placement", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?anchor_variants)/(?P<variant>{_SEG})/(?P<target>{_SEG})/"
                                   rf"(?P<position>{_SEG})/(?P<item>{_SEG})\.json$"), PROBE, _JUDGED,
           lambda m, r: CellIdentity(m["exp"], m["target"], m["position"], m["variant"], m["item"],
                                     intervention=m["variant"])),
    Layout("anchor_variant", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?anchor_variants)/(?P<variant>{_SEG})/"
                                        rf"(?P<target>{_SEG})/(?P<position>{_SEG})/v(?P<v>\d\d)/cell\.json$"),
           STRESSOR, _ANSWERED,
           lambda m, r: CellIdentity(m["exp"], m["target"], m["position"], m["variant"], f"S2_v{m['v']}",
                                     intervention=m["variant"])),
    Layout("a_stressor", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?dual_surface_pilot/CAND_(?P<anchor>{_SEG}))/stressors/"
                                    rf"(?P<target>{_SEG})/(?P<position>{_SEG})/v(?P<v>\d\d)/cell\.json$"),
           STRESSOR, _ANSWERED,
           lambda m, r: CellIdentity(m["exp"], m["target"], m["position"], m["anchor"], f"S2_v{m['v']}",
                                     intervention=m["anchor"])),
    Layout("a_probe", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?generalization_test/(?P<anchor>{_SEG})/CODING_PROBES)/"
                                 rf"(?P<target>{_SEG})/(?P<position>{_SEG})/(?P<item>{_SEG})\.json$"), PROBE, _JUDGED,
           lambda m, r: CellIdentity(m["exp"], m["target"], m["position"], m["anchor"], m["item"],
                                     intervention=m["anchor"])),
    Layout("anchor_size", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?anchor_size_sweep)/(?P<size>{_SEG})/(?P<target>{_SEG})/"
                                     rf"(?P<item>{_SEG})\.json$"), PROBE, _JUDGED,
           lambda m, r: CellIdentity(m["exp"], m["target"], None, m["size"], m["item"], intervention="anchor_size")),
    Layout("anchor_decay", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?anchor_decay)/(?P<target>{_SEG})/(?P<offset>N\d+)/"
                                      rf"(?P<item>{_SEG})\.json$"), PROBE, _JUDGED,
           lambda m, r: CellIdentity(m["exp"], m["target"], None, m["offset"], m["item"], intervention="anchor_decay")),
    Layout("framing", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?probe_framing_ablation)/(?P<framing>{_SEG})/"
                                 rf"(?P<item>{_SEG})/v(?P<v>\d\d)\.json$"), PROBE, {**_JUDGED, "target": _TEXT},
           lambda m, r: CellIdentity(m["exp"], _record_text(r, "target"), r.get("position") if isinstance(
               r.get("position"), str) else None, m["framing"], m["item"], _v(m), intervention=m["framing"])),
    Layout("override", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?instruction_override)/(?P<target>{_SEG})/"
                                  rf"cut-(?P<cut>\d+)/(?P<arm>{_SEG})/(?P<item>{_SEG})/metrics\.json$"),
           STRESSOR, _COMPLIANCE,
           lambda m, r: CellIdentity(m["exp"], m["target"], None, m["arm"], m["item"], cut_index=int(m["cut"]))),
    Layout("length", re.compile(rf"^(?P<exp>{_ROOT}/(?:.+/)?session_length_scaling)/(?P<target>{_SEG})/"
                                rf"len-(?P<length>\d+)/cut-(?P<cut>\d+)/(?P<item>{_SEG})/metrics_(?P<arm>{_SEG})\.json$"),
           STRESSOR, _COMPLIANCE,
           lambda m, r: CellIdentity(m["exp"], m["target"], None, m["arm"], m["item"], cut_index=int(m["cut"]),
                                     length=int(m["length"]))),
    Layout("s2", re.compile(rf"^(?P<exp>{_ROOT}/.+?)/(?P<target>{_SEG})/(?P<position>{_SEG})/v(?P<v>\d\d)/"
                            r"(?P<arm>claude|filler)\.json$"), STRESSOR, _ANSWERED,
           lambda m, r: CellIdentity(m["exp"], m["target"], m["position"], S2_ARMS[m["arm"]], f"S2_v{m['v']}",
                                     session=_e09_session(m["exp"]))),
    Layout("probe", re.compile(rf"^(?P<exp>{_ROOT}/.+?)/(?P<target>{_SEG})/(?P<position>{_SEG})/"
                               rf"(?P<arm>claude_session|filler)/(?P<item>{_SEG}?)(?:_v(?P<v>\d\d))?\.json$"),
           PROBE, _JUDGED,
           lambda m, r: CellIdentity(m["exp"], m["target"], m["position"], m["arm"], m["item"],
                                     _v(m) if m["v"] else 0, session=_probe_session(r))),
)


def _check_type(value: Any, kind: Any) -> bool:
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def layout_of(path: str) -> tuple[Layout, re.Match] | None:
    """The layout of a root-relative cell path (``/`` separated), and its match; None when none is."""
    for layout in LAYOUTS:
        m = layout.pattern.match(path)
        if m:
            return layout, m
    return None


def identify(path: str, record: Mapping[str, Any]) -> tuple[str, CellIdentity] | None:
    """The layout name and identity of the cell the harness wrote at ``path`` (root-relative;
    ``record`` names e16's target); None where no layout knows the path. The record is not
    checked (:func:`read_cell` does): the conformance families read their expected cells so."""
    found = layout_of(path)
    if found is None:
        return None
    layout, m = found
    return layout.name, layout.identity(m, record)


def _optional_int(record: Mapping[str, Any], name: str) -> int | None:
    value = record.get(name)
    return value if _check_type(value, _INT) else None


def read_cell(path: str, record: Any, provenance: Provenance,
              found: tuple[Layout, re.Match] | None = None) -> ReleasedCell | None:
    """The released cell of one decoded file (``path`` root-relative; ``found``: its
    :func:`layout_of`, where known); None where no layout knows the path; a :class:`BadCell`
    where the record is not its layout's."""
    found = found or layout_of(path)
    if found is None:
        return None
    layout, m = found
    if not isinstance(record, dict):
        raise BadCell(f"a {layout.name} cell is a JSON object, not {type(record).__name__}")
    for name, kind in layout.required.items():
        if name not in record:
            raise BadCell(f"{layout.name} cell without {name!r}")
        if not _check_type(record[name], kind):
            raise BadCell(f"{layout.name} cell's {name!r} is {type(record[name]).__name__}, "
                          f"not {'int' if kind == _INT else 'str'}")
    if layout.kind == CROSS_JUDGE:
        score, label, reason = record["gpt5_score"], record["gpt5_label"], record["gpt5_reason"]
    else:
        score, label, reason = record.get("score"), record.get("label"), record.get("reason")
    if score is not None and score not in (-1, 0, 1, 2, 3):
        raise BadCell(f"{layout.name} cell's score {score} is none the harness stores (-1, 0-3)")
    compliance = record.get("compliance")
    if compliance is not None and compliance not in (0, 1):
        raise BadCell(f"{layout.name} cell's compliance {compliance!r} is not 0 or 1")
    return ReleasedCell(
        identity=layout.identity(m, record), layout=layout.name, kind=layout.kind,
        response_text=record.get("response_text"), response_len=record.get("response_len"),
        score=score, label=label, reason=reason, compliance=None if compliance is None else int(compliance),
        input_tokens=_optional_int(record, "input_tokens"), output_tokens=_optional_int(record, "output_tokens"),
        stored=MappingProxyType(record), provenance=provenance)


def _files(root: Path) -> Iterator[str]:
    """Every ``*.json`` under the result roots, root-relative, in path order."""
    for top in RESULT_ROOTS:
        base = root / top
        if not base.is_dir():
            continue
        for folder, dirs, files in os.walk(base):
            dirs.sort()
            rel = Path(folder).relative_to(root).as_posix()
            for name in sorted(files):
                if name.endswith(".json"):
                    yield f"{rel}/{name}"


def import_release(root: str | Path, label: str = DEFAULT_LABEL, revision: str | None = None) -> ImportReport:
    """Every cell file under ``root``'s result roots (module doc), read once; never raises for a
    file (a :class:`FileNotFoundError` when ``root`` is not a folder)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a release folder")
    cells: list[ReleasedCell] = []
    bad: list[Problem] = []
    unknown: list[Problem] = []
    duplicates: list[Problem] = []
    outputs: list[str] = []
    seen: dict[tuple, str] = {}
    for path in _files(root):
        if OUTPUT_FILES.search(path):
            outputs.append(path)
            continue
        found = layout_of(path)
        if found is None:
            unknown.append(Problem(path, "no harness layout has this path"))
            continue
        try:
            raw = (root / path).read_bytes()
        except OSError as exc:
            bad.append(Problem(path, f"unreadable ({exc.strerror or exc})"))
            continue
        provenance = Provenance(label, revision, path, hashlib.sha256(raw).hexdigest())
        try:
            record = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            bad.append(Problem(path, f"not UTF-8 ({exc.reason} at byte {exc.start})"))
            continue
        except json.JSONDecodeError as exc:
            bad.append(Problem(path, f"not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"))
            continue
        try:
            cell = read_cell(path, record, provenance, found)
        except BadCell as exc:
            bad.append(Problem(path, str(exc)))
            continue
        key = (cell.kind, cell.identity)
        if key in seen:
            duplicates.append(Problem(path, f"same cell as {seen[key]} (kept)"))
            continue
        seen[key] = path
        cells.append(cell)
    return ImportReport(label, revision, str(root), tuple(cells), tuple(bad), tuple(unknown), tuple(duplicates),
                        tuple(outputs))
