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

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .parameters import Interval, NonEmpty, OneOf, count
from ..echo.protocols import protocol as get_protocol
from ..engine.counts import Counts
from ..paper.show import Result, SavedFigure
from ..sessions.positions import positions as scheme_positions
from ..stats.equivalence import COMPACTION_MARGIN, equivalence_bootstrap, tost_paired
from ..stats.errors import StatsInputError
from . import common, spine
from .common import REFERENCE_JUDGE
from .spine import Run, Stage

TITLE = "Compaction: drift gap before and after each context compaction (TOST)"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5",), "judges": (REFERENCE_JUDGE,),
               "n_sessions": 0, "max_compactions": 0, "window": 30000, "max_tokens": 600,
               "judge_max_tokens": 400, "replicates": 3, "n_resamples": 10_000, "resample_seed": 42,
               "protocol": "reference"}


@dataclass(frozen=True)
class Parameters(common.JudgedParameters):
    n_sessions: int = 2
    max_compactions: int = 1
    probes: tuple[str, ...] = ("coding_self",)
    replicates: int = 1
    margin: float = COMPACTION_MARGIN
    event_types: tuple[str, ...] = ("compaction",)

    HELP = {**common.JudgedParameters.HELP,
            "n_sessions": "sessions with at least one event of event_types, longest first (0 for all)",
            "max_compactions": "events of each type per session, first ones (0 for all)",
            "margin": "equivalence margin in judge points",
            "event_types": "compaction and/or microcompaction (old tool results dropped, the rest kept), "
                           "the reference protocol takes compaction only"}
    RANGES = {**common.JudgedParameters.RANGES, "n_sessions": count(zero="all"),
              "max_compactions": count(zero="all"), "probes": (NonEmpty(), common.PROBE_IDS),
              "replicates": count(), "margin": Interval(0, 3, low_open=True),
              "event_types": (NonEmpty(), OneOf(lambda: EVENT_TYPES, "event type"))}


EVENT_TYPES = {"compaction": "c", "microcompaction": "m"}  # event type -> position label letter


def event_positions(session, max_compactions: int, event_types=("compaction",)):
    """Pre/post positions around the first ``max_compactions`` events of each type."""
    unknown = sorted(set(event_types) - set(EVENT_TYPES))
    if unknown:
        raise ValueError(f"unknown event type(s) {', '.join(unknown)}; choose from {', '.join(EVENT_TYPES)}")
    chosen = ()
    for kind in event_types:
        chosen += scheme_positions(session, kind)
    if max_compactions > 0:
        keep = {f"{EVENT_TYPES[kind]}{j}_{phase}" for kind in event_types
                for j in range(1, max_compactions + 1) for phase in ("pre", "post")}
        chosen = tuple(p for p in chosen if p.label in keep)
    return tuple(sorted(chosen))


def event_changes(primary: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per event: the drift gap (on judge score ``column``) before and after, and the change."""
    units = common.unit_gaps(primary, score=column)
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




# ---------------------------------------------------------------- the stages (one notebook cell each)
SUMMARY_KEYS = ("pre_gap", "post_gap", "change", "change_sd", "tost_ci", "tost_p", "equivalent")


def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions with at least one event of ``event_types``."""
    get_protocol(params.protocol).check_events(params.event_types)
    return spine.start("compaction", params, models=params.targets + params.judges,
                       protocol=common.protocol_record(params, paper_scale=PAPER_SCALE),
                       sessions=lambda: common.select_sessions(params.n_sessions, events=params.event_types,
                                                               protocol=params.protocol))


def grid(run: Run) -> pd.DataFrame:
    """The grid: a snapshot just before and just after each event, real and filler arms,
    the probes, judged; the counts of its batches are printed and logged."""
    p = run.params
    spec = lambda s: event_positions(s, p.max_compactions, p.event_types)  # noqa: E731 (our positions, if asked)
    cells = common.build(p, "compaction", run.sessions, p.probes, positions=spec,
                         reference_positions="compaction", limit=2 * p.max_compactions,
                         replicates=p.replicates)
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens, protocol=p.protocol)


