"""Run-level conformance: the harness's whole runs replayed through our own experiments.

``shared/reference/contextecho/runs/`` holds cases made by running the authors' runners
and loaders end to end with canned replies (its ``README.md`` gives the format, its
``SPEC.md`` what a runner must do). For each case this module

1. configures our experiment code from the case's ``inputs`` and ``harness_driver``
   entries — the cells are :func:`contextecho.experiments.selection.build` under the ``reference`` protocol, run by
   :func:`contextecho.experiments.spine.run_grid` on a fresh call cache, exactly what a notebook's grid stage
   runs — one of our runs per harness runner we can express;
2. replays the canned replies at the transport boundary: :class:`Replay` is the run's
   network client (:attr:`contextecho.engine.calls.Transport.client`), so every request
   is captured in the form LiteLLM is given, after our provider rules; the call kind and
   key of a request come from our cell identity (the target request's key; a judge
   request's tag names its cell), never from the request text;
3. compares the requests (set, order, every ``params`` field) and the stored cells with
   the case's ``expected`` values, and the tables our analysis code computes (the onset
   curve, :func:`~contextecho.experiments.harness_forests.harness_curve`; the panel forest,
   :func:`~contextecho.experiments.harness_forests.harness_table`).

A case is read by :func:`read_case` and compared in the vocabulary of :mod:`.case`; the replay client
and the SDK form of our requests are :mod:`.replay`. A family whose runners are not probe, onset or S2
grids has its own module, which :data:`FAMILY_RUNS` dispatches the case to.

Runners after the first resume from what the earlier ones stored (the harness's runners
share their results folder and skip the cells on disk): our panel's ``resume_judges``; a
runner that judges with its one target (the Fig.-1 fill runners) runs with ``judges=self``;
an S2 runner sends its own request rules (the panel's ``s2_requests``: e08's, e10's); the
cross-judge audit re-judges the cells the runs before it stored
(:mod:`.audit`, which also compares its records and tables).
A runner we cannot express is reported *not expressible* with the reason, and its requests, cells and tables then fail as
missing: nothing is skipped silently. A mismatch the project declares on purpose
(``data/conformance/declared_divergences.json``: family, field, reason) is reported as a
*declared divergence*, never as a pass.
"""
from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..echo.reference import s2_requests
from ..echo.protocol import Positions
from ..echo.reference.judge import parse_verdict
from ..echo.reference.released import identify
from ..echo.reference.released_answers import item_name, key_text
from ..echo.runner import SELF_JUDGE
from ..echo.reference.transcript import DEFAULT_WINDOW
from ..echo.protocols import protocol_of
from ..sessions.positions import Position
from ..stats.session_validation import HARNESS_ARMS
from ..experiments import panel, spine
from ..experiments.harness_forests import FOREST_POSITIONS, harness_curve, harness_table
from ..experiments.protocol_record import protocol_record
from ..experiments.scores import headline_ids
from ..experiments.selection import build
from . import (a_anchor, anchor_trajectory, audit, consolidate, context_source, cross_judge_b3, cross_session,
               framing, instruction_override, session_validation)
from . import released as release
from .cells import compare_cell_fields, empty_text_verdict, multi_block_join
from .case import (NOT_IMPLEMENTED, REFERENCE, TOLERANCE, CaseResult, Check, FamilyResult, FixtureError, decode,
                   load_declared, sha256_text)
from .tables import EMPTY_TEXT_READING, Driven, compare_s2_tables, explained, row_identity
from .replay import (LITELLM_PREFIX, Replay, compare_requests, key_fields, key_identity, litellm_model,
                     replay_environment)

FORMAT_VERSION = 1
#: The case families, each run by :func:`drive` (panel, s2, onset, negative_controls) or by its own
#: module (:data:`FAMILY_RUNS`).
FAMILIES = ("panel", "s2", "onset", "cross_judge_b3", "session_validation", "consolidate", "context_source",
            "instruction_override", "length_scaling", "negative_controls", "framing", "cross_session",
            "a_anchor", "anchor_trajectory")

#: The harness's runners and what of ours runs them (None: not expressible, with why).
PROBE_RUNNERS = ("experiments/e15_probes_at_crosscompaction/run.py",
                 "experiments/e15_probes_at_crosscompaction/run_fig1_xtarget.py")
