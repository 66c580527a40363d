"""Onset: how early does drift appear? An early-step sweep before the first compaction.

Each selected session is snapshotted at agent steps ``steps`` (1, 5, 25, 100 by default:
the harness's first four; under the default ``reference`` protocol its turn 100 is the
panel's start position, so those cells are the panel's, answered from the cache) that fall
before its first compaction (or its end), the probes are asked under the real and filler
arms, and the drift gap at each step is estimated per target, pooled over sessions
(bootstrap over sessions; a session whose snapshot lacks a valid verdict in one arm is left
out and counted). Under the ``reference`` protocol the
snapshots are the harness's turns (1, 5, 25, 100, 250, 500, 1000, 1500 at the paper's
scale), clipped to the session. Beside our interval, the harness's own onset interval
(unclustered, :func:`harness_curve`). ``replicates`` samples each cell more than once (the
harness's e17 ``N_REPLICATES``, default 1: the seed's n = 25 re-run of a step is the five
Coding-Self probes × 5).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .parameters import NonEmpty, count
from ..engine.counts import Counts
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COUNT, MODEL, POINTS, TEXT, estimate
from ..paper.tables import Column, Table
from ..paper.variables import Variable, reasons
from ..paper.show import Result, SavedFigure
from ..echo.protocol import Positions
from ..echo.reference.released import ONSET_CELLS
from ..stats.errors import StatsInputError
from ..stats.drift import drift_gap
from ..stats.units import complete_units
from . import spine
from .parameter_sets import REFERENCE_JUDGE, ReleasedParameters
from .item_ids import PROBE_IDS
from .protocol_record import PROTOCOL, protocol_variables
from .scores import score_column
from .selection import build
from .spine import CALIBRATION, Run, Stage
from .harness_forests import harness_curve

TITLE = "Onset: drift gap over the first agent steps, before the first compaction"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o", "anthropic/claude-haiku-4-5"),
               "judges": (REFERENCE_JUDGE,), "n_sessions": 0,
               "steps": (1, 5, 25, 100, 250, 500, 1000, 1500), "window": 30000,
               "max_tokens": 600, "judge_max_tokens": 400, "n_resamples": 10_000, "resample_seed": 42,
               "protocol": "reference"}


@dataclass(frozen=True)
class Parameters(ReleasedParameters):
    n_sessions: int = 2
    steps: tuple[int, ...] = (1, 5, 25, 100)
    probes: tuple[str, ...] = ("coding_self",)
    replicates: int = 1
    RELEASE_FOLDERS = (ONSET_CELLS,)

    HELP = {**ReleasedParameters.HELP,
            "steps": "snapshot positions",
            "replicates": "samples per cell (the harness's e17 N_REPLICATES, default 1)",
            "n_sessions": "longest openly licensed sessions (0 for all)"}
    PROTOCOL_HELP = {**ReleasedParameters.PROTOCOL_HELP,
                     "steps": {"reference": "harness turns, each asked (one past the session's end renders its "
                                            "last turn under its own number)",
                               "contextecho": "agent steps, kept when before the session's first compaction"}}
    RANGES = {**ReleasedParameters.RANGES, "n_sessions": count(zero="all"),
              "steps": (NonEmpty(), count()), "probes": (NonEmpty(), PROBE_IDS), "replicates": count()}


# ---------------------------------------------------------------- what the manuscript reads
#: Per target, the first and the last early step with an estimate, and the gap there.
ENDS = ("first_step_{target}", "first_gap_{target}", "last_step_{target}", "last_gap_{target}")
MANUSCRIPT = CALIBRATION + PROTOCOL + Declared(
    variables=(
        Variable("first_step_{target}", COUNT), Variable("first_gap_{target}", POINTS),
        Variable("last_step_{target}", COUNT), Variable("last_gap_{target}", POINTS),
        Variable("target", TEXT), Variable("targets", TEXT), Variable("score", TEXT), Variable("n_sessions", COUNT),
        Variable("n_steps", COUNT), Variable("steps", TEXT), Variable("n_cells", COUNT), Variable("n_failed", COUNT),
        Variable("n_cached", COUNT), Variable("n_verdicts_invalid", COUNT), Variable("window_chars", COUNT)),
    tables=(
        Table("curve", "Drift gap per early step", (
            Column("Target", MODEL, "target"), Column("Step", COUNT, "step"),
            Column("Gap Δ [95% CI]", estimate(POINTS), ("gap", "ci_low", "ci_high")),
            Column("Real mean", POINTS, "real_mean"), Column("Filler mean", POINTS, "filler_mean"),
            Column("Sessions", COUNT, "sessions"), Column("Invalid", COUNT, "n_invalid"),
            Column("Units dropped", COUNT, "units_dropped"),
            Column("Harness gap [95% CI]", estimate(POINTS), ("harness_gap", "harness_lo", "harness_hi"),
                   optional=True),
            Column("Harness n", COUNT, "harness_n", optional=True),
            Column("Harness gap, −1s in", POINTS, "harness_gap_failures_in", optional=True)),
              index=2),
    ))


# ---------------------------------------------------------------- the stages (one notebook cell each)
def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions."""
    return spine.start_judged("onset", params, paper_scale=PAPER_SCALE, declared=MANUSCRIPT)


