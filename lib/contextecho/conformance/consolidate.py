"""Run-level conformance of the ``consolidate`` family: the harness's panel consolidation
(``analysis/consolidate_12model_perm.py`` ``main()``) recomputed by our statistics.

A case gives the e02 content-position runs the harness read (``inputs.docs``, by their
path under the harness's root) and what ``main`` computed from them (``runs/README.md``,
"consolidate"). We take the runs from the case only, never from disk: each target of the
harness's list (:data:`~contextecho.echo.reference.consolidation.TARGETS`, or the driver's
``TARGETS`` substitution) whose file the case holds, ``None`` for a target listed without a
run; a listed file the case does not hold is skipped, as ``main`` skips it. The table is
:func:`contextecho.stats.consolidation.consolidate_contrasts`, which claims the harness's
resampling (CPython ``random.Random(42)``, 10,000 sign flips of the per-probe differences
in sorted probe order), so p-values are compared exactly, deltas within 1e-9 (SPEC §5).

What ``main`` printed and wrote around that table (:func:`harness_outputs`: its
``compute_contrast`` calls, its stdout with the "Skipping" lines, the JSON, the markdown,
its return or the exception its formatting raises) is rendered from our table the way
``main`` renders it, and every field is compared (:func:`run`). An expected field this
module does not know fails the case (SPEC §7).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..echo.reference import consolidation as harness_consolidation
from ..stats.consolidation import ConsolidatedContrast, Consolidation, consolidate_contrasts
from .replay import Replay, compare_requests
from .case import ROOT, TOLERANCE, CaseResult, decode, matches

EXPECTED_PARTS = ("requests", "cells", "stdout", "tables", "texts")
TABLE_NAMES = ("consolidated_json", "consolidated_md", "compute_contrast_calls", "return", "stdout")
JSON_FIELDS = ("experiment", "n_contrasts", "rows")
ROW_FIELDS = ("delta", "p_raw", "n", "p_holm_within", "p_holm_panel", "note")
#: Absolute tolerance per compared number: means within 1e-9, counts and the p-values of
#: a resampling we claim to reproduce exactly (SPEC §5).
TOLERANCES = {"delta": TOLERANCE}
RESAMPLING_NOTE = ("we claim the harness's resampling (random.Random(seed), sign flips of the per-probe "
                   "differences in sorted probe order): a p-value must be equal")
SKIPPED = re.compile(r"^Skipping (?P<target>.*): (?P<path>.*) missing$")


@dataclass
class HarnessOutputs:
    """What ``main`` would have printed and written from our table: its ``compute_contrast``
    calls in order, its stdout lines, the JSON and markdown it writes (``None`` when it
    stops before writing them) and its return (``{"raises": ..., "message": ...}`` when a
    formatting raises, as ``main``'s does on a contrast without a value)."""

    calls: list[dict] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)
    consolidated_json: dict | None = None
    consolidated_md: list[str] | None = None
    returned: Any = None
    skipped: list[str] = field(default_factory=list)


def _row(contrast: ConsolidatedContrast) -> dict:
    """A contrast as a row of the harness's JSON (``note`` only where there is one)."""
    row = {"target": contrast.target, "condition": contrast.condition, "delta": contrast.delta,
           "p_raw": contrast.p_raw, "n": contrast.n, "p_holm_within": contrast.p_holm_within,
           "p_holm_panel": contrast.p_holm_panel}
    return row if contrast.note is None else {**row, "note": contrast.note}


def _headline(target: str, first: ConsolidatedContrast) -> str:
    return (f"  {target:14}: {harness_consolidation.HEADLINE} Δ={first.delta:+.2f} p_raw={first.p_raw:.4f} "
            f"p_holm_within={first.p_holm_within:.4f}")


