"""Compaction: does an in-session context compaction reset or amplify drift?

For every compaction j of every selected session we snapshot the last step before it
(``c{j}_pre``) and the first step after it (``c{j}_post``), ask the probes under the real
and filler arms, and take the drift gap (filler − real) at each. The change is post − pre
per compaction event; a paired TOST asks whether its mean lies within ±``margin`` judge
points (the paper's pre-specified ±0.08), with a session-clustered bootstrap CI as well.

``event_types`` can add microcompactions (Claude Code 2.1.x drops old tool results and
keeps the rest; ``m{j}_pre`` / ``m{j}_post``) as their own event type: each type gets
its own rows in the events and summary tables. A snapshot after a microcompaction leaves
out the tool results it dropped, as the model saw it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .parameters import Interval, NonEmpty, OneOf, count
from ..echo.protocol import Positions
from ..engine.counts import Counts
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COUNT, FLAG, MODEL, P_VALUE, POINTS, TEXT, interval
from ..paper.tables import Column, Table
from ..paper.variables import Variable, by_target, reasons
from ..paper.show import Result, SavedFigure
from ..sessions.positions import EVENT_TYPES
from ..stats.equivalence import COMPACTION_MARGIN, equivalence_bootstrap, tost_paired
from ..stats.errors import StatsInputError
from ..stats.units import unit_gaps
from . import spine
from .parameter_sets import JudgedParameters, REFERENCE_JUDGE
from .distributions import DISTRIBUTIONS, distribution_report
from .item_ids import PROBE_IDS
from .protocol_record import PROTOCOL, protocol_variables
from .scores import SCORES, score_column
from .selection import build
from .spine import CALIBRATION, Run, Stage

TITLE = "Compaction: drift gap before and after each context compaction (TOST)"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5",), "judges": (REFERENCE_JUDGE,),
               "n_sessions": 0, "max_compactions": 0, "window": 30000, "max_tokens": 600,
               "judge_max_tokens": 400, "replicates": 3, "n_resamples": 10_000, "resample_seed": 42,
               "protocol": "reference"}


@dataclass(frozen=True)
class Parameters(JudgedParameters):
    n_sessions: int = 2
    max_compactions: int = 1
    probes: tuple[str, ...] = ("coding_self",)
    replicates: int = 1
    margin: float = COMPACTION_MARGIN
    event_types: tuple[str, ...] = ("compaction",)

    HELP = {**JudgedParameters.HELP,
            "n_sessions": "sessions with at least one event of event_types, longest first (0 for all)",
            "max_compactions": "events of each type per session, first ones (0 for all)",
            "margin": "equivalence margin in judge points",
            "event_types": "compaction and/or microcompaction (old tool results dropped, the rest kept)"}
    PROTOCOL_HELP = {**JudgedParameters.PROTOCOL_HELP,
                     "event_types": {"reference": "compaction only: the harness anchors on compactions "
                                                  "(microcompaction under contextecho)"}}
    RANGES = {**JudgedParameters.RANGES, "n_sessions": count(zero="all"),
              "max_compactions": count(zero="all"), "probes": (NonEmpty(), PROBE_IDS),
              "replicates": count(), "margin": Interval(0, 3, low_open=True),
              "event_types": (NonEmpty(), OneOf(lambda: EVENT_TYPES, "event type"))}


def event_changes(primary: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per event: the drift gap (on judge score ``column``) before and after, and the change."""
    units = unit_gaps(primary, score=column)
    units["event"] = units["position"].str.extract(r"^([a-z]\d+)_")[0]
    units["event_type"] = units["event"].str[0].map({v: k for k, v in EVENT_TYPES.items()})
    units["phase"] = units["position"].str.extract(r"_(pre|post)$")[0]
    wide = units.set_index(["target", "event_type", "session", "event", "phase"])["gap"].unstack("phase")
    wide = wide.reindex(columns=["pre", "post"]).reset_index()
    wide.columns.name = None
    wide["change"] = wide["post"] - wide["pre"]
    return wide


def equivalence_rows(complete: pd.DataFrame, p: Parameters) -> list[dict]:
    """Per target and event type: the mean change, its paired TOST and bootstrap CI."""
    rows = []
    for (target, event_type), g in complete.groupby(["target", "event_type"]):
        row = {"target": target, "event_type": event_type, "events": len(g), "pre_gap": g["pre"].mean(),
               "post_gap": g["post"].mean(), "change": g["change"].mean(), "change_sd": g["change"].std()}
        try:
            t = tost_paired(g["change"].to_numpy(), margin=p.margin)
            row.update(tost_ci_low=t.ci_low, tost_ci_high=t.ci_high, tost_p=t.p_value,
                       equivalent=t.equivalent, note="")
        except StatsInputError as exc:
            row.update(tost_ci_low=np.nan, tost_ci_high=np.nan, tost_p=np.nan, equivalent=False,
                       note=f"TOST not estimable: {exc}")
        try:
            b = equivalence_bootstrap(g["change"].to_numpy(), g["session"].to_numpy(), margin=p.margin,
                                      n_resamples=p.n_resamples, seed=p.resample_seed)
            row.update(boot_ci_low=b.ci_low, boot_ci_high=b.ci_high, boot_equivalent=b.equivalent)
        except StatsInputError as exc:
            row.update(boot_ci_low=np.nan, boot_ci_high=np.nan, boot_equivalent=False,
                       note=(row["note"] + f" bootstrap not estimable: {exc}").strip())
        rows.append(row)
    return rows




