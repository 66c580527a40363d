"""Run-level conformance of the harness's b3 cross-judge (family ``cross_judge_b3``).

``run_b3_cross_judge.py`` re-judges the e02 length-control documents with gpt-5: for each
target document in turn, for every condition and every results record whose primary score
is 0–3, it judges the record's ``response_preview`` (the e02 writers' first 300 characters),
then writes per target the pairs' count, Spearman's rho, the quadratic-weighted kappa, the
per-condition means and the per-probe details, and at the end a summary of the targets. A
results record without ``probe_text`` or ``score`` (an e02 error record) raises and aborts
the whole run there: the records before it were judged, and neither that target's file,
nor a later one's, nor the summary is written (``runs/README.md``, behaviour 6).

Our run (:func:`run`): the documents (``inputs.docs``) are read into
:class:`~contextecho.experiments.cross_judge.StoredResponse`\\ s, up to such a record; each target's are judged again
by :func:`contextecho.experiments.cross_judge.rejudge` under the reference protocol's b3 judge variant (its request
settings, its three calls at once on any failure, its reading of a verdict:
:func:`contextecho.echo.reference.judge.read_b3`), the replay client as the transport; the
key of a request is the stored response's identity (target label, condition, probe,
index); the tables are :func:`contextecho.experiments.cross_judge.rejudged_agreement` (valid pairs) and
:func:`contextecho.experiments.cross_judge.judge_means` per condition. Then the requests and tables are compared
with the case's (:func:`compare_tables`).

What the case gives: the documents in the runner's order, its judge (``inputs.judge``), and
the files the runner writes (``expected.tables``: one per document in the same order, then
the summary; ``null`` where the run never wrote it). The harness's target labels are the
request keys' ``target``: the canned replies name them in order, one per document that
made a request.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..echo.reference.judge import B3
from ..echo.reference.providers import harness_provider
from ..engine.calls import Transport
from ..engine.hashing import content_hash
from ..experiments.cross_judge import SCORES_0_3, StoredResponse, judge_means, rejudge, rejudged_agreement
from .replay import Replay, compare_requests, litellm_model
from .case import REFERENCE, TOLERANCE, CaseResult, FixtureError, decode, matches

#: The call kind of b3's judge requests (``runs/README.md``, "Request keys").
CALL = "judge"
#: What b3's per-probe details keep of an input string: its first N characters
#: (``run_b3_cross_judge.py:126-133``); the judge's reason is cut by the verdict's reading.
DETAIL_CUTS = {"probe_text": 100, "primary_reason": 120, "response_preview": 200}
#: The fields of a target's output, and those of a summary entry, compared (SPEC §5, and
#: the per-probe details); the labels beside them are the runner's own strings.
COMPARED = ("target_label", "alternative_judge", "n_paired", "spearman_rho", "cohen_quadratic_kappa",
            "per_condition_means", "per_probe_details")
LABELS = ("primary_judge",)
SUMMARY_FIELDS = {"rho": "spearman_rho", "kappa": "cohen_quadratic_kappa", "n": "n_paired",
                  "per_condition_means": "per_condition_means"}


@dataclass
class Document:
    """One target's e02 document as b3 reads it: the records it judges (condition, index,
    record), the conditions in order, and the record that aborts the run (None: none)."""

    path: str
    conditions: list[str]
    judged: list[tuple[str, int, dict]]
    abort: str | None = None
    label: str | None = None
    stored: list[StoredResponse] = field(default_factory=list)


def read_document(path: str, doc: Mapping[str, Any]) -> Document:
    """The records b3 judges in ``doc`` (``rescore_target``, ``:106-117``): every results
    record whose primary score is 0–3 by Python equality, in order, up to the first that
    lacks ``probe_text`` or ``score`` (the run's abort)."""
    full = doc.get("full_results") or {}
    out = Document(path, [], [])
    for condition, results in full.items():
        out.conditions.append(condition)
        for index, record in enumerate(results.get("results", [])):
            missing = [name for name in ("probe_text", "score") if name not in record]
            if missing:
                out.abort = f"{path}: {condition} record {index} has no {missing[0]!r} (KeyError: the run aborts)"
                return out
            if record["score"] in SCORES_0_3:
                out.judged.append((condition, index, record))
    return out


def _labels(case: dict) -> list[str]:
    labels: list[str] = []
    for reply in case.get("canned_replies", []):
        target = reply.get("key", {}).get("target")
        if reply.get("call") == CALL and target is not None and target not in labels:
            labels.append(target)
    return labels


def documents(case: dict) -> list[Document]:
    """The case's documents as the runner reads them, up to the one that aborts it, each
    with its target label and its stored responses (module doc)."""
    docs = case["inputs"].get("docs")
    if not isinstance(docs, dict) or not docs:
        raise FixtureError(f"case {case['id']}", "inputs.docs holds no documents")
    labels = iter(_labels(case))
    out = []
    for path, doc in docs.items():
        d = read_document(path, doc)
        if d.judged:
            d.label = next(labels, None)
            if d.label is None:
                raise FixtureError(f"case {case['id']}", f"the canned replies name no target label for {path}")
        for condition, index, record in d.judged:
            about = {"target": d.label, "condition": condition, "item": record.get("probe_id"), "index": index}
            d.stored.append(StoredResponse(content_hash({"document": path, **about}), record["probe_text"],
                                           record.get("response_preview", ""), record["score"], about))
        out.append(d)
        if d.abort:
            break
    return out


def summarize(d: Document, frame: pd.DataFrame, judge: str) -> dict:
    """One target's output as b3 writes it, from the re-judged rows: the valid pairs'
    agreement, each judge's mean per condition, and the per-probe details."""
    nan = math.nan
    agreement = rejudged_agreement(frame) if len(frame) else None
    means = judge_means(frame, "condition").set_index("condition") if len(frame) else pd.DataFrame()
    per_condition = {}
    for condition in d.conditions:
        row = means.loc[condition] if condition in means.index else None
        per_condition[condition] = {
            "primary_mean": float(row["primary_mean"]) if row is not None else nan,
            "gpt5_mean": float(row["second_mean"]) if row is not None else nan,
            "n_primary": int(row["n_primary"]) if row is not None else 0,
            "n_gpt5": int(row["n_second"]) if row is not None else 0}
    details: dict[str, list] = {condition: [] for condition in d.conditions}
    for (condition, _, record), (_, row) in zip(d.judged, frame.iterrows()):
        details[condition].append({
            "probe_id": record.get("probe_id"), "probe_text": record["probe_text"],
            "primary_score": record["score"], "primary_reason": record.get("reason", ""),
            "gpt5_score": row[REFERENCE.stored_score], "gpt5_reason": row["reference_reason"],
            "response_preview": record.get("response_preview", "")})
    return {"target_label": d.label, "alternative_judge": harness_provider(judge)[1],
            "n_paired": agreement.n_valid if agreement else 0,
            "spearman_rho": agreement.spearman if agreement else nan,
            "cohen_quadratic_kappa": agreement.kappa_quadratic if agreement else nan,
            "per_condition_means": per_condition, "per_probe_details": details}


def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict],
        workdir: Path) -> None:
    """The b3 runner replayed through :func:`contextecho.experiments.cross_judge.rejudge`, then every comparison."""
    inputs = case["inputs"]
    if not isinstance(inputs.get("judge"), dict):
        raise FixtureError(f"case {case['id']}", "inputs.judge names no judge")
    judge = litellm_model(inputs["judge"]["provider"], inputs["judge"]["model"])
    docs = documents(case)
    replay.judge_calls[judge] = CALL
    transport = Transport(concurrency=1, base_delay_s=0.0, max_delay_s=0.0, client=replay)
    outputs: list[dict | None] = []
    for d in docs:
        for s in d.stored:
            replay.identities[s.key] = (CALL, dict(s.about))
        frame = rejudge(d.stored, judge, protocol=REFERENCE, variant=B3, transport=transport,
                        name=f"{case['id']}:b3", redact=False)
        outputs.append(None if d.abort else summarize(d, frame, judge))
    for driver in case["harness_driver"]:
        report.add("runners", driver["runner"], True, note="cross_judge.rejudge under the reference protocol's "
                   f"b3 judge variant{'; ' + docs[-1].abort if docs[-1].abort else ''}")
    compare_requests(case, replay, report, declared)
    compare_tables(case, docs, outputs, report, declared)


