"""Run-level conformance of the harness's A1 context-source conditions (family ``context_source``).

e03's ``run_a1_context_source.py`` cannot run from the harness's release (``runs/README.md``,
exceptions): importing it raises, so the fixture ran ``main()``'s statements ``:199-223`` alone on
a canned GPT-5-shaped transcript (``inputs.gpt5_transcript.records``). What it records is the
conditions main() builds: their labels in order, each condition's prior messages (role, content)
and printed size, the verbatim slice and the four slices cut from it.

Our run (:func:`run`): the records go through the reference protocol's A1 design
(:func:`contextecho.echo.reference.context_source.a1_design`), and its slices and conditions are
compared with the case's (SPEC §5); the printed sizes are compared with the runner's lines. The
target system prompt, probe framing and verdict parser of the runner are not in the release, so
the case has no request and no score: that is reported (SPEC §7, "Partial reference") as a
``not_implemented`` entry for requests and for scores, never as a pass.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from ..echo.reference.context_source import A1_CONDITIONS, A1Condition, A1Slices, a1_design
from .case import NOT_IMPLEMENTED, CaseResult, Check, FixtureError, decode, matches, sha256_text
from .replay import Replay, compare_requests

A1_RUNNER = "experiments/e03_same_target_ablation/run_a1_context_source.py"
EXPECTED_PARTS = ("requests", "cells", "stdout", "tables", "texts")
TABLE_NAMES = ("import", "conditions", "verbatim_full", "slices", "return", "shuffled_or_unrelated_arms")
#: The runner's printed sizes: the slice's length, then one line per condition.
VERBATIM_LINE = re.compile(r"GPT-5 session verbatim_full: (?P<chars>\d+) chars")
CONDITION_LINE = re.compile(r"  (?P<label>\S+): (?P<chars>\d+) chars$")
NOT_COVERED = ("the harness's A1 runner cannot run from its release (its target system prompt, probe "
               "framing and verdict parser are in a module the repository lacks): the reference covers "
               "the conditions only (SPEC §7, partial reference)")


def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict],
        workdir: Path) -> None:
    """Build the A1 conditions from the case's transcript and compare (module doc). ``corpus``
    and ``workdir`` are not used: the transcript comes with the case."""
    for driver in case["harness_driver"]:
        if driver.get("runner") != A1_RUNNER:
            report.not_expressible("runners", str(driver.get("runner")), "a context_source case runs e03 A1 only")
        for name in driver.get("substitutions") or {}:
            report.not_expressible("runners", f"substitutions.{name}", "e03 A1 has no setting we take")
    for name in case["inputs"]:
        if name != "gpt5_transcript":
            report.not_expressible("inputs", name, "e03 A1 reads the GPT-5 source transcript only")
    try:
        records = case["inputs"]["gpt5_transcript"]["records"]
    except (KeyError, TypeError):
        raise FixtureError(f"case {case['id']}", "no inputs.gpt5_transcript.records") from None
    slices, conditions = a1_design(records)
    expected = case["expected"]
    for name in expected:
        if name not in EXPECTED_PARTS:
            report.add("expected", name, False, expected[name], None, declared, note="unknown expected field")
    compare_requests(case, replay, report, declared)  # none is sent: the conditions ask no model
    report.checks.append(Check("coverage", status=NOT_IMPLEMENTED, section="requests", note=NOT_COVERED))
    report.checks.append(Check("coverage", status=NOT_IMPLEMENTED, section="scores", note=NOT_COVERED))
    report.add("cells", "stored", not expected.get("cells"), len(expected.get("cells") or []), 0, declared,
               note="building the conditions writes no cell")
    for stdout in expected.get("stdout") or []:
        _compare_stdout(stdout, slices, conditions, report, declared)
    tables = decode(expected.get("tables") or {})
    for name in tables:
        if name not in TABLE_NAMES:
            report.add("tables", name, False, tables[name], None, declared, note="unknown expected field")
    if "import" in tables:
        report.checks.append(Check("import", tables["import"], None, NOT_IMPLEMENTED, "tables",
                                   "informational: the harness's runner does not import; ours needs no import "
                                   "of it"))
    if "conditions" in tables:
        _compare_conditions(tables["conditions"], conditions, report, declared)
    if "verbatim_full" in tables:
        _compare_text(report, declared, "verbatim_full", tables["verbatim_full"], slices.verbatim_full)
    for name, expected_slice in (tables.get("slices") or {}).items():
        ours = slices.named().get(name)
        if ours is None:
            report.add("tables", f"slices.{name}", False, expected_slice, None, declared, note="unknown slice")
            continue
        _compare_text(report, declared, f"slices.{name}", expected_slice, ours)
    if "return" in tables:
        report.compare("tables", "return", tables["return"], None, declared,
                       note="main()'s statements 199-223 return nothing")
    if "shuffled_or_unrelated_arms" in tables:
        ours_there = [label for label in A1_CONDITIONS if "shuffled" in label or "unrelated" in label]
        report.add("tables", "shuffled_or_unrelated_arms", not ours_there, tables["shuffled_or_unrelated_arms"],
                   ours_there, declared, note="A1 defines no such condition; the shuffled_real and "
                                              "unrelated_session controls are arms of our own (echo.arms)")


def _compare_text(report: CaseResult, declared: Sequence[dict], name: str, expected: dict, ours: str) -> None:
    """A text recorded as ``{len, sha256[, text]}``: its length and digest."""
    report.compare("tables", f"{name}.len", expected.get("len"), len(ours), declared)
    digest = {"$digest": {"sha256": expected.get("sha256"), "len": expected.get("len")}}
    report.add("tables", f"{name}.sha256", matches(digest, ours), expected.get("sha256"), _digest(ours), declared)
    if "text" in expected:
        report.add("tables", f"{name}.text", matches(expected["text"], ours), expected["text"], _digest(ours),
                   declared)


def _digest(text: str) -> dict:
    return {"sha256": sha256_text(text), "len": len(text)}


def _compare_conditions(expected: dict, ours: Sequence[A1Condition], report: CaseResult,
                        declared: Sequence[dict]) -> None:
    labels_e, labels_a = list(expected), [c.label for c in ours]
    report.add("tables", "conditions.labels", labels_e == labels_a, labels_e, labels_a, declared,
               note="the conditions in the runner's order")
    by_label = {c.label: c for c in ours}
    for label, theirs in expected.items():
        mine = by_label.get(label)
        if mine is None:
            continue
        for name in theirs:
            if name not in ("messages", "chars"):
                report.add("tables", f"conditions.{name}", False, theirs[name], None, declared,
                           note=f"{label}: unknown expected field")
        messages = list(theirs.get("messages") or [])
        roles_e = [m.get("role") for m in messages]
        roles_a = [m["role"] for m in mine.messages]
        report.add("tables", "conditions.roles", roles_e == roles_a, roles_e, roles_a, declared, note=label)
        for i, (e, a) in enumerate(zip(messages, mine.messages)):
            content = e.get("content")
            report.add("tables", "conditions.content", matches(content, a["content"]), content,
                       _digest(a["content"]) if isinstance(a["content"], str) else a["content"], declared,
                       note=f"{label} message {i}")
        if "chars" in theirs:
            report.compare("tables", "conditions.chars", theirs["chars"], mine.chars, declared, note=label)


def _compare_stdout(stdout: dict, slices: A1Slices, conditions: Sequence[A1Condition], report: CaseResult,
                    declared: Sequence[dict]) -> None:
    """The sizes the runner printed: the slice's, then each condition's, in order."""
    if not str(stdout.get("driver", "")).startswith(A1_RUNNER):
        report.not_expressible("stdout", str(stdout.get("driver")), "not e03 A1's printout")
        return
    lines = stdout.get("lines") or []
    verbatim = [int(m["chars"]) for m in map(VERBATIM_LINE.match, lines) if m]
    report.add("stdout", "verbatim_full.chars", verbatim == [len(slices.verbatim_full)], verbatim,
               [len(slices.verbatim_full)], declared)
    sizes_e = [[m["label"], int(m["chars"])] for m in map(CONDITION_LINE.match, lines) if m]
    sizes_a = [[c.label, c.chars] for c in conditions]
    report.add("stdout", "conditions.chars", sizes_e == sizes_a, sizes_e, sizes_a, declared)
    report.compare("stdout", "return", stdout.get("return"), None, declared,
                   note="main()'s statements 199-223 return nothing")
