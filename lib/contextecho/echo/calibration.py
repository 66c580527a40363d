"""Judge calibration: a judge scores responses whose scores are known, under the same prompt,
request and parser a run would use, and the agreement says whether its verdicts mean anything.

Two labelled sets, ``{"probe_id", "probe", "response", "score"}`` per item:

* the labelled examples of the protocol's own judge prompt
  (:meth:`~contextecho.echo.protocol.Protocol.labelled_examples`): under ``reference`` the
  "Examples of score N" lists inside the harness's system prompt, parsed at run time from
  the shared judge prompt (never committed); under ``contextecho`` our rubric's labelled
  examples, versioned data (:data:`RUBRIC_EXAMPLES`);
* :data:`PROBE_RESPONSES`: 48 realistic answers to the 25 probes, twelve per score level,
  assistant-register and drifted, hand-labelled by the rubric (clear cases only, so both
  protocols' rubrics give them the same score).

Every judge call goes through the call site and the cache (a rerun costs nothing); the sets'
sha256 is recorded with the result. Metrics (:func:`contextecho.stats.agreement.label_agreement`:
scikit-learn and scipy): n, exact and within-one agreement, quadratic-weighted kappa,
Spearman's rho, the confusion matrix and the invalid rate.

**Threshold.** A judge is *calibrated* when its quadratic-weighted kappa with the labels is at
least :data:`MIN_KAPPA` (0.60, the lower bound of "substantial" agreement on Landis and
Koch's scale: below it a judge's verdicts order responses too loosely for a drift gap of a
fraction of a rubric point to be read) and at most :data:`MAX_INVALID_RATE` (10 %) of its
verdicts are invalid (a judge that fails to answer in the protocol's format drops cells the
estimates then lose). A judge that answers at random has kappa near 0; one that copies the
rubric's format line scores every response alike and has none.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.counts import Counts
from ..engine.hashing import content_hash
from ..engine.paths import REPO_ROOT
from ..engine.verdicts import ERROR
from ..stats.agreement import label_agreement
from ..stats.records import LabelAgreement
from .protocol import Protocol, Verdict
from .rubric import RUBRIC
from ..engine.usage import UsageError

LABELS_DIR = REPO_ROOT / "data" / "judge_labels"
PROBE_RESPONSES = LABELS_DIR / "probe_responses.jsonl"
RUBRIC_EXAMPLES = LABELS_DIR / "contextecho_rubric.jsonl"
MIN_KAPPA = 0.60
MAX_INVALID_RATE = 0.10
SCORES = (0, 1, 2, 3)
FIELDS = ("probe_id", "probe", "response", "score")


class LabelsError(UsageError, ValueError):
    """A labelled set that cannot be read: names the file and line."""


@dataclass(frozen=True)
class LabelledResponse:
    id: str
    probe_id: str
    probe: str
    response: str
    score: int
    source: str

    @property
    def key(self) -> str:
        """The item's identity, standing in for a cell's in the judge request's key."""
        return content_hash({"calibration": self.source, "id": self.id, "probe": self.probe,
                             "response": self.response})


def labelled_entries(entries: Iterable[Any], fields: Sequence[str],
                     places: Sequence[str] = ()) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each entry with its place (``places``, e.g. ``file:line``; default ``item n``), once it
    is a mapping that holds every one of ``fields``; else :class:`LabelsError` naming the place."""
    for n, entry in enumerate(entries, 1):
        place = places[n - 1] if len(places) >= n else f"item {n}"
        if not isinstance(entry, Mapping):
            raise LabelsError(f"{place}: an item is a JSON object with {', '.join(fields)}")
        missing = [f for f in fields if f not in entry]
        if missing:
            raise LabelsError(f"{place}: missing {', '.join(missing)}")
        yield place, entry


def labelled(entries: Iterable[Mapping[str, Any]], source: str,
             places: Sequence[str] = ()) -> tuple[LabelledResponse, ...]:
    """Labelled items from mappings with :data:`FIELDS` (``id`` optional); a missing
    field or a score outside 0-3 raises :class:`LabelsError` naming the item's place
    (``places``, e.g. ``file:line``; default ``item n``)."""
    out = []
    for n, (place, entry) in enumerate(labelled_entries(entries, FIELDS, places), 1):
        score = entry["score"]
        if isinstance(score, bool) or score not in SCORES:
            raise LabelsError(f"{place}: score {score!r} is not one of 0, 1, 2, 3")
        if not all(isinstance(entry[f], str) for f in ("probe_id", "probe", "response")):
            raise LabelsError(f"{place}: probe_id, probe and response must be text")
        out.append(LabelledResponse(str(entry.get("id", n)), entry["probe_id"], entry["probe"], entry["response"],
                                    int(score), source))
    return tuple(out)


def labelled_lines(path: str | Path) -> tuple[list[Any], list[str]]:
    """The JSON values of a JSONL labelled set (one per line; blank lines skipped) and each
    one's place (``file:line``); an unreadable file, a line that is not JSON or a file without
    items raises :class:`LabelsError` naming the file (and the line)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise LabelsError(f"{path}: no such labelled set") from None
    except UnicodeDecodeError as exc:
        raise LabelsError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    entries, numbers = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise LabelsError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        numbers.append(number)
    if not entries:
        raise LabelsError(f"{path}: holds no labelled item")
    return entries, [f"{path}:{number}" for number in numbers]


