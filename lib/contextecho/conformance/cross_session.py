"""Run-level conformance of the cross-session family: the harness's probes and S2 on other sessions.

Cases of family ``cross_session`` (``runs/README.md``) drive one or more of three harness
runners, then the loaders that read their cells. :func:`run` replays each runner through our
cross-session experiment (:mod:`contextecho.experiments.cross_session`), one run of ours per
runner, on the replay client:

* e15 ``run.py`` (the figure's Session 1; the case's ``inputs.session1``): the probe design at
  the positions the driver rebinds (``POSITIONS``), its probes (``ALL_PROBES``) and targets
  (``TARGETS``), judged by the case's judge;
* ``run_crosssession.py`` (one driver per env ``SESSION``, its corpus file in
  ``inputs.sessions``): the probe design at run_crosssession's plan (its 12 positions over its
  own rows), env ``TARGET`` as the target, the driver's ``ALL_PROBES``, judged;
* e09 ``run.py``: the s2 design on every session of ``inputs.sessions`` (label, corpus file,
  positions), the driver's ``TARGETS`` and the case's S2 items, e09's request rules, no judge.

Each target request is keyed by its cell's identity in the driver's key fields (those of the
case's requests of that runner: ``session`` = env ``SESSION`` or e09's label, ``turn`` the
harness turn, ``turn_index`` run_crosssession's row index); a judge request names its cell.

Compared: the requests (:func:`~.replay.compare_requests`); every stored cell, each under its
session (the harness writes each session's cells to a folder of its own: the e15 probes', one
per run_crosssession ``SESSION``, one per e09 label); the tables — the figure's trajectories
and gaps (``crosssession_per_pos``, ``crosssession_gaps``:
:func:`~contextecho.experiments.cross_session.per_position` and
:func:`~contextecho.experiments.cross_session.gap` on the cells of the folder each panel read)
and the S2 audit (``audit_compliance``: :func:`.tables.compare_s2_tables`, e09's sessions under
the audit's labels); and run_crosssession's plans (``expected.plans``: rows, step, labels, rows
of the positions).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..echo.protocol import Positions
from ..echo.reference.judge import parse_verdict
from ..echo.reference.role_rows import crosssession_rows, crosssession_step
from ..echo.reference.transcript import DEFAULT_WINDOW
from ..experiments import cross_session as xs
from ..sessions.positions import Position
from ..stats.session_validation import HARNESS_ARMS
from .case import REFERENCE, TOLERANCE, CaseResult, FixtureError, decode
from .cells import compare_cell_fields, empty_text_verdict, expected_cells, multi_block_join
from ..echo.reference.released import identify
from ..echo.reference.released_answers import item_name
from .replay import Replay, compare_requests, empty_text_reply, key_identity, litellm_model
from .tables import EMPTY_TEXT_READING, Driven, compare_s2_tables, explained, row_identity, target_replies

E15_RUNNER = "experiments/e15_probes_at_crosscompaction/run.py"
CROSSSESSION_RUNNER = "experiments/e15_probes_at_crosscompaction/run_crosssession.py"
E09_RUNNER = "experiments/e09_cross_session/run.py"
TABLE_DRIVERS = ("plotting/", "analysis/")
#: The figure's results folders: e15's probes, and run_crosssession's per ``SESSION`` (its
#: ``OUT_BASE``, ``run_crosssession.py:46``: the name less ``session_``).
E15_FOLDER = "probes_at_crosscompaction"
CELL_FIELDS = ("response_text", "response_len", "score", "label", "reason")
#: Expected tables the figure's and audit's drivers print beside their tables (informational).
PRINTED = ("crosssession_return", "crosssession_stdout")


@dataclass(frozen=True)
class Group:
    """One of our runs under the session name the harness's runner gives it (None: e15's
    one session), with the harness folder its cells are written to."""

    session: str | None
    folder: str
    driven: Driven


def crosssession_folder(session: str) -> str:
    return f"{E15_FOLDER}_{session.replace('session_', '', 1)}"


# ---------------------------------------------------------------- running the runners
def _key_fields(case: dict, sessions: set[str] | None) -> list[str]:
    """The key fields of the target requests of the runner that names ``sessions`` (None: a
    runner naming none), as the case's canned replies or expected requests give them."""
    for entry in [*case.get("canned_replies", []), *case["expected"].get("requests", [])]:
        key = entry.get("key", {})
        if entry.get("call") == "target" and (("session" not in key) if sessions is None
                                              else key.get("session") in sessions):
            return list(key)
    return []


def _target(inputs: Sequence[dict], names: Sequence[str], what: str) -> list[dict]:
    """The case's targets whose folder name (``target_safe``) or model is among ``names``."""
    chosen = [t for t in inputs if t.get("target_safe") in names or t.get("model") in names]
    if not chosen:
        raise FixtureError(what, f"no target of the case's inputs is named {list(names)}")
    return chosen


