"""Cross-judge audit: the same responses scored by two or more raters.

The responses are the panel's cells (same parameters, so every target call is answered
from the cache). Raters: each LLM judge in ``judges`` (the same rubric, cached per judge)
and each offline rater in ``raters`` (``tfidf``: nearest rubric anchor by TF-IDF cosine;
see :mod:`.raters`). For every pair of raters: exact and within-one agreement and Cohen's
kappa (unweighted, linear, quadratic) on the cells both scored; per target, the drift gap
under each rater and whether their signs agree; how stable the raters' ranking of the targets
is (Kendall's tau between their gaps, :func:`~contextecho.stats.agreement.rank_agreement`); and
the LLM judges' consensus per cell (their mean score and whether they all agree), with the
drift gap of the consensus score per target.

``positions`` ``late`` asks the harness's late position alone (``P5_pre_C6`` under
``reference``, the cross-judge audits' position) and ``replicates`` samples each cell more than
once (the seed's n = 25 re-audits: the five Coding-Self probes × 25 at P5).

Re-judging stored responses (:func:`rejudge`): responses an earlier run stored with its
first judge's score, judged again by a second judge under a protocol's judge or one of its
judge variants (the harness's cross-judge audit and its b3 cross-judge), then compared with
the first judge's scores (:func:`rejudged_agreement`, :func:`judge_means`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .parameters import NonEmpty, OneOf, count
from ..echo.protocol import Positions, Protocol
from ..echo.rubric import RUBRIC
from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.verdicts import ERROR
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COEFFICIENT, COUNT, MODEL, P_VALUE, PERCENT, POINTS, TEXT, estimate
from ..paper.tables import Column, Table
from ..paper.variables import Variable, by_target, reasons
from ..paper.sentences import measures_nothing, reason_of
from ..paper.show import Result, SavedFigure
from ..sessions.outbound import JudgeInputs
from ..stats.errors import StatsInputError
from ..stats.agreement import (direction_agreement, judge_agreement, label_agreement, rank_agreement,
                               score_agreement)
from ..stats.records import LabelAgreement
from ..stats.drift import drift_gap
from . import spine
from .parameter_sets import JudgedParameters, REFERENCE_JUDGE
from .item_ids import PROBE_IDS
from .protocol_record import PROTOCOL, protocol_variables
from .scores import failure_column, score_column
from .selection import build
from .spine import CALIBRATION, Run, Stage
from .raters import DESCRIPTIONS, RATERS, rate

TITLE = "Cross-judge audit: agreement of an LLM judge and an offline lexical rater"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o", "anthropic/claude-haiku-4-5"),
               "judges": (REFERENCE_JUDGE, "openrouter/openai/gpt-5"),  # the harness's audit pair
               "n_sessions": 0, "n_positions": 5, "probes": ("all",), "window": 30000, "max_tokens": 600,
               "judge_max_tokens": 400, "n_resamples": 10_000, "resample_seed": 42, "protocol": "reference"}


@dataclass(frozen=True)
class Parameters(JudgedParameters):
    raters: tuple[str, ...] = ("tfidf",)
    n_sessions: int = 2
    n_positions: int = 3
    probes: tuple[str, ...] = ("coding_self",)
    positions: str = "panel"
    replicates: int = 1

    HELP = {**JudgedParameters.HELP,
            "judges": "LLM judges (LiteLLM model strings)",
            "positions": "panel (the panel's positions) or late (the late position alone: the audits' P5)",
            "replicates": "samples per cell (the seed's re-audits of n 25: 25 at the late position)",
            "raters": "offline raters (tfidf)",
            "n_sessions": "keep equal to the panel's so its cells are reused from the cache",
            "n_positions": "snapshot positions per session (keep equal to the panel's)"}
    PROTOCOL_HELP = {**JudgedParameters.PROTOCOL_HELP,
                     "n_positions": {"reference": "snapshot positions per session: the first n of the panel's "
                                                  "named positions (keep equal to the panel's)",
                                     "contextecho": "uniform snapshot positions per session (keep equal to the "
                                                    "panel's)"},
                     "positions": {"reference": "panel (the panel's named positions) or late (P5_pre_C6 alone, the "
                                                "harness's cross-judge audits' position)",
                                   "contextecho": "panel (uniform agent steps) or late (three steps before the "
                                                  "last)"}}
    RANGES = {**JudgedParameters.RANGES, "raters": OneOf(RATERS, "offline rater"),
              "n_sessions": count(zero="all"), "n_positions": count(), "probes": (NonEmpty(), PROBE_IDS),
              "positions": OneOf(("panel", "late"), "position scheme"), "replicates": count()}




# ---------------------------------------------------------------- what the manuscript reads
#: The per-target gap under the first rater and under the second.
RATER_GAPS = ("gap_a_{target}", "gap_b_{target}")
MANUSCRIPT = CALIBRATION + PROTOCOL + Declared(
    variables=(
        Variable("pearson", COEFFICIENT), Variable("mean_abs_diff", POINTS), Variable("n_both", COUNT),
        Variable("exact_pct", PERCENT), Variable("within_one_pct", PERCENT), Variable("kappa", COEFFICIENT),
        Variable("kappa_linear", COEFFICIENT), Variable("gap_a_{target}", POINTS), Variable("gap_b_{target}", POINTS),
        Variable("direction_{target}", TEXT), Variable("target", TEXT), Variable("targets", TEXT),
        Variable("n_cells", COUNT), Variable("n_raters", COUNT), Variable("primary_judge", TEXT),
        Variable("second_rater", TEXT), Variable("n_cached", COUNT), Variable("n_failed", COUNT),
        Variable("score", TEXT), Variable("rank_tau", COEFFICIENT), Variable("rank_tau_p", P_VALUE),
        Variable("rank_n_targets", COUNT), Variable("rank_finding", TEXT), Variable("consensus_finding", TEXT), Variable("consensus_gap_{target}", POINTS),
        Variable("consensus_unanimous_pct_{target}", PERCENT), Variable("consensus_unanimous_pct", PERCENT),
        Variable("positions", TEXT), Variable("replicates", COUNT)),
    tables=(
        Table("raters", "The raters", (
            Column("Rater", MODEL, "rater"),
            Column("What it is", TEXT, "what it is",
                   widest="TF-IDF cosine similarity to the rubric's four anchor descriptions (nearest anchor)"))),
        Table("agreement", "Pairwise agreement", (
            Column("Rater A", MODEL, "rater_a"), Column("Rater B", MODEL, "rater_b"), Column("n", COUNT, "n"),
            Column("Exact", COEFFICIENT, "exact"), Column("Within one", COEFFICIENT, "within_one"),
            Column("κ", COEFFICIENT, "kappa"), Column("Linear κ", COEFFICIENT, "kappa_linear"),
            Column("Quadratic κ", COEFFICIENT, "kappa_quadratic"),
            Column("Pearson r", COEFFICIENT, "pearson", optional=True),
            Column("Spearman ρ", COEFFICIENT, "spearman", optional=True),
            Column("Mean abs. difference", POINTS, "mean_abs_diff", optional=True)), index=2),
        Table("rater_gaps", "Drift gap per rater", (
            Column("Rater", MODEL, "rater"), Column("Target", MODEL, "target"),
            Column("Gap Δ [95% CI]", estimate(POINTS), ("gap", "ci_low", "ci_high")),
            Column("Invalid", COUNT, "n_invalid")), index=2),
        Table("directions", "Direction", (
            Column("Rater A", MODEL, "rater_a"), Column("Rater B", MODEL, "rater_b"), Column("Target", MODEL, "target"),
            Column("Gap, A", POINTS, "gap_a"), Column("Gap, B", POINTS, "gap_b"),
            Column("Direction", TEXT, "direction", widest="opposite")), index=3),
        Table("rank_stability", "Rank stability of the targets between raters (Kendall's τ)", (
            Column("Rater A", MODEL, "rater_a"), Column("Rater B", MODEL, "rater_b"),
            Column("Targets", COUNT, "n_targets"), Column("Kendall τ", COEFFICIENT, "tau"),
            Column("p", P_VALUE, "p_value")), index=2),
        Table("consensus", "The judges' consensus per cell, by target", (
            Column("Target", MODEL, "target"), Column("Cells", COUNT, "n_cells"),
            Column("Unanimous", PERCENT, "unanimous_pct"), Column("Mean spread", POINTS, "mean_spread"),
            Column("Consensus gap Δ [95% CI]", estimate(POINTS), ("gap", "ci_low", "ci_high"))), index=1),
    ))


# ---------------------------------------------------------------- the stages (one notebook cell each)
def _raters(p: Parameters) -> list[str]:
    return list(p.judges) + list(p.raters)


def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the panel's sessions."""
    return spine.start_judged("cross_judge", params, paper_scale=PAPER_SCALE, declared=MANUSCRIPT)