def events(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """Per event: the drift gap before and after it, and the change post − pre (under the
    chosen judge score)."""
    primary = frame[frame["judge_model"] == run.params.judges[0]]
    wide = event_changes(primary, common.score_column(run.params.score))
    run.out.parquet("events", wide)
    return run.table("events", wide, "Compaction events (gap before, after, change)")


def equivalence(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """Per target and event type, under both judge scores: the mean change, its paired TOST
    against ±``margin`` and a session-clustered bootstrap interval."""
    p = run.params
    primary = frame[frame["judge_model"] == p.judges[0]]
    rows = [{"score": name, **row} for name, column in common.SCORES.items()
            for row in equivalence_rows(event_changes(primary, column).dropna(subset=["change"]), p)]
    summary = pd.DataFrame(rows)
    run.out.parquet("summary", summary)
    reported = sorted(p.event_types)[0]  # the manuscript's numbers: compactions, where asked
    why = {**{t: "no compaction event of this target has valid verdicts in both arms before and after it"
              for t in p.targets}, **common.reasons(summary)}
    for name in common.SCORES:
        values = {}
        chosen = summary[(summary["score"] == name) & (summary["event_type"] == reported)] \
            if len(summary) else summary
        for _, row in chosen.iterrows():
            own = {"pre_gap": round(float(row["pre_gap"]), 2), "post_gap": round(float(row["post_gap"]), 2),
                   "change": round(float(row["change"]), 2)}
            if pd.notna(row["change_sd"]):
                own["change_sd"] = round(float(row["change_sd"]), 3)
            if pd.notna(row["tost_p"]):
                own.update(tost_ci=f"[{row['tost_ci_low']:.2f}, {row['tost_ci_high']:.2f}]",
                           tost_p=round(float(row["tost_p"]), 3),
                           equivalent="equivalent" if row["equivalent"] else "not shown equivalent")
            values[row["target"]] = own
        run.out.set(**common.per_target({t: {f"{k}_{name}": v for k, v in own.items()} for t, own in values.items()},
                                        p.targets, [f"{k}_{name}" for k in SUMMARY_KEYS], why)[0])
        if name == p.score:
            run.out.set(**common.per_target({t: {k: v for k, v in own.items() if k != "change_sd"}
                                             for t, own in values.items()},
                                            p.targets, [k for k in SUMMARY_KEYS if k != "change_sd"], why)[0])
    return run.table("summary", summary, "Equivalence (TOST)")


def change(run: Run, events: pd.DataFrame) -> SavedFigure:
    """The drift gap before and after each event (grey) and their mean (black)."""
    complete = events.dropna(subset=["change"])
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    for (target, session, event), g in complete.groupby(["target", "session", "event"]):
        ax.plot([0, 1], [g["pre"].iloc[0], g["post"].iloc[0]], marker="o", color="grey", alpha=0.7)
    if len(complete):
        ax.plot([0, 1], [complete["pre"].mean(), complete["post"].mean()], marker="s", color="black",
                lw=2.5, label="mean")
        ax.legend()
    ax.axhline(0, color="grey", lw=1, ls="--")
    ax.set_xticks([0, 1], ["before compaction", "after compaction"])
    ax.set_xlim(-0.3, 1.3)
    ax.set_ylabel("drift gap (filler − real)")
    return run.figure("change", fig)


def judge_distributions(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """How each judge's score distributions were read (ok, invalid, error, discrete)."""
    distributions, values = common.distribution_report(frame[frame["item_kind"] == "probe"], run.params.judges[0])
    run.out.set(**values)
    if len(distributions):
        run.out.parquet("judge_distributions", distributions)
        run.out.table("judge_distributions", common.markdown(distributions))
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
                n_probes=int(primary["item"].nunique()), **common.protocol_variables(run.log.about["protocol"]),
                spread_note=("no event has valid verdicts in both arms at both checkpoints" if complete.empty else
                             "every event's change is identical, so the test is degenerate (zero variance)"
                             if complete["change"].nunique() <= 1 else
                             f"the changes range from {complete['change'].min():.2f} to "
                             f"{complete['change'].max():.2f}"),
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
