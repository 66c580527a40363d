"""Run-level conformance of the harness's session validation, and of the two position plans
the harness computes from a session.

**Cases** of family ``session_validation`` (``runs/README.md``): e18 (``experiments/
e18_session_validation/run.py`` ``main(argv)``) validated one session, then
``analysis/analyze_session_validation.py`` summarised its cells. :func:`run` replays a case
through our own check, :mod:`contextecho.experiments.session_validation`, stage by stage as
its ``validate_session`` runs it:

1. e18's command line (the driver's ``argv``, ``<ROOT>`` being the case's work folder) becomes
   our check's ``Parameters`` (:func:`e18_parameters`): the target is the ``--provider``'s
   model, the judge ``--judge`` through Anthropic (as e18's ``Judge`` is), ``--quick`` and
   ``--positions`` as e18 reads them, the harness's 600 / 400 tokens; the session is placed
   where e18 read it, and the run's outputs go where the summary read them (the summary
   driver's ``--root``);
2. the cells are built (the check's ``grid``, unredacted: nothing leaves the process) and
   each target request's key is its cell's identity in e18's key fields (``target``,
   ``position``, ``turn_index`` = the row index, ``arm``, ``item``); the judge's requests
   name their cell; the :class:`~.replay.Replay` is the run's network client;
3. compared: the requests (:func:`~.replay.compare_requests`); every stored cell
   (``response_text``, ``response_len``, ``score``, ``label``, ``reason``) and which cells
   are stored at all, and e18's ``validation_manifest.json`` (every field but
   ``created_utc``); e18's printout (its exit status, usable rows, each position's row and
   prefix length, the cells it lost, its running count); every field of the summary
   (:func:`contextecho.stats.session_validation.session_validation_summary`, via the
   check's ``summarise``) and the summary's exit status.

**Positions files** (:func:`check_session_plans`, called by :func:`.runs.check_positions`):
e18's ``--dry-run`` plans (default, ``--quick``, ``--positions 5``: the plan, the prefix at every
entry, the manifest, or the ``ValueError`` of a short session) through the check's ``dry_run``
and :func:`~contextecho.echo.reference.role_rows.validation_snapshots`, and
run_crosssession's plan (its rows, step, positions, prefixes, or its refusal) through
:mod:`contextecho.echo.reference.role_rows`. run_crosssession exits the process on a short
session where our plan raises :class:`~contextecho.echo.reference.role_rows.ShortSession`:
the message is compared, and the kind is a declared divergence.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..echo.reference.providers import ANTHROPIC, harness_provider
from ..echo.reference.role_rows import (QUICK_POSITIONS, VALIDATION_POSITIONS, ShortSession, crosssession_plan,
                                        crosssession_rows, crosssession_step, line_prefix,
                                        validation_snapshots)
from ..stats.session_validation import HARNESS_ARMS, session_validation_summary
from ..experiments import session_validation
from .cells import compare_cell_fields, multi_block_join
from .replay import Replay, compare_requests, key_fields, litellm_model, replay_environment
from .case import REFERENCE, ROOT, TOLERANCE, CaseResult, FixtureError, decode, matches, sha256_text

E18_RUNNER = "experiments/e18_session_validation/run.py"
SUMMARY_RUNNER = "analysis/analyze_session_validation.py"
MANIFEST_FILE = "validation_manifest.json"
#: e18 judges through Anthropic whatever the target (``run.py``: ``Judge(provider="anthropic")``).
E18_JUDGE_PROVIDER = ANTHROPIC
CELL_FIELDS = ("response_text", "response_len", "score", "label", "reason")
E18_PLAN, CROSSSESSION_PLAN = "e18_session_validation_plan", "e15_run_crosssession_plan"


class _ArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # a case's bad argv is the case's error, never an exit
        raise _ArgumentError(message)


def e18_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """e18's ``parse_args`` and its ``--quick`` rule (3 positions unless ``--positions`` says
    otherwise); the defaults are the harness's settings of :data:`.session_validation.HARNESS`."""
    provider, target = harness_provider(session_validation.HARNESS["targets"][0])
    judge = harness_provider(session_validation.HARNESS["judges"][0])[1]
    p = _Parser(prog="e18", add_help=False)
    p.add_argument("--session", required=True)
    p.add_argument("--label", required=True)
    p.add_argument("--target", default=target)
    p.add_argument("--provider", default=provider)
    p.add_argument("--judge", default=judge)
    p.add_argument("--positions", type=int, default=VALIDATION_POSITIONS)
    p.add_argument("--probe-ids", default="")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--max-chars", dest="window", type=int, default=session_validation.HARNESS["window"])
    p.add_argument("--out-root", default="")
    p.add_argument("--dry-run", action="store_true")
    try:
        args = p.parse_args(list(argv))
    except _ArgumentError as exc:
        raise FixtureError(f"e18 argv {list(argv)}", str(exc)) from None
    if args.quick and args.positions == VALIDATION_POSITIONS:
        args.positions = QUICK_POSITIONS
    return args