def grid(run: Run) -> pd.DataFrame:
    """The panel's cells (the same requests: every target call answered from the cache when
    the panel ran first), judged by every LLM judge; the counts of its batches are logged."""
    p = run.params
    cells = build(run.protocol, p, "panel", run.sessions, p.probes, positions=Positions(p.positions, n=p.n_positions),
                  replicates=p.replicates)
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens)


def scores(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell, one score column per rater: each LLM judge's (the chosen judge
    score) and each offline rater's (on the answered cells)."""
    p = run.params
    wide = frame.pivot_table(index="key", columns="judge_model", values=score_column(p.score),
                             aggfunc="first", dropna=False)
    cellinfo = frame.drop_duplicates("key").set_index("key")
    table = cellinfo[["target", "session", "position", "arm", "item", "replicate", "response"]].copy()
    for judge in p.judges:
        table[judge] = wide[judge] if judge in wide.columns else np.nan
    ok = cellinfo["status"] == "ok"
    for rater in p.raters:
        table[rater] = np.where(ok, rate(rater, cellinfo["response"].where(ok)), np.nan)
    table = table.reset_index()
    run.out.parquet("scores", table)
    run.table("raters", pd.DataFrame(
        [{"rater": j, "what it is": "LLM judge, 0–3 rubric (cached per judge)"} for j in p.judges]
        + [{"rater": r, "what it is": DESCRIPTIONS[r]} for r in p.raters]))
    return table


