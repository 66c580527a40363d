"""Run-level conformance of the harness's probe-framing ablation (family ``framing``).

The case (``runs/README.md``): e16 (``experiments/e16_probe_framing_ablation/run.py``
``main()``) asked one target the Coding-Self probes on the real prefix at one position, with
and without the framing line, ``N_REPS`` times each, judged them on the bare probe, and
summarised its cells in ``RESULTS.json``. :func:`run` replays it through our experiment,
:mod:`contextecho.experiments.framing`, as its stages run it:

1. the case's framings become ours (``with_framing``, the framing line then the probe:
   ``framed``; ``without_framing``, the bare probe: ``bare``; in the case's order), its target,
   judge, probes, replicates, window and position our ``Parameters`` and cells
   (:func:`~contextecho.experiments.framing.framing_cells`, unredacted: nothing leaves the
   process), at e16's 600 target and 400 judge tokens (``PAPER_SCALE``);
2. each target request's key is its cell's identity in e16's key fields (``target`` = the
   model id, e16's ``TARGET_MODEL``; ``arm`` = the harness's framing name, ``replicate`` = the
   rep); the judge's requests name their cell; the
   :class:`~.replay.Replay` is the run's network client;
3. compared: the requests (:func:`~.replay.compare_requests`); every stored cell
   (``response_text``, ``response_len``, ``score``, ``label``, ``reason``) and which are stored;
   the summary (``framing_results``: per framing and probe ``mean``, ``n`` and ``scores`` as a
   multiset, the pooled ``_overall``, ``_meta``, ``framing_effect``), computed by the
   experiment's own ``results`` and ``effect`` stages from the replayed cells.

A reply of several Anthropic text blocks and a judge's empty text blocks differ as in every
family (the declared ``multi_block_join`` and ``empty_text_verdict``: the cell compared apart,
the summary computed again with such cells read as the harness reads them).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..echo.protocol import Positions
from ..echo.protocols import protocol_of
from ..echo.reference.judge import parse_verdict
from ..echo.reference.released import identify
from ..echo.reference.texts import PROBE_FRAMING
from ..experiments import framing, spine
from ..experiments.framing_summary import BARE, FRAMED, OVERALL as SUMMARY_OVERALL
from ..experiments.protocol_record import protocol_record
from ..sessions.positions import Position
from .case import DECLARED, REFERENCE, TOLERANCE, CaseResult, Check, FixtureError, declared_for, decode, matches
from .cells import compare_cell_fields, empty_text_verdict, expected_cells, multi_block_join
from .replay import Replay, compare_requests, key_fields, key_identity, litellm_model

E16_RUNNER = "experiments/e16_probe_framing_ablation/run.py"
#: What a case's framing text is, read as our framing: the framing line before the probe, or nothing.
FRAMED_TEXT = "PROBE_FRAMING"
CELL_FIELDS = ("response_text", "response_len", "score", "label", "reason")
#: The key e16's summary gives a framing's pooled row, and its own block.
OVERALL, META = "_overall", "_meta"


def case_framings(framings: Mapping[str, str], where: str) -> dict[str, str]:
    """The case's framings (harness name -> what precedes the probe) as ours, in its order:
    nothing is ``bare``, the framing line (``PROBE_FRAMING + ...``) is ``framed``."""
    ours = {}
    for name, text in framings.items():
        if text == "":
            ours[name] = BARE
        elif text.startswith(FRAMED_TEXT):
            ours[name] = FRAMED
        else:
            raise FixtureError(where, f"framing {name!r} ({text!r}) is neither the framing line nor none")
    return ours


def _positions(case: dict) -> list[Position]:
    return [Position(int(p["turn"]), p["label"], "case") for p in case["inputs"].get("positions", [])]


def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict],
        workdir: Path) -> None:
    """Replay one ``framing`` case through our framing ablation and compare (module doc)."""
    inputs, where = case["inputs"], f"case {case['id']}"
    drivers = [d for d in case["harness_driver"] if d.get("runner") == E16_RUNNER]
    for d in case["harness_driver"]:
        if d.get("runner") != E16_RUNNER:
            report.not_expressible("runners", d.get("runner", "?"), "not part of the framing ablation we run")
    if len(drivers) != 1:
        raise FixtureError(where, f"needs exactly one {E16_RUNNER} driver, has {len(drivers)}")
    substitutions = drivers[0].get("substitutions") or {}
    names = case_framings(inputs.get("framings") or {}, where)
    target, judge = inputs["target"], inputs["judge"]
    model = litellm_model(target["provider"], target["model"])
    scale = framing.PAPER_SCALE
    params = framing.Parameters(
        targets=(model,), judges=(litellm_model(judge["provider"], judge["model"]),),
        window=int(inputs.get("max_chars", scale["window"])), max_tokens=scale["max_tokens"],
        judge_max_tokens=scale["judge_max_tokens"], protocol="reference", probes=tuple(inputs["probes"]),
        framings=tuple(names.values()), replicates=int(substitutions.get("N_REPS", inputs.get("n_reps", 1))),
        output_dir=str(workdir / "framing"), concurrency=1)
    session = REFERENCE.read_session(corpus / inputs["session"])
    proto = protocol_of(params)
    models = params.targets + params.judge_models()
    run_ = spine.start("framing", params, models=models, protocol=proto, record=protocol_record(proto, params),
                       sessions=lambda: [session], declared=framing.MANUSCRIPT,
                       transport=replace(params.transport(models), base_delay_s=0.0, max_delay_s=0.0, client=replay))
    cells = framing.framing_cells(proto, params, [session], Positions(chosen={session.session_id: _positions(case)}),
                                  redact=False)
    harness_name = {ours: theirs for theirs, ours in names.items()}
    fields = key_fields(case, "target")
    for cell in cells:
        values = {"target": target["model"], "position": cell.position, "turn": cell.step,
                  "arm": harness_name[cell.item.framing], "item": cell.item.id, "replicate": cell.replicate}
        replay.name_target(cell.request.key, fields, values, where)
    replay.judge_calls.update({j: "judge" for j in params.judge_models()})
    frame = spine.run_grid(run_, cells, judges=params.judges, judge_max_tokens=params.judge_max_tokens, redact=False)
    identity = {row["key"]: (target["model"], row["position"], harness_name[row["framing"]], row["item"],
                             int(row["replicate"])) for row in frame.to_dict("records")}
    compare_requests(case, replay, report, declared)
    read = _compare_cells(case, frame, identity, replay, report, declared)
    _compare_tables(case, run_, frame, read, names, report, declared)


def _cell_identity(path: str, record: Mapping[str, Any]) -> tuple | None:
    """(target, position, framing, probe, rep) of an e16 cell file; None for another."""
    found = identify(path, record)
    if found is None or found[0] != "framing":
        return None
    i = found[1]
    return i.target, i.position, i.arm, i.item, i.replicate


def _score(row: Mapping[str, Any]) -> int | None:
    return REFERENCE.stored_value(row)


def _compare_cells(case: dict, frame: pd.DataFrame, identity: Mapping[str, tuple], replay: Replay,
                   report: CaseResult, declared: Sequence[dict]) -> pd.DataFrame | None:
    """Every stored cell, field by field; which cells are stored; a lost cell keeps no score.
    Returns ``frame`` as the harness reads it where a judge answered empty text blocks and we
    lost the cell (the declared ``empty_text_verdict``: −1 kept), else ``None``."""
    ours = {identity[row["key"]]: row for row in frame.to_dict("records")
            if isinstance(row.get("response"), str)}
    expected = expected_cells(case, _cell_identity, "an e16 cell", report, declared)
    empty_text = replay.empty_text_cells()
    kept: list[str] = []  # our keys of the cells the harness kept with the empty-text verdict
    compared = []
    for ident, record in expected.items():
        row = ours.get(ident)
        if row is None:
            continue
        if multi_block_join(report, ident, record, row["response"], replay.target_replies.get(ident), declared):
            continue
        actual = {"response_text": row["response"], "response_len": len(row["response"]), "score": _score(row),
                  "label": row.get("reference_label"), "reason": row.get("reference_reason")}
        values = empty_text_verdict(report, ident, record, actual, empty_text, declared)
        if values is not actual:
            kept.append(row["key"])
        compared.append((ident, record, values))
    missing = [i for i in expected if i not in ours]
    report.add("cells", "stored", not missing, len(expected), len(expected) - len(missing), declared,
               note=f"missing or failed: {[list(i) for i in missing[:10]]}" if missing else f"{len(expected)} cells")
    compare_cell_fields(report, compared, CELL_FIELDS, declared)
    requested = {key_identity(s.key) for s in replay.sent if s.call == "target"}
    lost = [i for i in requested if i not in expected and i in ours]
    scored = [i for i in lost if _score(ours[i]) is not None]
    report.add("cells", "lost_cells_contribute_nothing", not scored, [], [list(i) for i in scored[:10]], declared,
               note=f"{len(lost)} lost cells")
    if not kept:
        return None
    read = frame.copy()
    at = read["key"].isin(kept)
    read.loc[at, REFERENCE.stored_score] = float(parse_verdict("").score)
    return read


def _tables(run_: spine.Run, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The experiment's own summary and effect stages on ``frame``."""
    results = framing.results(run_, frame)
    return results, framing.effect(run_, results)


