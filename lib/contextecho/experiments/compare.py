"""Compare two releases of a model: a pre-registered run on the same cells, and its verdicts.

The baseline and the candidate (each a model string with its temperature: one model at two
temperatures is a comparison too) answer the same cells, paired by session, position, item,
sample and arm: the headline battery's probes (judged by one judge, calibrated first) and the
S2 stressor (scored without a judge), after the real prefix and the filler, at the positions
the audit would ask (:mod:`.session_positions`). Everything runs on the spine the notebooks
and the audit run on (:func:`.selection.build`, :func:`.spine.run_grid`, the call cache and
run log: a rerun is answered from the cache).

Before the run, the plan (:mod:`.preregistration`) fixes the instruments, judge, sessions,
positions, cells, endpoints, margins and alpha; :func:`registration` compares it with what
the code asks now and refuses a deviation that was not allowed (``allow_deviation``); those
allowed are listed in the report.

Endpoints (both "above zero: the candidate is worse"): the drift gap's difference candidate −
baseline (judge points; margin ``drift_margin``, default the seed's ±0.08) and the S2
compliance gap's (percentage points; margin ``s2_margin``, default ±10 pp: one wording in
ten). Each gets the paired units' mean with the 95% interval clustered by session, the two
one-sided tests, Holm over the endpoints, and a verdict, then one overall
(:mod:`contextecho.stats.comparison`: *equivalent*, *improved*, *regressed*,
*inconclusive*). The sample-size check (:mod:`contextecho.stats.sample_size`) reads the run's
own variance between and within sessions as a pilot: how many sessions would have been
decisive at the margin.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..engine.llm import LOCAL_MODEL
from ..paper.declared import Declared
from ..paper.formats import COUNT, P_VALUE, TEXT, VARIANCE, Decimals, estimate
from ..paper.report import Section, Shown
from ..paper.show import Result
from ..paper.tables import Column, Table
from ..stats.comparison import endpoint_test, overall, unit_differences, untested, verdicts
from ..stats.errors import StatsInputError
from ..stats.sample_size import sessions_needed
from ..stats.variance import variance_decomposition
from . import preregistration, spine
from .parameter_sets import EMBEDDED_STRESSOR_MAX_TOKENS
from .parameters import Interval, OneOf, count
from .preregistration import FIELDS as REGISTERED
from .protocol_record import protocol_record
from .scores import headline_rows, score_column
from .session_positions import SessionRunParameters, Sessions, choose_sessions, positions_frame
from .spine import Run, Stage

NAME = "compare"
TITLE = "Compare two releases: a pre-registered verdict"
DRIFT_MARGIN, S2_MARGIN = 0.08, 10.0
#: A temperature that means "the baseline's" (``temperature``).
SAME = -1.0


@dataclass(frozen=True)
class Parameters(SessionRunParameters):
    baseline: str = LOCAL_MODEL
    candidate: str = LOCAL_MODEL
    candidate_temperature: float = SAME
    samples: int = 1
    stressor_max_tokens: int = EMBEDDED_STRESSOR_MAX_TOKENS
    drift_margin: float = DRIFT_MARGIN
    s2_margin: float = S2_MARGIN
    alpha: float = 0.05
    power: float = 0.8
    preregistration: str = ""
    allow_deviation: tuple[str, ...] = ()

    HELP = {**SessionRunParameters.HELP,
            "n_sessions": "the longest sessions compared (0: every one found)",
            "baseline": "the release in use (a LiteLLM model string)",
            "candidate": "the release to compare with it",
            "candidate_temperature": "the candidate's sampling temperature (-1: the baseline's, temperature)",
            "samples": "answers per cell (replicates; each paired with the other model's)",
            "stressor_max_tokens": "the target's budget for an S2 answer",
            "drift_margin": "equivalence margin of the drift gap's difference, judge points (the seed's 0.08)",
            "s2_margin": "equivalence margin of the S2 compliance gap's difference, percentage points",
            "alpha": "level of each one-sided test (Holm over the endpoints)",
            "power": "the sample-size check's power to call an unchanged candidate equivalent",
            "preregistration": "the plan file the run is held to",
            "allow_deviation": "registered fields the run may differ in (recorded in the report)"}
    RANGES = {**SessionRunParameters.RANGES, "samples": count(),
              "stressor_max_tokens": count(), "drift_margin": Interval(0, low_open=True),
              "s2_margin": Interval(0, 100, low_open=True), "alpha": Interval(0, 0.5, low_open=True),
              "power": Interval(0, 1, low_open=True), "allow_deviation": OneOf(REGISTERED, "registered field")}

    @property
    def source(self) -> Path:
        """The sessions' folder or file."""
        return Path(self.sessions).expanduser()

    def roles(self) -> dict[str, tuple[str, float]]:
        """``{baseline: (model, temperature), candidate: (model, temperature)}``."""
        t = self.temperature if self.candidate_temperature == SAME else self.candidate_temperature
        return {"baseline": (self.baseline, self.temperature), "candidate": (self.candidate, t)}