def agreement(run: Run, scores: pd.DataFrame) -> pd.DataFrame:
    """For every pair of raters, on the cells both scored: exact and within-one agreement,
    Cohen's kappa (unweighted, linear, quadratic); with expected scores, correlations too."""
    p = run.params
    rows = []
    for a, b in combinations(_raters(p), 2):
        row = {"rater_a": a, "rater_b": b}
        try:
            r = judge_agreement(scores[a], scores[b])
            row.update(n=r.n, exact=r.exact, within_one=r.within_one, kappa=r.kappa,
                       kappa_linear=r.kappa_linear, kappa_quadratic=r.kappa_quadratic, note="")
        except StatsInputError as exc:
            row.update(n=0, exact=np.nan, within_one=np.nan, kappa=np.nan, kappa_linear=np.nan,
                       kappa_quadratic=np.nan, note=f"not estimable: {exc}")
        if p.score == "expected":  # continuous scores: correlations beside the category measures
            try:
                c = score_agreement(scores[a], scores[b])
                row.update(n=c.n, pearson=c.pearson, spearman=c.spearman, mean_abs_diff=c.mean_abs_diff)
            except StatsInputError as exc:
                row.update(pearson=np.nan, spearman=np.nan, mean_abs_diff=np.nan,
                           note=(row["note"] + f" correlation not estimable: {exc}").strip())
        rows.append(row)
    table = pd.DataFrame(rows)
    run.out.parquet("agreement", table)
    if p.score == "expected" and len(table) and pd.notna(table["pearson"].iloc[0]):
        run.out.set(pearson=table["pearson"].iloc[0], mean_abs_diff=table["mean_abs_diff"].iloc[0])
    if len(table) and pd.notna(table["exact"].iloc[0]):  # the first pair: the primary judge and the next rater
        first = table.iloc[0]
        run.out.set(n_both=first["n"], exact_pct=100 * first["exact"], within_one_pct=100 * first["within_one"])
        why = "the two raters' scores fall in one category each, where kappa is undefined"
        run.out.put("kappa", first["kappa"], why=why)
        run.out.put("kappa_linear", first["kappa_linear"], why=why)
    return run.table("agreement", table)