def e18_parameters(args: argparse.Namespace, output_dir: Path | str = "") -> session_validation.Parameters:
    """Our check's parameters for e18's arguments (module doc)."""
    h = session_validation.HARNESS
    return session_validation.Parameters(
        session=args.session, label=args.label, targets=(litellm_model(args.provider, args.target),),
        judges=(litellm_model(E18_JUDGE_PROVIDER, args.judge),), window=args.window, max_tokens=h["max_tokens"],
        judge_max_tokens=h["judge_max_tokens"], protocol=h["protocol"], quick=args.quick,
        n_positions=args.positions, probes=tuple(p.strip() for p in args.probe_ids.split(",") if p.strip()),
        output_dir=str(output_dir), concurrency=1)


def _rooted(value: Any, workdir: Path) -> Any:
    if isinstance(value, str):
        return value.replace(ROOT, str(workdir))
    if isinstance(value, list):
        return [_rooted(v, workdir) for v in value]
    if isinstance(value, dict):
        return {k: _rooted(v, workdir) for k, v in value.items()}
    return value


def _place(source: Path, where: Path) -> None:
    """The session where the harness read it (a link; a copy where links are refused)."""
    if not source.is_file():
        raise FileNotFoundError(f"session {source} not found")
    where.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(source.resolve(), where)
    except OSError:
        shutil.copyfile(source, where)


def _option(argv: Sequence[str], name: str, default: Any = None) -> Any:
    argv = list(argv)
    return argv[argv.index(name) + 1] if name in argv[:-1] else default


def _outcome(value: Any) -> tuple[str, Any]:
    """A driver's ``return`` as (kind, value): ``return``, ``exit`` or ``raises:<type>``."""
    if isinstance(value, dict) and "SystemExit" in value:
        return "exit", value["SystemExit"]
    if isinstance(value, dict) and "raises" in value:
        return f"raises:{value['raises']}", value.get("message")
    return "return", value


def _refused(exc: ShortSession) -> tuple[str, str]:
    """Our plan's refusal as a driver's outcome (a :class:`ShortSession` is a ``ValueError``)."""
    return "raises:ValueError", str(exc)


# ---------------------------------------------------------------- a case
def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict],
        workdir: Path) -> None:
    """Replay one ``session_validation`` case through our check and compare (module doc)."""
    drivers = case["harness_driver"]
    e18 = next((d for d in drivers if d.get("runner") == E18_RUNNER), None)
    if e18 is None:
        raise FixtureError(f"case {case['id']}", f"no {E18_RUNNER} driver")
    for d in drivers:
        if d.get("runner") not in (E18_RUNNER, SUMMARY_RUNNER):
            report.not_expressible("runners", d.get("runner", "?"), "not part of the session validation we run")
    args = e18_arguments(_rooted(e18.get("argv", []), workdir))
    _place(corpus / case["inputs"]["session"], Path(args.session))
    summary = next((d for d in drivers if d.get("runner") == SUMMARY_RUNNER), None)
    summary_argv = _rooted(summary.get("argv", []), workdir) if summary else []
    root = _option(summary_argv, "--root") or str(workdir / args.label / args.target)
    params = e18_parameters(args, root)
    with replay_environment(params.targets + params.judges):  # e18's models: dummy keys, as the harness had
        _replay(case, args, params, summary_argv, replay, report, declared, workdir)


