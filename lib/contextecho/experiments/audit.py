"""The audit: a deployer's own sessions and model, from transcripts to a drift report.

The panel's real-vs-filler probes on the headline battery and the S2 stressor, at the
start, before and after each compaction and at the deciles of each session; the A-anchor
at the last step; the judge's calibration first. Everything runs on the spine the notebooks
run on (the same cells, call cache and run log: a rerun is answered from the cache, an
interrupted one resumes) and through their building blocks: :func:`.selection.build` (the
protocol's cells), :func:`.spine.run_grid`, :func:`.spine.calibrate_judges`,
:func:`.scores.gap_row`, and the A-anchor experiment's measurement (:mod:`.intervention_effects`:
its cells, effects and forest), which writes into the run's ``a_anchor/`` folder.

Sizes (``size``, :data:`SIZE`; the README's "Your own sessions" says what each asks):
``quick``, the authors' intake check of a donated session (e18 ``--quick``, our
:mod:`.session_validation`) at the start and around the first compaction (without one: the
middle and the last decile), one S2 wording, the A-anchor on the same probes; ``full``, the
panel grid at every candidate position (:func:`candidates`). ``n_positions`` overrides the
number (evenly along the candidates, the quick choice first); the budgets default to the
protocol's own or, where a model of the run is the embedded one, to the embedded build's.

A file that cannot be audited is named with its reason (a format the protocol does not read,
a file that does not parse, a session without an agent step). The A-anchor is our own
intervention (a chat exchange before the probe, :mod:`contextecho.echo.interventions`) and runs
under our protocol whatever the run's; the harness's own anchors (its e04 family, inserted after
its one-block prefix) are the ``anchor_family`` notebook's. What leaves
the machine is redacted as in every experiment; :func:`redaction` counts the placeholders,
by class, in the transcripts as read and in the prefixes sent.
"""
from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..echo.protocol import Protocol
from ..echo.protocols import protocol
from ..engine.llm import LOCAL_MODEL, is_in_process
from ..engine.paths import data_dir
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import (COEFFICIENT, COUNT, MODEL, PERCENT, POINTS, POINTS_PP, TEXT, Decimals,
                             estimate)
from ..paper.report import Section, Shown
from ..paper.outputs import Outputs
from ..paper.show import Result, SavedFigure
from ..paper.tables import Column, Table
from ..sessions.redaction.text import PLACEHOLDER
from ..stats.errors import StatsInputError
from ..stats.judge_free import compliance_gap, verbosity_ratio
from ..stats.units import complete_units
from . import intervention_effects, spine
from .intervention_effects import MANUSCRIPT as INTERVENTIONS
from .parameter_sets import EMBEDDED_STRESSOR_MAX_TOKENS, JudgedParameters, ServingParameters
from .item_ids import CONTRACT_IDS
from .protocol_record import protocol_record
from .scores import gap_row, headline_rows, score_column
from .selection import build
from .session_positions import (POSITIONS, SIZE_ITEMS, SIZES, SessionRunParameters, Sessions, asked_positions,
                                choose_sessions, positions_frame)
from .parameters import Interval
from .spine import Run, Stage

NAME = "audit"
TITLE = "Audit: drift of a model on your own sessions"
#: What each size asks (module doc); ``positions`` 0: every candidate position.
SIZE = {size: {**SIZE_ITEMS[size], "positions": POSITIONS[size],
               "contracts": ("S2#01",) if size == "quick" else intervention_effects.Parameters.contracts}
        for size in SIZES}
#: The embedded build's budgets (the notebooks' defaults): its 8k context, two cores.
EMBEDDED = {"window": JudgedParameters.window, "max_tokens": JudgedParameters.max_tokens, "stressor_max_tokens": EMBEDDED_STRESSOR_MAX_TOKENS,
            "judge_max_tokens": JudgedParameters.judge_max_tokens}
#: The protocol setting each budget defaults to.
BUDGETS = {"window": "window_chars", "max_tokens": "probe_max_tokens",
           "stressor_max_tokens": "stressor_max_tokens", "judge_max_tokens": "judge_max_tokens"}