def _markdown(rows: Sequence[dict], n_contrasts: int) -> list[str]:
    """The harness's markdown of the rows (``:147-175``), as lines."""
    n_within = sum(1 for r in rows if r.get("p_holm_within") is not None and r["p_holm_within"] < 0.05)
    n_panel = sum(1 for r in rows if r.get("p_holm_panel") is not None and r["p_holm_panel"] < 0.05)
    md = ["# Cross-organizational paired-permutation consolidation\n\n",
          f"Total contrasts in panel: {n_contrasts}\n",
          f"Within-target Holm-significant: **{n_within} / {n_contrasts}**\n",
          f"Panel-level Holm-significant: **{n_panel} / {n_contrasts}**\n\n",
          f"## {harness_consolidation.HEADLINE}-only headline contrast (each row is one target)\n\n",
          "| Target | Δ vs scratch | p_raw | p_holm (within-target) | p_holm (panel) | Sig within | Sig panel |\n",
          "|---|---|---|---|---|---|---|\n"]
    for r in rows:
        if r["condition"] != harness_consolidation.HEADLINE:
            continue
        if r.get("delta") is None:
            md.append(f"| {r['target']} | — | — | — | — | — | — |\n")
            continue
        within = "✓" if r["p_holm_within"] < 0.05 else ""
        panel = "✓" if r["p_holm_panel"] is not None and r["p_holm_panel"] < 0.05 else ""
        md.append(f"| {r['target']} | {r['delta']:+.2f} | {r['p_raw']:.4f} | "
                  f"{r['p_holm_within']:.4f} | {r['p_holm_panel']:.4f} | {within} | {panel} |\n")
    md += ["\n## Full table (all 4 contrasts × 11 targets)\n\n",
           "| Target | Condition | Δ | p_raw | p_holm (within) | p_holm (panel) |\n", "|---|---|---|---|---|---|\n"]
    for r in rows:
        if r.get("delta") is None:
            md.append(f"| {r['target']} | {r['condition']} | — | — | — | — |\n")
            continue
        md.append(f"| {r['target']} | {r['condition']} | {r['delta']:+.2f} | "
                  f"{r['p_raw']:.4f} | {r['p_holm_within']:.4f} | {r['p_holm_panel']:.4f} |\n")
    return "".join(md).splitlines()


def _raised(exc: Exception) -> dict:
    return {"raises": type(exc).__name__, "message": str(exc)}


def harness_outputs(docs: dict, targets: Sequence[tuple[str, str | None]], conditions: Sequence[str]) -> HarnessOutputs:
    """Our consolidation of the runs in ``docs`` (path under the harness's root -> run),
    rendered as ``main`` renders its own: targets in order, a listed file absent from
    ``docs`` skipped with its line."""
    folder = harness_consolidation.DOCS_FOLDER
    present = [(t, None if f is None else docs[f"{folder}/{f}"]) for t, f in targets
               if f is None or f"{folder}/{f}" in docs]
    table: Consolidation = consolidate_contrasts(present, conditions, harness_consolidation.BASELINE,
                                                 n_resamples=harness_consolidation.N_RESAMPLES,
                                                 seed=harness_consolidation.SEED)
    out = HarnessOutputs()
    for target, name in targets:
        if name is None:
            continue
        if f"{folder}/{name}" not in docs:
            out.skipped.append(target)
            out.stdout.append(harness_consolidation.SKIP_LINE.format(target=target, path=f"{ROOT}/{folder}/{name}"))
            continue
        mine = [c for c in table.contrasts if c.target == target]
        out.calls += [{"target": target, "condition": c.condition, "result": [c.delta, c.p_raw, c.n]} for c in mine]
        try:
            out.stdout.append(_headline(target, mine[0]))
        except (TypeError, ValueError, IndexError) as exc:  # main stops here, before writing anything
            out.returned = _raised(exc)
            return out
    rows = [_row(c) for c in table.contrasts]
    out.consolidated_json = {"experiment": harness_consolidation.EXPERIMENT, "n_contrasts": table.n_contrasts,
                             "rows": rows}
    out.stdout += ["", f"Wrote {ROOT}/{folder}/{harness_consolidation.JSON_OUTPUT}"]
    try:
        out.consolidated_md = _markdown(rows, table.n_contrasts)
    except (TypeError, ValueError) as exc:  # the JSON is written, the markdown is not
        out.returned = _raised(exc)
        return out
    out.stdout.append(f"Wrote {ROOT}/{folder}/{harness_consolidation.MD_OUTPUT}")
    return out


def _settings(case: dict, report: CaseResult) -> tuple[list[tuple[str, str | None]], list[str]]:
    """The targets and conditions ``main`` ran with: the harness's, or a driver's
    substitutions; a driver, substitution or input we cannot run is *not expressible*."""
    targets = list(harness_consolidation.TARGETS)
    conditions = list(harness_consolidation.CONDITIONS)
    for driver in case["harness_driver"]:
        if driver.get("runner") != harness_consolidation.RUNNER:
            report.not_expressible("runners", str(driver.get("runner")),
                                   "a consolidate case runs the harness's consolidation only")
            continue
        for name, value in (driver.get("substitutions") or {}).items():
            if name == "TARGETS":
                targets = [(str(t), f) for t, f in value]
            elif name == "CONDITIONS":
                conditions = [str(c) for c in value]
            else:
                report.not_expressible("runners", f"substitutions.{name}",
                                       "our consolidation takes its targets and conditions only")
    for name in case["inputs"]:
        if name != "docs":
            report.not_expressible("inputs", name, "the consolidation reads its e02 runs (inputs.docs) only")
    return targets, conditions