def rater_gaps(run: Run, scores: pd.DataFrame) -> pd.DataFrame:
    """The drift gap per target under each rater (position-clustered)."""
    p = run.params
    rows = []
    for rater in _raters(p):
        for target, g in scores.groupby("target"):
            row = {"rater": rater, "target": target}
            try:
                r = drift_gap(g, score=rater, cluster="position", n_resamples=p.n_resamples, seed=p.resample_seed)
                row.update(gap=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high, n_invalid=r.n_invalid, note="")
            except StatsInputError as exc:
                row.update(gap=np.nan, ci_low=np.nan, ci_high=np.nan, n_invalid=np.nan,
                           note=f"not estimable: {exc}")
            rows.append(row)
    gaps = pd.DataFrame(rows)
    run.out.parquet("gaps", gaps)
    values: dict = {}
    for rater, template in zip(_raters(p)[:2], RATER_GAPS):
        for target, own in by_target(gaps[gaps["rater"] == rater], {template: "gap"}).items():
            values.setdefault(target, {}).update(own)
    run.out.per_target(RATER_GAPS, values, p.targets, reasons(gaps))
    return run.table("rater_gaps", gaps)


def directions(run: Run, gaps: pd.DataFrame) -> pd.DataFrame:
    """For every pair of raters and every target: do their gaps point the same way?"""
    p = run.params
    rows = []
    for a, b in combinations(_raters(p), 2):
        ga = gaps[gaps["rater"] == a].set_index("target")["gap"]
        gb = gaps[gaps["rater"] == b].set_index("target")["gap"]
        both = ga.notna() & gb.notna()
        if both.any():
            d = direction_agreement(ga[both], gb[both])
            rows += [{"rater_a": a, "rater_b": b, **row} for row in d.to_frame().to_dict("records")]
    table = pd.DataFrame(rows, columns=["rater_a", "rater_b", "target", "gap_a", "gap_b", "direction"])
    run.out.parquet("directions", table)
    if len(table):  # the first pair of raters, per target
        first = table[(table["rater_a"] == table["rater_a"].iloc[0]) & (table["rater_b"] == table["rater_b"].iloc[0])]
        run.out.per_target(("direction_{target}",), by_target(first, {"direction_{target}": "direction"}), p.targets)
    else:
        run.out.per_target(("direction_{target}",), {}, p.targets, "no target has a gap under two raters to compare")
    return run.table("directions", table)


def rank_stability(run: Run, gaps: pd.DataFrame) -> pd.DataFrame:
    """For every pair of raters: Kendall's tau between their rankings of the targets by drift
    gap (:func:`~contextecho.stats.agreement.rank_agreement`, two targets at least; the first
    pair's is the manuscript's)."""
    p = run.params
    rows = []
    for a, b in combinations(_raters(p), 2):
        row = {"rater_a": a, "rater_b": b}
        ga, gb = (gaps[gaps["rater"] == r].set_index("target")["gap"] for r in (a, b))
        try:
            r = rank_agreement(ga, gb)
            row.update(n_targets=r.n_targets, tau=r.tau, p_value=r.p_value, note="")
        except StatsInputError as exc:
            row.update(n_targets=int((ga.notna() & gb.reindex(ga.index).notna()).sum()), tau=np.nan,
                       p_value=np.nan, note=f"not estimable: {exc}")
        rows.append(row)
    table = pd.DataFrame(rows, columns=["rater_a", "rater_b", "n_targets", "tau", "p_value", "note"])
    run.out.parquet("rank_stability", table)
    if len(table):
        first = table.iloc[0]
        why = first["note"].removeprefix("not estimable: ") or None
        run.out.put("rank_tau", first["tau"], why=why)
        run.out.put("rank_tau_p", first["p_value"], why=why)
        run.out.set(rank_n_targets=int(first["n_targets"]))
    else:
        run.out.set(rank_n_targets=0)
    tau = run.out.variables.get("rank_tau")
    run.out.set(rank_finding=(f"τ = {tau}, p = {run.out.variables['rank_tau_p']}, over "
                              f"{run.out.variables['rank_n_targets']} targets"
                              if tau is not None and reason_of(tau) is None else
                              "τ is not estimable: " + (reason_of(tau) if tau is not None else "there is only one rater")))
    return run.table("rank_stability", table)


