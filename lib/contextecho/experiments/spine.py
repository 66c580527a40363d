"""The spine every experiment runs on: a run, its batches, its stages.

An experiment is a sequence of :class:`Stage` s, each one function of the experiment's
module: the first opens a :class:`Run` (:func:`start`: the outputs folder, the run log,
the transport with every model's route checked before any call, the sessions labelled
S1..Sn), the middle ones ask model calls or estimate and show one table or figure each,
and the last sets the manuscript's variables and writes them with the run log
(:func:`finish`). The notebook is generated from the same stages, one cell per stage
(:mod:`contextecho.notebooks.build`), and ``run(params)`` runs them in order
(:func:`run_stages`), so the command line, the tests and the notebook run one code path.

Every batch of model calls is counted in one :class:`~contextecho.engine.counts.Counts`
under its batch name (:meth:`Run.batch`), printed, and kept in the run log (the notebook's
``manifest.json``). A grid of cells runs through :func:`run_grid`.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd

from ..echo.runner import run_cells
from ..echo.calibration import MAX_INVALID_RATE, MIN_KAPPA, LabelsError, calibrate, calibration_set
from ..echo.protocol import Protocol
from ..echo.protocols import protocol_of
from ..echo.reference.released_answers import ReleasedClient
from ..engine.cache import CallCache
from ..engine.calls import Transport
from ..engine.counts import Counts
from ..engine.manifest import RunLog, masked, write_record
from ..engine.plan import Plan, Planner, current_planner, planning
from ..engine.usage import UsageError
from ..paper.declared import Declared
from ..paper.formats import COEFFICIENT, COUNT, MODEL, PERCENT, TEXT, not_estimable
from ..paper.outputs import Outputs
from ..paper.tables import Column, Table
from ..paper.variables import Variable
from ..paper.show import Result, SavedFigure
from ..sessions.model import Session
from ..sessions.selection import session_labels
from .parameters import ParameterError
from .protocol_record import protocol_record
from .selection import select_sessions


@dataclass
class Run:
    """One run of one experiment, from its first stage to its last: the parameters, the
    protocol (looked up once, from the parameter, when the run starts; ``None`` for a design
    without one), the outputs folder, the run log, the transport, the sessions (and their
    public labels S1..Sn), and the titled tables and figures its stages have shown."""

    name: str
    params: Any
    out: Outputs
    log: RunLog
    transport: Transport
    protocol: Protocol | None = None
    sessions: list[Session] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    #: The notebook's own folder: where a plan-mode run (whose outputs are scratch) leaves its plan.
    plan_folder: Path | None = None
    #: Plan mode: the planner's calls before this run (a planner may span several runs).
    plan_offset: int = 0
    #: Plan mode: the stages whose values stand on planned answers (placeholders, :meth:`step`).
    planned: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.planner is not None:
            self.plan_offset = len(self.planner.calls)

    @property
    def planner(self) -> Planner | None:
        """The run's planner (:mod:`contextecho.engine.plan`); None unless it is a plan."""
        return self.transport.planner

    def step(self, name: str, function: Callable[..., Any], *inputs: Any) -> Any:
        """The value of the stage ``name = function(*inputs)``: each stage after the one that
        opens the run, in a notebook's cell as in :func:`run_stages` (the inputs are the earlier
        stages' values, in the order of the function's parameters).

        In a plan a stage runs only as far as it needs no answer: the calls it asks before it
        stops are planned, and where it stops because of a placeholder (its own calls' answers,
        a value that stands on them, or an earlier stage's :class:`NotComputed`) it is reported
        in one line and its value is :class:`NotComputed`, which the later stages read in turn.
        Any other failure is the run's own and is raised as the run would raise it: outside a
        plan, in a stage that read no placeholder (an empty grid's analysis, say), an error the
        user fixes (a parameter, a model's key, a file:
        :class:`~contextecho.engine.usage.UsageError`) and a file or folder that cannot be read or
        written; the run log is then marked failed."""
        arguments = Stage(name, function).arguments
        planner = self.planner
        before = planner.placeholders_read if planner is not None else 0
        try:
            value = function(*inputs)
        except (UsageError, OSError):  # the user's to fix, plan or not; a file system's failure is no placeholder's
            self.log.write("failed")
            raise
        except Exception as exc:
            if planner is None or not (self.planned.intersection(arguments) or planner.placeholders_read > before):
                self.log.write("failed")
                raise
            unknown = [a for a, v in zip(arguments, inputs) if isinstance(v, NotComputed)]
            why = (f"it reads {', '.join(unknown)}, which this plan could not compute" if unknown
                   else f"it needs answers the plan has not got ({type(exc).__name__}: {exc})")
            print(f"[{self.name}:{name}] not computed in this plan: {why}; the calls it asked are planned",
                  flush=True)
            self.planned.add(name)
            return NotComputed(name, why)
        if planner is not None and (planner.placeholders_read > before or self.planned.intersection(arguments)):
            self.planned.add(name)
        return value

    def __repr__(self) -> str:
        sessions = ", ".join(f"{self.labels[s.session_id]} {s.session_id}" for s in self.sessions) or "none"
        return f"Run({self.name}: sessions {sessions}; outputs in {self.out.directory})"

    def batch(self, name: str, counts: Counts) -> Counts:
        """Count one batch of calls in the run log (a batch asked in parts adds up) and print
        its line once, on stdout: in a notebook under the cell that asked the batch, in a
        console run on the console (``contextecho notebook`` and ``make paper`` copy each
        kernel's stdout to the console: :func:`contextecho.notebooks.runner.run_notebook`);
        the batch's total. In a plan the line says what the batch would call."""
        total = self.log.add(name, counts)
        if self.planner is not None:
            print(f"[{name}] planned: calls={total.calls}, cached={total.cached}, to compute={total.computed}",
                  flush=True)
        else:
            print(total.line(name), flush=True)
        self.log.write()
        return total

    def table(self, stem: str, frame: pd.DataFrame) -> pd.DataFrame:
        """Write ``frame`` as the experiment's declared table ``stem`` (``tables/<stem>.md``,
        :mod:`contextecho.paper.tables`), one of the run's shown tables under its title;
        return it, for the notebook to show."""
        self.out.table(stem, frame)
        self.tables[self.out.declared.table(stem).title] = frame
        return frame

    def figure(self, stem: str, fig) -> SavedFigure:
        """Save ``fig`` as ``figures/<stem>.png`` and ``.pdf`` and close it; shown inline."""
        path = self.out.figure(stem, fig)
        plt.close(fig)
        self.figures.append(path)
        return SavedFigure(path)