def _compare_json(expected: Any, ours: dict | None, report: CaseResult, declared: Sequence[dict]) -> None:
    if expected is None or ours is None:
        report.add("tables", "consolidated_json", expected is None and ours is None, expected is None, ours is None,
                   declared, note="written (false: main stopped before writing it)")
        return
    for name in expected:
        if name not in JSON_FIELDS:
            report.add("tables", f"consolidated_json.{name}", False, expected[name], None, declared,
                       note="unknown expected field")
    report.compare("tables", "consolidated_json.experiment", expected.get("experiment"), ours["experiment"], declared)
    report.compare("tables", "n_contrasts", expected.get("n_contrasts"), ours["n_contrasts"], declared)
    theirs = {(r.get("target"), r.get("condition")): r for r in expected.get("rows") or []}
    mine = {(r["target"], r["condition"]): r for r in ours["rows"]}
    order_e = [list(k) for k in theirs]
    order_a = [list(k) for k in mine]
    report.add("tables", "consolidated_json.rows", order_e == order_a, order_e, order_a, declared,
               note="(target, condition) rows in order; a target absent here was skipped")
    for key, row in theirs.items():
        got = mine.get(key)
        where = f"{key[0]} / {key[1]}"
        for name in row:
            if name not in (*ROW_FIELDS, "target", "condition"):
                report.add("tables", f"consolidated_json.{name}", False, row[name], None, declared,
                           note=f"{where}: unknown expected field")
        if got is None:
            continue
        for name in ROW_FIELDS:
            if name not in row and name not in got:
                continue
            e, a = row.get(name, "<absent>"), got.get(name, "<absent>")
            ok = name in row and name in got and matches(e, a, TOLERANCES.get(name, 0.0))
            note = where if ok or not name.startswith("p_") else f"{where}: {RESAMPLING_NOTE}"
            report.add("tables", f"consolidated_json.{name}", ok, e, a, declared, note=note)


def _compare_calls(expected: Any, ours: list[dict], report: CaseResult, declared: Sequence[dict]) -> None:
    theirs = list(expected or [])
    order_e = [[c.get("target"), c.get("condition")] for c in theirs]
    order_a = [[c["target"], c["condition"]] for c in ours]
    report.add("tables", "compute_contrast_calls.order", order_e == order_a, order_e, order_a, declared)
    by_key = {(c["target"], c["condition"]): c["result"] for c in ours}
    for call in theirs:
        got = by_key.get((call.get("target"), call.get("condition")))
        if got is None:
            continue
        where = f"{call.get('target')} / {call.get('condition')}"
        for i, name in enumerate(("delta", "p_raw", "n")):
            e = call["result"][i] if len(call.get("result") or []) > i else "<absent>"
            ok = matches(e, got[i], TOLERANCES.get(name, 0.0))
            report.add("tables", f"compute_contrast_calls.{name}", ok, e, got[i], declared,
                       note=where if ok or name != "p_raw" else f"{where}: {RESAMPLING_NOTE}")


def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict],
        workdir: Path) -> None:
    """Compute the case's consolidation with our statistics and compare every field
    (module doc). ``corpus`` and ``workdir`` are not used: the runs come from the case."""
    expected = case["expected"]
    for name in expected:
        if name not in EXPECTED_PARTS:
            report.add("expected", name, False, expected[name], None, declared, note="unknown expected field")
    targets, conditions = _settings(case, report)
    ours = harness_outputs(decode(case["inputs"].get("docs") or {}), targets, conditions)
    compare_requests(case, replay, report, declared)  # the consolidation asks no model
    report.add("cells", "stored", not expected.get("cells"), len(expected.get("cells") or []), 0, declared,
               note="the consolidation writes no cell")
    report.add("runners", "driver_stdout", not expected.get("stdout"), expected.get("stdout"), [], declared,
               note="the consolidation's printed lines are tables.stdout; no driver prints apart")
    tables = decode(expected.get("tables") or {})
    for name in tables:
        if name not in TABLE_NAMES:
            report.add("tables", name, False, tables[name], None, declared, note="unknown expected field")
    if "consolidated_json" in tables:
        _compare_json(tables["consolidated_json"], ours.consolidated_json, report, declared)
    if "compute_contrast_calls" in tables:
        _compare_calls(tables["compute_contrast_calls"], ours.calls, report, declared)
    if "consolidated_md" in tables:
        e = tables["consolidated_md"]
        e = e.splitlines() if isinstance(e, str) else e
        first = next((i for i, (x, y) in enumerate(zip(e or [], ours.consolidated_md or [])) if x != y), None)
        report.compare("tables", "consolidated_md", e, ours.consolidated_md, declared,
                       note="" if first is None else f"first difference at line {first + 1}")
    if "stdout" in tables:
        lines = list(tables["stdout"] or [])
        skipped = [m["target"] for m in map(SKIPPED.match, lines) if m]
        report.add("tables", "stdout.skipped", skipped == ours.skipped, skipped, ours.skipped, declared,
                   note="targets whose run file is missing")
        report.add("tables", "stdout", lines == ours.stdout, lines, ours.stdout, declared)
    if "return" in tables:
        report.compare("tables", "return", tables["return"], ours.returned, declared)