def with_targets(p: Parameters) -> Parameters:
    """``p`` with ``targets`` the baseline and the candidate (the models a run checks and calls)."""
    return dataclasses.replace(p, targets=tuple(dict.fromkeys((p.baseline, p.candidate))))


# ---------------------------------------------------------------------------- the stages
def sessions(params: Parameters) -> Sessions:
    """The sessions compared (a folder's transcripts, longest first, or one file); a file that
    cannot be read under the protocol is named with its reason."""
    return choose_sessions(params, NAME)


def registration(params: Parameters, chosen: Sessions) -> dict[str, Any]:
    """The plan the run is held to (``preregistration``, its sha256 checked) against what the
    code asks now: every deviation named; one not in ``allow_deviation`` stops here, before
    any call (:class:`~.preregistration.PlanError`)."""
    plan = preregistration.read(Path(params.preregistration))
    now = preregistration.register(params, chosen, NAME)
    found = preregistration.deviations(plan, now)
    refused = [d for d in found if d.field not in params.allow_deviation]
    if refused:
        raise preregistration.PlanError(
            f"{params.preregistration}: the run differs from the registered plan in "
            + "; ".join(d.text() for d in refused)
            + ". Register again, or allow it with --allow-deviation " + " --allow-deviation ".join(
                d.field for d in refused) + " (it is recorded in the report)")
    return {"plan": plan, "now": now, "deviations": found}


def start(params: Parameters, chosen: Sessions, registered: dict[str, Any]) -> Run:
    """Open the outputs, check that both targets and the judge can be called before any call,
    and record the plan: its sha256 and fields, and every deviation allowed
    (``results/preregistration.parquet``, ``results/deviations.parquet``)."""
    p = with_targets(params)
    run = spine.start(NAME, p, models=p.targets + p.judge_models(), protocol=chosen.protocol,
                      record=protocol_record(chosen.protocol, p, p.stressor_max_tokens), sessions=lambda: chosen.read,
                      declared=MANUSCRIPT)
    plan = registered["plan"]
    run.log.about["preregistration"] = {"sha256": plan["sha256"], "registered": plan.get("registered"),
                                        "deviations": [d.text() for d in registered["deviations"]]}
    run.log.write()
    rows = [{"field": "sha256", "registered": plan["sha256"], "now": "(the plan's own)"},
            {"field": "registered", "registered": str(plan.get("registered")), "now": ""}]
    rows += [{"field": name, "registered": _short(plan.get(name)),
              "now": "the same" if plan.get(name) == registered["now"].get(name) else _short(registered["now"].get(name))}
             for name in preregistration.FIELDS if name != "parameters"]
    run.out.parquet("preregistration", pd.DataFrame(rows))
    run.table("preregistration", pd.DataFrame(rows))
    deviations = pd.DataFrame([{"field": d.field, "differs_in": ", ".join(d.paths), "allowed": "yes"}
                               for d in registered["deviations"]], columns=["field", "differs_in", "allowed"])
    run.out.parquet("deviations", deviations)
    run.table("deviations", deviations)
    return run