#: Probe runners of another design than the panel's paper scale, with the parameter set of
#: ours that is theirs (its target budget; the items and positions are the case's).
PROBE_DESIGNS = {"experiments/e15_probes_at_crosscompaction/run_negative_controls.py": panel.NEGATIVE_CONTROLS}
ONSET_RUNNER = "experiments/e17_drift_onset/run_onset.py"
#: The Fig.-1 runners: run_fig1_xtarget.py and the fill runners (run_fig1_sonnet45.py, _haiku45,
#: _opus41), which resume from the cells on disk and judge with the target (run_fig1_sonnet45.py:81).
FIG1_RUNNERS = "experiments/e15_probes_at_crosscompaction/run_fig1_"
#: The S2 runners are those with a request rule set of their own (:func:`s2_requests.for_runner`).
#: Runners met inside a probe, onset or S2 case that no experiment of ours runs, with why
#: (a runner not listed is reported "no experiment of ours runs it"). consolidate runs only
#: in its own family (:data:`FAMILY_RUNS`): its inputs are e02 documents, not a session's cells.
NOT_EXPRESSIBLE_RUNNERS = {
    "consolidate_12model_perm.py": "consolidate runs in its own case family (its inputs are e02 documents), "
                                   "never after a probe, onset or S2 runner",
}
#: Loaders and plotting code whose tables we compute (else their tables are not expressible).
TABLE_DRIVERS = ("plotting/", "analysis/")
#: A family run by its own module rather than :func:`drive`: ``run(case, corpus, replay,
#: report, declared, workdir)`` runs our code for the case's runners and adds every check.
FamilyRun = Callable[[dict, Path, Replay, CaseResult, Sequence[dict], Path], None]
FAMILY_RUNS: dict[str, FamilyRun] = {
    "a_anchor": a_anchor.run,
    "anchor_trajectory": anchor_trajectory.run,
    "consolidate": consolidate.run,
    "context_source": context_source.run,
    "cross_session": cross_session.run,
    "framing": framing.run,
    "cross_judge_b3": cross_judge_b3.run,
    "session_validation": session_validation.run,
    "instruction_override": instruction_override.run,
    "length_scaling": instruction_override.run,
}


def _our_item(name: str) -> str:
    if re.fullmatch(r"S2_v\d\d", name):
        return f"S2#{int(name[4:]) + 1:02d}"
    return name


def _targets(case: dict, driver: dict) -> list[tuple[str, str, dict]]:
    """``(model string, target_safe, target input)`` of the targets one driver ran."""
    env = driver.get("env") or {}
    inputs = case["inputs"]["targets"]
    if env.get("MODEL_ID"):
        chosen = [t for t in inputs if t["model"] == env["MODEL_ID"] and t["provider"] == env.get("PROVIDER", t["provider"])]
    elif (driver.get("substitutions") or {}).get("TARGETS"):
        names = [t[-1] for t in driver["substitutions"]["TARGETS"]]  # (..., target_safe)
        chosen = [t for t in inputs if t["target_safe"] in names]
    else:
        chosen = list(inputs)
    return [(litellm_model(t["provider"], t["model"]), t["target_safe"], t) for t in chosen]


def _positions(case: dict, driver: dict) -> list[Position]:
    subs = driver.get("substitutions") or {}
    if subs.get("POSITIONS"):
        return [Position(int(turn), label, "case") for turn, label in subs["POSITIONS"]]
    if "onset_turns" in case["inputs"]:
        return [Position(int(t), f"T{t:04d}", "case") for t in case["inputs"]["onset_turns"]]
    return [Position(int(p["turn"]), p["label"], "case") for p in case["inputs"].get("positions", [])]


def _items(case: dict) -> list[str]:
    inputs = case["inputs"]
    if "items" in inputs:
        return [_our_item(i) for i in inputs["items"]]
    probes = inputs.get("probes")
    if isinstance(probes, list):  # ids, or (id, text) pairs (the texts are ours: the requests compare them)
        return [p[0] if isinstance(p, list) else p for p in probes]
    if isinstance(probes, str) and probes.startswith("all"):
        return ["all"]
    raise FixtureError(f"case {case['id']}", f"cannot read its probes {probes!r}")


def _judge(case: dict, runner: str) -> str | None:
    for run in case["inputs"].get("runs", []):
        if run.get("runner") == runner and run.get("judge"):
            return litellm_model(run["judge"]["provider"], run["judge"]["model"])
    judge = case["inputs"].get("judge")
    return litellm_model(judge["provider"], judge["model"]) if judge else None