# ---------------------------------------------------------------- what the manuscript reads
#: The per-target variables of the reported event type under each judge score, and their columns.
BY_SCORE = {"pre_gap_{score}_{target}": "pre_gap", "post_gap_{score}_{target}": "post_gap",
            "change_{score}_{target}": "change", "change_sd_{score}_{target}": "change_sd",
            "tost_ci_{score}_{target}": ("tost_ci_low", "tost_ci_high"), "tost_p_{score}_{target}": "tost_p",
            "equivalent_{score}_{target}": "verdict"}
#: The same under the run's chosen score, unsuffixed by it (the SD of the change only per score).
CHOSEN = {"pre_gap_{target}": "pre_gap", "post_gap_{target}": "post_gap", "change_{target}": "change",
          "tost_ci_{target}": ("tost_ci_low", "tost_ci_high"), "tost_p_{target}": "tost_p",
          "equivalent_{target}": "verdict"}
_KINDS = {"pre_gap": POINTS, "post_gap": POINTS, "change": POINTS, "change_sd": POINTS, "tost_ci": interval(POINTS),
          "tost_p": P_VALUE, "equivalent": TEXT}
MANUSCRIPT = CALIBRATION + PROTOCOL + DISTRIBUTIONS + Declared(
    variables=(
        *(Variable(template, _KINDS[template.split("_{")[0]], score=SCORES) for template in BY_SCORE),
        *(Variable(template, _KINDS[template.split("_{")[0]]) for template in CHOSEN),
        Variable("target", TEXT), Variable("targets", TEXT), Variable("n_sessions", COUNT), Variable("n_events", COUNT),
        Variable("n_events_complete", COUNT), Variable("margin", POINTS), Variable("n_cells", COUNT),
        Variable("n_failed", COUNT), Variable("n_cached", COUNT), Variable("n_verdicts_invalid", COUNT),
        Variable("window_chars", COUNT), Variable("n_probes", COUNT), Variable("spread_note", TEXT),
        Variable("power_note", TEXT),
        Variable("score", TEXT)),
    tables=(
        Table("events", "Compaction events (gap before, after, change)", (
            Column("Target", MODEL, "target"), Column("Event type", TEXT, "event_type", widest="microcompaction"),
            Column("Session", TEXT, "session", widest="S12"), Column("Event", TEXT, "event", widest="m12"),
            Column("Gap before", POINTS, "pre"), Column("Gap after", POINTS, "post"),
            Column("Change", POINTS, "change")), index=4),
        Table("summary", "Equivalence (TOST)", (
            Column("Target", MODEL, "target"), Column("Score", TEXT, "score", widest="expected"),
            Column("Event type", TEXT, "event_type", widest="microcompaction"), Column("Events", COUNT, "events"),
            Column("Gap before", POINTS, "pre_gap"), Column("Gap after", POINTS, "post_gap"),
            Column("Change", POINTS, "change"), Column("SD of change", POINTS, "change_sd"),
            Column("TOST 90% CI", interval(POINTS), ("tost_ci_low", "tost_ci_high")),
            Column("TOST p", P_VALUE, "tost_p"), Column("Equivalent (TOST)", FLAG, "equivalent"),
            Column("Bootstrap 90% CI", interval(POINTS), ("boot_ci_low", "boot_ci_high")),
            Column("Equivalent (bootstrap)", FLAG, "boot_equivalent")), index=2),
    ))


# ---------------------------------------------------------------- the stages (one notebook cell each)