def start(name: str, params: Any, *, models: Sequence[str], protocol: Protocol | None = None,
          record: Mapping[str, Any] | None = None, sessions: Callable[[], Sequence[Session]] | None = None,
          declared: Declared = Declared(), transport: Transport | None = None) -> Run:
    """Open ``paper/_generated/<name>`` (or ``params.output_dir``) afresh, check that every
    one of ``models`` can be called (route, key) before any call, select the ``sessions``
    and label them S1..Sn, and write the run log (status incomplete until :func:`finish`).
    ``protocol``: the run's protocol, carried by the run; ``record``: what the run log says
    about it (:func:`~.protocol_record.protocol_record`). ``declared``: the variables and
    tables the experiment writes (its ``MANUSCRIPT``), the only ones its outputs take.
    ``transport``: the run's, where the caller builds it (from ``params.transport``, which
    checks the routes).

    With ``params.plan`` the run is a plan (:mod:`contextecho.engine.plan`): its stages run
    in a scratch folder (removed with the run, failed or not), nothing is sent, no key is
    needed, and :func:`finish` writes the plan beside the outputs (``plan.json``) and shows
    it. A run whose folder holds the plan of the same parameters records it in its run log,
    beside what the run actually called."""
    folder = Outputs.folder(name, getattr(params, "output_dir", "") or None)
    planning = bool(getattr(params, "plan", False))
    out = Outputs.open(name, tempfile.mkdtemp(prefix=f"contextecho-plan-{name}-") if planning else folder, declared)
    if planning:  # the scratch folder goes with its writer: at the plan's end, a failure's, or the process's
        weakref.finalize(out, shutil.rmtree, out.directory, ignore_errors=True)
    about = {"protocol": dict(record)} if record else {}
    if not planning and (planned := matching_plan(folder / PLAN_FILE, params)) is not None:
        about["plan"] = planned
    log = RunLog(out.manifest, name, params, set(models), about)
    transport = params.transport(log.models) if transport is None else transport
    if isinstance(transport.client, ReleasedClient) and not (protocol is not None and protocol.answered_by_release):
        raise ParameterError(f"parameter 'released': the authors' release answers the calls of their harness's "
                             f"protocol, not {protocol.name if protocol else 'an unjudged run'}'s (protocol reference)")
    if planning:
        planner = current_planner() or Planner(concurrency=transport.concurrency)
        transport = dataclasses.replace(transport, planner=planner)
    chosen = list(sessions()) if sessions else []
    run = Run(name, params, out, log, transport, protocol, chosen, session_labels(chosen), plan_folder=folder)
    log.write()
    return run


