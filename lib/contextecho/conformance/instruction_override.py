"""Run-level conformance of the harness's instruction-override runners (e11, e12) and of e07's cut points.

**Cases** of families ``instruction_override`` and ``length_scaling`` (``runs/README.md``):
``experiments/_shared/select_cutpoints.py`` chose the session's 25 cut points, then e11's
``run.py`` / ``run_xtarget.py`` or e12's ``run.py`` / ``run_anthropic_family.py`` asked the
stressors at the cut indices the case substituted. :func:`run` replays a case through our
experiment, :mod:`contextecho.experiments.instruction_override`, stage by stage:

1. the cut points (``cutpoints``) against ``inputs.cutpoints`` and select_cutpoints' exit;
2. per runner, our experiment's parameters from the case (:func:`parameters`): the runner's
   targets, its ``PROBE_CUT_INDICES`` (and e12's ``PROBE_LENGTHS``), the GPT-5 transcript
   written where the harness read it; the cells are built (``build``), each one's rule set
   checked against the runner's own (:func:`contextecho.echo.reference.s2_requests.for_runner`),
   each request keyed by its cell (``target`` = target_safe, ``cut_index``, ``arm``, ``item``
   = stressor, e12's ``length``), then asked on the :class:`~.replay.Replay` (``ask``);
3. compared: the requests (:func:`~.replay.compare_requests`); which cells are stored
   (a requested key without an expected cell is lost: ours must store nothing for it) and
   their ``response_text``, ``response_len`` and ``compliance``. These families have no table.

**Positions files** (:func:`check_cutpoint_plan`, called by :func:`.runs.check_positions`):
select_cutpoints' exit, its ``CUTPOINTS.json`` (the tool arguments by the sha256 of their
``json.dumps``) and its candidate count, against :func:`~contextecho.echo.reference.
continuation.select_cutpoints`.
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..echo.reference.continuation import CutpointSelection, TooFewCutpoints, candidates, select_cutpoints
from ..echo.reference.gpt5_source import GPT5_SOURCE
from ..echo.reference.override import E11_ARMS, E11_LABELS, E12_STRESSORS
from ..echo.reference.released import identify
from ..echo.reference.s2_requests import for_runner
from ..echo.reference.texts import E11_STRESSORS
from ..echo.reference.transcript import read_rows
from ..experiments import instruction_override as io
from .case import TOLERANCE, CaseResult, FixtureError, decode, sha256_text
from .cells import compare_cell_fields, expected_cells
from .replay import Replay, compare_requests, key_fields, litellm_model

CUTPOINTS_RUNNER = "experiments/_shared/select_cutpoints.py"
#: Each family's design (our experiment's ``design`` column).
DESIGNS = {"instruction_override": io.E11, "length_scaling": io.E12}
CELL_FIELDS = ("response_text", "response_len", "compliance")
CUTPOINTS_PLAN = "select_cutpoints"
#: The layouts of e11's and e12's cells (:mod:`~contextecho.echo.reference.released`).
CELL_LAYOUTS = ("override", "length")


def _identity(target: str, cut_index: int, arm: str, item: str, length: int | None) -> tuple:
    return (target, int(cut_index), arm, item, None if length is None else int(length))


def _cell_identity(path: str) -> tuple | None:
    """(target_safe, cut line, arm, stressor, length) of an e11 or e12 cell file; None for another."""
    found = identify(path, {})
    if found is None or found[0] not in CELL_LAYOUTS:
        return None
    i = found[1]
    return _identity(i.target, i.cut_index, i.arm, i.item, i.length)


def _runner_value(value: Any, runner: str) -> Any:
    """An input given per runner (``{"run.py": ...}``) or for all."""
    if isinstance(value, dict):
        return value.get(Path(runner).name)
    return value


def _driver_targets(case: dict, driver: dict) -> list[dict]:
    """The case's targets of one runner, in the runner's ``TARGETS`` order where substituted."""
    own = [t for t in case["inputs"]["targets"] if t.get("runner") == driver["runner"]]
    order = [t[1] for t in (driver.get("substitutions") or {}).get("TARGETS") or []]
    return sorted(own, key=lambda t: order.index(t["target_safe"])) if order else own


def parameters(case: dict, driver: dict, design: str, gpt5: str, output_dir: Path) -> io.Parameters:
    """Our experiment's parameters for one harness runner of the case (module doc)."""
    inputs, subs = case["inputs"], driver.get("substitutions") or {}
    indices = subs.get("PROBE_CUT_INDICES") or _runner_value(inputs.get("PROBE_CUT_INDICES"), driver["runner"])
    if indices is None:
        raise FixtureError(f"case {case['id']}", f"no PROBE_CUT_INDICES for {driver['runner']}")
    models = tuple(litellm_model(t["provider"], t["model"]) for t in _driver_targets(case, driver))
    # the harness's design, not the embedded defaults: every arm, each runner's own token budget
    common = {"output_dir": str(output_dir), "concurrency": 1, "arms": io.E11_ARMS, "max_tokens": 0}
    if design == io.E11:
        return io.Parameters(designs=(io.E11,), targets=models, cut_indices=tuple(indices), gpt5_transcript=gpt5,
                             **common)
    lengths = subs.get("PROBE_LENGTHS") or inputs.get("PROBE_LENGTHS")
    return io.Parameters(designs=(io.E12,), length_targets=models, length_cut_indices=tuple(indices),
                         lengths=tuple(lengths), **common)


