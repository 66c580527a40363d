"""Run-level conformance of the A-anchor along the trajectory: the harness's A-anchor probe runs
and its Fig.-5 mitigation forest.

**Cases** of family ``anchor_trajectory`` (and those of ``a_anchor`` whose runners are all in
:data:`RUNNERS`, which :mod:`.a_anchor` hands here; ``runs/README.md``): the probe panel's
no-anchor runners (e15 ``run.py``, ``run_fig1_xtarget.py``), the A-anchor probe runners
(``run_a_probes_xtarget.py``: the anchor arm alone, under e11's system prompt;
``run_12pos_with_a.py``: the two arms and the anchor arm, under e15's), then
``plotting/fig_forest_mitigation.py``. :func:`run` runs each runner as one run of our panel under
the ``reference`` protocol (:mod:`contextecho.experiments.panel`, built by
:func:`~contextecho.experiments.selection.build`, asked by :func:`~contextecho.experiments.spine.run_grid`):

1. the runner's targets, positions, probes, judge and window from the case's ``inputs`` and
   ``harness_driver`` entry; its arms: the real and filler cells (:data:`PLAIN_RUNNERS`) and the
   anchored ones (:func:`~contextecho.echo.reference.anchor_runners.anchor_runner`: the real arm with
   ``A_COMBINED`` under e11's prompt, or ``A_COMBINED_E15`` under e15's;
   :func:`~contextecho.experiments.anchor_designs.anchored_cells`);
2. a run after the first resumes as the harness's runners do, which share their cell files: a
   cell an earlier run stored under the same identity (the anchor by the folder it is filed
   under, :func:`~contextecho.echo.reference.anchor_runners.harness_arm`) is not asked, whatever
   request wrote it (:func:`~contextecho.experiments.selection.unstored`), so an A-anchor cell one
   runner lost is asked again by the other with its own system prompt; a lost cell with the same
   request is asked again through the earlier judges' resume (``resume_judges``);
3. each target request is keyed by its cell's identity in the case's key fields (the anchor
   arm by its folder, ``A_COMBINED``); the judges' requests name their cell;
4. compared: the requests (:func:`~.replay.compare_requests`); every stored cell
   (``response_text``, ``response_len``, ``score``, ``label``, ``reason``), which cells are stored,
   and that a lost cell gives nothing to a table; ``fig5_forest_rows`` in order
   (:func:`~contextecho.experiments.harness_forests.harness_mitigation` over the figure's targets
   :data:`~contextecho.echo.reference.plot_inputs.MITIGATION_PLOT_TARGETS`: every field SPEC §5
   names, the bootstrap bounds exactly).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..echo.protocol import Positions
from ..echo.protocols import protocol_of
from ..echo.reference.anchor_runners import anchor_runner, harness_arm as anchor_folder
from ..echo.reference.anchors import A_COMBINED
from ..echo.reference.cells import NO_ANCHOR
from ..echo.reference.plot_inputs import MITIGATION_PLOT_TARGETS
from ..echo.reference.transcript import DEFAULT_WINDOW
from ..sessions.positions import Position
from ..stats.session_validation import HARNESS_ARMS
from ..experiments import panel, spine
from ..experiments.harness_forests import harness_mitigation
from ..experiments.protocol_record import protocol_record
from ..experiments.scores import headline_ids
from ..experiments.anchor_designs import anchored_cells
from ..echo.reference.released import identify
from ..experiments.selection import build, cell_identity, stored_identities, unstored
from .case import REFERENCE, TOLERANCE, CaseResult, FixtureError, decode
from .cells import compare_cell_fields
from .replay import Replay, compare_requests, key_fields, key_identity, litellm_model

NO_ANCHOR_RUNNERS = ("experiments/e15_probes_at_crosscompaction/run.py",
                     "experiments/e15_probes_at_crosscompaction/run_fig1_xtarget.py")
A_PROBES_RUNNER = "experiments/e04_path_y/run_a_probes_xtarget.py"
TRAJECTORY_RUNNER = "experiments/e15_probes_at_crosscompaction/run_12pos_with_a.py"
FOREST_DRIVER = "plotting/fig_forest_mitigation.py"
#: The runners that ask the real and filler arms (run_12pos_with_a.py beside its anchor arm).
PLAIN_RUNNERS = (*NO_ANCHOR_RUNNERS, TRAJECTORY_RUNNER)
#: The harness runners and loaders a case of this module may hold.
RUNNERS = (*NO_ANCHOR_RUNNERS, A_PROBES_RUNNER, TRAJECTORY_RUNNER, FOREST_DRIVER)
CELL_FIELDS = ("response_text", "response_len", "score", "label", "reason")
#: The forest's fields (SPEC §5) and our columns of :func:`~contextecho.experiments.harness_forests.harness_mitigation`.
FOREST_FIELDS = {"n_cl": "n_real", "n_fi": "n_filler", "n_a": "n_anchor", "n_pos_cl": "n_positions_real",
                 "n_pos_fi": "n_positions_filler", "n_pos_a": "n_positions_anchor", "cl_m": "real_mean",
                 "cl_lo": "real_lo", "cl_hi": "real_hi", "fi_m": "filler_mean", "fi_lo": "filler_lo",
                 "fi_hi": "filler_hi", "a_m": "anchor_mean", "a_lo": "anchor_lo", "a_hi": "anchor_hi",
                 "drift_gap": "gap", "recovered_gap": "recovered_gap"}
#: The forest's loader and resampling inputs: diagnostics of ``fig5_forest_rows``, whose counts and
#: bounds they determine; the figure's return value and printout.
FOREST_DIAGNOSTICS = ("fig5_loader", "fig5_bootstrap_calls", "fig5_return", "fig5_stdout")


@dataclass(frozen=True)
class Asked:
    """One runner's run: its cells, the frame of its rows and each target's folder name."""

    runner: str
    cells: tuple
    frame: pd.DataFrame
    folders: Mapping[str, str]  # model string -> target_safe


def harness_arm(arm: str, intervention: str) -> str:
    """Our arm and intervention under the harness's arm name (an anchor: its folder, ``A_COMBINED``)."""
    return HARNESS_ARMS[arm] if intervention == NO_ANCHOR else filed(intervention)