def grid(run: Run) -> pd.DataFrame:
    """The grid: each session snapshotted at the early steps, real and filler arms, the
    probes, judged; the counts of its batches are printed and logged."""
    p = run.params
    cells = build(run.protocol, p, "onset", run.sessions, p.probes, positions=Positions("onset", steps=p.steps),
                  replicates=p.replicates)
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens)


def curve(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The drift gap per target at each early step, pooled over sessions (a session whose
    snapshot lacks a valid verdict in one arm is left out and counted), beside the
    harness's unclustered onset interval on the valid verdicts and (under ``reference``)
    the harness figure's gap with its −1 verdicts averaged in (``harness_gap_failures_in``)."""
    p = run.params
    primary = frame[frame["judge_model"] == p.judges[0]]
    column = score_column(p.score)
    rows = []
    for (target, step), g in primary.groupby(["target", "step"]):
        row = {"target": target, "step": int(step), "sessions": g["session"].nunique()}
        data, dropped = complete_units(g, column)
        row["units_dropped"] = dropped
        try:
            r = drift_gap(data, cluster="session", unit=("session", "position"), score=column,
                          n_resamples=p.n_resamples, seed=p.resample_seed)
            row.update(gap=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high, real_mean=r.real_mean,
                       filler_mean=r.filler_mean, n_invalid=r.n_invalid, note="")
        except StatsInputError as exc:
            row.update(gap=np.nan, ci_low=np.nan, ci_high=np.nan, real_mean=np.nan,
                       filler_mean=np.nan, n_invalid=np.nan, note=f"not estimable: {exc}")
        rows.append(row)
    table = pd.DataFrame(rows)
    if len(table):
        table = table.merge(harness_curve(primary, n_resamples=p.n_resamples, seed=p.resample_seed),
                            on=["target", "step"], how="left")
        if run.protocol.stored_score is not None:  # the harness figure's own treatment: its −1s averaged in
            failures_in = harness_curve(primary, n_resamples=p.n_resamples, seed=p.resample_seed, failures="in")
            table = table.merge(failures_in[["target", "step", "harness_gap"]].rename(
                columns={"harness_gap": "harness_gap_failures_in"}), on=["target", "step"], how="left")
    run.out.parquet("curve", table)
    values = {}
    for target, g in table.dropna(subset=["gap"]).groupby("target") if len(table) else ():
        first, last = g.iloc[0], g.iloc[-1]
        values[target] = dict(zip(ENDS, (first["step"], first["gap"], last["step"], last["gap"])))
    run.out.per_target(ENDS, values, p.targets, reasons(table))
    return run.table("curve", table)


def onset_figure(run: Run, curve: pd.DataFrame) -> SavedFigure:
    """The drift gap against the agent step of the snapshot, with 95% intervals (a step
    without an estimate says why)."""
    return run.figure("onset", figures.trajectory(
        curve, x="step", y="gap", hue="target", interval=("ci_low", "ci_high"), levels=(0,), logx=True,
        xlabel="agent step or harness turn of the snapshot (log scale)", ylabel="drift gap (filler − real)",
        reason="no step has a session with valid verdicts in both arms"))


def variables(run: Run, frame: pd.DataFrame, curve: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers (per-target ones keyed ``<key>_<target>``, the first
    target's also unsuffixed), written with the run log."""
    p = run.params
    targets = run.log.batches.get("onset:targets", Counts())
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), score=p.score, n_sessions=len(run.sessions),
                n_steps=int(curve["step"].nunique()),
                steps=", ".join(str(s) for s in sorted(curve["step"].unique())),
                n_cells=targets.calls, n_failed=targets.failed, n_cached=targets.cached,
                n_verdicts_invalid=int((frame["verdict_status"] == "invalid").sum()), window_chars=p.window,
                **protocol_variables(run.log.about["protocol"]))
    return spine.finish(run)


def calibration(run: Run) -> pd.DataFrame:
    """Before any target is asked, each judge scores responses whose scores are known, under
    this run's protocol, prompt and parser: how far its verdicts can be trusted."""
    return spine.calibrate_judges(run)


STAGES = (Stage("run", start), Stage("calibration", calibration), Stage("frame", grid), Stage("curve", curve), Stage("figure", onset_figure),
          Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
