"""Calibrating the behavioural-axes judge: it judges turns whose verdict is known, through the
request builder and verdict reader the anchor notebook's axes stage uses, and the agreement says
whether its HELD/DEVIATED verdicts mean anything.

The labelled set (:data:`AXES_LABELS`, ``data/axes_labels/axes_labels.jsonl``; its README gives
its provenance): ``{"id", "axis", "user", "turn", "label", "note"}`` per line, ``label`` ``held``
or ``deviated`` on one axis, under the built-in card (:data:`~contextecho.anchor.persona.CODING_ASSISTANT`).
It is read with the 0–3 rubric's reader (:func:`contextecho.echo.calibration.labelled_lines`):
a malformed row raises :class:`~contextecho.echo.calibration.LabelsError` naming its file and line.

Each item becomes a turn (the user message its context) asked on its axis alone
(:func:`~contextecho.anchor.axes.report.axis_jobs`, :func:`~contextecho.anchor.axes.report.axis_frame`), through the call site and the cache.
The metrics are :func:`contextecho.stats.agreement.label_agreement` over two categories (held 1,
deviated 0): n, invalid rate, agreement (``exact``), Cohen's kappa and the confusion matrix
(scikit-learn); with two categories quadratic weights are the unweighted ones, so the 0–3 check's
:class:`~contextecho.echo.calibration.Calibration` and its threshold (kappa at least
:data:`~contextecho.echo.calibration.MIN_KAPPA`, at most
:data:`~contextecho.echo.calibration.MAX_INVALID_RATE` invalid) apply unchanged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..anchor.axes.report import axis_frame, axis_jobs, judge_requests
from ..anchor.axes.rubric import AXES, AXIS_RUBRIC
from ..anchor.axes.turns import JudgedTurn
from ..anchor.axes.verdicts import DEVIATED, HELD
from ..anchor.persona import CODING_ASSISTANT, PersonaCard
from ..echo.calibration import Calibration, LabelsError, labelled_entries, labelled_lines
from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.hashing import content_hash
from ..engine.paths import REPO_ROOT
from ..stats.agreement import label_agreement

AXES_LABELS = REPO_ROOT / "data" / "axes_labels" / "axes_labels.jsonl"
FIELDS = ("id", "axis", "user", "turn", "label", "note")
#: How a verdict is scored against its label (two categories: held 1, deviated 0).
CATEGORIES = {DEVIATED: 0, HELD: 1}
#: The source of a calibration item's turn (beside REAL and FORK).
LABELLED = "labelled"


@dataclass(frozen=True)
class LabelledTurn:
    id: str
    axis: str
    user: str
    turn: str
    label: str  # HELD | DEVIATED
    note: str
    source: str

    def judged_turn(self) -> JudgedTurn:
        """The item as a turn the axes judge is asked about (the user message its context)."""
        return JudgedTurn(LABELLED, f"{self.source}:{self.id}", 0, self.id, LABELLED, self.user, self.turn)


def labelled_turns(entries: Iterable[Mapping[str, Any]], source: str,
                   places: Sequence[str] = ()) -> tuple[LabelledTurn, ...]:
    """Labelled turns from mappings with :data:`FIELDS`; a missing or empty field, an unknown
    axis, a label other than held or deviated, or a repeated id raises :class:`LabelsError`
    naming the item's place (``places``, e.g. ``file:line``; default ``item n``)."""
    out, seen = [], set()
    for place, entry in labelled_entries(entries, FIELDS, places):
        not_text = [f for f in FIELDS if not isinstance(entry[f], str)]
        if not_text:
            raise LabelsError(f"{place}: {', '.join(not_text)} must be text")
        empty = [f for f in ("id", "user", "turn") if not entry[f].strip()]
        if empty:
            raise LabelsError(f"{place}: empty {', '.join(empty)}")
        if entry["axis"] not in AXES:
            raise LabelsError(f"{place}: axis {entry['axis']!r} is not one of {', '.join(AXES)}")
        label = entry["label"].strip().lower()
        if label not in CATEGORIES:
            raise LabelsError(f"{place}: label {entry['label']!r} is not {HELD} or {DEVIATED}")
        if entry["id"] in seen:
            raise LabelsError(f"{place}: id {entry['id']!r} is used twice")
        seen.add(entry["id"])
        out.append(LabelledTurn(entry["id"], entry["axis"], entry["user"], entry["turn"], label, entry["note"],
                                source))
    return tuple(out)


def read_axes_labels(path: str | Path = AXES_LABELS) -> tuple[LabelledTurn, ...]:
    """The labelled turns of a JSONL file (default :data:`AXES_LABELS`)."""
    entries, places = labelled_lines(path)
    return labelled_turns(entries, Path(path).stem, places)


def axes_labels_sha256(items: Sequence[LabelledTurn]) -> str:
    return content_hash([[i.source, i.id, i.axis, i.user, i.turn, i.label] for i in items])


def calibrate_axes(judge: str, items: Sequence[LabelledTurn], *, params: Mapping[str, Any],
                   card: PersonaCard = CODING_ASSISTANT, cache: CallCache | None = None,
                   transport: Transport = Transport(), progress: bool = True,
                   name: str = "axes calibration") -> Calibration:
    """``judge`` judges every item on its axis at ``params`` (the anchor notebook's:
    :func:`~.anchor_axes.axes_judge_params`), through the same jobs, requests and verdict reader
    as the axes stage (module doc)."""
    jobs = [job for item in items
            for job in axis_jobs([item.judged_turn()], judge, card, axes=(item.axis,), rubric=AXIS_RUBRIC,
                                 params=params)]
    result = generate(judge_requests(jobs), cache=cache, transport=transport, progress=progress,
                      name=f"{name}:{judge}")
    frame = axis_frame(jobs, result.records)
    rows = []
    for item, (_, verdict) in zip(items, frame.iterrows()):
        score = CATEGORIES.get(verdict["status"], math.nan)
        rows.append({"id": item.id, "source": item.source, "axis": item.axis, "label": item.label,
                     "verdict": verdict["judge_response"], "status": verdict["status"], "score": score,
                     "reason": verdict["reason"], "key": verdict["judge_key"]})
    agreement = label_agreement([CATEGORIES[i.label] for i in items], [r["score"] for r in rows],
                                categories=tuple(sorted(CATEGORIES.values())))
    invalid = sum(r["status"] not in CATEGORIES for r in rows)
    return Calibration(judge, AXIS_RUBRIC.version, axes_labels_sha256(items), rows, agreement,
                       result.counts(invalid=invalid))