def filed(intervention: str) -> str:
    """The folder an intervention's cells are filed under (:func:`harness_arm`)."""
    return intervention if intervention == NO_ANCHOR else anchor_folder(intervention)


def _runner_targets(case: dict, driver: dict) -> dict[str, str]:
    """model string -> target_safe of the targets ``driver`` ran (its ``MODEL_ID``, else its
    ``TARGETS`` substitution, else every target of the case)."""
    env, subs = driver.get("env") or {}, driver.get("substitutions") or {}
    named = {t[-1] for t in subs.get("TARGETS") or []}
    out = {}
    for t in case["inputs"]["targets"]:
        if env.get("MODEL_ID"):
            ran = t["model"] == env["MODEL_ID"] and t["provider"] == env.get("PROVIDER", t["provider"])
        else:
            ran = not named or t["target_safe"] in named
        if ran:
            out[litellm_model(t["provider"], t["model"])] = t["target_safe"]
    return out


def _runner_positions(case: dict, driver: dict) -> list[Position]:
    chosen = (driver.get("substitutions") or {}).get("POSITIONS")
    pairs = [(int(turn), label) for turn, label in chosen] if chosen else \
        [(int(p["turn"]), p["label"]) for p in case["inputs"]["positions"]]
    return [Position(turn, label, "case") for turn, label in pairs]


