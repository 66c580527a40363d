"""Controls: the harness's negative controls N01-N05, our control arms, and e03's context-source design

* **Negative controls** (the harness's ``experiments/e15_probes_at_crosscompaction/
  run_negative_controls.py``): five factual questions with no first-person register
  (:mod:`contextecho.echo.reference.negative_controls`), asked framed on the real prefix and
  its filler at the late position and judged on the identity rubric. No harness analysis
  reads their cells; their gap filler − real is this notebook's, and a capable model should
  show none.
* **Our control arms** (not the harness's; :mod:`contextecho.echo.arms`,
  :mod:`contextecho.echo.reference.control_arms`): the same questions on ``shuffled_real``
  (the real prefix's turns shuffled within each role), ``unrelated_session`` (another chosen
  session's prefix, length-matched; needs two sessions or more) and ``scratch`` (no context),
  each against the real arm: arm − real. The seed's shuffled, unrelated and content-free
  controls are run with these arms.
* **e03 A1's context-source conditions** (``experiments/e03_same_target_ablation/
  run_a1_context_source.py``): its five conditions (:mod:`contextecho.echo.reference.
  context_source`) and their sizes, built from a transcript in the harness's GPT-5 record
  shape. The runner imports a module the release does not have, so it cannot run from the
  release and no request or score is reported from it: the table gives the conditions' sizes
  only. The harness's GPT-5 transcript is not released either: ``gpt5_transcript`` names
  one; without it the longest openly licensed Codex CLI session is read in that shape (our
  documented stand-in, :func:`~contextecho.echo.reference.continuation.codex_records`);
  without either the table says so.

Every gap is the panel's estimator (:func:`~.scores.gap_row`, the drift gap of
:func:`contextecho.stats.drift.drift_gap`: the mean over (session, position) units of the
arm's mean minus the real mean) with the cell bootstrap within each unit and arm (``cluster``
none: a late position per session is one unit, too few to resample positions), on the judge's
valid verdicts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..echo.arms import ARMS
from ..echo.protocol import Positions
from ..echo.reference import negative_controls
from ..echo.reference.context_source import A1_CONDITIONS, a1_design
from ..echo.reference.continuation import codex_records
from ..echo.reference.gpt5_source import read_gpt5_transcript
from ..echo.reference.transcript import read_rows
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COUNT, MODEL, NOT_ESTIMABLE, POINTS, TEXT, estimate, interval
from ..paper.sentences import joined, reason_of
from ..paper.show import Result, SavedFigure
from ..paper.tables import Column, Table
from ..paper.variables import Variable, by_target, reasons
from ..sessions.selection import corpus_rows, session_file
from . import spine
from .item_ids import PROBE_IDS
from .parameter_sets import REFERENCE_JUDGE, JudgedParameters
from .parameters import Includes, NonEmpty, OneOf, count
from .protocol_record import PROTOCOL, protocol_variables
from .scores import first_judge_rows, gap_row, score_column
from .selection import build
from .spine import Run, Stage

TITLE = "Controls: negative-control gaps, our control arms, and e03's context-source design"
#: The arms whose gap against real is the harness's negative-control design; the others are ours.
HARNESS_ARM = "filler"
OUR_ARMS = ("shuffled_real", "unrelated_session", "scratch")
#: What each of our arms holds, as the manuscript says it.
ARM_WORDS = {"shuffled_real": "the real prefix's turns shuffled within each role",
             "unrelated_session": "another chosen session's prefix, length-matched", "scratch": "no context"}
#: The harness's negative-control run (``run_negative_controls.py``): its target, the five
#: questions on real and filler at the late position, 400 target tokens; beside them our three
#: arms (``unrelated_session`` needs the two sessions).
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5",), "judges": (REFERENCE_JUDGE,), "n_sessions": 2,
               "n_positions": 1, "positions": "late", "items": (negative_controls.ITEM_SET,),
               "arms": ("real", "filler", *OUR_ARMS), "window": 30000, "max_tokens": negative_controls.MAX_TOKENS,
               "judge_max_tokens": 400, "n_resamples": 10_000, "protocol": "reference"}


@dataclass(frozen=True)
class Parameters(JudgedParameters):
    n_sessions: int = 1
    n_positions: int = 1
    positions: str = "late"
    items: tuple[str, ...] = (negative_controls.ITEM_SET,)
    arms: tuple[str, ...] = ("real", "filler", "shuffled_real", "scratch")
    replicates: int = 1
    gpt5_transcript: str = ""

    HELP = {**JudgedParameters.HELP,
            "n_sessions": "longest openly licensed sessions (0 for all; unrelated_session needs 2 or more)",
            "n_positions": "snapshot positions per session",
            "positions": "late (three turns before the end, the negative-control runner's), panel or deciles",
            "items": "probe ids or batteries (the negative controls: negative_controls, or N01 ... N05)",
            "arms": "real and filler (the harness's negative-control design) and any of our controls: "
                    "shuffled_real, unrelated_session (needs n_sessions of 2 or more), scratch",
            "replicates": "samples per cell",
            "gpt5_transcript": "a transcript in the harness's GPT-5 record shape for e03's conditions (default: "
                               "the longest openly licensed Codex CLI session in that shape)"}
    RANGES = {**JudgedParameters.RANGES, "n_sessions": count(zero="all"), "n_positions": count(),
              "positions": OneOf(("late", "panel", "deciles"), "position scheme"),
              "items": (NonEmpty(), PROBE_IDS), "replicates": count(),
              "arms": (Includes("real", "every gap's baseline"), OneOf(ARMS.names, "arm"))}


# ---------------------------------------------------------------- the statistics
def control_gaps(primary: pd.DataFrame, arms: Sequence[str], *, score: str = "score", **boot) -> pd.DataFrame:
    """Per target and arm of ``arms`` but real (in that order): arm − real by the panel's
    drift gap (:func:`~.scores.gap_row`, the arm standing where filler stands, so that
    ``arm="filler"`` is the drift gap itself), cell bootstrap within each unit and arm;
    ``source``: ``harness`` for filler (the negative-control design), ``ours`` for the
    others. ``boot``: ``n_resamples`` and ``seed``."""
    rows = []
    for target, g in primary.groupby("target", sort=False):
        for arm in (a for a in arms if a != "real"):
            pair = g[g["arm"].isin(("real", arm))].assign(
                arm=lambda d: d["arm"].where(d["arm"] == "real", "filler"))
            row = gap_row(pair, score=score, cluster=None, **boot)
            row["note"] = row["note"].replace(repr(HARNESS_ARM), repr(arm))  # the arm by its own name
            rows.append({"target": target, "arm": arm, "source": "harness" if arm == HARNESS_ARM else "ours",
                         **row, "arm_mean": row["filler_mean"]})
    columns = ["target", "arm", "source", "estimate", "ci_low", "ci_high", "real_mean", "arm_mean", "n_clusters",
               "n_invalid", "units_dropped", "note"]
    return pd.DataFrame(rows, columns=columns)


def item_means(primary: pd.DataFrame, *, score: str = "score") -> pd.DataFrame:
    """Per target and item (in the frame's order): each arm's mean valid score, one column per arm."""
    if not len(primary):
        return pd.DataFrame(columns=["target", "item"])
    means = primary.pivot_table(index=["target", "item"], columns="arm", values=score, aggfunc="mean", sort=False,
                                dropna=False)
    return means.reset_index().rename_axis(columns=None)


def context_source_table(records: Sequence[dict] | None, source: str) -> pd.DataFrame:
    """e03 A1's five conditions on ``records`` (a transcript in the GPT-5 record shape): label,
    prior messages and size (the runner's printed size, its first message's length), with the
    ``source`` named; without records one row per condition saying why none is sized."""
    if records is None:
        return pd.DataFrame([{"condition": c, "messages": np.nan, "chars": np.nan, "source": "",
                              "note": f"not estimable: {source}"} for c in A1_CONDITIONS])
    _, conditions = a1_design(records)
    return pd.DataFrame([{"condition": c.label, "messages": len(c.messages), "chars": c.chars, "source": source,
                          "note": ""} for c in conditions])


# ---------------------------------------------------------------- what the manuscript reads
_GAP_COLUMNS = (Column("Gap [95% CI]", estimate(POINTS), ("estimate", "ci_low", "ci_high")),
                Column("Real mean", POINTS, "real_mean"), Column("Arm mean", POINTS, "arm_mean"),
                Column("Invalid", COUNT, "n_invalid"))
MANUSCRIPT = PROTOCOL + Declared(
    variables=(Variable("negative_gap_{target}", POINTS), Variable("negative_gap_ci_{target}", interval(POINTS)),
               Variable("control_gap_{arm}_{target}", POINTS, arm=OUR_ARMS),
               Variable("control_gap_ci_{arm}_{target}", interval(POINTS), arm=OUR_ARMS),
               Variable("target", TEXT), Variable("judge", TEXT), Variable("arms", TEXT), Variable("arms_note", TEXT), Variable("arm_gaps", TEXT),
               Variable("negative_gap_sentence", TEXT),
               Variable("n_sessions", COUNT), Variable("n_items", COUNT), Variable("n_cells", COUNT),
               Variable("n_failed", COUNT), Variable("a1_source", TEXT)),
    tables=(
        Table("negative_control_gaps", "Negative controls N01–N05: gap filler − real (the harness's design)", (
            Column("Target", MODEL, "target"), *_GAP_COLUMNS)),
        Table("control_gaps", "Our control arms on N01–N05: gap arm − real (ours, not the harness's)", (
            Column("Target", MODEL, "target"), Column("Arm", TEXT, "arm", widest="unrelated_session"),
            *_GAP_COLUMNS)),
        Table("negative_control_items", "Mean judge score per negative control and arm", (
            Column("Target", MODEL, "target"), Column("Item", TEXT, "item"),
            Column("Real", POINTS, "real"), Column("Filler", POINTS, "filler"),
            Column("Shuffled real", POINTS, "shuffled_real", optional=True),
            Column("Unrelated session", POINTS, "unrelated_session", optional=True),
            Column("Scratch", POINTS, "scratch", optional=True))),
        Table("context_source", "e03 A1 context-source conditions and their sizes (no request run)", (
            Column("Condition", TEXT, "condition", widest="recent3K_earlier"),
            Column("Prior messages", COUNT, "messages"), Column("Characters", COUNT, "chars")))))


# ---------------------------------------------------------------- the stages
def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions."""
    return spine.start_judged("controls", params, paper_scale=PAPER_SCALE, declared=MANUSCRIPT)


def grid(run: Run) -> pd.DataFrame:
    """The grid: targets × sessions × positions × arms × items × replicates, every item judged
    (the panel's cells: :func:`~.selection.build` with the run's ``arms``)."""
    p = run.params
    cells = build(run.protocol, p, "controls", run.sessions, list(p.items),
                  positions=Positions(p.positions, n=p.n_positions), replicates=p.replicates, arms=p.arms)
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens)