def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions with at least one event of ``event_types``."""
    return spine.start_judged("compaction", params, paper_scale=PAPER_SCALE, declared=MANUSCRIPT,
                              events=params.event_types)


def grid(run: Run) -> pd.DataFrame:
    """The grid: a snapshot just before and just after each event, real and filler arms,
    the probes, judged; the counts of its batches are printed and logged."""
    p = run.params
    cells = build(run.protocol, p, "compaction", run.sessions, p.probes,
                  positions=Positions("compaction", n=p.max_compactions, events=p.event_types), replicates=p.replicates)
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens)


def events(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """Per event: the drift gap before and after it, and the change post − pre (under the
    chosen judge score)."""
    primary = frame[frame["judge_model"] == run.params.judges[0]]
    wide = event_changes(primary, score_column(run.params.score))
    run.out.parquet("events", wide)
    return run.table("events", wide)


def equivalence(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """Per target and event type, under both judge scores: the mean change, its paired TOST
    against ±``margin`` and a session-clustered bootstrap interval."""
    p = run.params
    primary = frame[frame["judge_model"] == p.judges[0]]
    rows = [{"score": name, **row} for name, column in SCORES.items()
            for row in equivalence_rows(event_changes(primary, column).dropna(subset=["change"]), p)]
    summary = pd.DataFrame(rows)
    if len(summary):  # the TOST's verdict in words, where the test could be made
        summary["verdict"] = [("equivalent" if e else "not shown equivalent") if pd.notna(t) else None
                              for e, t in zip(summary["equivalent"], summary["tost_p"])]
    run.out.parquet("summary", summary)
    reported = sorted(p.event_types)[0]  # the manuscript's numbers: compactions, where asked
    why = {**{t: "no compaction event of this target has valid verdicts in both arms before and after it"
              for t in p.targets}, **reasons(summary)}
    for name in SCORES:
        chosen = summary[(summary["score"] == name) & (summary["event_type"] == reported)] \
            if len(summary) else summary
        run.out.per_target(tuple(BY_SCORE), by_target(chosen, BY_SCORE), p.targets, why, score=name)
        if name == p.score:
            run.out.per_target(tuple(CHOSEN), by_target(chosen, CHOSEN), p.targets, why)
            own = chosen[chosen["target"] == p.targets[0]] if len(chosen) else chosen
            run.out.set(power_note=power_note(own.iloc[0] if len(own) else None, p.margin))
    return run.table("summary", summary)


def power_note(row: pd.Series | None, margin: float) -> str:
    """What the TOST of the first target (its ``row`` of the summary) could show: where its
    90% interval is wider than the whole equivalence region (±``margin``), no mean change of
    these events could have been shown equivalent."""
    if row is None or pd.isna(row.get("tost_ci_low")):
        return "the equivalence test could not be made, so it shows nothing either way"
    width, region = row["tost_ci_high"] - row["tost_ci_low"], 2 * margin
    if width > region:
        return (f"the 90% interval is {POINTS.text(width)} points wide against an equivalence region of "
                f"{POINTS.text(region)}, so with {int(row['events'])} event(s) no mean change could have been shown "
                "equivalent: the test has no power here, and the notebook's paper-scale parameters use every "
                "compaction in the corpus")
    return (f"the 90% interval ({POINTS.text(width)} points wide) fits in the equivalence region of "
            f"{POINTS.text(region)}, so the test could show equivalence with these {int(row['events'])} event(s)")


def change(run: Run, events: pd.DataFrame) -> SavedFigure:
    """The drift gap before and after each event (grey) and their mean (black)."""
    complete = events.dropna(subset=["change"]) if len(events) else events
    units = complete.assign(unit=complete["target"] + " · " + complete["session"] + " · " + complete["event"]) \
        if len(complete) else pd.DataFrame()
    mean = complete[["pre", "post"]].mean().to_frame().T if len(complete) else None
    return run.figure("change", figures.before_after(
        units, mean, before="pre", after="post", unit="unit", labels=("before compaction", "after compaction"),
        ylabel="drift gap (filler − real)",
        reason="no event has valid verdicts in both arms before and after it"))


def judge_distributions(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """How each judge's score distributions were read (ok, invalid, error, discrete)."""
    distributions, values = distribution_report(frame[frame["item_kind"] == "probe"], run.params.judges[0])
    run.out.set(**values)
    if len(distributions):
        run.out.parquet("judge_distributions", distributions)
        run.table("judge_distributions", distributions)
    return distributions


def variables(run: Run, frame: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers (per-target ones keyed ``<key>_<target>``, the first
    target's also unsuffixed), written with the run log."""
    p = run.params
    primary = frame[frame["judge_model"] == p.judges[0]]
    complete = events.dropna(subset=["change"])
    targets = run.log.batches.get("compaction:targets", Counts())
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), n_sessions=len(run.sessions),
                n_events=int(len(events)), n_events_complete=int(len(complete)), margin=p.margin,
                n_cells=targets.calls, n_failed=targets.failed, n_cached=targets.cached,
                n_verdicts_invalid=int((frame["verdict_status"] == "invalid").sum()), window_chars=p.window,
                n_probes=int(primary["item"].nunique()), **protocol_variables(run.log.about["protocol"]),
                spread_note=("no event has valid verdicts in both arms at both checkpoints" if complete.empty else
                             "every event's change is identical, so the test is degenerate (zero variance)"
                             if complete["change"].nunique() <= 1 else
                             f"the changes range from {POINTS.text(complete['change'].min())} to "
                             f"{POINTS.text(complete['change'].max())}"),
                score=p.score)
    return spine.finish(run)


def calibration(run: Run) -> pd.DataFrame:
    """Before any target is asked, each judge scores responses whose scores are known, under
    this run's protocol, prompt and parser: how far its verdicts can be trusted."""
    return spine.calibrate_judges(run)


STAGES = (Stage("run", start), Stage("calibration", calibration), Stage("frame", grid), Stage("events", events), Stage("summary", equivalence),
          Stage("figure", change), Stage("distributions", judge_distributions), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