def _ask(case: dict, number: int, driver: dict, session, replay: Replay, workdir: Path, judge: str,
         earlier: Sequence[Asked]) -> Asked:
    """One harness runner as one run of our panel (module doc, steps 1-3)."""
    runner = driver["runner"]
    folders = _runner_targets(case, driver)
    spec = anchor_runner(runner)
    params = panel.Parameters(
        targets=tuple(folders), judges=(judge,), window=int(case["inputs"].get("max_chars", DEFAULT_WINDOW)),
        max_tokens=panel.PAPER_SCALE["max_tokens"], stressor_max_tokens=panel.PAPER_SCALE["stressor_max_tokens"],
        judge_max_tokens=panel.PAPER_SCALE["judge_max_tokens"], protocol="reference",
        output_dir=str(workdir / f"{number:02d}"), n_resamples=10_000, resample_seed=42, concurrency=1,
        resume_judges=(judge,) if earlier else ())
    models = params.targets + params.judge_models()
    proto = protocol_of(params)
    run = spine.start("panel", params, models=models, protocol=proto, record=protocol_record(proto, params),
                      sessions=lambda: [session],
                      transport=replace(params.transport(models), base_delay_s=0.0, max_delay_s=0.0, client=replay))
    items, positions = list(case["inputs"]["probes"]), _runner_positions(case, driver)
    cells = build(proto, params, "panel", [session], items, positions=Positions(chosen={session.session_id: positions}),
                  stressor_max_tokens=params.stressor_max_tokens, redact=False) if runner in PLAIN_RUNNERS else []
    for anchor in spec.anchors(driver.get("env") or {}) if spec else ():
        cells += anchored_cells(proto, params, "panel", session, positions, items, anchor, redact=False)
    stored = set().union(*(stored_identities(proto, a.cells, a.frame, filed) for a in earlier))
    cells = unstored(cells, stored, filed)
    fields = key_fields(case, "target")
    for cell in cells:
        values = {"target": folders[cell.target], "position": cell.position, "turn": cell.step,
                  "arm": harness_arm(cell.arm, cell.intervention), "item": cell.item.id, "replicate": cell.replicate}
        replay.identities[cell.request.key] = ("target", {f: values[f] for f in fields if f in values})
    replay.judge_calls[judge] = "judge"
    frame = spine.run_grid(run, cells, judges=[judge], judge_max_tokens=params.judge_max_tokens,
                           resume_judges=params.resume_judges, redact=False)
    return Asked(runner, tuple(cells), frame, folders)


def _judge(case: dict) -> str:
    judge = case["inputs"].get("judge")
    if not judge:
        raise FixtureError(f"case {case['id']}", "no inputs.judge: the A-anchor probe runners judge every cell")
    return litellm_model(judge["provider"], judge["model"])


def _primary(asked: Sequence[Asked], judge: str) -> pd.DataFrame:
    """Our probe rows of every run (the judge's, and a failed target's), in the harness's names,
    each cell identity's latest run only (a later run that asked a cell again replaces what was on disk)."""
    frames, seen = [], set()
    for a in reversed(asked):
        identity = {c.key: (a.folders[c.target],) + cell_identity(c, filed)[1:] for c in a.cells}
        rows = a.frame[(a.frame["item_kind"] == "probe")
                       & (a.frame["judge_model"].isna() | (a.frame["judge_model"] == judge))]
        ids = rows["key"].map(identity)
        keep = ~ids.isin(seen)
        seen |= set(ids)
        frames.append(rows[keep].assign(target=rows["target"].map(a.folders)))
    frames = [f for f in reversed(frames) if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


#: The layouts of the no-anchor and A-anchor probe cells (:mod:`~contextecho.echo.reference.released`).
CELL_LAYOUTS = ("probe", "a_probe")


def _expected_identity(path: str) -> tuple | None:
    """(target, position, arm, item) of an expected cell file, from its path: the A-anchor
    probe runners' records need not name their position or arm."""
    found = identify(path, {})
    if found is None or found[0] not in CELL_LAYOUTS:
        return None
    i = found[1]
    return i.target, i.position, i.arm, i.item


def _score(value: Any) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)


