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

import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd

from ..echo.runner import run_cells
from ..echo.calibration import MAX_INVALID_RATE, MIN_KAPPA, calibrate, calibration_set
from ..echo.protocols import protocol as get_protocol
from ..engine.cache import CallCache
from ..engine.calls import Transport
from ..engine.counts import Counts
from ..engine.manifest import RunLog
from ..paper.outputs import Outputs, not_estimable
from ..paper.show import Result, SavedFigure
from ..sessions.model import Session
from .common import markdown, session_labels


@dataclass
class Run:
    """One run of one experiment, from its first stage to its last: the parameters, the
    outputs folder, the run log, the transport, the sessions (and their public labels
    S1..Sn), and the titled tables and figures its stages have shown."""

    name: str
    params: Any
    out: Outputs
    log: RunLog
    transport: Transport
    sessions: list[Session] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)

    def __repr__(self) -> str:
        sessions = ", ".join(f"{self.labels[s.session_id]} {s.session_id}" for s in self.sessions) or "none"
        return f"Run({self.name}: sessions {sessions}; outputs in {self.out.directory})"

    def batch(self, name: str, counts: Counts) -> Counts:
        """Count one batch of calls in the run log (a batch asked in parts adds up), print
        its line on stdout (the notebook) and on the process's own stderr (the console log;
        in a notebook kernel not shown twice in the notebook); the batch's total."""
        total = self.log.add(name, counts)
        line = total.line(name)
        print(line, flush=True)
        if sys.__stderr__ is not None:
            print(line, file=sys.__stderr__, flush=True)
        self.log.write()
        return total

    def table(self, stem: str, frame: pd.DataFrame, title: str | None = None, floatfmt: str = ".2f") -> pd.DataFrame:
        """Write ``frame`` as ``tables/<stem>.md`` (with ``title``: also one of the run's
        shown tables); return it, for the notebook to show."""
        self.out.table(stem, markdown(frame, floatfmt))
        if title:
            self.tables[title] = frame
        return frame

    def figure(self, stem: str, fig) -> SavedFigure:
        """Save ``fig`` as ``figures/<stem>.png`` and ``.pdf`` and close it; shown inline."""
        path = self.out.figure(stem, fig)
        plt.close(fig)
        self.figures.append(path)
        return SavedFigure(path)


def start(name: str, params: Any, *, models: Sequence[str], protocol: Mapping[str, Any] | None = None,
          sessions: Callable[[], Sequence[Session]] | None = None) -> Run:
    """Open ``paper/_generated/<name>`` (or ``params.output_dir``) afresh, check that every
    one of ``models`` can be called (route, key) before any call, select the ``sessions``
    and label them S1..Sn, and write the run log (status incomplete until :func:`finish`)."""
    out = Outputs.open(name, getattr(params, "output_dir", "") or None)
    log = RunLog(out.manifest, name, params, set(models), {"protocol": dict(protocol)} if protocol else {})
    transport = params.transport(log.models)
    chosen = list(sessions()) if sessions else []
    run = Run(name, params, out, log, transport, chosen, session_labels(chosen))
    log.write()
    return run


def run_grid(run: Run, cells: Sequence, *, judges: Sequence[str], judge_max_tokens: int = 64,
             protocol: str = "contextecho", name: str | None = None,
             resume_judges: Sequence[str] = (), redact: bool = True) -> pd.DataFrame:
    """Run ``cells`` through the shared cache and return the tidy frame (one row per cell and
    judge, :func:`~contextecho.echo.run_cells`; sessions relabelled S1..Sn), saved as
    ``results/cells.parquet``; its batches (targets, judges, distributions) are counted.

    Under ``contextecho`` the judge is greedy with at most ``judge_max_tokens`` new tokens
    (the rubric asks for one line, ``Score: <n>``); under ``reference`` it samples at the
    provider's default temperature, as the harness does. The judges' score distributions
    are read too (``expected_score``).

    ``resume_judges`` resumes the grid from what earlier runs stored, as the harness's
    runners skip the cells on disk: read from the call cache alone (nothing is sent), a
    cell whose result one of these judges stored (``self``: its target; the protocol says
    which rows hold a result, :meth:`~contextecho.echo.protocol.Protocol.holds_result`)
    keeps that row, the first judge's, with ``resumed`` true: it is neither asked nor
    judged again. Every other cell is asked, a stored permanent error included (the
    harness redoes a lost cell), and judged by ``judges``."""
    proto = get_protocol(protocol)
    name = name or run.name
    resuming = bool(resume_judges) and bool(cells)
    with CallCache() as cache:
        calling = {"cache": cache, "transport": run.transport, "protocol": protocol, "distributions": True,
                   "redact": redact,
                   "judge_params": proto.judge_params(judge_max_tokens)}
        todo = list(cells)
        if resuming:
            stored = run_cells(cells, judges=list(resume_judges), name=f"{name}:resumed", stored_only=True,
                               **calling)
            stored.attrs.pop("batches")
            kept = stored[stored.apply(proto.holds_result, axis=1).astype(bool)].drop_duplicates("key")
            run.batch(f"{name}:resumed", Counts(calls=len(kept), cached=len(kept)))
            todo = [c for c in cells if c.key not in set(kept["key"])]
        frame = run_cells(todo, judges=list(judges), name=name, retry_errors=True if resuming else None,
                          **calling) if todo or not resuming else stored.iloc[0:0]
    for batch, counts in frame.attrs.pop("batches", {}).items():
        if counts.calls:
            run.batch(batch, counts)
    if resuming:  # the kept rows and the new ones, in the grid's order
        order = {c.key: i for i, c in enumerate(cells)}
        frame = pd.concat([kept.assign(resumed=True), frame.assign(resumed=False)], ignore_index=True)
        frame = frame.iloc[frame["key"].map(order).argsort(kind="stable")].reset_index(drop=True)
    frame["session"] = frame["session"].map(run.labels)
    run.out.parquet("cells", frame)
    return frame