def _replay(case: dict, args: argparse.Namespace, params: session_validation.Parameters, summary_argv: list,
            replay: Replay, report: CaseResult, declared: Sequence[dict], workdir: Path) -> None:
    root = params.output_dir
    opened = session_validation.start(params)  # a new run on the replay client; the one opened is not changed
    validation = replace(opened, transport=replace(opened.transport, concurrency=1, base_delay_s=0.0, max_delay_s=0.0,
                                                   client=replay))
    stdout = next((s for s in case["expected"].get("stdout", []) if s.get("driver", "").startswith(E18_RUNNER)), {})
    try:
        cells = session_validation.grid(validation, redact=False)
    except ShortSession as exc:
        _compare_return(report, declared, "stdout.return", stdout.get("return"), _refused(exc))
        compare_requests(case, replay, report, declared)
        # nothing was stored: the summary of no cell, as the summary driver was asked for it
        asked = {name: int(_option(summary_argv, option)) for name, option in
                 (("expected_positions", "--positions"), ("probes", "--probes")) if _option(summary_argv, option)}
        _compare_tables(case, session_validation_summary([], root=root, **asked), report, declared, workdir)
        return
    fields = key_fields(case, "target") or ["target", "position", "turn_index", "arm", "item"]
    for cell in cells:
        values = {"target": args.target, "position": cell.position, "turn_index": cell.step, "turn": cell.step,
                  "arm": HARNESS_ARMS[cell.arm], "item": cell.item.id, "replicate": cell.replicate}
        replay.name_target(cell.request.key, fields, values, f"case {case['id']}")
    replay.judge_calls[params.judges[0]] = "judge"
    result = session_validation.summarise(validation, cells, session_validation.judged(validation, cells, redact=False))
    compare_requests(case, replay, report, declared)
    _compare_cells(case, args.target, result, replay, report, declared, workdir)
    _compare_stdout(stdout, cells, result, report, declared)
    _compare_tables(case, result.summaries[params.targets[0]], report, declared, workdir)


def _compare_return(report: CaseResult, declared: Sequence[dict], name: str, expected: Any,
                    ours: tuple[str, Any]) -> None:
    theirs = _outcome(expected)
    report.add("stdout", name, list(theirs) == list(ours), list(theirs), list(ours), declared)


def _stored(result: session_validation.SessionValidation) -> dict[tuple, dict]:
    """Our stored cells by (position, the harness's arm, probe), with the row behind each."""
    rows = {(r["position"], r["arm"], r["item"]): r for r in result.frame.to_dict("records")}
    return {(c.position, HARNESS_ARMS[c.arm], c.probe): rows[(c.position, c.arm, c.probe)]
            for c in session_validation.stored_cells(result.frame, result.protocol)}


def _compare_cells(case: dict, target: str, result: session_validation.SessionValidation, replay: Replay,
                   report: CaseResult, declared: Sequence[dict], workdir: Path) -> None:
    ours = _stored(result)
    expected: dict[tuple, dict] = {}
    for cell in case["expected"].get("cells", []):
        record = _rooted(cell["record"], workdir)
        if Path(cell["path"]).name == MANIFEST_FILE:
            manifest = next(iter(result.manifests.values()))
            for name in sorted(set(record) | set(manifest)):
                if name != "created_utc":
                    report.add("cells", f"manifest.{name}", matches(record.get(name, "<absent>"),
                               manifest.get(name, "<absent>")), record.get(name), manifest.get(name), declared)
            continue
        if not {"probe_id", "position", "arm"} <= set(record):
            report.add("cells", cell["path"], False, "an e18 cell or its manifest", None, declared,
                       note="unknown cell layout")
            continue
        expected[(record["position"], record["arm"], record["probe_id"])] = record
    missing = sorted(set(expected) - set(ours))
    extra = sorted(set(ours) - set(expected))
    report.add("cells", "stored", not missing and not extra, len(expected), len(set(expected) & set(ours)),
               declared, note=f"missing or failed: {missing[:10]}; stored but lost by the harness: {extra[:10]}"
               if missing or extra else f"{len(expected)} cells")
    compared = []
    for ident in sorted(set(expected) & set(ours)):
        record, row = expected[ident], ours[ident]
        reply = replay.target_replies.get((target, ident[0], ident[1], ident[2], 0))
        if multi_block_join(report, ident, record, row["response"], reply, declared):
            continue
        compared.append((ident, record, {
            "response_text": row["response"], "response_len": len(row["response"]),
            "score": int(row[REFERENCE.stored_score]), "label": row.get("reference_label"),
            "reason": row.get("reference_reason")}))
    compare_cell_fields(report, compared, CELL_FIELDS, declared)