def _identity(cell, safe: dict[str, str], fields: Sequence[str]) -> dict:
    values = {"target": safe[cell.target], "position": cell.position, "turn": cell.step,
              "arm": HARNESS_ARMS[cell.arm], "item": item_name(cell.item.id), "replicate": cell.replicate}
    return {f: values[f] for f in fields if f in values}


def drive(case: dict, corpus: Path, replay: Replay, report: CaseResult, workdir: Path) -> list[Driven]:
    """Run each harness runner of the case we can express; the others are reported not expressible."""
    window = int(case["inputs"].get("max_chars", DEFAULT_WINDOW))
    driven = []
    session = None
    stored_by: list[str] = []  # the judges of the earlier runs, whose stored results a later run resumes from
    for number, driver in enumerate(case["harness_driver"]):
        runner = driver["runner"]
        if runner.startswith(TABLE_DRIVERS):
            continue
        if runner == audit.AUDIT_RUNNER:  # re-judges the cells the runs before it stored
            frame = audit.rejudge_stored(case, runner, [d.frame for d in driven], replay,
                                         _judge(case, runner), key_fields(case, "cross_judge"))
            driven.append(Driven(runner, frame, {m: s for d in driven for m, s in d.target_safe.items()}))
            continue
        s2_rules = s2_requests.for_runner(runner)
        if runner not in (*PROBE_RUNNERS, *PROBE_DESIGNS, ONSET_RUNNER) and not runner.startswith(FIG1_RUNNERS) \
                and not s2_rules:
            why = next((reason for pattern, reason in NOT_EXPRESSIBLE_RUNNERS.items() if pattern in runner), None)
            report.not_expressible("runners", runner, why or "no experiment of ours runs it")
            continue
        if session is None:
            if "session" not in case["inputs"]:
                raise FixtureError(f"case {case['id']}", f"runner {runner} needs inputs.session")
            session = REFERENCE.read_session(corpus / case["inputs"]["session"])
        targets = _targets(case, driver)
        judge = None if s2_rules else _judge(case, runner)
        if judge and [m for m, _, _ in targets] == [judge]:
            judge = SELF_JUDGE  # the runner judges with its target (the fill runners, run_fig1_sonnet45.py:81)
        replicates = int((driver.get("env") or {}).get("N_REPLICATES", 1))
        experiment = "onset" if runner == ONSET_RUNNER else "panel"
        params = panel.Parameters(
            # An S2 runner judges nothing: its parameters name a judge no cell asks.
            targets=tuple(m for m, _, _ in targets), judges=(judge or targets[0][0],),
            window=window, max_tokens=PROBE_DESIGNS.get(runner, panel.PAPER_SCALE)["max_tokens"],
            stressor_max_tokens=panel.PAPER_SCALE["stressor_max_tokens"],
            judge_max_tokens=panel.PAPER_SCALE["judge_max_tokens"], protocol="reference",
            output_dir=str(workdir / f"{number:02d}"), n_resamples=10_000, resample_seed=42,
            concurrency=1, resume_judges=tuple(dict.fromkeys(stored_by)) if judge else (),
            s2_requests=s2_rules.name if s2_rules else panel.Parameters.s2_requests)
        chosen, models = [session], params.targets + params.judge_models()
        proto = protocol_of(params)
        run = spine.start(experiment, params, models=models, protocol=proto, record=protocol_record(proto, params),
                          sessions=lambda: chosen,
                          transport=replace(params.transport(models), base_delay_s=0.0, max_delay_s=0.0, client=replay))
        positions = Positions(chosen={session.session_id: _positions(case, driver)})
        cells = build(proto, params, experiment, [session], _items(case), positions=positions, replicates=replicates,
                      stressor_max_tokens=params.stressor_max_tokens, redact=False)
        safe = {m: s for m, s, _ in targets}
        fields = key_fields(case, "target")
        for cell in cells:
            replay.identities[cell.request.key] = ("target", _identity(cell, safe, fields))
        if judge:
            replay.judge_calls.update({m: "judge" for m in params.judge_models()})
            stored_by += params.judge_models()
        frame = spine.run_grid(run, cells, judges=[judge] if judge else [], judge_max_tokens=params.judge_max_tokens,
                               resume_judges=params.resume_judges, redact=False)
        for earlier in driven:  # the cells this run wrote replace what was on disk
            if "key" in earlier.frame:
                earlier.frame = earlier.frame[~earlier.frame["key"].isin(frame["key"])]
        driven.append(Driven(runner, frame, safe, replicates))
    return driven