def _write_gpt5(case: dict, workdir: Path) -> str:
    """The case's GPT-5 transcript written where the harness read it; '' where it has none."""
    source = case["inputs"].get("gpt5_transcript")
    if not source:
        return ""
    path = workdir / (source.get("placed_at") or GPT5_SOURCE)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in source["records"]), encoding="utf-8")
    return str(path)


def _check_design(case: dict, design: str, report: CaseResult, declared: Sequence[dict]) -> bool:
    """The case's arms and stressors against the design's: another set is not expressible."""
    inputs = case["inputs"]
    stressors = [s[0] if isinstance(s, list) else s for s in inputs.get("stressors") or []]
    texts = {s[0]: s[1] for s in inputs.get("stressors") or [] if isinstance(s, list)}
    ours = list(E11_LABELS if design == io.E11 else E12_STRESSORS)
    ok = True
    if stressors and stressors != ours:
        report.not_expressible("inputs", "stressors", f"the design asks {ours}, the case {stressors}")
        ok = False
    if texts:
        report.compare("inputs", "stressors.texts", texts, {k: E11_STRESSORS[k] for k in texts if k in E11_STRESSORS},
                       declared)
    if design == io.E11 and inputs.get("arms") and list(inputs["arms"]) != list(E11_ARMS):
        report.not_expressible("inputs", "arms", f"the design asks {list(E11_ARMS)}, the case {inputs['arms']}")
        ok = False
    return ok


# ---------------------------------------------------------------- a case
def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict],
        workdir: Path) -> None:
    """Replay one instruction-override or length-scaling case through our experiment and compare (module doc)."""
    design = DESIGNS[case["family"]]
    gpt5 = _write_gpt5(case, workdir)
    fields = key_fields(case, "target")
    frames, safe = [], {}
    for number, driver in enumerate(case["harness_driver"]):
        runner = driver["runner"]
        if runner == CUTPOINTS_RUNNER:
            _compare_case_cutpoints(case, corpus, report, declared)
            continue
        rules = for_runner(runner)
        if rules is None or not rules.name.startswith(design):
            report.not_expressible("runners", runner, f"not a runner of the {design} design we run")
            continue
        if not _check_design(case, design, report, declared):
            continue
        params = parameters(case, driver, design, gpt5, workdir / f"{number:02d}")
        safe.update({litellm_model(t["provider"], t["model"]): t["target_safe"] for t in _driver_targets(case, driver)})
        opened = io.start(params)
        experiment = replace(opened, transport=replace(opened.transport, base_delay_s=0.0, max_delay_s=0.0,
                                                       client=replay))
        cuts = io.cutpoints(replace(experiment, params=replace(params, session=str(corpus / case["inputs"]["session"]))))
        cells = io.build(experiment, cuts)
        other = sorted({c.rules for c in cells} - {rules.name})
        if other:
            report.not_expressible("runners", runner, f"our experiment asks these targets by the {other} rules, "
                                                      f"the runner by {rules.name}'s")
            continue
        for cell in cells:
            values = {"target": safe[cell.target], "cut_index": cell.cut_index, "arm": cell.arm,
                      "item": cell.stressor, "length": cell.length}
            replay.name_target(cell.request.key, fields, values, f"case {case['id']}")
        frames.append(io.ask(cells, transport=experiment.transport, name=f"{io.NAME}:{Path(runner).stem}"))
    compare_requests(case, replay, report, declared)
    _compare_cells(case, frames, safe, report, declared)
    for name, value in (case["expected"].get("tables") or {}).items():
        if name != "note":
            report.add("tables", name, False, decode(value), None, declared, note="unknown expected table")