def start_judged(name: str, params: Any, *, paper_scale: Mapping[str, Any], declared: Declared,
                 stressor_max_tokens: int | None = None, events: Sequence[str] = ()) -> Run:
    """:func:`start` for a judged experiment: its protocol resolved once from ``params``, its
    run-log record (:func:`~.protocol_record.protocol_record` against ``paper_scale``), every
    target and judge checked before any call, and the longest openly licensed sessions
    (with at least one event of ``events``, where given: checked first against what the
    protocol's sessions can hold)."""
    proto = protocol_of(params)
    if events:
        proto.check_events(events)
    return start(name, params, models=params.targets + params.judge_models(), protocol=proto,
                 record=protocol_record(proto, params, stressor_max_tokens, paper_scale), declared=declared,
                 sessions=lambda: select_sessions(params.n_sessions, events=events, protocol=proto))


#: The plan a plan-mode run leaves in its notebook's folder.
PLAN_FILE = "plan.json"


def _plan_parameters(params: Any) -> dict[str, Any]:
    """The parameters a plan was made for, as the run log records them, less the switches
    that do not change what is asked (``plan`` itself, the output folder)."""
    values = dataclasses.asdict(params) if dataclasses.is_dataclass(params) else dict(params or {})
    return json.loads(json.dumps({k: v for k, v in masked(values).items() if k not in ("plan", "output_dir")},
                                 default=str))


def matching_plan(path: Path, params: Any) -> dict[str, Any] | None:
    """The plan at ``path`` if it was made for these parameters; None otherwise (or unreadable)."""
    try:
        planned = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return planned if planned.get("parameters") == _plan_parameters(params) else None