def compare_tables(case: dict, docs: Sequence[Document], outputs: Sequence[dict | None], report: CaseResult,
                   declared: Sequence[dict]) -> None:
    """Which files the run wrote, and each written one field by field (module doc)."""
    tables = decode(case["expected"].get("tables") or {})
    n_docs = len(case["inputs"]["docs"])
    names = list(tables)
    if len(names) != n_docs + 1:
        raise FixtureError(f"case {case['id']}", f"expected.tables lists {len(names)} files; b3 writes one per "
                                                 f"document ({n_docs}) and a summary")
    written = list(outputs) + [None] * (n_docs - len(outputs))
    aborted = bool(docs) and docs[-1].abort is not None
    summary = None if aborted else [(d, o) for d, o in zip(docs, written) if o is not None]
    for name, ours in zip(names, written):
        _compare_output(report, declared, name, tables[name], ours)
    name = names[-1]
    expected = tables[name]
    report.add("tables", f"{name}.exists", (expected is None) == (summary is None), expected is not None,
               summary is not None, declared, note="the run aborts before its summary" if summary is None else "")
    if expected is not None and summary is not None:
        for (d, ours), (tag, entry) in zip(summary, expected.items()):
            for short, long in SUMMARY_FIELDS.items():
                report.compare("tables", f"{name}.{short}", entry.get(short), ours[long], declared, TOLERANCE,
                               f"{tag}: {d.path}")
        report.add("tables", f"{name}.entries", len(summary) == len(expected), len(expected), len(summary),
                   declared)