#: The layouts of the probe, onset and S2 runners' cells (:mod:`~contextecho.echo.reference.released`).
DRIVEN_LAYOUTS = ("probe", "s2")


def _cell_identity(path: str, record: dict) -> tuple | None:
    """(target, position, arm, item, replicate) of a probe or S2 cell file; None for another."""
    found = identify(path, record)
    if found is None or found[0] not in DRIVEN_LAYOUTS:
        return None
    i = found[1]
    return i.target, i.position, i.arm, i.item, i.replicate


def compare_cells(case: dict, driven: Sequence[Driven], replay: Replay, report: CaseResult,
                  declared: Sequence[dict]) -> None:
    ours: dict[tuple, dict] = {}
    for d in driven:
        rows = d.frame[(d.frame["judge_model"].isna()) | (d.frame["judge_model"].isin(
            [j for j, kind in replay.judge_calls.items() if kind == "judge"]))]
        for row in rows.to_dict("records"):
            ident = row_identity(row, d.target_safe)
            row["response"] = row["response"] if isinstance(row["response"], str) else None
            ours[ident] = row
    expected = {}
    for cell in case["expected"].get("cells", []):
        ident = _cell_identity(cell["path"], cell["record"])
        if ident is None and audit.writes(cell["path"]):
            continue  # the audit's records: compared with its tables (compare_tables)
        if ident is None:
            unexpressed = [c.field for c in report.checks if c.section == "runners"]
            if unexpressed:
                report.not_expressible("cells", cell["path"],
                                       f"not a probe or S2 cell; written by one of {unexpressed}")
            else:
                report.add("cells", cell["path"], False, "a probe or S2 cell", None, declared,
                           note="unknown cell layout")
            continue
        expected[ident] = cell["record"]
    missing = [i for i in expected if i not in ours or ours[i]["response"] is None]
    empty_text = replay.empty_text_cells()
    compared = []
    for ident, record in expected.items():
        row = ours.get(ident)
        if row is None or row["response"] is None:
            continue
        if multi_block_join(report, ident, record, row["response"], replay.target_replies.get(ident), declared):
            continue  # LiteLLM joined the blocks without a separator: compared apart (declared or not)
        actual = {"response_text": row["response"], "response_len": len(row["response"])}
        if row.get("item_kind") == "probe":
            score = row.get(REFERENCE.stored_score)
            actual.update(score=None if score is None or (isinstance(score, float) and math.isnan(score))
                          else int(score), label=row.get("reference_label"), reason=row.get("reference_reason"))
            actual = empty_text_verdict(report, ident, record, actual, empty_text, declared)
        compared.append((ident, record, actual))
    report.add("cells", "stored", not missing, len(expected), len(expected) - len(missing), declared,
               note=f"missing or failed: {[list(i) for i in missing[:10]]}" if missing else f"{len(expected)} cells")
    compare_cell_fields(report, compared, ("response_text", "response_len", "score", "label", "reason"), declared)
    # Lost cells: requested, no expected cell; ours must not carry a score or a length to a table.
    requested = {key_identity(s.key) for s in replay.sent if s.call == "target"}
    lost = [i for i in requested if i not in expected and i in ours]
    scored = [i for i in lost if _contributes(ours[i])]
    report.add("cells", "lost_cells_contribute_nothing", not scored, [], [list(i) for i in scored[:10]], declared,
               note=f"{len(lost)} lost cells")


def _fig2_table(primary: pd.DataFrame) -> pd.DataFrame:
    """The Fig.-2 forest rows from our primary verdicts (the harness's bootstrap, −1 kept)."""
    if not len(primary):
        return pd.DataFrame()
    forest = primary[primary["item"].isin(headline_ids(panel.Parameters.headline))]  # C01-C05 (:103)
    return harness_table(forest, n_resamples=10_000, seed=42, failures="in", positions=FOREST_POSITIONS)