def primary(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The primary judge's verdicts on the items."""
    return first_judge_rows(frame[frame["item_kind"] == "probe"], run.params.judges[0])


def gaps(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """Per target, each arm − real (:func:`control_gaps`): filler is the negative-control gap
    (a capable model shows none), the others our controls'."""
    p = run.params
    table = control_gaps(primary, p.arms, score=score_column(p.score), n_resamples=p.n_resamples,
                         seed=p.resample_seed)
    run.out.parquet("control_gaps", table)
    harness = table[table["source"] == "harness"]
    columns = {"negative_gap_{target}": "estimate", "negative_gap_ci_{target}": ("ci_low", "ci_high")}
    run.out.per_target(tuple(columns), by_target(harness[harness["note"] == ""], columns), p.targets,
                       reasons(harness) if len(harness) else "the filler arm was not asked")
    ours = {"control_gap_{arm}_{target}": "estimate", "control_gap_ci_{arm}_{target}": ("ci_low", "ci_high")}
    for arm in OUR_ARMS:
        own = table[table["arm"] == arm]
        why = reasons(own) if len(own) else "the run's arms parameter did not ask this arm"
        run.out.per_target(tuple(ours), by_target(own[own["note"] == ""], ours), p.targets, why, arm=arm)
    run.table("negative_control_gaps", harness)
    run.table("control_gaps", table[table["source"] == "ours"])
    return table


def forest(run: Run, gaps: pd.DataFrame) -> SavedFigure:
    """Every arm − real with its interval, per target (filler: the negative-control gap)."""
    return run.figure("controls", figures.forest(
        gaps, label="arm", hue="target" if len(run.params.targets) > 1 else None,
        xlabel="gap arm − real on N01–N05 (0–3 rubric points)", reason="no control arm was asked beside real"))


def items(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """Each arm's mean judge score per item."""
    table = item_means(primary, score=score_column(run.params.score))
    run.out.parquet("negative_control_items", table)
    return run.table("negative_control_items", table)


def context_source(run: Run) -> pd.DataFrame:
    """e03 A1's five conditions and their sizes, from a transcript in the GPT-5 record shape
    (:func:`context_source_table`; no request is built: the runner cannot run from the release)."""
    p = run.params
    if p.gpt5_transcript:
        records, source = read_gpt5_transcript(p.gpt5_transcript), f"the transcript {p.gpt5_transcript}"
    else:
        rows = corpus_rows(formats=("codex_cli",))
        records = codex_records(read_rows(session_file(rows[0]["file"]))) if rows else None
        source = (f"our stand-in, the Codex CLI session {rows[0]['file']} (not the harness's GPT-5 transcript, "
                  "which the release does not hold)" if rows else
                  "the harness's GPT-5 transcript is not released and the corpus has no Codex CLI session")
    table = context_source_table(records, source)
    run.out.set(a1_source=source)
    run.out.parquet("context_source", table)
    return run.table("context_source", table)


def variables(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers, written with the run log."""
    p = run.params
    targets = run.log.batches.get("controls:targets")
    written = run.out.variables
    gaps, missing = [], {}
    for arm in OUR_ARMS:
        gap, ci = written[f"control_gap_{arm}"], written[f"control_gap_ci_{arm}"]
        if reason_of(gap) is not None:
            missing.setdefault(reason_of(gap), []).append(arm)
        else:
            gaps.append(f"{arm} ({ARM_WORDS[arm]}) {gap}, 95% CI {ci}" if reason_of(ci) is None else
                        f"{arm} ({ARM_WORDS[arm]}) {gap}, without an interval: {reason_of(ci)}")
    gap, ci = written["negative_gap"], written["negative_gap_ci"]
    run.out.set(negative_gap_sentence=(f"the negative-control gap is {NOT_ESTIMABLE}: {reason_of(gap)}"
                                       if reason_of(gap) is not None else
                                       f"the negative-control gap is {gap}, 95% CI {ci}" if reason_of(ci) is None else
                                       f"the negative-control gap is {gap}, without an interval: {reason_of(ci)}"))
    run.out.set(arm_gaps="; ".join(gaps + [f"for {joined(arms)} ({'; '.join(ARM_WORDS[a] for a in arms)}) the gap is "
                                           f"not estimable: {reason}" for reason, arms in missing.items()]))
    run.out.set(arms_note=f"This build asks the arms {', '.join(p.arms)}" + (
        "; the unrelated_session arm needs two sessions, which doubles the calls, so it is asked at the paper's "
        "scale only." if "unrelated_session" not in p.arms else "."))
    run.out.set(target=p.targets[0], judge=p.judges[0], arms=", ".join(p.arms), n_sessions=len(run.sessions),
                n_items=int(primary["item"].nunique()) if len(primary) else 0,
                n_cells=targets.calls if targets else 0, n_failed=targets.failed if targets else 0,
                **protocol_variables(run.log.about["protocol"]))
    return spine.finish(run)


STAGES = (Stage("run", start), Stage("frame", grid), Stage("primary", primary), Stage("gaps", gaps),
          Stage("forest", forest), Stage("items", items), Stage("context_source", context_source),
          Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as a notebook runs them."""
    return spine.run_stages(STAGES, params)
