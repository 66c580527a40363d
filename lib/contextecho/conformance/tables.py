"""What the families' table comparisons share: our runs as the harness's runners (:class:`Driven`),
our rows under the harness's cell identity (:func:`row_identity`), a table field read with a
declared reading of some replies (:func:`explained`), and the S2 tables (the harness's S2 audit
and stressor forest, :func:`compare_s2_tables`) computed from our S2 cells, each under the
session label the harness's audit gives it (:func:`stressor_cells`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from ..echo.reference.released_answers import item_name
from ..echo.reference.scorers import REFERENCE_SCORERS
from ..stats.judge_free import StressorCell, harness_audit_session, harness_compliance_audit, harness_stressor_forest
from ..stats.session_validation import HARNESS_ARMS
from .case import DECLARED, TOLERANCE, CaseResult, Check, decode, declared_for, matches
from .replay import Replay, key_identity


def row_identity(row: Mapping[str, Any], target_safe: Mapping[str, str]) -> tuple:
    """One of our frame's rows as the same cell identity, in the harness's names."""
    return (target_safe[row["target"]], row["position"], HARNESS_ARMS[row["arm"]], item_name(row["item"]),
            int(row["replicate"]))


@dataclass
class Driven:
    """One of our runs standing in for one harness runner."""

    runner: str
    frame: pd.DataFrame
    target_safe: dict[str, str]  # model string -> the harness's folder name
    replicates: int = 1
    #: The runner's name for the one session the run read, where the runner names its sessions
    #: (e09: ``chainassemble``, ``proeng``); None: the cross-compaction runners' one session.
    session: str | None = None


def target_replies(replay: Replay) -> dict[tuple, Mapping]:
    """The last reply spec sent to each target cell, by (the key's ``session``, where the
    runner names its sessions; the cell identity of :func:`~.replay.key_identity`)."""
    return {(s.key.get("session"), key_identity(s.key)): s.reply for s in replay.sent if s.call == "target"}


#: Our arms under the harness's names in its S2 tables.
S2_ARM_NAMES = {"real": "claude", "filler": "filler"}


def stressor_cells(driven: Sequence[Driven], replay: Replay | None = None) -> list[StressorCell]:
    """The stored S2 cells of our runs (a failed target call stored nothing), each under the
    label the harness's S2 audit gives its run's session
    (:func:`~contextecho.stats.judge_free.harness_audit_session`; a session the audit does not
    read is left out). With
    ``replay``: as they would be had a reply of several text blocks been joined as the
    harness joins them (newlines; the declared ``multi_block_join``), its S2 verdict
    recomputed by the same scorer."""
    cells = []
    replies = target_replies(replay) if replay is not None else {}
    for d in driven:
        session = harness_audit_session(d.session)
        if session is None:
            continue
        rows = d.frame[(d.frame["item_kind"] == "stressor") & d.frame["response"].map(lambda v: isinstance(v, str))]
        for row in rows.to_dict("records"):
            ident = row_identity(row, d.target_safe)
            text, compliant = row["response"], bool(row["passed"])
            if replay is not None:
                blocks = (replies.get((d.session, ident)) or {}).get("blocks") or []
                if len(blocks) > 1:
                    text = "\n".join(blocks)
                    compliant = bool(REFERENCE_SCORERS.get(row["scorer"])(text))
            cells.append(StressorCell(ident[0], session, row["position"], ident[3], row["arm"], compliant,
                                      len(text)))
    return cells


#: The replies a table field may be read again with, as the harness reads them: the declared
#: cell divergence (``cells`` section) and how the harness reads those replies.
MULTI_BLOCK_READING = ("multi_block_join", "multi-block replies are joined as the harness joins them")
EMPTY_TEXT_READING = ("empty_text_verdict", "empty-text judge replies are read as the harness reads them "
                                            "(-1, the cell kept)")


def explained(report: CaseResult, name: str, expected: Any, ours: Any, joined: Any, declared: Sequence[dict],
               tolerance: float = 0.0, note: str = "", reading: tuple[str, str] = MULTI_BLOCK_READING) -> None:
    """A table field: a pass when ours agrees; a declared divergence when it agrees only
    with ``joined``, the field computed with those replies read the harness's way
    (``reading``: multi-block replies joined by default; the cell divergence declared);
    else a failure."""
    if matches(expected, ours, tolerance):
        report.add("tables", name, True, expected, ours, declared, note=note)
        return
    field_name, how = reading
    why = declared_for(declared, report.family, "cells", field_name)
    if why is not None and matches(expected, joined, tolerance):
        report.checks.append(Check(name, expected, ours, DECLARED, "tables",
                                   f"{note}: agrees once {how} ({why['reason'][:120]})".lstrip(": ")))
        return
    report.add("tables", name, False, expected, ours, declared, note=note)


def harness_arms(counts: Mapping[str, Any]) -> dict:
    return {S2_ARM_NAMES[arm]: value for arm, value in counts.items()}


def compare_s2_tables(tables: Mapping, driven: Sequence[Driven], replay: Replay, report: CaseResult,
                       declared: Sequence[dict]) -> set[str]:
    """The S2 audit (counts and length ratios) and the stressor forest (points and bounds), computed
    by :func:`~contextecho.stats.judge_free.harness_compliance_audit` and
    :func:`~contextecho.stats.judge_free.harness_stressor_forest` from our cells. The targets
    and sessions the harness's audit lists are its inputs (one without cells counts
    zero); the forest's bootstrap bounds are the harness's resampling (seed 42, 10 000),
    compared exactly."""
    versions = {"ours": stressor_cells(driven), "joined": stressor_cells(driven, replay)}
    done = set()
    if "audit_compliance" in tables:
        done.add("audit_compliance")
        expected = decode(tables["audit_compliance"])
        audits = {k: harness_compliance_audit(cells, targets=list(expected.get("per_target", {})),
                                              sessions=list(expected.get("per_session", {})))
                  for k, cells in versions.items()}
        shaped = {k: {"overall": harness_arms(a["overall"]),
                      "per_target": {t: harness_arms(v) for t, v in a["per_target"].items()},
                      "per_session": {s_: harness_arms(v) for s_, v in a["per_session"].items()}}
                  for k, a in audits.items()}
        for name in ("overall", "per_target", "per_session"):
            explained(report, f"audit_compliance.{name}", expected.get(name), shaped["ours"][name],
                       shaped["joined"][name], declared)
        for session, ratios in (expected.get("ratios_by_session") or {}).items():
            got = {k: a["ratios_by_session"].get(session, {}) for k, a in audits.items()}
            for name in ("raw_ratio", "n_raw", "cond_ratio", "n_cond"):
                explained(report, f"audit_compliance.ratios_by_session.{name}", ratios.get(name),
                           got["ours"].get(name), got["joined"].get(name), declared,
                           0.0 if name.startswith("n_") else TOLERANCE, session)
    if "forest_stressors_no_anchor" in tables:
        done.add("forest_stressors_no_anchor")
        for row in decode(tables["forest_stressors_no_anchor"]):
            own = {k: [c for c in cells if c.target == row["target"]] for k, cells in versions.items()}
            got = {"ours": harness_stressor_forest(own["ours"], row.get("positions") or [], n_boot=10_000, seed=42)}
            got["joined"] = got["ours"] if own["joined"] == own["ours"] else harness_stressor_forest(
                own["joined"], row.get("positions") or [], n_boot=10_000, seed=42)
            for name in ("fi_c", "cl_c", "cl_r"):
                point, lo, hi = row[name]
                explained(report, f"forest_stressors_no_anchor.{name}", point, got["ours"][name],
                           got["joined"][name], declared, TOLERANCE, row["target"])
                bounds = {k: [g[f"{name}_lo"], g[f"{name}_hi"]] for k, g in got.items()}
                explained(report, f"forest_stressors_no_anchor.{name}.bounds", [lo, hi], bounds["ours"],
                           bounds["joined"], declared, 0.0, row["target"])
            for name in ("compliance_drop", "length_inflation"):
                explained(report, f"forest_stressors_no_anchor.{name}", row[name], got["ours"][name],
                           got["joined"][name], declared, TOLERANCE, row["target"])
    return done