#: Where the A-anchor experiment's stages write, inside the run's folder.
ANCHOR_FOLDER = "a_anchor"
_AUTO = "the protocol's own, or the embedded build's where a model of the run is the embedded one"


@dataclass(frozen=True)
class Parameters(SessionRunParameters):
    contracts: tuple[str, ...] = ()
    window: int = 0
    max_tokens: int = 0
    stressor_max_tokens: int = 0
    judge_max_tokens: int = 0

    HELP = {**SessionRunParameters.HELP,
            "sessions": "a folder of Claude Code / Codex CLI transcripts, or one file (default: data/own_sessions, "
                        "where import-sessions writes your own, redacted)",
            "n_sessions": "the longest sessions audited (0: every one found)",
            "contracts": "the A-anchor's contracts (empty: the size's)",
            "window": f"prefix characters (0: {_AUTO})",
            "max_tokens": f"the target's budget for a probe's answer (0: {_AUTO})",
            "stressor_max_tokens": f"the target's budget for an S2 answer (0: {_AUTO})",
            "judge_max_tokens": f"the judge's budget (0: {_AUTO})"}
    RANGES = {**SessionRunParameters.RANGES, "contracts": CONTRACT_IDS,
              **{name: Interval(1, zero="auto") for name in BUDGETS}}

    @property
    def source(self) -> Path:
        """The sessions' folder or file."""
        return Path(self.sessions).expanduser() if self.sessions else data_dir() / "own_sessions"

    @property
    def embedded(self) -> bool:
        """Whether a model of the run is the embedded one (its budgets apply)."""
        return LOCAL_MODEL in self.targets + self.judge_models()

    def resolved(self, protocol: Protocol) -> "Parameters":
        """These parameters with every budget left at 0 set under the run's ``protocol`` (module doc)."""
        own = protocol.settings()
        budgets = {name: EMBEDDED[name] if self.embedded else int(own[setting])
                   for name, setting in BUDGETS.items() if getattr(self, name) == 0}
        return dataclasses.replace(self, **budgets)


# ------------------------------------------------------------------------------ positions
def positions(run: Run, chosen: Sessions) -> pd.DataFrame:
    """The positions asked of each session (module doc: start, pre/post each compaction,
    deciles), with the candidates they were chosen from; ``results/positions.parquet``."""
    p = run.params
    frame = positions_frame(chosen.read, run.protocol, run.labels, p.size, p.n_positions)
    run.out.parquet("positions", frame)
    for (label, sid), g in frame[frame["asked"]].groupby(["session", "session_id"], sort=True):
        print(f"{run.name}: {label} ({sid}): " + ", ".join(f"{r.position} at {r.step}" for r in g.itertuples()),
              flush=True)
    run.table("positions", frame[frame["asked"]])
    return frame


# ---------------------------------------------------------------------------- the stages
def start(params: Parameters, chosen: Sessions) -> Run:
    """Open the outputs (``runs/audit/<time>`` from the command line), check that the target
    and the judge can be called before any call, label the sessions S1..Sn and list them
    with the files left out (``results/sessions.parquet``)."""
    p = params.resolved(chosen.protocol)
    run = spine.start(NAME, p, models=p.targets + p.judge_models(), protocol=chosen.protocol,
                      record=protocol_record(chosen.protocol, p, p.stressor_max_tokens), sessions=lambda: chosen.read,
                      declared=MANUSCRIPT)
    rows = [{"session": run.labels[s.session_id], "file": chosen.shown(f), "format": o.format,
             "agent_steps": o.n_agent_steps, "compactions": len(o.compactions), "note": ""}
            for f, s, o in zip(chosen.files, chosen.read, chosen.ours)]
    rows += [{"session": "—", "file": f, "format": "", "agent_steps": np.nan, "compactions": np.nan,
              "note": f"not audited: {why}"} for f, why in chosen.skipped]
    run.out.parquet("sessions", pd.DataFrame(rows))
    run.table("sessions", pd.DataFrame(rows))
    return run


