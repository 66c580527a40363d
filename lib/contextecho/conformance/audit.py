"""Run-level conformance of the harness's cross-judge audit, inside the panel cases.

``run_crossjudge_audit.py`` re-judges every stored panel cell
``results/probes_at_crosscompaction/<target>/<position>/<arm>/<C0x>.json`` whose score is an
int (a failed verdict's −1 included), for every target folder present, with a second judge
through the harness's own ``Judge`` (its request, provider settings and parser). It writes
one record per re-judged cell whose judge call returned, then the agreement of the two
judges over those records, −1s kept on either side, Spearman's rho over ranks that break
ties in order, a 4-class kappa, and each judge's drift gap (filler mean − real mean, −1s
averaged in): ``RESULTS.json`` and ``AGREEMENT.md`` (``:95-160``).

Our run (:func:`rejudge_stored`, called by the run-level runner's ``drive`` after the panel
runs): the cells our panel runs stored (the first run that stored a cell keeps it: the
harness's runners skip cells on disk), at the audit's positions (its ``inputs.runs`` entry)
on the headline battery (the harness's five coding probes), in the audit's order (target
folder, arm, probe), are judged again by :func:`~contextecho.experiments.cross_judge.rejudge`
under the reference protocol's judge, the replay client as the transport; each request's key
is its stored cell's identity restricted to the case's key fields of the ``cross_judge`` call.
The audit's numbers are :func:`~contextecho.experiments.cross_judge.rejudged_agreement` and
:func:`~contextecho.experiments.cross_judge.judge_means` with ``failures="in"`` and ordinal
ties. :func:`compare_audit` compares the records and both tables with the case's.
"""
from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

import pandas as pd

from ..engine.calls import Transport
from ..experiments.cross_judge import StoredResponse, judge_means, rejudge, rejudged_agreement
from ..experiments.panel import Parameters as PanelParameters
from ..experiments.scores import headline_ids
from ..echo.reference.released import identify
from .replay import Replay
from .case import REFERENCE, TOLERANCE, CaseResult, FixtureError, decode, matches

AUDIT_RUNNER = "experiments/e15_probes_at_crosscompaction/run_crossjudge_audit.py"
#: The audit's folder (``run_crossjudge_audit.py:23``) and its tables (a record's path in it is the
#: released layout ``cross_judge``: :mod:`~contextecho.echo.reference.released`).
AUDIT_OUT = "results/crossjudge_audit/"
RESULTS, AGREEMENT = AUDIT_OUT + "RESULTS.json", AUDIT_OUT + "AGREEMENT.md"
CALL = "cross_judge"
#: The columns of a stored cell that name it, carried into its re-judged row.
IDENTITY_COLUMNS = ("target", "session", "position", "step", "arm", "item", "item_kind", "replicate")
#: A record's fields and the re-judged row's columns that hold them.
RECORD_FIELDS = {"sonnet_score": "primary_score", "gpt5_score": REFERENCE.stored_score,
                 "gpt5_label": "reference_label", "gpt5_reason": "reference_reason"}


def writes(path: str) -> bool:
    """Whether ``path`` (an expected cell's) is one the audit writes."""
    return path.startswith(AUDIT_OUT)


def _positions(case: dict, runner: str) -> list[str]:
    for run in case["inputs"].get("runs", []):
        if run.get("runner") == runner and run.get("positions"):
            return list(run["positions"])
    raise FixtureError(f"case {case['id']}", f"inputs.runs names no positions for {runner}")


def _stored_cells(frames: Sequence[pd.DataFrame], replay: Replay) -> dict[tuple, dict]:
    """The probe cells our runs stored, by the harness's identity (target folder, position,
    arm, probe): a judged row with a response and a score the harness stores (−1 included),
    the first run's where several stored it."""
    stored: dict[tuple, dict] = {}
    for frame in frames:
        if not len(frame) or REFERENCE.stored_score not in frame:
            continue
        judged = frame[(frame["item_kind"] == "probe") & (frame["replicate"] == 0)
                       & frame["judge_model"].map(lambda m: replay.judge_calls.get(m) == "judge")]
        for row in judged.to_dict("records"):
            found = replay.identities.get(row["key"])
            if found is None or not isinstance(row["response"], str) or _missing(row[REFERENCE.stored_score]):
                continue
            key = found[1]
            stored.setdefault((key["target"], key["position"], key["arm"], key["item"]), row)
    return stored


def _missing(value: Any) -> bool:
    return value is None or isinstance(value, float) and math.isnan(value)


def rejudge_stored(case: dict, runner: str, frames: Sequence[pd.DataFrame], replay: Replay, judge: str,
                   fields: Sequence[str]) -> pd.DataFrame:
    """The audit re-judging the cells our panel runs stored (module doc): one row per stored
    cell at the audit's positions on the headline battery, in the audit's order."""
    if not judge:
        raise FixtureError(f"case {case['id']}", f"inputs.runs names no judge for {runner}")
    positions = _positions(case, runner)
    items = headline_ids(PanelParameters.headline)
    chosen = sorted(((ident, row) for ident, row in _stored_cells(frames, replay).items()
                     if ident[1] in positions and ident[3] in items),
                    key=lambda pair: (pair[0][0], positions.index(pair[0][1]), pair[0][2], pair[0][3]))
    stored = [StoredResponse(row["key"], row["probe_text"], row["response"], row[REFERENCE.stored_score],
                             {c: row[c] for c in IDENTITY_COLUMNS}) for _, row in chosen]
    replay.judge_calls[judge] = CALL
    replay.judge_fields[CALL] = list(fields)
    transport = Transport(concurrency=1, base_delay_s=0.0, max_delay_s=0.0, client=replay)
    return rejudge(stored, judge, protocol=REFERENCE, transport=transport, name=f"{case['id']}:audit",
                   redact=False)