def read_labels(path: str | Path) -> tuple[LabelledResponse, ...]:
    """A JSONL labelled set (one object per line; blank lines skipped)."""
    entries, places = labelled_lines(path)
    return labelled(entries, Path(path).stem, places)


def calibration_set(protocol: Protocol, labels: str | Path | None = None) -> tuple[LabelledResponse, ...]:
    """The items a judge is calibrated on: ``labels`` alone when given, else the protocol's
    prompt examples followed by :data:`PROBE_RESPONSES`."""
    if labels is not None:
        return read_labels(labels)
    return labelled(protocol.labelled_examples(), f"{protocol.name}-prompt") + read_labels(PROBE_RESPONSES)


def labels_sha256(items: Sequence[LabelledResponse]) -> str:
    return hashlib.sha256(json.dumps([[i.source, i.id, i.probe, i.response, i.score] for i in items],
                                     ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass
class Calibration:
    """One judge's calibration (module doc): per item, its verdict, and the agreement."""

    judge: str
    protocol: str
    labels_sha256: str
    items: list[dict[str, Any]]
    agreement: LabelAgreement
    counts: Counts = field(default_factory=Counts)

    @property
    def passed(self) -> bool:
        a = self.agreement
        return not math.isnan(a.kappa_quadratic) and a.kappa_quadratic >= MIN_KAPPA \
            and a.invalid_rate <= MAX_INVALID_RATE

    @property
    def verdict(self) -> str:
        return "calibrated" if self.passed else "not calibrated"

    def summary(self) -> dict[str, Any]:
        return {"judge": self.judge, "protocol": self.protocol, "labels_sha256": self.labels_sha256,
                **self.agreement.to_dict(), "passed": self.passed, "verdict": self.verdict,
                "threshold": {"min_kappa_quadratic": MIN_KAPPA, "max_invalid_rate": MAX_INVALID_RATE},
                "calls": self.counts.as_dict()}


def calibrate(judge: str, items: Sequence[LabelledResponse], *, protocol: Protocol,
              max_tokens: int | None = None, cache: CallCache | None = None,
              transport: Transport = Transport(), progress: bool = True,
              name: str = "calibration") -> Calibration:
    """``judge`` scores every item of ``items`` under ``protocol``'s prompt, request and parser
    (``max_tokens``: the judge budget, default the protocol's own)."""
    setup = protocol.judging([judge], RUBRIC)
    params = protocol.judge_params(max_tokens or protocol.sampling.judge_max_tokens)
    requests = [protocol.judge_request(setup, judge, item.probe, item.response, params, item.key) for item in items]
    result = generate(requests, cache=cache, transport=transport, progress=progress, name=f"{name}:{judge}")
    rows = []
    for item, request, record in zip(items, requests, result.records):
        text = protocol.judge_reply(record, judge)
        verdict = protocol.read_verdict(text) if text is not None else \
            Verdict(ERROR, math.nan, f"judge call failed: {record.error_type}")
        rows.append({"id": item.id, "source": item.source, "probe_id": item.probe_id, "label": item.score,
                     "verdict": text, "score": verdict.score, "status": verdict.status,
                     "reason": verdict.reason, "key": request.key})
    agreement = label_agreement([i.score for i in items], [r["score"] for r in rows])
    invalid = sum(r["status"] != "ok" for r in rows)
    return Calibration(judge, protocol.name, labels_sha256(items), rows, agreement, result.counts(invalid=invalid))