def _empty_text_read(primary: pd.DataFrame, driven: Sequence[Driven], replay: Replay) -> pd.DataFrame | None:
    """``primary`` as the harness reads it where a judge answered Anthropic text blocks, all
    empty, and we lost the cell (the declared ``empty_text_verdict``): the cell kept with the
    verdict that empty text parses to (−1). ``None`` where no cell is so."""
    cells = replay.empty_text_cells()
    keys = {row["key"] for d in driven for row in d.frame[d.frame["item_kind"] == "probe"].to_dict("records")
            if row_identity(row, d.target_safe) in cells} if cells else set()
    lost = primary["key"].isin(keys) & primary[REFERENCE.stored_score].isna() if keys and len(primary) else None
    if lost is None or not lost.any():
        return None
    verdict = parse_verdict("")
    read = primary.copy()
    read.loc[lost, REFERENCE.stored_score] = float(verdict.score)
    read.loc[lost, "reference_label"] = verdict.label
    read.loc[lost, "reference_reason"] = verdict.reason
    return read


def _contributes(row: dict) -> bool:
    if row.get("item_kind") == "probe":
        score = row.get(REFERENCE.stored_score)
        return score is not None and not (isinstance(score, float) and math.isnan(score))
    return row.get("verdict_status") == "ok"


# ---------------------------------------------------------------- tables
def _primary(driven: Sequence[Driven], replay: Replay) -> pd.DataFrame:
    judges = [j for j, kind in replay.judge_calls.items() if kind == "judge"]
    frames = [d.frame.assign(target=d.frame["target"].map(d.target_safe)) for d in driven]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not len(frame):
        return frame
    return frame[(frame["item_kind"] == "probe") & frame["judge_model"].isin(judges)]


def compare_tables(case: dict, driven: Sequence[Driven], replay: Replay, report: CaseResult,
                   declared: Sequence[dict]) -> None:
    tables = case["expected"].get("tables") or {}
    computed = set()
    if isinstance(tables.get("note"), str):  # no harness table reads the case's cells: it says why
        computed.add("note")
        report.add("tables", "note", True, tables["note"], None, declared, note="no table to compare")
    primary = _primary(driven, replay)
    if "onset_rows" in tables:
        computed |= {"onset_rows", "onset_loader", "onset_gap_calls", "onset_return", "onset_stdout"}
        order = [t for t in case["inputs"].get("plot_targets", [])]
        curve = harness_curve(primary, n_resamples=10_000, seed=42, failures="in", targets=order) \
            if len(primary) else pd.DataFrame()
        for target, rows in decode(tables["onset_rows"]).items():
            for row in rows:
                got = curve[(curve["target"] == target) & (curve["step"] == row["turn"])] if len(curve) else curve
                actual = {"g_m": float(got["harness_gap"].iloc[0]), "g_lo": float(got["harness_lo"].iloc[0]),
                          "g_hi": float(got["harness_hi"].iloc[0]), "n": int(got["harness_n"].iloc[0])} if len(got) \
                    else {"g_m": math.nan, "g_lo": math.nan, "g_hi": math.nan, "n": 0}
                for name in ("g_m", "g_lo", "g_hi", "n"):
                    tol = 0.0 if name == "n" else TOLERANCE
                    report.compare("tables", f"onset_rows.{name}", row[name], actual[name], declared, tol,
                                   f"{target} turn {row['turn']}")
    if "fig2_forest_rows" in tables:
        computed |= {"fig2_forest_rows", "fig2_loader", "fig2_bootstrap_calls", "fig2_return", "fig2_stdout"}
        read = _empty_text_read(primary, driven, replay)
        tables_ = {k: _fig2_table(frame) for k, frame in (("ours", primary), ("read", read)) if frame is not None}
        for row in decode(tables["fig2_forest_rows"]):
            for name, column in (("n_cl", "n_real"), ("n_fi", "n_filler"), ("n_pos_cl", "n_positions_real"),
                                 ("n_pos_fi", "n_positions_filler"), ("cl_m", "real_mean"), ("cl_lo", "real_lo"),
                                 ("cl_hi", "real_hi"), ("fi_m", "filler_mean"), ("fi_lo", "filler_lo"),
                                 ("fi_hi", "filler_hi"), ("gap", "gap")):
                actual = {}
                for k, table in tables_.items():
                    got = table[table["target"] == row["target"]] if len(table) else table
                    actual[k] = (int if name.startswith("n_") else float)(got[column].iloc[0]) if len(got) else None
                explained(report, f"fig2_forest_rows.{name}", row[name], actual["ours"],
                           actual.get("read", actual["ours"]), declared, 0.0 if name.startswith("n_") else TOLERANCE,
                           row["target"], reading=EMPTY_TEXT_READING)
    if "audit_compliance" in tables or "forest_stressors_no_anchor" in tables:
        computed |= compare_s2_tables(tables, driven, replay, report, declared)
    computed |= audit.compare_audit(case, driven, replay, report, declared)
    for name in tables:
        if name not in computed:
            report.not_expressible("tables", name, "no analysis of ours computes this table")