def consensus(run: Run, scores: pd.DataFrame) -> pd.DataFrame:
    """The LLM judges' consensus per cell: ``consensus`` their mean valid score, ``spread``
    the largest minus the smallest, ``unanimous`` every judge scored it and all the same; per
    target the share unanimous, the mean spread and the drift gap of the consensus score
    (position-clustered, as each rater's)."""
    p = run.params
    judged = scores[list(p.judges)]
    cells = scores.assign(consensus=judged.mean(axis=1), spread=judged.max(axis=1) - judged.min(axis=1),
                          n_judged=judged.notna().sum(axis=1))
    cells["unanimous"] = (cells["n_judged"] == len(p.judges)) & (cells["spread"] == 0)
    run.out.parquet("consensus_cells", cells.drop(columns=["response"]))
    rows = []
    for target, g in cells.groupby("target"):
        scored = g[g["n_judged"] == len(p.judges)]
        row = {"target": target, "n_cells": len(scored),
               "unanimous_pct": 100 * scored["unanimous"].mean() if len(scored) else np.nan,
               "mean_spread": scored["spread"].mean() if len(scored) else np.nan}
        try:
            r = drift_gap(g, score="consensus", cluster="position", n_resamples=p.n_resamples, seed=p.resample_seed)
            row.update(gap=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                       note="" if len(p.judges) > 1 else "one LLM judge: the consensus is its own score, unanimous "
                                                          "by construction")
        except StatsInputError as exc:
            row.update(gap=np.nan, ci_low=np.nan, ci_high=np.nan, note=f"not estimable: {exc}")
        rows.append(row)
    table = pd.DataFrame(rows, columns=["target", "n_cells", "unanimous_pct", "mean_spread", "gap", "ci_low",
                                        "ci_high", "note"])
    run.out.parquet("consensus", table)
    run.out.per_target(("consensus_gap_{target}", "consensus_unanimous_pct_{target}"),
                       by_target(table, {"consensus_gap_{target}": "gap",
                                         "consensus_unanimous_pct_{target}": "unanimous_pct"}),
                       p.targets, reasons(table))
    written = run.out.variables
    run.out.set(consensus_finding=measures_nothing(
        "the judges' consensus", f"with the one LLM judge {p.judges[0]} the consensus is that judge's own score, "
        f"unanimous on every cell by construction, and its drift gap, {written['consensus_gap']}, is the judge's",
        "a second LLM judge (the judges parameter; the paper-scale set asks two)") if len(p.judges) < 2 else
        f"The judges are unanimous on {written['consensus_unanimous_pct']} of the cells, and the drift gap of "
        f"their consensus score is {written['consensus_gap']}.")
    return run.table("consensus", table)


def agreement_figure(run: Run, scores: pd.DataFrame, gaps: pd.DataFrame) -> SavedFigure:
    """Left: the confusion of the first two raters' scores; right: the drift gap under each rater."""
    p = run.params
    raters = _raters(p)
    a, b = (raters + ["", ""])[:2]
    confusion = None
    if b:
        both = scores[[a, b]].dropna()
        if p.score == "expected":  # expected scores shown at their nearest rubric category
            both = both.round()
        confusion = pd.crosstab(both[a], both[b]).reindex(index=range(4), columns=range(4), fill_value=0)
    return run.figure("agreement", figures.agreement(
        confusion, gaps, rows_label=a, columns_label=b, label="target", hue="rater", estimate="gap",
        xlabel="drift gap under each rater",
        reason_confusion="only one rater" if not b else "no cell has a valid score under both raters",
        reason_gaps="no cell was rated"))