def _short(value: Any) -> str:
    """A registered field as the report shows it: a hash's first 12 characters, lists counted."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_short(v)}" for k, v in value.items())
    if isinstance(value, list):
        return f"{len(value)} entries"
    text = str(value)
    return text[:12] if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text


def calibration(run: Run) -> pd.DataFrame:
    """Before any target is asked, the judge scores responses whose scores are known."""
    return spine.calibrate_judges(run)


def positions(run: Run, chosen: Sessions) -> pd.DataFrame:
    """The positions asked of each session, as registered; ``results/positions.parquet``."""
    p = run.params
    frame = positions_frame(chosen.read, run.protocol, run.labels, p.size, p.n_positions)
    run.out.parquet("positions", frame)
    run.table("positions", frame[frame["asked"]])
    return frame


def grids(run: Run, chosen: Sessions, positions: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each target's cells asked through the cache, its probe answers judged by the judge:
    ``results/baseline_cells.parquet`` and ``results/candidate_cells.parquet``."""
    p = run.params
    cells = preregistration.role_cells(p, chosen, positions, NAME)
    return {role: spine.run_grid(run, c, judges=p.judges[:1], judge_max_tokens=p.judge_max_tokens,
                                 name=f"{NAME}:{role}", results=f"{role}_cells") for role, c in cells.items()}


KEYS = ("session", "position", "item", "replicate")