def _compare_output(report: CaseResult, declared: Sequence[dict], name: str, expected: Any, ours: dict | None) -> None:
    report.add("tables", f"{name}.exists", (expected is None) == (ours is None), expected is not None,
               ours is not None, declared)
    if expected is None or ours is None:
        return
    unknown = sorted(set(expected) - set(COMPARED) - set(LABELS))
    report.add("tables", f"{name}.fields", not unknown, sorted(COMPARED), unknown, declared,
               note="fields this runner does not know" if unknown else "")
    for key in COMPARED[:-1]:
        if key in expected:
            report.compare("tables", f"{name}.{key}", expected[key], ours[key], declared, TOLERANCE)
    if "per_probe_details" in expected:
        _compare_details(report, declared, name, expected["per_probe_details"], ours["per_probe_details"])


def _compare_details(report: CaseResult, declared: Sequence[dict], name: str, expected: Mapping,
                     ours: Mapping) -> None:
    """The per-probe details: the probes listed per condition, then each field of each
    (an input string as the runner keeps it: :data:`DETAIL_CUTS`), one check per field."""
    order = {c: [r.get("probe_id") for r in rows] for c, rows in expected.items()}
    got = {c: [r.get("probe_id") for r in rows] for c, rows in ours.items()}
    report.add("tables", f"{name}.per_probe_details.probes", order == got, order, got, declared)
    differ: dict[str, list] = {}
    for condition, rows in expected.items():
        for e, a in zip(rows, ours.get(condition, [])):
            for key in sorted(set(e) | set(a)):
                actual = a.get(key, "<absent>")
                if key in DETAIL_CUTS and isinstance(actual, str):
                    actual = actual[:DETAIL_CUTS[key]]
                if not matches(e.get(key, "<absent>"), actual):
                    differ.setdefault(key, []).append((condition, e.get("probe_id"), e.get(key, "<absent>"), actual))
    keys = sorted({k for rows in expected.values() for r in rows for k in r})
    for key in keys:
        bad = differ.get(key, [])
        first = bad[0] if bad else (None, None, None, None)
        report.add("tables", f"{name}.per_probe_details.{key}", not bad, first[2], first[3], declared,
                   note=f"{len(bad)} probes differ; first {first[0]}/{first[1]}" if bad else "")