PLAN_LINE = re.compile(r"^\s+(P\d+): turn_index=(\d+) prefix_chars=(\d+)$")
PROGRESS_LINE = re.compile(r"^\s+(P\d+): (\d+)/(\d+) cells complete")
ERROR_LINE = re.compile(r"^\s+ERROR (\S+) (\S+) (\S+): ")
ROWS_LINE = re.compile(r"^\s+usable turns: (\d+)$")


def _compare_stdout(stdout: dict, cells: Sequence, result: session_validation.SessionValidation,
                    report: CaseResult, declared: Sequence[dict]) -> None:
    """e18's printout: exit status, usable rows, the plan with each prefix's length, the
    cells it lost, and its running count of stored cells per position."""
    _compare_return(report, declared, "stdout.return", stdout.get("return"), ("return", 0 if result.complete else 1))
    lines = stdout.get("lines", [])
    manifest = next(iter(result.manifests.values()))
    stored = _stored(result)
    real = {c.position: c.prefix.n_chars for c in cells if c.arm == "real"}
    asked = list(dict.fromkeys((c.position, HARNESS_ARMS[c.arm], c.item.id) for c in cells))
    running, ours_progress = 0, []
    for entry in manifest["positions"]:
        running += sum(1 for ident in stored if ident[0] == entry["label"])
        ours_progress.append([entry["label"], running])
    found = {
        "usable_turns": ([int(m.group(1)) for m in map(ROWS_LINE.match, lines) if m], [manifest["n_turns"]]),
        "plan": ([[m.group(1), int(m.group(2)), int(m.group(3))] for m in map(PLAN_LINE.match, lines) if m],
                 [[p["label"], p["turn_index"], real.get(p["label"])] for p in manifest["positions"]]),
        "lost": (sorted([list(m.groups()) for m in map(ERROR_LINE.match, lines) if m]),
                 sorted([list(i) for i in asked if i not in stored])),
        "progress": ([[m.group(1), int(m.group(2))] for m in map(PROGRESS_LINE.match, lines) if m], ours_progress)}
    for name, (theirs, ours) in found.items():
        report.add("stdout", name, theirs == ours, theirs, ours, declared)


def _compare_tables(case: dict, summary: dict, report: CaseResult, declared: Sequence[dict], workdir: Path) -> None:
    for name, value in (case["expected"].get("tables") or {}).items():
        expected = decode(_rooted(value, workdir))
        if name == "session_validation_summary":
            for field in sorted(set(expected) | set(summary)):
                e, a = expected.get(field, "<absent>"), summary.get(field, "<absent>")
                report.compare("tables", f"{name}.{field}", e, a, declared, TOLERANCE)
        elif name == "return":  # the summary's exit status
            ours = 0 if summary["acceptable"] else 1
            report.compare("tables", name, expected, ours, declared)
        else:
            report.add("tables", name, False, "a table of the session-validation summary", None, declared,
                       note="unknown expected table")


# ---------------------------------------------------------------- positions files
def _prefix_checks(report: CaseResult, declared: Sequence[dict], name: str, expected: Sequence[dict],
                   ours: Sequence[tuple[int, str]]) -> None:
    """Each expected prefix entry against ours at the same index of the plan."""
    bad = []
    for i, entry in enumerate(expected):
        theirs = [entry.get("end_line"), entry.get("prefix_len"), entry.get("prefix_sha256")]
        mine = [ours[i][0], len(ours[i][1]), sha256_text(ours[i][1])] if i < len(ours) else None
        if theirs != mine:
            bad.append((i, theirs, mine))
    first = bad[0] if bad else (None, None, None)
    report.add("positions", f"{name}.prefixes", not bad and len(expected) == len(ours), first[1], first[2],
               declared, note=f"{len(bad)} of {len(expected)} entries differ (we plan {len(ours)})"
               if bad or len(expected) != len(ours) else f"{len(expected)} prefixes")


