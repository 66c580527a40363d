"""Probe framing: does the framing line move the judge's score? (the harness's e16 ablation)

On the real prefix at the late position of each session, the probes (Coding-Self) are asked
under each framing: ``framed`` (the framing line, a blank line, the probe: how every probe of
the panel is asked) and ``bare`` (the probe alone), each ``replicates`` times, and judged on
the bare probe. Only the real arm is asked: the ablation compares framings on one context,
not contexts. The harness asks 10 identical requests per cell (no temperature sent), so the
replicates differ by sampling alone.

:func:`framing_results` gives, per target, framing and probe, the mean, count and scores of
the judge, and per framing the pooled mean over all its scores (not a mean of the probe
means); :func:`framing_effect` is framed − bare of the pooled means: positive when the
framing line moves the answers towards the assistant register. The scores are those the
protocol stores (:attr:`~contextecho.echo.protocol.Protocol.stored_score`: under
``reference`` the harness's, a failed verdict's −1 included, as e16's summary keeps every int
score); under ``contextecho`` the valid verdicts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from ..echo.probes import FRAMINGS
from ..echo.protocol import Positions, Protocol
from ..paper.declared import Declared
from ..paper.formats import COUNT, MODEL, POINTS, TEXT
from ..paper import figures
from ..paper.show import Result, SavedFigure
from ..paper.tables import Column, Table
from ..paper.variables import Variable, by_target
from ..sessions.model import Session
from . import spine
from .item_ids import PROBE_IDS
from .parameter_sets import REFERENCE_JUDGE, JudgedParameters
from .parameters import NonEmpty, OneOf, count
from .protocol_record import PROTOCOL, protocol_variables
from .scores import first_judge_rows
from .selection import build
from .spine import Run, Stage
from .framing_summary import OVERALL, framing_effect, framing_results

TITLE = "Probe framing: the judge's score with and without the framing line"
#: The one arm the ablation asks.
ARMS = ("real",)
#: The harness's design (``experiments/e16_probe_framing_ablation/run.py:45-48``): its target,
#: the five Coding-Self probes, both framings, 10 replicates, the late position, 600 / 400 tokens.
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5",), "judges": (REFERENCE_JUDGE,), "n_sessions": 1,
               "n_positions": 1, "positions": "late", "probes": ("coding_self",), "framings": FRAMINGS,
               "replicates": 10, "window": 30000, "max_tokens": 600, "judge_max_tokens": 400,
               "protocol": "reference"}


@dataclass(frozen=True)
class Parameters(JudgedParameters):
    n_sessions: int = 1
    n_positions: int = 1
    positions: str = "late"
    probes: tuple[str, ...] = ("coding_self",)
    framings: tuple[str, ...] = FRAMINGS
    replicates: int = 1

    HELP = {**JudgedParameters.HELP,
            "n_sessions": "longest openly licensed sessions (0 for all)",
            "n_positions": "snapshot positions per session",
            "positions": "late (three turns before the end, e16's position), panel or deciles",
            "probes": "probe ids or batteries (e16: coding_self)",
            "framings": "the framings each probe is asked under: framed (the framing line, then the probe) "
                        "and bare (the probe alone)",
            "replicates": "samples per cell (e16: 10)"}
    RANGES = {**JudgedParameters.RANGES, "n_sessions": count(zero="all"), "n_positions": count(),
              "positions": OneOf(("late", "panel", "deciles"), "position scheme"),
              "probes": (NonEmpty(), PROBE_IDS), "framings": (NonEmpty(), OneOf(FRAMINGS, "framing")),
              "replicates": count()}


def framing_cells(protocol: Protocol, p: Parameters, sessions: Sequence[Session], positions: Positions,
                  redact: bool = True) -> list:
    """The ablation's cells: for each framing in turn, every probe asked on the real prefix
    at ``positions``, ``p.replicates`` times (``redact``: see
    :func:`~contextecho.experiments.selection.build`)."""
    return [cell for framing in p.framings
            for cell in build(protocol, p, "framing", sessions, list(p.probes), positions=positions,
                              replicates=p.replicates, redact=redact, framing=framing, arms=ARMS)]


MANUSCRIPT = PROTOCOL + Declared(
    variables=(Variable("framing_effect_{target}", POINTS), Variable("framed_mean_{target}", POINTS),
               Variable("bare_mean_{target}", POINTS), Variable("target", TEXT), Variable("judge", TEXT),
               Variable("n_replicates", COUNT), Variable("n_cells", COUNT), Variable("n_failed", COUNT)),
    tables=(
        Table("framing_results", "Judge score per framing and probe (overall: pooled over the probes)", (
            Column("Target", MODEL, "target"), Column("Framing", TEXT, "framing"),
            Column("Probe", TEXT, "probe", widest=OVERALL), Column("Mean", POINTS, "mean"),
            Column("n", COUNT, "n"))),
        Table("framing_effect", "Framing effect: pooled mean framed − bare", (
            Column("Target", MODEL, "target"), Column("Framed", POINTS, "framed_mean"),
            Column("Bare", POINTS, "bare_mean"), Column("Effect", POINTS, "effect"),
            Column("n framed", COUNT, "n_framed"), Column("n bare", COUNT, "n_bare")))))


# ---------------------------------------------------------------- the stages
def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions."""
    return spine.start_judged("framing", params, paper_scale=PAPER_SCALE, declared=MANUSCRIPT)