def run_grid(run: Run, cells: Sequence, *, judges: Sequence[str], judge_max_tokens: int = 64,
             name: str | None = None, resume_judges: Sequence[str] = (), redact: bool = True,
             results: str = "cells") -> pd.DataFrame:
    """Run ``cells`` under the run's protocol through the shared cache and return the tidy
    frame (one row per cell and judge, :func:`~contextecho.echo.run_cells`; sessions
    relabelled S1..Sn), saved as ``results/<results>.parquet`` (a run of several grids names
    each); its batches (targets, judges, distributions) are counted under ``name``. The judges are asked as the protocol asks them for a budget
    of ``judge_max_tokens`` (:meth:`~contextecho.echo.protocol.Protocol.judge_params`); their
    score distributions are read too (``expected_score``).

    ``resume_judges`` resumes the grid from what earlier runs stored, as the harness's
    runners skip the cells on disk: read from the call cache alone (nothing is sent), a
    cell whose result one of these judges stored (``self``: its target; the protocol says
    which rows hold a result, :meth:`~contextecho.echo.protocol.Protocol.holds_result`)
    keeps that row, the first judge's, with ``resumed`` true: it is neither asked nor
    judged again. Every other cell is asked, a stored permanent error included (the
    harness redoes a lost cell), and judged by ``judges``."""
    name = name or run.name
    resuming = bool(resume_judges) and bool(cells)
    released = run.transport.client if isinstance(run.transport.client, ReleasedClient) else None
    if released is not None:  # the release answers the cells by their identity (released_answers)
        released.expect(cells)
    with CallCache() as cache:
        calling = {"cache": cache, "transport": run.transport, "protocol": run.protocol, "distributions": True,
                   "redact": redact,
                   "judge_params": run.protocol.judge_params(judge_max_tokens)}
        todo = list(cells)
        if resuming:
            stored = run_cells(cells, judges=list(resume_judges), name=f"{name}:resumed", stored_only=True,
                               **calling)
            stored.attrs.pop("batches")
            kept = stored[stored.apply(run.protocol.holds_result, axis=1).astype(bool)].drop_duplicates("key")
            run.batch(f"{name}:resumed", Counts(calls=len(kept), cached=len(kept)))
            todo = [c for c in cells if c.key not in set(kept["key"])]
        frame = run_cells(todo, judges=list(judges), name=name, retry_errors=True if resuming else None,
                          **calling) if todo or not resuming else stored.iloc[0:0]
    for batch, counts in frame.attrs.pop("batches", {}).items():
        if counts.calls:
            run.batch(batch, counts)
    if released is not None:
        print(f"[{name}] {released.summary()}")
    if resuming:  # the kept rows and the new ones, in the grid's order
        order = {c.key: i for i, c in enumerate(cells)}
        frame = pd.concat([kept.assign(resumed=True), frame.assign(resumed=False)], ignore_index=True)
        frame = frame.iloc[frame["key"].map(order).argsort(kind="stable")].reset_index(drop=True)
    frame = frame.assign(session=frame["session"].map(run.labels))  # a new frame: the records stay as run
    run.out.parquet(results, frame)
    return frame


def calibrate_judges(run: Run) -> pd.DataFrame:
    """Every judge of the run scores the calibration set under the run's protocol, prompt,
    parser and judge budget (:mod:`contextecho.echo.calibration`), before any target is
    asked: one row per judge (n, agreement, kappa, Spearman, invalid rate, verdict), written
    as the ``calibration`` table with the first judge's numbers as manuscript variables
    (``judge_kappa``, ``judge_calibrated``, ``judge_status``, ...). With
    ``require_calibrated`` a judge below the threshold stops the run here. ``judge_labels``: a
    labelled set of the user's own in place of the protocol's."""
    p = run.params
    try:
        items = calibration_set(run.protocol, p.judge_labels or None)
    except LabelsError as exc:
        raise ParameterError(f"parameter 'judge_labels': {exc}") from None
    rows = []
    with CallCache() as cache:
        for judge in p.judge_models():
            result = calibrate(judge, items, protocol=run.protocol, max_tokens=p.judge_max_tokens, cache=cache,
                               transport=run.transport, name=f"{run.name}:calibration")
            run.batch(f"{run.name}:calibration", result.counts)
            a = result.agreement
            rows.append({"judge": judge, "n": a.n, "n_valid": a.n_valid, "invalid_pct": 100 * a.invalid_rate,
                         "exact": a.exact,
                         "within_one": a.within_one, "kappa_quadratic": a.kappa_quadratic, "spearman": a.spearman,
                         "verdict": result.verdict, "labels_sha256": result.labels_sha256[:12]})
    table = pd.DataFrame(rows)
    run.out.parquet("calibration", table)
    first = rows[0]
    kappa = first["kappa_quadratic"]
    n_valid = first["n_valid"]
    why = (f"{n_valid} of the judge's {first['n']} verdicts on the labelled responses are valid"
           + (", all of one score" if n_valid else ""))
    run.out.set(judge_calibration_n=first["n"], judge_invalid_pct=first["invalid_pct"],
                judge_calibrated=first["verdict"], calibration_min_kappa=MIN_KAPPA,
                calibration_max_invalid_pct=100 * MAX_INVALID_RATE,
                judge_status=f"judge {first['judge']}: {first['verdict']}, quadratic kappa "
                             f"{not_estimable(why) if pd.isna(kappa) else COEFFICIENT.text(kappa)} "
                             f"on {first['n']} labelled responses")
    run.out.put("judge_kappa", kappa, why=why)
    run.out.put("judge_exact_pct", 100 * first["exact"], why=why)
    failing = [r["judge"] for r in rows if r["verdict"] != "calibrated"]
    if failing and getattr(p, "require_calibrated", False) and run.planner is None:  # a plan's verdicts are placeholders
        raise JudgeNotCalibrated(f"judge(s) {', '.join(failing)} failed calibration (quadratic kappa >= {MIN_KAPPA} "
                                 f"and invalid <= {100 * MAX_INVALID_RATE:.0f}% needed); no target was asked. "
                                 "Run with require_calibrated false to measure anyway, beside the calibration.")
    return run.table("calibration", table)