# ---------------------------------------------------------------- comparing
def audit_summary(records: pd.DataFrame) -> dict | None:
    """``RESULTS.json`` as the audit computes it from its records (None: no pairs, the audit
    writes nothing): the pairs' agreement with −1s kept and ordinal ties, and each judge's
    drift gap, filler mean − real mean with −1s averaged in."""
    if not len(records):
        return None
    a = rejudged_agreement(records, failures="in", ties="ordinal")
    means = judge_means(records, "arm", failures="in").set_index("arm")

    def gap(column: str) -> float:
        return float(means.at["filler", column] - means.at["real", column]) \
            if {"real", "filler"} <= set(means.index) else math.nan

    return {"n_pairs": a.n_valid, "exact_agreement": a.exact, "within_one_agreement": a.within_one,
            "spearman_rho": a.spearman, "cohen_kappa_4class": a.kappa,
            "panel_drift_gap_sonnet_judge": gap("primary_mean"), "panel_drift_gap_gpt5_judge": gap("second_mean")}


def _records(frame: pd.DataFrame, replay: Replay) -> pd.DataFrame:
    """The re-judged rows the audit writes a record for (its judge call returned a verdict
    it stores), with the harness's identity of each (``ident``)."""
    if not len(frame):
        return frame.assign(ident=[])
    kept = frame[~frame[REFERENCE.stored_score].map(_missing)] if REFERENCE.stored_score in frame else frame.iloc[:0]
    return kept.assign(ident=[tuple(replay.identities[k][1][f] for f in ("target", "position", "arm", "item"))
                              for k in kept["key"]])


def compare_audit(case: dict, driven: Sequence[Any], replay: Replay, report: CaseResult,
                  declared: Sequence[dict]) -> set[str]:
    """The audit's records, ``RESULTS.json`` and ``AGREEMENT.md`` against the case's, from
    the re-judged frame of the run standing in for the audit (``driven``: our runs, each
    with its ``runner`` and ``frame``). The names of the tables compared."""
    audits = [d for d in driven if d.runner == AUDIT_RUNNER]
    if not audits:
        return set()
    records = _records(audits[-1].frame, replay)
    ours = {row["ident"]: row for row in records.to_dict("records")}
    expected = {}
    for cell in case["expected"].get("cells", []):
        found = identify(cell["path"], cell["record"])
        if found and found[0] == "cross_judge":
            i = found[1]
            expected[(i.target, i.position, i.arm, i.item)] = cell["record"]
    missing, extra = sorted(set(expected) - set(ours)), sorted(set(ours) - set(expected))
    report.add("cells", "audit.records", not missing and not extra, len(expected), len(ours), declared,
               note=f"missing {[list(i) for i in missing[:5]]}, extra {[list(i) for i in extra[:5]]}"
               if missing or extra else f"{len(expected)} records")
    for name, column in RECORD_FIELDS.items():
        bad = [(i, e[name], ours[i][column]) for i, e in expected.items()
               if i in ours and name in e and not matches(e[name], ours[i][column])]
        first = bad[0] if bad else (None, None, None)
        report.add("cells", f"audit.{name}", not bad, first[1], first[2], declared,
                   note=f"{len(bad)} records differ; first {list(first[0])}" if bad else "")
    tables = decode(case["expected"].get("tables") or {})
    summary = audit_summary(records)
    if RESULTS in tables:
        results = tables[RESULTS]
        report.add("tables", f"{RESULTS}.exists", (results is None) == (summary is None), results is not None,
                   summary is not None, declared)
        for name, value in (results or {}).items():
            actual = summary.get(name, "<absent>") if summary else None
            report.compare("tables", f"{RESULTS}.{name}", value, actual, declared,
                           0.0 if name.startswith("n_") else TOLERANCE)
    if AGREEMENT in tables:
        _compare_agreement(tables[AGREEMENT], list((tables.get(RESULTS) or summary or {})), summary, report, declared)
    return {name for name in tables if writes(name)}


NUMBER_LINE = re.compile(r"^- (?P<label>.+): (?P<value>[+-]?(?:\d+(?:\.(?P<decimals>\d+))?|nan|inf))$")


def _compare_agreement(lines: Any, order: Sequence[str], summary: Mapping | None, report: CaseResult,
                       declared: Sequence[dict]) -> None:
    """``AGREEMENT.md``: its title, then one ``- label: value`` line per ``RESULTS.json``
    field in that order; each value is compared with ours printed as the line prints it
    (its decimals, its sign)."""
    report.add("tables", f"{AGREEMENT}.exists", (lines is None) == (summary is None), lines is not None,
               summary is not None, declared)
    if lines is None or summary is None:
        return
    numbers = [m for m in (NUMBER_LINE.match(line) for line in lines) if m]
    report.add("tables", f"{AGREEMENT}.lines", len(numbers) == len(order), len(numbers), len(order), declared,
               note="one line per RESULTS.json field")
    for name, m in zip(order, numbers):
        value, decimals = summary.get(name), len(m.group("decimals") or "")
        sign = "+" if m.group("value").startswith("+") else ""
        printed = f"{value:{sign}.{decimals}f}" if isinstance(value, float) else str(value)
        report.add("tables", f"{AGREEMENT}.{name}", printed == m.group("value"), m.group(0), printed, declared,
                   note=m.group("label"))