def grid(run: Run) -> pd.DataFrame:
    """The grid: targets × sessions × positions × framings × probes × replicates on the real
    prefix, every probe judged on its bare text."""
    p = run.params
    cells = framing_cells(run.protocol, p, run.sessions, Positions(p.positions, n=p.n_positions))
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens)


def results(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The judge's scores per framing and probe, and pooled per framing (:func:`framing_results`;
    the scores the protocol stores, its failed verdicts included where it keeps them)."""
    primary = first_judge_rows(frame[frame["item_kind"] == "probe"], run.params.judges[0])
    table = framing_results(primary, failures="in" if run.protocol.stored_score else "out")
    run.out.parquet("framing_results", table)
    return run.table("framing_results", table)


def figure(run: Run, table: pd.DataFrame) -> SavedFigure:
    """The judge's mean score per probe under each framing (the pooled ``overall`` last)."""
    shown = table.assign(probe_target=table["probe"] if len(run.params.targets) == 1 else
                         table["probe"] + " · " + table["target"].map(figures.shown)) if len(table) else \
        pd.DataFrame(columns=["probe_target", "mean", "framing"])
    return run.figure("framing", figures.bars(
        shown, x="probe_target", y="mean", hue="framing", hue_order=run.params.framings, xlabel="probe",
        ylabel="mean judge score (0–3)", reason="no probe has a score", ylim=(-1.1, 3.1)))


def effect(run: Run, table: pd.DataFrame) -> pd.DataFrame:
    """The framing effect per target: pooled mean framed − bare (:func:`framing_effect`)."""
    effects = framing_effect(table)
    columns = {"framing_effect_{target}": "effect", "framed_mean_{target}": "framed_mean",
               "bare_mean_{target}": "bare_mean"}
    estimated = effects[effects["note"] == ""] if len(effects) else effects
    run.out.per_target(tuple(columns), by_target(estimated, columns), run.params.targets,
                       "no framed and bare scores for this target")
    run.out.parquet("framing_effect", effects)
    return run.table("framing_effect", effects)


def variables(run: Run) -> pd.DataFrame:
    """The manuscript's numbers, written with the run log."""
    p = run.params
    targets = run.log.batches.get("framing:targets")
    run.out.set(target=p.targets[0], judge=p.judges[0], n_replicates=p.replicates,
                n_cells=targets.calls if targets else 0, n_failed=targets.failed if targets else 0,
                **protocol_variables(run.log.about["protocol"]))
    return spine.finish(run)


STAGES = (Stage("run", start), Stage("frame", grid), Stage("table", results), Stage("figure", figure),
          Stage("effects", effect),
          Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as a notebook runs them."""
    return spine.run_stages(STAGES, params)