#: The table and the variables of :func:`calibrate_judges`.
CALIBRATION = Declared(
    variables=(Variable("judge_calibration_n", COUNT), Variable("judge_kappa", COEFFICIENT),
               Variable("judge_exact_pct", PERCENT), Variable("judge_invalid_pct", PERCENT),
               Variable("judge_calibrated", TEXT), Variable("judge_status", TEXT),
               Variable("calibration_min_kappa", COEFFICIENT), Variable("calibration_max_invalid_pct", PERCENT)),
    tables=(Table("calibration", "Judge calibration against labelled responses", (
        Column("Judge", MODEL, "judge"), Column("n", COUNT, "n"), Column("Invalid", PERCENT, "invalid_pct"),
        Column("Exact", COEFFICIENT, "exact"), Column("Within one", COEFFICIENT, "within_one"),
        Column("Quadratic κ", COEFFICIENT, "kappa_quadratic"),
        Column("Verdict", TEXT, "verdict", widest="not calibrated"))),))


class JudgeNotCalibrated(RuntimeError):
    """``require_calibrated``: a judge failed its calibration; the run stopped before any target call."""


def finish(run: Run) -> pd.DataFrame:
    """Write the manuscript's variables (``variables.yml``) and the run log
    (``manifest.json``, status complete); the variables, one row each. With a plan recorded
    at the start, the run log sets it beside what the run actually called
    (``plan_vs_actual``). A plan-mode run writes and prints its plan instead, removes its
    scratch folder, and returns the plan table."""
    if run.planner is not None:
        return finish_plan(run).frame()
    run.out.write_variables()
    planned = run.log.about.get("plan")
    if planned is not None:
        run.log.about["plan_vs_actual"] = plan_vs_actual(planned["totals"], run.log.batches.values())
    run.log.write("complete")
    return pd.DataFrame({"value": pd.Series(run.out.variables, dtype=object)}).rename_axis(run.name)


def run_plan(run: Run) -> Plan:
    """The plan of this run alone (its planner may hold earlier runs' calls too)."""
    return run.planner.plan(since=run.plan_offset)


def finish_plan(run: Run) -> Plan:
    """Plan mode: write ``plan.json`` into the notebook's folder (its results untouched),
    print the plan, remove the scratch outputs."""
    plan = run_plan(run)
    record = {"name": run.name, "parameters": _plan_parameters(run.params), **plan.as_dict()}
    folder = run.plan_folder or run.out.directory
    write_record(folder / PLAN_FILE, record)
    print(plan.text(f"{run.name}: plan"), flush=True)
    print(f"{run.name}: plan written to {folder / PLAN_FILE}; nothing was sent", flush=True)
    shutil.rmtree(run.out.directory, ignore_errors=True)
    return plan