def calibrate_judges(run: Run) -> pd.DataFrame:
    """Every judge of the run scores the calibration set under the run's protocol, prompt,
    parser and judge budget (:mod:`contextecho.echo.calibration`), before any target is
    asked: one row per judge (n, agreement, kappa, Spearman, invalid rate, verdict), written
    as the ``calibration`` table with the first judge's numbers as manuscript variables
    (``judge_kappa``, ``judge_calibrated``, ``judge_status``, ...). With
    ``require_calibrated`` a judge below the threshold stops the run here."""
    p = run.params
    items = calibration_set(p.protocol)
    rows = []
    with CallCache() as cache:
        for judge in p.judge_models():
            result = calibrate(judge, items, protocol=p.protocol, max_tokens=p.judge_max_tokens, cache=cache,
                               transport=run.transport, name=f"{run.name}:calibration")
            run.batch(f"{run.name}:calibration", result.counts)
            a = result.agreement
            rows.append({"judge": judge, "n": a.n, "invalid_pct": 100 * a.invalid_rate, "exact": a.exact,
                         "within_one": a.within_one, "kappa_quadratic": a.kappa_quadratic, "spearman": a.spearman,
                         "verdict": result.verdict, "labels_sha256": result.labels_sha256[:12]})
    table = pd.DataFrame(rows)
    run.out.parquet("calibration", table)
    first = rows[0]
    kappa = first["kappa_quadratic"]
    n_valid = round(first["n"] * (1 - first["invalid_pct"] / 100))
    why = not_estimable(f"{n_valid} of the judge's {first['n']} verdicts on the labelled responses are valid"
                        + (", all of one score" if n_valid else ""))
    run.out.set(judge_calibration_n=first["n"], judge_kappa=why if pd.isna(kappa) else round(kappa, 2),
                judge_exact_pct=round(100 * first["exact"], 1) if pd.notna(first["exact"]) else why,
                judge_invalid_pct=round(first["invalid_pct"], 1), judge_calibrated=first["verdict"],
                judge_status=f"judge {first['judge']}: {first['verdict']}, quadratic kappa "
                             f"{why if pd.isna(kappa) else f'{kappa:.2f}'} on {first['n']} labelled responses",
                calibration_min_kappa=MIN_KAPPA, calibration_max_invalid_pct=round(100 * MAX_INVALID_RATE))
    failing = [r["judge"] for r in rows if r["verdict"] != "calibrated"]
    if failing and getattr(p, "require_calibrated", False):
        raise JudgeNotCalibrated(f"judge(s) {', '.join(failing)} failed calibration (quadratic kappa >= {MIN_KAPPA} "
                                 f"and invalid <= {100 * MAX_INVALID_RATE:.0f}% needed); no target was asked. "
                                 "Run with require_calibrated false to measure anyway, beside the calibration.")
    return run.table("calibration", table, "Judge calibration against labelled responses", floatfmt=".2f")


class JudgeNotCalibrated(RuntimeError):
    """``require_calibrated``: a judge failed its calibration; the run stopped before any target call."""


def finish(run: Run) -> pd.DataFrame:
    """Write the manuscript's variables (``variables.yml``) and the run log
    (``manifest.json``, status complete); the variables, one row each."""
    run.out.write_variables()
    run.log.write("complete")
    return pd.DataFrame({"value": pd.Series(run.out.variables, dtype=object)}).rename_axis(run.name)


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

    def code(self, module: str = "experiment") -> str:
        return f"{self.name} = {module}.{self.function.__name__}({', '.join(self.arguments)})\n{self.name}"

    def text(self) -> str:
        return inspect.getdoc(self.function) or ""


def run_stages(stages: Sequence[Stage], params: Any) -> Result:
    """Every stage in order, as the notebook runs them; the run's :class:`Result`. A stage
    that raises leaves the run log marked failed."""
    values: dict[str, Any] = {"params": params}
    try:
        for stage in stages:
            values[stage.name] = stage.function(*(values[a] for a in stage.arguments))
    except BaseException:
        if isinstance(values.get("run"), Run):
            values["run"].log.write("failed")
        raise
    run: Run = values["run"]
    return Result(run.name, dict(run.tables), list(run.figures), dict(run.out.variables),
                  {k: v.as_dict() for k, v in run.log.batches.items()}, run.out.directory)