def _replay_run(case: dict, number: int, runner: str, corpus: Path, replay: Replay, workdir: Path, *,
                targets: Sequence[dict], sessions: Sequence[tuple[str | None, str]],
                positions: Mapping[str | None, Any], items: Sequence[str], judge: str | None,
                fields: Sequence[str], s2: bool = False) -> list[Group]:
    """One harness runner through our experiment: ``sessions`` as (the runner's name, corpus
    file); ``positions`` per name (a list of (label, turn), or None: run_crosssession's plan);
    probes judged by ``judge``, or (``s2``) S2 items scored, no judge."""
    window = int(case["inputs"].get("max_chars", DEFAULT_WINDOW))
    models = {litellm_model(t["provider"], t["model"]): t["target_safe"] for t in targets}
    judge = None if s2 else judge
    params = xs.Parameters(**{**xs.PAPER_SCALE, "targets": tuple(models), "judges": (judge or next(iter(models)),),
                              "window": window, "output_dir": str(workdir / f"{number:02d}"), "concurrency": 1,
                              **({"stressors": tuple(items)} if s2 else {"probes": tuple(items)})})
    read = {name: REFERENCE.read_session(corpus / path) for name, path in sessions}
    transport = replace(params.transport(params.targets + params.judge_models()), base_delay_s=0.0,
                        max_delay_s=0.0, client=replay)
    run = xs.start(params, sessions=list(read.values()), transport=transport)
    chosen = {s.session_id: [Position(int(turn), label, "case") for label, turn in positions[name]]
              for name, s in read.items() if positions.get(name) is not None}
    asked = Positions(chosen=chosen) if chosen else xs.PLAN
    cells = (xs.s2_cells if s2 else xs.probe_cells)(run, asked, redact=False)
    names = {s.session_id: name for name, s in read.items()}
    for cell in cells:
        values = {"session": names[cell.session], "target": models[cell.target], "position": cell.position,
                  "turn": cell.step, "turn_index": cell.step, "arm": HARNESS_ARMS[cell.arm],
                  "item": item_name(cell.item.id), "replicate": cell.replicate}
        replay.name_target(cell.request.key, fields, values, f"case {case['id']}")
    if judge:
        replay.judge_calls[judge] = "judge"
    frame = (xs.scored if s2 else xs.judged)(run, cells, redact=False)
    labels = {run.labels[sid]: name for sid, name in names.items()}
    return [Group(name, _folder(runner, name), Driven(runner, frame[frame["session"] == label], models,
                                                      session=name if s2 else None))
            for label, name in labels.items()]


def _folder(runner: str, session: str | None) -> str:
    """The results folder the harness's ``runner`` writes the cells of ``session`` to."""
    if runner == E09_RUNNER:
        return f"cross_session/{session}"
    return crosssession_folder(session) if session else E15_FOLDER


def _driver_run(case: dict, number: int, driver: dict, corpus: Path, replay: Replay, workdir: Path) -> list[Group]:
    inputs, runner = case["inputs"], driver["runner"]
    env, subs = driver.get("env") or {}, driver.get("substitutions") or {}
    judge = litellm_model(inputs["judge"]["provider"], inputs["judge"]["model"]) if inputs.get("judge") else None
    if runner == E15_RUNNER:
        first = inputs["session1"]
        positions = [(label, turn) for turn, label in subs["POSITIONS"]] if subs.get("POSITIONS") \
            else [(p["label"], p["turn"]) for p in first["positions"]]
        targets = _target(first["targets"], [t[-1] for t in subs["TARGETS"]], runner) if subs.get("TARGETS") \
            else first["targets"]
        return _replay_run(case, number, runner, corpus, replay, workdir, targets=targets,
                           sessions=[(None, first["session"])], positions={None: positions},
                           items=subs.get("ALL_PROBES") or first["probes"], judge=judge,
                           fields=_key_fields(case, None))
    if runner == CROSSSESSION_RUNNER:
        name = env.get("SESSION", "")
        entry = next((s for s in inputs.get("sessions", []) if s.get("SESSION") == name), None)
        if entry is None:
            raise FixtureError(f"case {case['id']}", f"no inputs.sessions entry for SESSION={name!r}")
        declared = [inputs["target"]] if inputs.get("target") else inputs.get("targets", [])
        targets = _target(declared, [env.get("TARGET", "")], runner)
        return _replay_run(case, number, runner, corpus, replay, workdir, targets=targets,
                           sessions=[(name, entry["session"])], positions={name: None},
                           items=subs.get("ALL_PROBES") or entry["probes"], judge=judge,
                           fields=_key_fields(case, {name}))
    # e09: every session of the case with its positions, S2, no judge
    sessions = inputs.get("sessions", [])
    targets = _target(inputs["targets"], [t[-1] for t in subs["TARGETS"]], runner) if subs.get("TARGETS") \
        else inputs["targets"]
    items = [f"S2#{int(i[4:]) + 1:02d}" for i in inputs.get("items", [])] or ["S2"]
    return _replay_run(case, number, runner, corpus, replay, workdir, targets=targets,
                       sessions=[(s["label"], s["session"]) for s in sessions],
                       positions={s["label"]: [(p["label"], p["turn"]) for p in s["positions"]] for s in sessions},
                       items=items, judge=None, fields=_key_fields(case, {s["label"] for s in sessions}),
                       s2=True)