def plan_vs_actual(planned: Mapping[str, Any], batches: Iterable[Counts]) -> dict[str, Any]:
    """The plan's totals beside what the run's batches came to (calls, computed, tokens, cost)."""
    total = sum(batches, Counts())
    actual = {"calls": total.calls, "cached": total.cached, "to_compute": total.computed, **total.usage()}
    return {k: {"planned": planned.get(k), "actual": actual[k]} for k in actual}


@dataclass(frozen=True)
class Stage:
    """One step of an experiment and one cell of its notebook: ``name = function(args)``,
    where the arguments are the earlier stages' names (``params`` first) the function's
    parameters are called by; the cell shows ``name``. The function's docstring is the
    notebook's text above the cell."""

    name: str
    function: Callable[..., Any]

    @property
    def arguments(self) -> tuple[str, ...]:
        return tuple(n for n, p in inspect.signature(self.function).parameters.items()
                     if p.default is inspect.Parameter.empty)

    def code(self, module: str = "experiment", *, opened: bool = True) -> str:
        """The notebook cell: a stage before the run is open (``opened`` false: the one that
        opens it, ``run``, included) called as it is, each later one through :meth:`Run.step`
        (a plan's placeholders, a failed run log), as :func:`run_stages` runs them."""
        call = f"{module}.{self.function.__name__}"
        if not opened or self.name == "run":
            return f"{self.name} = {call}({', '.join(self.arguments)})\n{self.name}"
        return f"{self.name} = run.step({self.name!r}, {call}, {', '.join(self.arguments)})\n{self.name}"

    def text(self) -> str:
        return inspect.getdoc(self.function) or ""


def plan_stages(stages: Sequence[Stage], params: Any) -> Plan:
    """The plan of running ``stages`` with ``params`` (:mod:`contextecho.engine.plan`): the
    stages run in plan mode (nothing sent, the outputs untouched, ``plan.json`` left in the
    run's folder), under the current planner if one is open, else their own."""
    planner = current_planner() or Planner(concurrency=getattr(params, "concurrency", 1))
    offset = len(planner.calls)
    with planning(planner):
        run_stages(stages, dataclasses.replace(params, plan=True))
    return planner.plan(since=offset)


@dataclass(frozen=True)
class NotComputed:
    """In a plan, the value of a stage that could not be computed from the planned answers
    (placeholders: a questionnaire's option, a verdict, is not known before the call): which
    stage, and why (its own error, or the earlier stage it read)."""

    stage: str
    reason: str

    def __repr__(self) -> str:
        return f"not computed in this plan ({self.stage}: {self.reason})"


def run_stages(stages: Sequence[Stage], params: Any) -> Result:
    """Every stage in order, as the notebook runs them; the run's :class:`Result`. A stage
    that raises leaves the run log marked failed."""
    values: dict[str, Any] = {"params": params}
    run: Run | None = None  # the stages before the run opens (it, and the audit's sessions) run as they are
    try:
        for stage in stages:
            inputs = [values[a] for a in stage.arguments]
            values[stage.name] = stage.function(*inputs) if run is None else run.step(stage.name, stage.function,
                                                                                      *inputs)
            if run is None and isinstance(values.get("run"), Run):
                run = values["run"]
    except BaseException:  # an interrupt too (Run.step marks the run's own failures)
        if run is not None:
            run.log.write("failed")
        raise
    if run is None:
        raise ValueError(f"no stage of {[stage.name for stage in stages]} opened the run (a Run named 'run')")
    return Result(run.name, dict(run.tables), list(run.figures), dict(run.out.variables),
                  {k: v.as_dict() for k, v in run.log.batches.items()}, run.out.directory)