def _check_e18(plan: dict, session: Path, report: CaseResult, declared: Sequence[dict], workdir: Path) -> None:
    for run_name, expected in plan.get("runs", {}).items():
        name = f"{E18_PLAN}.{run_name}"
        manifest = _rooted(expected.get("manifest") or {}, workdir)
        where = Path(manifest.get("session_path") or workdir / f"{run_name}.jsonl")
        if not where.exists():
            _place(session, where)
        args = e18_arguments(["--session", str(where), "--label", manifest.get("label", run_name),
                              *expected.get("argv_extra", [])])
        params = e18_parameters(args)
        try:
            ours = next(iter(session_validation.dry_run(params).values()))
            outcome: tuple[str, Any] = ("return", 0)
            snapshots = validation_snapshots(where, params.positions, params.window)
        except ShortSession as exc:
            ours, outcome, snapshots = None, _refused(exc), ()
        theirs = _outcome(expected.get("return"))
        report.add("positions", f"{name}.return", list(theirs) == list(outcome), list(theirs), list(outcome), declared)
        mine_rows = ours["n_turns"] if ours else None
        report.add("positions", f"{name}.n_usable_rows", expected.get("n_usable_rows") == mine_rows,
                   expected.get("n_usable_rows"), mine_rows, declared)
        mine_plan = [[p["label"], p["turn_index"]] for p in ours["positions"]] if ours else None
        report.add("positions", f"{name}.plan", expected.get("plan") == mine_plan, expected.get("plan"), mine_plan,
                   declared)
        _prefix_checks(report, declared, name, expected.get("prefixes") or [], [(s.row, s.text) for s in snapshots])
        theirs_manifest = expected.get("manifest")
        if theirs_manifest is None or ours is None:
            report.add("positions", f"{name}.manifest", theirs_manifest is None and ours is None,
                       theirs_manifest, ours, declared)
            continue
        differ = [k for k in sorted(set(manifest) | set(ours)) if k != "created_utc"
                  and not matches(manifest.get(k, "<absent>"), ours.get(k, "<absent>"))]
        report.add("positions", f"{name}.manifest", not differ, {k: manifest.get(k) for k in differ},
                   {k: ours.get(k) for k in differ}, declared,
                   note="label, session path, target and judge are the dry run's inputs" if not differ else "")


def _check_crosssession(plan: dict, session: Path, report: CaseResult, declared: Sequence[dict]) -> None:
    rows = crosssession_rows(session)
    try:
        positions = crosssession_plan(len(rows))
        outcome: tuple[str, Any] = ("return", 0)
    except ShortSession as exc:
        positions, outcome = (), _refused(exc)
    kind, value = _outcome(plan.get("return"))
    report.add("positions", f"{CROSSSESSION_PLAN}.return.message", value == outcome[1], value, outcome[1], declared)
    report.add("positions", f"{CROSSSESSION_PLAN}.return.kind", kind == outcome[0], kind, outcome[0], declared)
    ours = {"n_turns": len(rows), "pos_step": crosssession_step(len(rows)) if positions else None,
            "pos_labels": [label for label, _ in positions] or None, "pos_lines": [row for _, row in positions] or None}
    for field, mine in ours.items():
        report.add("positions", f"{CROSSSESSION_PLAN}.{field}", plan.get(field) == mine, plan.get(field), mine,
                   declared)
    _prefix_checks(report, declared, CROSSSESSION_PLAN, plan.get("prefixes") or [],
                   [(row, line_prefix(rows, row)) for _, row in positions])


def check_session_plans(data: dict, session: Path, report: CaseResult, declared: Sequence[dict] = ()) -> set[str]:
    """e18's and run_crosssession's plans of one positions file against ours (module doc);
    the names of the schemes checked."""
    done = set()
    with tempfile.TemporaryDirectory(prefix="contextecho-plans-") as tmp:
        for name, check in ((E18_PLAN, lambda plan: _check_e18(plan, session, report, declared, Path(tmp))),
                            (CROSSSESSION_PLAN, lambda plan: _check_crosssession(plan, session, report, declared))):
            if not isinstance(data.get(name), dict):
                continue
            done.add(name)
            try:
                check(data[name])
            except (FixtureError, OSError, ValueError) as exc:  # an unreadable session or entry fails the scheme
                report.add("positions", name, False, "the plan", None, declared, note=f"{type(exc).__name__}: {exc}")
    return done