def compare_cells(case: dict, primary: pd.DataFrame, replay: Replay, report: CaseResult,
                  declared: Sequence[dict]) -> None:
    """Every expected cell stored with equal fields; no lost cell contributes (SPEC §4)."""
    ours = {(r["target"], r["position"], harness_arm(r["arm"], r["intervention"]), r["item"]): r
            for r in primary.to_dict("records")} if len(primary) else {}
    expected = {}
    for cell in case["expected"].get("cells", []):
        ident = _expected_identity(cell["path"])
        if ident is None:
            report.add("cells", "layout", False, cell["path"], None, declared, note="unknown cell layout")
            continue
        expected[ident] = decode(cell["record"])
    stored = {i for i, r in ours.items() if isinstance(r["response"], str)}
    missing = [list(i) for i in expected if i not in stored]
    report.add("cells", "stored", not missing, len(expected), len(expected) - len(missing), declared,
               note=f"missing or failed: {missing[:10]}" if missing else f"{len(expected)} cells")
    compared = [(ident, record, {"response_text": row["response"], "response_len": len(row["response"]),
                                 "score": _score(row.get(REFERENCE.stored_score)),
                                 "label": row.get("reference_label"), "reason": row.get("reference_reason")})
                for ident, record in expected.items() if ident in stored for row in [ours[ident]]]
    compare_cell_fields(report, compared, CELL_FIELDS, declared)
    requested = {key_identity(s.key)[:4] for s in replay.sent if s.call == "target"}
    lost = [i for i in requested if i not in expected and i in ours]
    scored = [list(i) for i in lost if _score(ours[i].get(REFERENCE.stored_score)) is not None]
    report.add("cells", "lost_cells_contribute_nothing", not scored, [], scored[:10], declared,
               note=f"{len(lost)} lost cells")


def compare_forest(case: dict, primary: pd.DataFrame, report: CaseResult, declared: Sequence[dict]) -> set[str]:
    """``fig5_forest_rows`` (SPEC §5): the rows in the figure's order, each field; the tables it
    compares."""
    tables = case["expected"].get("tables") or {}
    if "fig5_forest_rows" not in tables:
        return set()
    coding = primary[primary["item"].isin(headline_ids(panel.Parameters.headline))] if len(primary) else primary
    anchors = [iv for iv in coding["intervention"].unique() if filed(iv) == A_COMBINED.name] if len(coding) else []
    ours = harness_mitigation(coding, anchor=anchors, n_resamples=10_000, seed=42,
                              targets=MITIGATION_PLOT_TARGETS) if len(coding) else pd.DataFrame()
    rows = decode(tables["fig5_forest_rows"])
    order = list(ours["target"]) if len(ours) else []
    report.add("tables", "fig5_forest_rows.order", [r["target"] for r in rows] == order,
               [r["target"] for r in rows], order, declared)
    for row in rows:
        got = ours[ours["target"] == row["target"]] if len(ours) else ours
        for name, column in FOREST_FIELDS.items():
            actual = (int if name.startswith("n_") else float)(got[column].iloc[0]) if len(got) else None
            report.compare("tables", f"fig5_forest_rows.{name}", row[name], actual, declared,
                           0.0 if name.startswith("n_") or name.endswith(("_lo", "_hi")) else TOLERANCE,
                           row["target"])
    return {"fig5_forest_rows", *FOREST_DIAGNOSTICS}


def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict],
        workdir: Path) -> None:
    """Run the case's runners through our panel, then compare (module doc)."""
    judge = _judge(case)
    session = REFERENCE.read_session(corpus / case["inputs"]["session"])
    asked: list[Asked] = []
    for number, driver in enumerate(case["harness_driver"]):
        runner = driver["runner"]
        if runner == FOREST_DRIVER:
            continue
        if runner not in RUNNERS:
            report.not_expressible("runners", runner, "not an A-anchor trajectory runner")
            continue
        asked.append(_ask(case, number, driver, session, replay, workdir, judge, asked))
    primary = _primary(asked, judge)
    compare_requests(case, replay, report, declared)
    compare_cells(case, primary, replay, report, declared)
    done = compare_forest(case, primary, report, declared)
    for name in case["expected"].get("tables") or {}:
        if name not in done:
            report.not_expressible("tables", name, "no analysis of ours computes this table")