def _case_models(case: dict) -> list[str]:
    """The LiteLLM model strings of the case's targets and judges (those it names as a
    provider and a model)."""
    inputs = case["inputs"]
    named = list(inputs.get("targets") or []) + [inputs.get("judge")] + \
        [r.get("judge") for r in inputs.get("runs") or [] if isinstance(r, dict)]
    return [litellm_model(m["provider"], m["model"]) for m in named
            if isinstance(m, dict) and m.get("provider") in LITELLM_PREFIX and m.get("model")]


# ---------------------------------------------------------------- a case
def read_case(path: Path) -> dict:
    """A case file (its ``README.md`` gives the format); a :class:`FixtureError` names what is wrong."""
    try:
        case = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FixtureError(path, f"not valid JSON ({exc.msg})", exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise FixtureError(path, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not isinstance(case, dict):
        raise FixtureError(path, "a case is a JSON object")
    for name in ("id", "family", "inputs", "expected", "harness_driver"):
        if name not in case:
            raise FixtureError(path, f"no {name!r}")
    if case.get("format_version") != FORMAT_VERSION:
        raise FixtureError(path, f"format_version {case.get('format_version')!r} (this runner reads {FORMAT_VERSION})")
    if case["family"] not in FAMILIES:
        raise FixtureError(path, f"unknown family {case['family']!r} (known: {', '.join(FAMILIES)})")
    return case


def known_texts(case: dict) -> dict[str, str]:
    """Every string of the case's inputs and ``expected.texts`` whose whole text is there, by
    sha256: a digested canned reply (over 1,000 characters) is one of the injections."""
    found: dict[str, str] = {}

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.setdefault(sha256_text(value), value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(case.get("inputs", {}))
    for sha, text in (case["expected"].get("texts") or {}).items():
        if text.get("len", 0) <= len(text.get("head", "")):
            found.setdefault(sha, text["head"])
    return found


def resolve_digests(value: Any, texts: Mapping[str, str], where: str) -> Any:
    """``value`` with every ``{"$digest"}`` replaced by its text (a :class:`FixtureError` when
    the case does not hold it)."""
    if isinstance(value, dict) and set(value) == {"$digest"}:
        sha = value["$digest"]["sha256"]
        if sha not in texts:
            raise FixtureError(where, f"the text of digest {sha[:12]} is nowhere in the case")
        return texts[sha]
    if isinstance(value, dict):
        return {k: resolve_digests(v, texts, where) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_digests(v, texts, where) for v in value]
    return value


def run_case(path: Path, corpus: Path, declared: Sequence[dict] | None = None, released: bool = False) -> CaseResult:
    """Replay one case through our experiments and compare (module doc); ``released``: the
    replies are the case's cells read as a release (:mod:`.released`), not its canned replies."""
    declared = load_declared() if declared is None else declared
    case = read_case(path)
    report = CaseResult(case["family"], case["id"])
    try:
        texts = known_texts(case)
        replies = {(r["call"], key_text(r["key"])): resolve_digests(r["reply"], texts, f"{path}: canned reply")
                   for r in case.get("canned_replies", [])} if not released else None
    except FixtureError as exc:
        report.error = str(exc)
        return report
    try:
        with replay_environment(_case_models(case)), tempfile.TemporaryDirectory(prefix="contextecho-runs-") as tmp:
            if released:
                replies, imported = release.released_replies(
                    case, lambda value, where: resolve_digests(value, texts, where), Path(tmp))
                if release.uncovered(case, imported, report):
                    return report
            replay = Replay(replies, not_in_release=release.REQUESTS_NOTE if released else None)
            family_run = FAMILY_RUNS.get(case["family"])
            if family_run is not None:
                family_run(case, corpus, replay, report, declared, Path(tmp))
            else:
                driven = drive(case, corpus, replay, report, Path(tmp))
                compare_requests(case, replay, report, declared)
                compare_cells(case, driven, replay, report, declared)
                compare_tables(case, driven, replay, report, declared)
            if released:
                release.compare(case, replies, imported, replay, report, declared)
    except (FixtureError, FileNotFoundError) as exc:
        report.error = str(exc)
    except Exception as exc:  # a case that cannot be run fails, with what stopped it; the next one runs
        report.error = f"{path}: {type(exc).__name__}: {exc}"
    return report


#: The positions schemes of ``positions/*.json`` we implement: the harness's hard-coded turn
#: lists resolved on a session (our reference prefix at each turn), e18's and run_crosssession's
#: plans over their own row lists (:func:`.session_validation.check_session_plans`), and e07's
#: cut points (:func:`.instruction_override.check_cutpoint_plan`).
POSITION_LISTS = ("e08_POSITIONS", "e17_ONSET_TURNS")
UNIMPLEMENTED_PLANS: dict[str, str] = {}


def check_positions(path: Path, corpus: Path, declared: Sequence[dict] = ()) -> CaseResult:
    """One ``positions/*.json``: the session's turn count and compactions as the harness
    derives them, our reference prefix (sha256, length) at every hard-coded turn, and e18's and
    run_crosssession's plans (plan, prefixes, manifest, refusals)."""
    from ..echo.reference.positions import compaction_turns
    from ..echo.reference.transcript import read_rows, render_prefix, turn_index

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        session = data["inputs"]["session"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        return CaseResult("positions", path.stem, error=f"{path}: unreadable positions file ({exc})")
    report = CaseResult("positions", data.get("id", path.stem))
    rows = read_rows(corpus / session)
    index = turn_index(rows)
    expected_index = data.get("e08_turn_index") or {}
    if "total_turns" in expected_index:
        report.add("positions", "e08_turn_index.total_turns", expected_index["total_turns"] == max(index),
                   expected_index["total_turns"], max(index), declared)
    if "compactions_derived" in expected_index:
        ours = [{"boundary_line": c.boundary_line, "pre_turn": c.last_turn_before, "summary_turn": c.first_turn_after}
                for c in compaction_turns(rows, index)]
        theirs = [{k: c.get(k) for k in ("boundary_line", "pre_turn", "summary_turn")}
                  for c in expected_index["compactions_derived"]]
        report.add("positions", "e08_turn_index.compactions", theirs == ours, theirs, ours, declared)
    lists = data.get("hard_coded_positions_resolved_on_this_session") or {}
    for name in POSITION_LISTS:
        for entry in (lists.get(name) or {}).get("values", []):
            rendered = render_prefix(rows, index, int(entry["turn"]))
            sha = sha256_text(rendered.text)
            ok = len(rendered.text) == entry["prefix_len"] and sha == entry["prefix_sha256"]
            report.add("positions", f"{name}.prefix", ok, [entry["prefix_len"], entry["prefix_sha256"][:12]],
                       [len(rendered.text), sha[:12]], declared, note=f"{entry['label']} (turn {entry['turn']})")
    session_validation.check_session_plans(data, corpus / session, report, declared)
    instruction_override.check_cutpoint_plan(data, corpus / session, report, declared)
    for name, why in UNIMPLEMENTED_PLANS.items():
        if name in data:
            report.checks.append(Check(name, status=NOT_IMPLEMENTED, section="positions",
                                       note=f"scheme not implemented: {why}"))
    return report


def run_cases(folder: Path, corpus: Path, released: bool = False) -> list[FamilyResult]:
    """Every ``cases/*.json`` of a run-fixture folder, then every ``positions/*.json``
    (a family each; ``positions`` only where the folder has such files); ``released``: each
    case answered from its cells read as a release (:func:`run_case`)."""
    paths = sorted((folder / "cases").glob("*.json"))
    if not paths:
        raise FixtureError(folder, "no cases/*.json")
    declared = load_declared()
    cases = FamilyResult("cases", folder / "cases")
    for path in paths:
        try:
            cases.cases.append(run_case(path, corpus, declared, released))
        except FixtureError as exc:
            cases.cases.append(CaseResult("?", path.stem, error=str(exc)))
    positions = [check_positions(path, corpus, declared) for path in sorted((folder / "positions").glob("*.json"))]
    return [cases] + ([FamilyResult("positions", folder / "positions", cases=positions)] if positions else [])