def variables(run: Run, scores: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers (per-target ones keyed ``<key>_<target>``, the first
    target's also unsuffixed), written with the run log."""
    p = run.params
    raters = _raters(p)
    targets = run.log.batches.get("cross_judge:targets")
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), n_cells=int(len(scores)),
                n_raters=len(raters), primary_judge=p.judges[0],
                second_rater=raters[1] if len(raters) > 1 else "none",
                n_cached=targets.cached if targets else 0, n_failed=targets.failed if targets else 0,
                score=p.score, positions=p.positions, replicates=p.replicates,
                **protocol_variables(run.log.about["protocol"]))
    if p.score != "expected":
        run.out.default(f"correlations are computed on expected scores; this run scored {p.score} verdicts "
                        "(-p score expected)", "pearson", "mean_abs_diff")
    run.out.default("only one rater: no ranking to compare", "rank_tau", "rank_tau_p")
    run.out.default("no cell has a valid score from two raters", "pearson", "mean_abs_diff", "n_both",
                    "exact_pct", "within_one_pct", "kappa", "kappa_linear")
    return spine.finish(run)


def calibration(run: Run) -> pd.DataFrame:
    """Before any target is asked, each judge scores responses whose scores are known, under
    this run's protocol, prompt and parser: how far its verdicts can be trusted."""
    return spine.calibrate_judges(run)


STAGES = (Stage("run", start), Stage("calibration", calibration), Stage("frame", grid), Stage("scores", scores), Stage("agreement", agreement),
          Stage("gaps", rater_gaps), Stage("directions", directions), Stage("ranks", rank_stability),
          Stage("consensus", consensus), Stage("figure", agreement_figure),
          Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)


# ---------------------------------------------------------------- re-judging stored responses
#: The score the harness stores for a failed verdict, kept in the pairs with ``failures="in"``.
FAILED_SCORE = -1
SCORES_0_3 = (0, 1, 2, 3)
#: The columns of a re-judged frame (:func:`rejudge`) besides its rows' ``about`` and the
#: protocol's extras.
REJUDGED_COLUMNS = ["key", "response", "primary_score", "judge_model", "judge_key", "judge_response",
                    "verdict_status", "score", "verdict_reason"]


@dataclass(frozen=True)
class StoredResponse:
    """A response an earlier run stored with its first judge's score, to be judged again:
    ``key`` names the cell that holds it (the second judge's request key holds it, so each
    stored cell is judged by its own call), ``about`` its identity columns (carried into the
    re-judged row), ``score`` the first judge's score as stored (a failed verdict's −1 kept)."""

    key: str
    probe_text: str
    response: str
    score: Any
    about: Mapping[str, Any] = field(default_factory=dict)