def _compare_case_cutpoints(case: dict, corpus: Path, report: CaseResult, declared: Sequence[dict]) -> None:
    """select_cutpoints' exit and the cut points the case lists (``inputs.cutpoints``)."""
    rows = read_rows(corpus / case["inputs"]["session"])
    stdout = next((s for s in case["expected"].get("stdout", []) if s.get("driver", "").startswith(CUTPOINTS_RUNNER)),
                  {})
    try:
        selection = select_cutpoints(rows)
        outcome: Any = 0
    except TooFewCutpoints as exc:
        selection, outcome = None, {"SystemExit": str(exc)}
    report.compare("stdout", "select_cutpoints.return", stdout.get("return", 0), outcome, declared)
    expected = case["inputs"].get("cutpoints") or {}
    ours = ({"n_total_candidates": selection.n_total_candidates, "stride": selection.stride,
             "cut_index_by_number": [c.cut_index for c in selection.cutpoints]} if selection else {})
    for name in sorted(expected):
        report.compare("positions", f"cutpoints.{name}", expected[name], ours.get(name, "<absent>"), declared)


def _compare_cells(case: dict, frames: Sequence, safe: dict[str, str], report: CaseResult,
                   declared: Sequence[dict]) -> None:
    expected = expected_cells(case, lambda path, _: _cell_identity(path), "an e11 or e12 metrics file", report,
                              declared)
    ours: dict[tuple, dict] = {}
    for frame in frames:
        for row in frame[frame["stored"]].to_dict("records") if len(frame) else []:
            length = row["length"]
            length = None if length is None or length != length else int(length)  # NaN in a column of e11 rows
            ours[_identity(safe[row["target"]], row["cut_index"], row["arm"], row["stressor"], length)] = row
    missing, extra = sorted(set(expected) - set(ours), key=str), sorted(set(ours) - set(expected), key=str)
    report.add("cells", "stored", not missing and not extra, len(expected), len(set(expected) & set(ours)), declared,
               note=f"missing or lost here: {missing[:10]}; stored but lost by the harness: {extra[:10]}"
               if missing or extra else f"{len(expected)} cells")
    compared = [(ident, expected[ident], {"response_text": row["response_text"],
                                          "response_len": int(row["response_len"]),
                                          "compliance": int(row["compliance"])})
                for ident in sorted(set(expected) & set(ours), key=str) for row in [ours[ident]]]
    compare_cell_fields(report, compared, CELL_FIELDS, declared, tolerance={"compliance": TOLERANCE})


# ---------------------------------------------------------------- positions files
def _args_digest(args: Any) -> str:
    return sha256_text(json.dumps(args))


def check_cutpoint_plan(data: dict, session: Path, report: CaseResult, declared: Sequence[dict] = ()) -> bool:
    """select_cutpoints' plan of one positions file against ours (module doc); whether the file has one."""
    expected = data.get(CUTPOINTS_PLAN)
    if not isinstance(expected, dict):
        return False
    rows = read_rows(session)
    try:
        selection: CutpointSelection | None = select_cutpoints(rows)
        outcome: Any = 0
    except TooFewCutpoints as exc:
        selection, outcome = None, {"SystemExit": str(exc)}
    report.compare("positions", f"{CUTPOINTS_PLAN}.return", expected.get("return"), outcome, declared)
    found = [int(m.group(1)) for line in expected.get("stdout") or []
             if (m := re.match(r"Found (\d+) single-tool-use assistant turns\.", line))]
    report.compare("positions", f"{CUTPOINTS_PLAN}.n_candidates", found, [len(candidates(rows))], declared)
    theirs = expected.get("CUTPOINTS")
    ours = None
    if selection is not None:
        ours = selection.as_json()
        ours["cutpoints"] = [{"cut_index": c["cut_index"], "ground_truth_tool": c["ground_truth_tool"],
                              "preceding_user_msg_idx": c["preceding_user_msg_idx"],
                              "ground_truth_args_sha256": _args_digest(c["ground_truth_args"])}
                             for c in ours["cutpoints"]]
    if theirs is None or ours is None:
        report.compare("positions", f"{CUTPOINTS_PLAN}.CUTPOINTS", theirs, ours, declared)
        return True
    for name in sorted(set(theirs) | set(ours)):
        report.compare("positions", f"{CUTPOINTS_PLAN}.CUTPOINTS.{name}", theirs.get(name, "<absent>"),
                       ours.get(name, "<absent>"), declared)
    return True