def _compare_tables(case: dict, run_: spine.Run, frame: pd.DataFrame, read: pd.DataFrame | None,
                    names: Mapping[str, str], report: CaseResult, declared: Sequence[dict]) -> None:
    tables = case["expected"].get("tables") or {}
    versions = {"ours": _tables(run_, frame)}
    if read is not None:
        versions["read"] = _tables(run_, read)

    def field(name: str, expected: Any, got: Mapping[str, Any], tolerance: float = 0.0, note: str = "") -> None:
        if matches(expected, got["ours"], tolerance):
            report.add("tables", name, True, expected, got["ours"], declared, note=note)
            return
        why = declared_for(declared, report.family, "cells", "empty_text_verdict")
        if "read" in got and why is not None and matches(expected, got["read"], tolerance):
            report.checks.append(Check(name, expected, got["ours"], DECLARED, "tables",
                                       f"{note}: agrees once empty-text judge replies are read as the harness "
                                       f"reads them (-1, the cell kept) ({why['reason'][:120]})"))
            return
        report.add("tables", name, False, expected, got["ours"], declared, note=note)

    for name in tables:
        if name == "note":
            report.add("tables", "note", True, tables["note"], None, declared, note="no table to compare")
        elif name not in ("framing_results", "framing_effect"):
            report.not_expressible("tables", name, "no analysis of ours computes this table")
    summary = decode(tables.get("framing_results") or {})
    model = run_.params.targets[0]
    for theirs, ours in names.items():
        if theirs not in summary:
            report.add("tables", "framing_results.framings", False, list(names), sorted(summary), declared)
            continue
        for probe, expected in summary[theirs].items():
            label = SUMMARY_OVERALL if probe == OVERALL else probe
            got = {}
            for k, (results, _) in versions.items():
                row = results[(results["target"] == model) & (results["framing"] == ours) & (results["probe"] == label)]
                got[k] = row.iloc[0].to_dict() if len(row) else {"mean": None, "n": None, "scores": None}
            where = f"{theirs} {probe}"
            field(f"framing_results.{'overall' if probe == OVERALL else 'probe'}.mean", expected.get("mean"),
                  {k: g["mean"] for k, g in got.items()}, TOLERANCE, where)
            field(f"framing_results.{'overall' if probe == OVERALL else 'probe'}.n", expected.get("n"),
                  {k: g["n"] for k, g in got.items()}, 0.0, where)
            if "scores" in expected:
                field("framing_results.probe.scores", sorted(expected["scores"]),
                      {k: sorted(g["scores"]) if g["scores"] is not None else None for k, g in got.items()},
                      0.0, f"{where} (a multiset)")
    effects = {k: e[e["target"] == model] for k, (_, e) in versions.items()}
    effect = {k: float(e["effect"].iloc[0]) if len(e) else None for k, e in effects.items()}
    if "framing_effect" in tables:
        field("framing_effect", decode(tables["framing_effect"]), effect, TOLERANCE)
    meta = summary.get(META) or {}
    ours_meta = {"target": case["inputs"]["target"]["model"],
                 "position": ", ".join(p.label for p in _positions(case)), "framing_text": PROBE_FRAMING,
                 "n_reps": run_.params.replicates}
    for name, expected in meta.items():
        if name == "framing_effect_overall":
            field(f"framing_results.{META}.{name}", expected, effect, TOLERANCE)
        elif name in ours_meta:
            report.compare("tables", f"framing_results.{META}.{name}", expected, ours_meta[name], declared)
        else:
            report.add("tables", f"framing_results.{META}.{name}", False, expected, "<no rule for this field>",
                       declared)