def rejudge(stored: Sequence[StoredResponse], judge: str, *, protocol: Protocol,
            variant: str = "", max_tokens: int | None = None, cache: CallCache | None = None,
            transport: Transport = Transport(), progress: bool = False, name: str = "rejudge",
            redact: bool = True) -> pd.DataFrame:
    """``judge`` judges the stored responses again under ``protocol``'s judge or its judge
    ``variant``: one request per response (the protocol's
    :meth:`~contextecho.echo.protocol.Protocol.judge_request`, ``max_tokens`` its budget,
    default the protocol's), through the one call site, each reply read as the protocol reads
    it. One row per stored response, in their order: its ``about`` columns, ``key``,
    ``primary_score`` (the first judge's), and the second judge's ``judge_model``,
    ``judge_key``, ``judge_response`` and verdict columns (``verdict_status`` is ``error``
    where no reply could be read; the protocol's extras, such as the harness's stored
    ``reference_score``, say what it keeps of such a verdict).

    A variant that calls again at once when a reply cannot be read (``attempts`` > 1: the b3
    cross-judge) is asked one response at a time, each attempt one call (its rule replaces the
    transport's retries); otherwise the requests go as one batch. A judge that is not
    in-process is shown each response redacted (:mod:`contextecho.sessions.outbound`; not with
    ``redact=False``: a conformance replay, which never leaves the process)."""
    setup = protocol.judging([judge], RUBRIC, variant)
    params = protocol.judge_params(max_tokens or protocol.sampling.judge_max_tokens)
    shown = JudgeInputs(redact)  # a judge that is not in-process is shown the response redacted
    requests = [protocol.judge_request(setup, judge, s.probe_text,
                                       shown.text(s.response, judge, str(s.about.get("session", ""))), params, s.key)
                for s in stored]
    own = cache is None
    cache = cache if cache is not None else CallCache()
    batch = {"cache": cache, "progress": progress, "name": f"{name}:{judge}"}
    try:
        if setup.attempts == 1:
            records = generate(requests, transport=transport, **batch).records if requests else []
        else:
            once, records = replace(transport, max_attempts=1), []
            for request in requests:
                for _ in range(setup.attempts):
                    record = generate([request], transport=once, retry_errors=True, **batch).records[0]
                    if protocol.judge_reply(record, judge) is not None:
                        break
                records.append(record)
    finally:
        if own:
            cache.close()
    rows = []
    for s, request, record in zip(stored, requests, records):
        text = protocol.judge_reply(record, judge)
        v = protocol.read_verdict(text, setup)
        row = {**s.about, "key": s.key, "response": s.response, "primary_score": s.score, "judge_model": judge,
               "judge_key": request.key, "judge_response": text, "verdict_status": v.status, "score": v.score,
               "verdict_reason": v.reason, **v.columns()}
        if text is None:
            row.update(verdict_status=ERROR, score=math.nan, verdict_reason=f"judge call failed: {record.error_type}")
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else REJUDGED_COLUMNS)


def _counted(frame: pd.DataFrame, failures: str) -> tuple[pd.Series, pd.Series]:
    """The first and second judge's scores of re-judged rows as ``failures`` counts them
    (NaN: not counted): ``out`` the valid 0–3 verdicts, ``in`` every score stored."""
    first = pd.to_numeric(frame["primary_score"], errors="coerce").astype(float)
    second = pd.to_numeric(frame[failure_column(failures)], errors="coerce").astype(float)
    if failures == "out":
        first = first.where(first.isin(SCORES_0_3))
    return first, second


def rejudged_agreement(frame: pd.DataFrame, *, failures: str = "out", ties: str = "average") -> LabelAgreement:
    """The second judge's agreement with the first on re-judged rows (:func:`rejudge`), over
    the rows whose first score counts (:func:`~contextecho.stats.agreement.label_agreement`):
    ``failures="out"`` pairs valid verdicts (the b3 cross-judge, ``run_b3_cross_judge.py:
    135-143``); ``"in"`` every verdict stored, the harness's −1 a value of its own on either
    side (its audit, ``run_crossjudge_audit.py:95-129``). ``ties``: how tied scores are ranked
    for Spearman's rho (the audit's: ``ordinal``)."""
    first, second = _counted(frame, failures)
    keep = first.notna()
    return label_agreement(first[keep].to_numpy(), second[keep].to_numpy(),
                           failed=FAILED_SCORE if failures == "in" else None, ties=ties)


def judge_means(frame: pd.DataFrame, by: str, *, failures: str = "out") -> pd.DataFrame:
    """Per ``by`` group of re-judged rows (in the order the groups come): each judge's mean
    score and count over the scores ``failures`` counts (``primary_mean``, ``n_primary``;
    ``second_mean``, ``n_second``; NaN mean where none counts)."""
    first, second = _counted(frame, failures)
    scores = pd.DataFrame({by: frame[by], "primary": first, "second": second})
    table = scores.groupby(by, sort=False).agg(primary_mean=("primary", "mean"), n_primary=("primary", "count"),
                                               second_mean=("second", "mean"), n_second=("second", "count"))
    return table.reset_index()