def units(run: Run, grids: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The paired units of each endpoint (:func:`~contextecho.stats.comparison.unit_differences`):
    the drift gap on the headline battery's judged scores, the S2 compliance gap on the
    stressor's (×100, pp); ``results/units.parquet``."""
    p = run.params
    column = score_column(p.score)
    judge = p.judges[0]
    frames = []
    for endpoint, pick, value, scale in (
            ("drift_gap", lambda f: headline_rows(f, judge, p.headline), column, 1.0),
            ("s2_compliance_gap", lambda f: f[f["item_kind"] == "stressor"], "score", 100.0)):
        base, cand = (pick(grids[role]) for role in ("baseline", "candidate"))
        if len(base) and len(cand):
            frames.append(unit_differences(base, cand, value=value, keys=KEYS, scale=scale).assign(endpoint=endpoint))
    out = pd.concat(frames, ignore_index=True) if frames else \
        pd.DataFrame(columns=[*KEYS, "baseline", "candidate", "d", "endpoint"])
    run.out.parquet("units", out)
    return out


def margin_of(p: Parameters, endpoint: str) -> float:
    spec = next(e for e in preregistration.ENDPOINTS if e["name"] == endpoint)
    return float(getattr(p, spec["margin_parameter"]))


def verdict_table(run: Run, units: pd.DataFrame) -> pd.DataFrame:
    """Per endpoint the mean paired difference candidate − baseline with its 95% interval
    clustered by session, the (1 − 2α) t interval and the one-sided tests, Holm over the
    endpoints, the verdict; then the overall verdict (``results/verdicts.parquet``)."""
    p = run.params
    tests = []
    for spec in preregistration.ENDPOINTS:
        mine = units[units["endpoint"] == spec["name"]]
        try:
            tests.append(endpoint_test(spec["name"], mine["d"], mine["session"], margin=margin_of(p, spec["name"]),
                                       alpha=p.alpha, n_resamples=p.n_resamples, seed=p.resample_seed))
        except StatsInputError as exc:
            tests.append(untested(spec["name"], margin=margin_of(p, spec["name"]), alpha=p.alpha, note=str(exc)))
    rows = [v.row() for v in verdicts(tests, alpha=p.alpha)]
    rows.append({"endpoint": "overall", "verdict": overall([r["verdict"] for r in rows]),
                 "note": "regressed if any endpoint is; else inconclusive if any is; else improved if any is; "
                         "else equivalent"})
    table = pd.DataFrame(rows)
    run.out.parquet("verdicts", table)
    if run.planner is None:  # a plan's answers are placeholders: no verdict to say
        print(f"{NAME}: " + "; ".join(f"{r['endpoint']} {r['verdict']}" for r in rows), flush=True)
    return run.table("verdicts", table)


def sample_size(run: Run, units: pd.DataFrame) -> pd.DataFrame:
    """The run as its own pilot: each endpoint's unit differences split into their variance
    between and within sessions (:func:`~contextecho.stats.variance.variance_decomposition`,
    REML), and the sessions that would give a decisive verdict at the margin
    (:func:`~contextecho.stats.sample_size.sessions_needed`), beside the sessions run;
    ``results/sample_size.parquet``."""
    p = run.params
    rows = []
    n_endpoints = len(preregistration.ENDPOINTS)
    for spec in preregistration.ENDPOINTS:
        mine = units[units["endpoint"] == spec["name"]]
        row = {"endpoint": spec["name"], "sessions_run": mine["session"].nunique(), "n_units": len(mine)}
        try:
            parts = variance_decomposition(mine.assign(d=mine["d"].astype(float)), value="d", group="session")
            per_session = max(1, round(len(mine) / max(1, mine["session"].nunique())))
            plan = sessions_needed(parts.sigma2_between, parts.sigma2_within, per_session,
                                   margin=margin_of(p, spec["name"]), alpha=p.alpha, power=p.power,
                                   n_endpoints=n_endpoints)
            row.update(sigma2_between=plan.sigma2_between, sigma2_within=plan.sigma2_within,
                       units_per_session=per_session, sessions_needed=plan.sessions, floor=plan.floor,
                       decisive_margin=plan.decisive_margin(max(2, row["sessions_run"])),
                       assumptions="; ".join(plan.assumptions), note="")
        except (StatsInputError, ValueError) as exc:
            row.update(sigma2_between=np.nan, sigma2_within=np.nan, units_per_session=np.nan,
                       sessions_needed=np.nan, floor=np.nan, decisive_margin=np.nan, assumptions="",
                       note=f"no pilot variance: {exc}")
        rows.append(row)
    table = pd.DataFrame(rows)
    run.out.parquet("sample_size", table)
    return run.table("sample_size", table)


def finish(run: Run) -> pd.DataFrame:
    """The run log written, status complete."""
    return spine.finish(run)


STAGES = (Stage("chosen", sessions), Stage("registered", registration), Stage("run", start),
          Stage("calibration", calibration), Stage("positions", positions), Stage("grids", grids),
          Stage("units", units), Stage("verdicts", verdict_table), Stage("sample_size", sample_size),
          Stage("done", finish))


def run(params: Parameters) -> Result:
    """Every stage in order."""
    return spine.run_stages(STAGES, params)


def plan(params: Parameters):
    """What :func:`run` would call, nothing sent (:func:`.spine.plan_stages`)."""
    return spine.plan_stages(STAGES, params)


def overall_verdict(folder: Path) -> str:
    """The overall verdict a run in ``folder`` wrote (``results/verdicts.parquet``)."""
    table = pd.read_parquet(Path(folder) / "results" / "verdicts.parquet")
    return str(table.loc[table["endpoint"] == "overall", "verdict"].iloc[0])


# ----------------------------------------------------------------------- what the report shows
SIGNED = Decimals("difference", digits=3)
TABLES = (
    Table("preregistration", "The pre-registration: each field as registered and as the code asks now", (
        Column("Field", TEXT, "field"), Column("Registered", TEXT, "registered", widest="a" * 40),
        Column("Now", TEXT, "now", widest="a" * 40))),
    Table("deviations", "Deviations from the plan allowed for this run", (
        Column("Field", TEXT, "field"), Column("Differs in", TEXT, "differs_in", widest="a" * 40),
        Column("Allowed", TEXT, "allowed"))),
    Table("positions", "Positions asked", (
        Column("Session", TEXT, "session"), Column("Position", TEXT, "position"),
        Column("Turn / step", COUNT, "step"), Column("Marks", TEXT, "kind"))),
    Table("verdicts", "Verdicts: candidate − baseline per endpoint", (
        Column("Endpoint", TEXT, "endpoint"), Column("Verdict", TEXT, "verdict", widest="inconclusive"),
        Column("Difference (95% CI, sessions resampled)", estimate(SIGNED), ("estimate", "ci_low", "ci_high")),
        Column("(1 − 2α) t interval, session means", estimate(SIGNED), ("estimate", "tost_low", "tost_high")),
        Column("Margin ±", SIGNED, "margin"),
        Column("p equivalent (Holm)", P_VALUE, "p_equivalent_holm"),
        Column("p regressed (Holm)", P_VALUE, "p_regressed_holm"),
        Column("p improved (Holm)", P_VALUE, "p_improved_holm"),
        Column("Sessions", COUNT, "n_sessions"))),
    Table("sample_size", "Sample-size check: the run as its own pilot", (
        Column("Endpoint", TEXT, "endpoint"), Column("σ² between sessions", VARIANCE, "sigma2_between"),
        Column("σ² within", VARIANCE, "sigma2_within"), Column("Units a session", COUNT, "units_per_session"),
        Column("Sessions run", COUNT, "sessions_run"), Column("Sessions needed", COUNT, "sessions_needed"),
        Column("Needed however many positions", COUNT, "floor"),
        Column("Margin decisive at the sessions run", SIGNED, "decisive_margin"))),
)
MANUSCRIPT = spine.CALIBRATION + Declared(tables=TABLES)


REPORT = (
    Section("verdicts", "Verdicts",
            "Both models answered the same cells (session, position, item, sample, real and filler arm). A unit's "
            "difference is the candidate's filler − real minus the baseline's; above zero the candidate is worse. "
            "Per endpoint: the mean difference with its 95% interval (sessions resampled), the (1 − 2α) t interval "
            "on the session means and the one-sided tests against the margin, Holm-adjusted over the endpoints. "
            "Regressed: worse by more than the margin; improved: better by more than the margin; equivalent: "
            "within the margin (both one-sided tests reject); inconclusive: none of these. Exit status: 0 "
            "equivalent or improved, 1 regressed, 3 inconclusive.",
            (Shown.of(MANUSCRIPT, "verdicts"),)),
    Section("preregistration", "The pre-registration",
            "The plan was written before any call; its sha256 covers every field. The run recomputed each field "
            "from the code and the sessions and compared: a field that differs stops the run unless it was "
            "allowed, and every allowed deviation is listed below.",
            (Shown.of(MANUSCRIPT, "preregistration"), Shown.of(MANUSCRIPT, "deviations"))),
    Section("sample_size", "Sample-size check",
            "The run's unit differences as a pilot: their variance between and within sessions, and the sessions "
            "a decisive verdict at the margin needs (an unchanged candidate called equivalent with the planned "
            "power, α split over the endpoints as Holm's strictest step; normal approximation). More positions "
            "or samples shrink only the within part.",
            (Shown.of(MANUSCRIPT, "sample_size"),)),
    Section("positions", "Sessions and positions",
            "The positions asked of each session, as registered.", (Shown.of(MANUSCRIPT, "positions", "asked"),)),
    Section("calibration", "The judge's calibration",
            "Before any target call the judge scored responses whose scores are known. It is calibrated when its "
            "quadratic-weighted kappa with the labels is at least 0.60 and at most 10% of its verdicts are invalid.",
            (Shown(MANUSCRIPT.table("calibration"), "results/calibration.parquet"),)),
)