RUNNERS = (E15_RUNNER, CROSSSESSION_RUNNER, E09_RUNNER)


def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict],
        workdir: Path) -> None:
    """Replay one ``cross_session`` case through our experiment and compare (module doc)."""
    groups: list[Group] = []
    for number, driver in enumerate(case["harness_driver"]):
        runner = driver.get("runner", "?")
        if runner.startswith(TABLE_DRIVERS):
            continue
        if runner not in RUNNERS:
            report.not_expressible("runners", runner, "not a runner of the cross-session experiment")
            continue
        groups += _driver_run(case, number, driver, corpus, replay, workdir)
    compare_requests(case, replay, report, declared)
    _compare_cells(case, groups, replay, report, declared)
    _compare_tables(case, groups, replay, report, declared)
    _compare_plans(case, corpus, report, declared)


# ---------------------------------------------------------------- cells
def _expected_cell(path: str, record: Mapping[str, Any]) -> tuple | None:
    """(the runner's session name, cell identity) of a harness cell file, None if unknown: e09's
    S2 cells name their session by folder (``run.py:39``, ``OUT_BASE / label``), run_crosssession's
    probe cells in the record, e15's none."""
    found = identify(path, record)
    if found is None or found[0] not in ("probe", "s2") or found[0] == "s2" and found[1].session is None:
        return None
    i = found[1]
    return i.session, (i.target, i.position, i.arm, i.item, 0)


def _ours(groups: Sequence[Group], replay: Replay) -> dict[tuple, dict]:
    judges = [j for j, kind in replay.judge_calls.items() if kind == "judge"]
    out = {}
    for g in groups:
        frame = g.driven.frame
        rows = frame[frame["judge_model"].isna() | frame["judge_model"].isin(judges)]
        for row in rows.to_dict("records"):
            row["response"] = row["response"] if isinstance(row["response"], str) else None
            out[(g.session, row_identity(row, g.driven.target_safe))] = row
    return out


def _contributes(row: Mapping[str, Any]) -> bool:
    if row.get("item_kind") == "probe":
        return REFERENCE.stored_value(row) is not None
    return row.get("verdict_status") == "ok"


def _compare_cells(case: dict, groups: Sequence[Group], replay: Replay, report: CaseResult,
                   declared: Sequence[dict]) -> None:
    ours = _ours(groups, replay)
    expected = expected_cells(case, _expected_cell, "a probe or S2 cell", report, declared)
    replies = target_replies(replay)
    empty = _empty_text_cells(replay)
    missing = [k for k in expected if k not in ours or ours[k]["response"] is None]
    compared = []
    for k, record in expected.items():
        row = ours.get(k)
        if row is None or row["response"] is None:
            continue
        if multi_block_join(report, k, record, row["response"], replies.get(k), declared):
            continue
        actual = {"response_text": row["response"], "response_len": len(row["response"])}
        if row.get("item_kind") == "probe":
            actual.update(score=REFERENCE.stored_value(row), label=row.get("reference_label"),
                          reason=row.get("reference_reason"))
            # the harness parses the empty text block (-1) and keeps the cell; we lose it (declared)
            actual = empty_text_verdict(report, k, record, actual, empty, declared)
        compared.append((k, record, actual))
    report.add("cells", "stored", not missing, len(expected), len(expected) - len(missing), declared,
               note=f"missing or failed: {[list(k) for k in missing[:10]]}" if missing else f"{len(expected)} cells")
    compare_cell_fields(report, compared, CELL_FIELDS, declared)
    lost = [k for k in replies if k not in expected and k in ours]
    scored = [k for k in lost if _contributes(ours[k])]
    report.add("cells", "lost_cells_contribute_nothing", not scored, [], [list(k) for k in scored[:10]], declared,
               note=f"{len(lost)} lost cells")


# ---------------------------------------------------------------- tables
def _empty_text_cells(replay: Replay) -> set[tuple]:
    """The cells (the key's session, cell identity) whose judge answered Anthropic text blocks,
    all empty (:func:`~.replay.empty_text_reply`)."""
    return {(s.key.get("session"), key_identity(s.key)) for s in replay.sent
            if s.call == "judge" and empty_text_reply(s.reply, s.model)}


