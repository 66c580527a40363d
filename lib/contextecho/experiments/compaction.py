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

from ..paper.outputs import Outputs
from .parameters import Interval, NonEmpty, OneOf, count
from ..paper.show import Result
from ..sessions import positions as scheme_positions
from ..stats import COMPACTION_MARGIN, StatsInputError, equivalence_bootstrap, tost_paired
from . import common

TITLE = "Compaction: drift gap before and after each context compaction (TOST)"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5",), "judges": ("anthropic/claude-sonnet-4-5",),
               "n_sessions": 0, "max_compactions": 0, "window": 30000, "max_tokens": 600,
               "judge_max_tokens": 400, "replicates": 3, "n_resamples": 10_000, "seed": 42,
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
                                      n_resamples=p.n_resamples, seed=p.seed)
            row.update(boot_ci_low=b.ci_low, boot_ci_high=b.ci_high, boot_equivalent=b.equivalent)
        except StatsInputError as exc:
            row.update(boot_ci_low=np.nan, boot_ci_high=np.nan, boot_equivalent=False,
                       note=(row["note"] + f" bootstrap not estimable: {exc}").strip())
        rows.append(row)
    return rows


def run(p: Parameters) -> Result:
    out = Outputs.open("compaction", p.output_dir or None)
    out.models.update(p.targets + p.judges)
    if p.protocol == "reference" and set(p.event_types) != {"compaction"}:
        raise ValueError("the reference protocol anchors on compactions only: "
                         "set event_types=compaction or protocol=contextecho")
    out.protocol = common.protocol_record(p)
    transport = p.transport(out.models)
    sessions = common.select_sessions(p.n_sessions, events=p.event_types, protocol=p.protocol)
    labels = common.session_labels(sessions)
    spec = {s.session_id: event_positions(s, p.max_compactions, p.event_types) for s in sessions}
    cells = common.build(p, "compaction", sessions, p.probes, positions=spec,
                         reference_positions="compaction", limit=2 * p.max_compactions,
                         replicates=p.replicates)
    frame = common.run(cells, p.judges, "compaction", judge_max_tokens=p.judge_max_tokens,
                       protocol=p.protocol, transport=transport)
    frame["session"] = frame["session"].map(labels)
    counts = out.count("compaction", frame)
    common.print_counts("compaction", counts)
    out.parquet("cells", frame)
    primary = frame[frame["judge_model"] == p.judges[0]]

    events = {name: event_changes(primary, column) for name, column in common.SCORES.items()}
    wide = events[p.score]
    out.parquet("events", wide)
    complete = wide.dropna(subset=["change"])
    rows = [{"score": name, **row} for name, table in events.items()
            for row in equivalence_rows(table.dropna(subset=["change"]), p)]
    summary = pd.DataFrame(rows)
    out.parquet("summary", summary)
    out.table("events", common.markdown(wide))
    out.table("summary", common.markdown(summary))

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
    figures = [out.figure("change", fig)]
    plt.close(fig)

    out.set(target=p.targets[0], n_sessions=len(sessions), n_events=int(len(wide)),
            n_events_complete=int(len(complete)), margin=p.margin, n_cells=counts["cells"],
            n_failed=counts["failed"], n_cached=counts["cached"],
            n_verdicts_invalid=counts.get("verdicts_invalid", 0), window_chars=p.window,
            n_probes=int(primary["item"].nunique()), **common.protocol_variables(out.protocol),
            spread_note=("no event has valid verdicts in both arms at both checkpoints" if complete.empty else
                         "every event's change is identical, so the test is degenerate (zero variance)"
                         if complete["change"].nunique() <= 1 else
                         f"the changes range from {complete['change'].min():.2f} to {complete['change'].max():.2f}"))
    for name in common.SCORES:
        chosen = summary[summary["score"] == name] if len(summary) else summary
        if not len(chosen):
            continue
        first = chosen.iloc[0]
        values = {"pre_gap": round(float(first["pre_gap"]), 2), "post_gap": round(float(first["post_gap"]), 2),
                  "change": round(float(first["change"]), 2)}
        if pd.notna(first["change_sd"]):
            values["change_sd"] = round(float(first["change_sd"]), 3)
        if pd.notna(first["tost_p"]):
            values.update(tost_ci=f"[{first['tost_ci_low']:.2f}, {first['tost_ci_high']:.2f}]",
                          tost_p=round(float(first["tost_p"]), 3),
                          equivalent="equivalent" if first["equivalent"] else "not shown equivalent")
        out.set(**{f"{k}_{name}": v for k, v in values.items()})
        if name == p.score:
            out.set(**{k: v for k, v in values.items() if k != "change_sd"})
    distributions, distribution_vars = common.distribution_report(frame[frame["item_kind"] == "probe"], p.judges[0])
    if len(distributions):
        out.parquet("judge_distributions", distributions)
        out.table("judge_distributions", common.markdown(distributions))
    out.set(score=p.score, **distribution_vars)
    out.default("n/a", "pre_gap", "post_gap", "change", "tost_ci", "tost_p", "equivalent",
                *(f"{k}_{n}" for n in common.SCORES
                  for k in ("pre_gap", "post_gap", "change", "change_sd", "tost_ci", "tost_p", "equivalent")))
    out.finish(p)
    tables = {"Compaction events (gap before, after, change)": wide, "Equivalence (TOST)": summary}
    return Result("compaction", tables, figures, out.variables, out.counts, out.directory)