def calibration(run: Run) -> pd.DataFrame:
    """Before any target is asked, the judge scores responses whose scores are known, under
    this run's protocol, prompt and parser: how far its verdicts can be trusted."""
    return spine.calibrate_judges(run)


def cells(run: Run, positions: pd.DataFrame) -> list:
    """The panel's cells: target × session × position × arm (real, filler) × probe and S2
    wording, under the run's protocol (redacted for a model that is not in-process)."""
    p = run.params
    return build(run.protocol, p, NAME, run.sessions, p.items, positions=asked_positions(positions),
                 stressor_max_tokens=p.stressor_max_tokens)


def grid(run: Run, cells: list) -> pd.DataFrame:
    """Every cell asked through the cache, every probe's answer judged; the counts of its
    batches printed and logged; ``results/cells.parquet``."""
    p = run.params
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens,
                          name=f"{NAME}:panel")


def headline(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The cells the drift gaps read: the headline battery's probes judged by the judge."""
    return headline_rows(frame, run.params.judges[0], run.params.headline)


def drift_gaps(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """The drift gap Δ = filler − real (judge points) with its 95% interval: at each
    position of each session (cells resampled within arms), per session (positions
    resampled) and over the sessions (sessions, then positions, resampled);
    ``results/drift_gaps.parquet``."""
    p = run.params
    column = score_column(p.score)
    boot = {"n_resamples": p.n_resamples, "seed": p.resample_seed, "score": column}
    rows = []
    for target, by_target in primary.groupby("target", sort=False):
        for session, g in by_target.groupby("session", sort=True):
            for (position, step), at in g.groupby(["position", "step"], sort=False):
                rows.append({"target": target, "session": session, "position": position, "step": step,
                             "level": "position", **gap_row(at, cluster=None, **boot)})
            rows.append({"target": target, "session": session, "position": "all positions", "step": np.nan,
                         "level": "session", **gap_row(g, cluster="position", **boot)})
        several = by_target["session"].nunique() > 1
        rows.append({"target": target, "session": "all sessions", "position": "all positions", "step": np.nan,
                     "level": "all", **gap_row(by_target, cluster=("session", "position") if several
                                                     else "position", **boot)})
    gaps = pd.DataFrame(rows)
    if len(gaps):
        gaps = gaps.sort_values(["target", "level", "session", "step"], key=_level_order, kind="stable")
    run.out.parquet("drift_gaps", gaps)
    return run.table("drift_gaps", gaps)


def _level_order(column: pd.Series) -> pd.Series:
    return column.map({"position": 0, "session": 1, "all": 2}) if column.name == "level" else column


def gap_figure(run: Run, gaps: pd.DataFrame) -> SavedFigure:
    """The drift gap at each position of each session and per session, with 95% intervals."""
    shown = gaps.assign(row=gaps["session"] + " · " + gaps["position"].astype(str)) if len(gaps) else gaps
    several = len(gaps) and gaps["target"].nunique() > 1
    return run.figure("drift_gaps", figures.forest(
        shown, label="row", hue="target" if several else None,
        xlabel="drift gap Δ = filler − real (0–3 rubric points; > 0: the session lowers the score)",
        reason="no probe of the headline battery was judged"))


def trajectory(run: Run, primary: pd.DataFrame) -> SavedFigure:
    """Each arm's mean judge score at each position of each session, with the 95% interval of
    the position's drift gap beside it in the table; ``results/trajectory.parquet``."""
    column = score_column(run.params.score)
    traj = (primary.groupby(["target", "session", "position", "step", "arm"])[column]
            .agg(mean="mean", n="count").reset_index()) if len(primary) else \
        pd.DataFrame(columns=["target", "session", "position", "step", "arm", "mean", "n"])
    run.out.parquet("trajectory", traj)
    several = len(traj) and traj["target"].nunique() > 1
    return run.figure("trajectory", figures.trajectory(
        traj.assign(line=traj["arm"] if not several else traj["target"] + " · " + traj["arm"]),
        x="step", y="mean", hue="line", panel="session", xlabel=f"position ({run.protocol.step_unit})",
        ylabel="mean judge score (0–3)", ylim=(-0.1, 3.1), reason="no probe was judged"))


def s2(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The S2 output contract, judge-free: the compliance of each arm (%), the compliance gap
    filler − real (pp) and the verbosity ratio real / filler (median over pairs), with 95%
    intervals, per session and over the sessions; ``results/s2.parquet``."""
    p = run.params
    stressed = frame[frame["item_kind"] == "stressor"]
    boot = {"n_resamples": p.n_resamples, "seed": p.resample_seed}
    rows = []
    for target, by_target in stressed.groupby("target", sort=False):
        groups = [(s, g, "position") for s, g in by_target.groupby("session", sort=True)]
        groups.append(("all sessions", by_target, ("session", "position") if by_target["session"].nunique() > 1
                       else "position"))
        for session, g, cluster in groups:
            rows.append({"target": target, "session": session, **_s2_row(g, cluster, boot)})
    table = pd.DataFrame(rows)
    run.out.parquet("s2", table)
    return run.table("s2", table)


def _s2_row(g: pd.DataFrame, cluster, boot: dict) -> dict:
    g = g.assign(compliant=g["score"])
    row = {"real_rate_pct": 100 * g.loc[g["arm"] == "real", "compliant"].mean(),
           "filler_rate_pct": 100 * g.loc[g["arm"] == "filler", "compliant"].mean(), "n_cells": len(g)}
    notes = []
    data, _ = complete_units(g, "compliant")
    try:
        gap = compliance_gap(data, cluster=cluster, **boot)
        row.update(gap_pp=gap.estimate, ci_low=gap.ci_low, ci_high=gap.ci_high)
    except StatsInputError as exc:
        row.update(gap_pp=np.nan, ci_low=np.nan, ci_high=np.nan)
        notes.append(f"compliance gap not estimable: {exc}")
    lengths = g.assign(length=g["response_chars"].where(g["response_chars"] > 0), probe=g["item"])
    try:
        ratio = verbosity_ratio(lengths, cluster=cluster if isinstance(cluster, str) else cluster[0], **boot)
        row.update(verbosity_ratio=ratio.estimate, verbosity_ci_low=ratio.ci_low, verbosity_ci_high=ratio.ci_high)
    except StatsInputError as exc:
        row.update(verbosity_ratio=np.nan, verbosity_ci_low=np.nan, verbosity_ci_high=np.nan)
        notes.append(f"verbosity ratio not estimable: {exc}")
    return {**row, "note": "; ".join(notes)}


def anchor(run: Run, chosen: Sessions) -> Run:
    """The A-anchor experiment's run inside this one: its parameters (none and the A-anchor,
    the audit's probes and contracts, our protocol), the sessions read our way, its outputs
    in ``a_anchor/``; its batches counted in this run's log."""
    p = run.params
    ours = protocol(intervention_effects.Parameters.protocol)  # the A-anchor's run, under our protocol (module doc)
    params = intervention_effects.Parameters(
        targets=p.targets, judges=p.judge_models()[:1], window=p.window, max_tokens=p.max_tokens,
        temperature=p.temperature, n_resamples=p.n_resamples, resample_seed=p.resample_seed,
        score=p.score, **{f.name: getattr(p, f.name) for f in dataclasses.fields(ServingParameters)},
        interventions=("none", "a_anchor"), probes=p.probes or SIZE[p.size]["probes"],
        contracts=p.contracts or SIZE[p.size]["contracts"], distances=(0,),
        judge_max_tokens=intervention_effects.Parameters.judge_max_tokens if p.embedded else
        int(ours.settings()["judge_max_tokens"]),
        output_dir=str(run.out.directory / ANCHOR_FOLDER))
    out = Outputs.open("a_anchor", params.output_dir, INTERVENTIONS)
    return dataclasses.replace(run, name=f"{NAME}:a_anchor", params=params, protocol=ours, out=out,
                               sessions=list(chosen.ours))


def anchor_effects(anchor: Run) -> pd.DataFrame:
    """The A-anchor at the last step of each session: its cells asked and judged, its effect
    on the probes (judge points) and on the contracts (pp) against no intervention, with 95%
    intervals, and its forest (:mod:`.a_anchor`'s own stages)."""
    frame = intervention_effects.grid(anchor)
    effects = intervention_effects.effects(anchor, frame)
    contracts = intervention_effects.contract_effects(anchor, frame)
    intervention_effects.forest(anchor, effects, contracts)
    return effects


def redaction(run: Run, chosen: Sessions, cells: list) -> pd.DataFrame:
    """What was redacted, by class and count, never the strings: the placeholders each
    transcript holds as read (what ``import-sessions``, or its donor, replaced) and those in
    the prefixes sent to a model that is not in-process (distinct per position, summed);
    ``results/redaction.parquet``."""
    rows = []
    for path, session in zip(chosen.files, chosen.read):
        label = run.labels[session.session_id]
        for cls, n in sorted(placeholders(path.read_text(encoding="utf-8", errors="replace")).items()):
            rows.append({"where": "in the transcript as read", "session": label, "class": cls, "count": n})
    sent: dict[str, Counter] = {}
    seen: set[tuple[str, str, int]] = set()
    for cell in cells:
        if cell.arm != "real" or is_in_process(cell.target) or (cell.session, cell.target, cell.step) in seen:
            continue
        seen.add((cell.session, cell.target, cell.step))
        text = json.dumps([m.get("content") for m in cell.request.messages], ensure_ascii=False)
        sent.setdefault(cell.session, Counter()).update(placeholders(text))
    for session_id, counts in sent.items():
        for cls, n in sorted(counts.items()):
            rows.append({"where": "in the prefixes sent off this machine", "session": run.labels[session_id],
                         "class": cls, "count": n})
    table = pd.DataFrame(rows, columns=["where", "session", "class", "count"])
    run.out.parquet("redaction", table)
    return run.table("redaction", table)


def placeholders(text: str) -> Counter:
    """Distinct placeholders (``<EMAIL_2>``) in ``text``, counted by class (``EMAIL``)."""
    return Counter(found.rsplit("_", 1)[0][1:] for found in set(PLACEHOLDER.findall(text)))


def costs(run: Run) -> pd.DataFrame:
    """The plan made before the run (:func:`plan` leaves it in the run's folder, and the run
    log records it when it was made for the same parameters) beside what each batch called;
    ``results/plan_vs_actual.parquet``."""
    planned = run.log.about.get("plan")
    rows = []
    for batch, counts in run.log.batches.items():
        mine = [r for r in (planned or {}).get("batches", []) if r["batch"] == batch or r["batch"].startswith(batch + ":")]
        usage = counts.usage()
        rows.append({"batch": batch, "planned_calls": _sum(mine, "calls"), "calls": counts.calls,
                     "planned_to_compute": _sum(mine, "to_compute"), "computed": counts.computed,
                     "failed": counts.failed, "planned_prompt_tokens": _sum(mine, "prompt_tokens"),
                     "prompt_tokens": usage["prompt_tokens"],
                     "planned_completion_tokens": _sum(mine, "completion_tokens"),
                     "completion_tokens": usage["completion_tokens"],
                     "planned_cost_usd": _sum(mine, "cost_usd"), "cost_usd": usage["cost_usd"],
                     "note": "" if mine or planned is None else "not in the plan"})
    table = pd.DataFrame(rows)
    if len(table):
        total = {c: table[c].sum(min_count=1) for c in table.columns if c not in ("batch", "note")}
        table = pd.concat([table, pd.DataFrame([{"batch": "total", **total,
                                                 "note": "" if planned else "no plan was made before the run"}])],
                          ignore_index=True)
    run.out.parquet("plan_vs_actual", table)
    return run.table("plan_vs_actual", table)


def _sum(rows: list[dict], key: str) -> float:
    values = [r.get(key) for r in rows]
    return float("nan") if not rows or any(v is None for v in values) else float(sum(values))


def finish(run: Run) -> pd.DataFrame:
    """The run log written, status complete (with the plan beside what the run called)."""
    return spine.finish(run)


STAGES = (Stage("chosen", choose_sessions), Stage("run", start), Stage("calibration", calibration),
          Stage("positions", positions), Stage("cells", cells), Stage("frame", grid), Stage("primary", headline),
          Stage("gaps", drift_gaps), Stage("gap_plot", gap_figure), Stage("trajectory", trajectory),
          Stage("s2", s2), Stage("anchor", anchor), Stage("effects", anchor_effects),
          Stage("redacted", redaction), Stage("costs", costs), Stage("done", finish))


def run(params: Parameters) -> Result:
    """Every stage in order."""
    return spine.run_stages(STAGES, params)


def plan(params: Parameters):
    """What :func:`run` would call, nothing sent (:func:`.spine.plan_stages`)."""
    return spine.plan_stages(STAGES, params)


# ----------------------------------------------------------------------- what the report shows
USD = Decimals("US dollars", unit="USD", digits=4)

TABLES = (
    Table("sessions", "Sessions audited", (
        Column("Session", TEXT, "session"), Column("File", TEXT, "file", widest="projects/x/" + "a" * 36 + ".jsonl"),
        Column("Format", TEXT, "format"), Column("Agent steps", COUNT, "agent_steps"),
        Column("Compactions", COUNT, "compactions"))),
    Table("positions", "Positions asked", (
        Column("Session", TEXT, "session"), Column("Position", TEXT, "position"),
        Column("Turn / step", COUNT, "step"), Column("Marks", TEXT, "kind"))),
    Table("drift_gaps", "Drift gap per session and position", (
        Column("Target", MODEL, "target"), Column("Session", TEXT, "session"), Column("Position", TEXT, "position"),
        Column("Turn / step", COUNT, "step"),
        Column("Drift gap Δ (judge points)", estimate(POINTS), ("estimate", "ci_low", "ci_high")),
        Column("Real", POINTS, "real_mean", optional=True), Column("Filler", POINTS, "filler_mean", optional=True),
        Column("Invalid verdicts", COUNT, "n_invalid", optional=True)), index=3),
    Table("s2", "S2 compliance and verbosity", (
        Column("Target", MODEL, "target"), Column("Session", TEXT, "session"),
        Column("Real compliant", PERCENT, "real_rate_pct"), Column("Filler compliant", PERCENT, "filler_rate_pct"),
        Column("Compliance gap filler − real", estimate(POINTS_PP), ("gap_pp", "ci_low", "ci_high")),
        Column("Verbosity ratio real / filler", estimate(COEFFICIENT),
               ("verbosity_ratio", "verbosity_ci_low", "verbosity_ci_high")),
        Column("Cells", COUNT, "n_cells")), index=2),
    Table("redaction", "What was redacted: placeholders by class, never the strings", (
        Column("Where", TEXT, "where"), Column("Session", TEXT, "session"), Column("Class", TEXT, "class"),
        Column("Distinct placeholders", COUNT, "count")), index=2),
    Table("plan_vs_actual", "The plan made before the run against what each batch called", (
        Column("Batch", TEXT, "batch"), Column("Calls planned", COUNT, "planned_calls"),
        Column("Calls made", COUNT, "calls"), Column("To compute, planned", COUNT, "planned_to_compute"),
        Column("Computed", COUNT, "computed"), Column("Failed", COUNT, "failed"),
        Column("Prompt tokens planned", COUNT, "planned_prompt_tokens"),
        Column("Prompt tokens", COUNT, "prompt_tokens"),
        Column("Completion tokens planned", COUNT, "planned_completion_tokens"),
        Column("Completion tokens", COUNT, "completion_tokens"),
        Column("Cost planned", USD, "planned_cost_usd"), Column("Cost", USD, "cost_usd"))),
)
#: What the audit writes: the judges' calibration and its own tables (no manuscript variable).
MANUSCRIPT = spine.CALIBRATION + Declared(tables=TABLES)


REPORT = (
    Section("sessions", "Sessions and positions",
            "Each session is snapshotted at the positions asked: its start, the last turn before and the first "
            "after each compaction, and its deciles (the quick size asks three of them). Sessions are labelled "
            "S1, S2, ... in this report; a file that could not be audited is listed with its reason. The positions "
            "shown are those asked; every candidate is in results/positions.parquet.",
            (Shown.of(MANUSCRIPT, "sessions"), Shown.of(MANUSCRIPT, "positions", "asked"))),
    Section("drift", "Drift gap per session and position",
            "At each position the model answers the probes twice: after the real session prefix and after a "
            "filler prefix of the same length and structure. The drift gap is the judge's mean score after the "
            "filler minus after the real prefix, in rubric points (0-3): above zero, the session pulls the model "
            "away from its assistant persona. Intervals are 95% bootstrap intervals (cells within a position; "
            "positions within a session; sessions, then positions, over the sessions).",
            (Shown.of(MANUSCRIPT, "drift_gaps"),), (("figures/drift_gaps.png", "Drift gap with 95% interval at each position of "
                                       "each session, per session and over the sessions"),)),
    Section("trajectory", "Trajectory",
            "Each arm's mean judge score at each position of each session: the real prefix against the filler.",
            (), (("figures/trajectory.png", "Mean judge score of the real and the filler arm at each position, "
                  "one panel per session"),)),
    Section("s2", "S2 compliance and verbosity",
            "The S2 stressor asks for a bare command; compliance is scored without a judge. The compliance gap is "
            "the filler arm's rate minus the real arm's (percentage points; above zero, the session breaks the "
            "output contract more often); the verbosity ratio is the median real / filler answer length.",
            (Shown.of(MANUSCRIPT, "s2"),)),
    Section("anchor", "The A-anchor at the last position",
            "At the last step of each session, the real prefix with and without the A-anchor (one short exchange "
            "restating the assistant register) before the same probes and contracts: the effect is the mean with "
            "minus without, with a 95% interval that resamples probes. The A-anchor is our own intervention, run "
            "under our protocol (the harness's own anchors, its e04 family, are the anchor_family notebook's).",
            tuple(Shown(INTERVENTIONS.table(stem), f"{ANCHOR_FOLDER}/results/{stem}.parquet")
                  for stem in ("effects", "contract_effects")),
            ((f"{ANCHOR_FOLDER}/figures/anchor_forest.png", "The A-anchor's effect with 95% interval on the probes "
              "and on the contracts"),)),
    Section("calibration", "The judge's calibration",
            "Before any target call the judge scored responses whose scores are known, under the run's protocol, "
            "prompt and parser. It is calibrated when its quadratic-weighted kappa with the labels is at least "
            "0.60 and at most 10% of its verdicts are invalid; below that, read the drift gaps with caution.",
            (Shown(MANUSCRIPT.table("calibration"), "results/calibration.parquet"),)),
    Section("redaction", "What was redacted",
            "The placeholders (such as <EMAIL_1>) in each transcript as read, which import-sessions (or the "
            "session's donor) put for what it found, and in the prefixes sent to a model that is not in-process, "
            "counted by class. The strings they replace are never shown, stored in the report or sent. A run "
            "whose models are all in-process sends nothing off this machine.",
            (Shown.of(MANUSCRIPT, "redaction"),)),
    Section("cost", "Plan against actual cost",
            "The plan printed before the run (calls, tokens and cost from LiteLLM's price map, nothing sent) beside "
            "what each batch of the run called: calls answered by the cache cost nothing.",
            (Shown.of(MANUSCRIPT, "plan_vs_actual"),)),
)