def _harness_verdict(verdict) -> dict:
    return {"score": verdict.score, "label": verdict.label, "reason": verdict.reason}


def _panel_frames(groups: Sequence[Group], base: str, replay: Replay) -> dict[str, pd.DataFrame] | None:
    """Our probe cells of the folder the figure's panel ``base`` read (``.../<folder>/<target>``),
    the primary judge's (``ours``), and as the harness reads them (``read``: a cell whose judge
    answered empty text blocks, which we lose, kept with the −1 that empty text parses to;
    the declared ``empty_text_verdict``); None where no run of ours wrote there."""
    folder, target = base.rstrip("/").split("/")[-2:]
    judges = [j for j, kind in replay.judge_calls.items() if kind == "judge"]
    empty = _empty_text_cells(replay)
    frames = []
    for g in (g for g in groups if g.folder == folder):
        frame = g.driven.frame
        lost = pd.Series([(g.session, row_identity(r, g.driven.target_safe)) in empty
                          for r in frame.to_dict("records")], index=frame.index, dtype=bool)
        lost &= frame[REFERENCE.stored_score].isna()
        frames.append(frame.assign(target=frame["target"].map(g.driven.target_safe), empty_text=lost))
    if not frames:
        return None
    frame = pd.concat(frames, ignore_index=True)
    frame = frame[(frame["target"] == target) & frame["judge_model"].isin(judges)]
    verdict = _harness_verdict(parse_verdict(""))
    read = frame.copy()
    read.loc[read["empty_text"], REFERENCE.stored_score] = float(verdict["score"])
    return {"ours": frame, "read": read}


def _compare_tables(case: dict, groups: Sequence[Group], replay: Replay, report: CaseResult,
                    declared: Sequence[dict]) -> None:
    tables = case["expected"].get("tables") or {}
    done = set(PRINTED) & set(tables)
    if "crosssession_per_pos" in tables:
        done.add("crosssession_per_pos")
        gaps: dict[str, list] = {"ours": [], "read": []}
        for i, panel in enumerate(decode(tables["crosssession_per_pos"])):
            frames = _panel_frames(groups, panel["base"], replay) or {"ours": pd.DataFrame(), "read": pd.DataFrame()}
            rows = {}
            for k, frame in frames.items():
                trajectory = xs.per_position(frame)
                rows[k] = [[r.position, r.real_mean, r.filler_mean] for r in trajectory.itertuples()]
                if rows[k]:
                    title = xs.FIGURE_TITLES[i] if i < len(xs.FIGURE_TITLES) else None
                    gaps[k].append({"title": title, "gap": xs.gap(trajectory)})
            explained(report, "crosssession_per_pos.rows", panel["rows"], rows["ours"], rows["read"], declared,
                      TOLERANCE, panel["base"].split("/", 1)[-1], reading=EMPTY_TEXT_READING)
        if "crosssession_gaps" in tables:
            done.add("crosssession_gaps")
            expected = decode(tables["crosssession_gaps"])
            for name, tolerance in (("title", 0.0), ("gap", TOLERANCE)):
                explained(report, f"crosssession_gaps.{name}", [g.get(name) for g in expected],
                          [g[name] for g in gaps["ours"]], [g[name] for g in gaps["read"]], declared, tolerance,
                          reading=EMPTY_TEXT_READING)
    if "audit_compliance" in tables or "forest_stressors_no_anchor" in tables:
        done |= compare_s2_tables(tables, [g.driven for g in groups], replay, report, declared)
    for name in tables:
        if name not in done:
            report.not_expressible("tables", name, "no analysis of ours computes this table")


def _compare_plans(case: dict, corpus: Path, report: CaseResult, declared: Sequence[dict]) -> None:
    """run_crosssession's plan of each ``SESSION`` (``expected.plans``) against our positions
    there (:data:`~contextecho.experiments.cross_session.PLAN` under the reference protocol)."""
    files = {s.get("SESSION"): s.get("session") for s in case["inputs"].get("sessions", [])}
    for name, plan in (case["expected"].get("plans") or {}).items():
        if name not in files:
            report.add("plans", name, False, plan, None, declared, note="no inputs.sessions entry for this SESSION")
            continue
        path = corpus / files[name]
        n_rows = len(crosssession_rows(path))
        positions = REFERENCE.positions(REFERENCE.read_session(path), xs.PLAN)
        ours = {"n_turns": n_rows, "pos_step": crosssession_step(n_rows),
                "pos_labels": [p.label for p in positions], "pos_lines": [p.step for p in positions]}
        for field in sorted(plan):
            report.compare("plans", f"{field}", plan[field], ours.get(field, "<absent>"), declared, note=name)
