"""The panel: targets × snapshot positions × arms (real, filler) × probes, judged, plus
the judge-free surfaces (S2 stressor compliance, verbosity, the fingerprint).

The grid may ask our control arms beside real and filler (``arms``: shuffled_real,
unrelated_session, scratch, under either protocol; :mod:`contextecho.echo.arms`,
:mod:`contextecho.echo.reference.control_arms`): their cells are asked, judged and kept in
the frame and the trajectory; the gaps and the paired statistics read real and filler only.

Drift gap Δ = filler − real per target (ContextEcho Def. 1) with a position-clustered
bootstrap CI (the forest plot); per-category and per-position gaps; the fingerprint
projected on two principal components; S2 compliance gap (pp) and verbosity ratio.

Beside it, the statistics the paper ran (the ``harness_`` functions of :mod:`contextecho.stats`,
:func:`~.harness_forests.harness_table`): per target on the headline battery, the per-arm two-stage
bootstrap of each arm's mean, the sign-flip permutation p of the paired filler − real
differences and its Holm adjustment over targets; under the ``reference`` protocol also
the gap with the judge's −1 failures averaged in (the forest loader's treatment).
:func:`verbosity_variance` is the seed's Table 2 (between- vs within-session variance
of the per-pair log verbosity ratio of the S2 cells), per target and pooled.
Under ``reference`` S2 compliance is reported under both scorers with their agreement.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..echo.fingerprint import fit_pca
from ..echo.reference import negative_controls
from ..echo.reference.released import PANEL_CELLS
from ..echo.probes import FRAMINGS
from ..echo.arms import ARMS
from ..echo.protocol import PAIRED_ARMS, Positions
from ..echo.reference.s2_requests import S2_REQUESTS
from ..echo.runner import SELF_JUDGE
from ..engine.llm import LOCAL_MODEL
from ..engine.local_model import WEIGHTS
from .parameters import POSITIVE, Includes, Models, NonEmpty, OneOf, count
from ..paper.declared import Declared
from ..paper.formats import (COEFFICIENT, COUNT, MODEL, P_VALUE, PERCENT, POINTS, POINTS_PP, TEXT, VARIANCE, WHOLE,
                             estimate, interval, not_estimable)
from ..paper.tables import Column, Table
from ..paper.variables import Variable, by_target, reasons
from ..paper import figures
from ..paper.sentences import CAPABLE_JUDGE, PAPER_SCALE_SET, measures_nothing
from ..paper.show import Result, SavedFigure
from ..stats.errors import StatsInputError
from ..stats.judge_free import (StressorCell, compliance_gap, harness_compliance_audit, log_verbosity_ratios,
                                verbosity_ratio)
from ..stats.spread import score_spread
from ..stats.units import complete_units, unit_gaps
from ..stats.variance import variance_decomposition
from ..engine.counts import Counts
from . import spine
from .parameter_sets import EMBEDDED_STRESSOR_MAX_TOKENS, REFERENCE_JUDGE, ReleasedParameters
from .distributions import DISTRIBUTIONS, distribution_report
from .harness_forests import harness_table
from .item_ids import PROBE_IDS, STRESSOR_IDS
from .protocol_record import PROTOCOL, protocol_variables
from .scores import SCORES, first_judge_rows, gap_row, headline_rows, score_column
from ..sessions.positions import session_order
from .selection import build
from .spine import CALIBRATION, Run, Stage

TITLE = "Panel: drift gap per target, per position, per category; judge-free surfaces"
#: ``n_positions`` 5: every panel position the corpus offers (start, pre/post each compaction; its
#: sessions have at most two compactions), so the set runs on the bundled corpus as documented.
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o", "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"),
               "judges": (REFERENCE_JUDGE,), "n_sessions": 0, "n_positions": 5,
               "probes": ("all",), "stressors": ("S2",), "window": 30000, "max_tokens": 600,
               "stressor_max_tokens": 1024, "judge_max_tokens": 400, "n_resamples": 10_000, "resample_seed": 42,
               "protocol": "reference", "headline": "coding_self"}
#: The seed's corpus-scale grid (§3.2; no code for it at the harness commit): every
#: session, turns at each decile plus pre/post each compaction (``n_positions`` 0: every one
#: a session offers), k = 3 samples per cell at the provider's default temperature, under
#: the reference instruments. The harness reads Claude Code transcripts only (its reader,
#: ``experiments/e08_cross_compaction/run.py:105-134``), so under ``reference`` the grid is the
#: corpus's Claude Code sessions; its Codex sessions are in the grid's ``contextecho`` set.
CORPUS_GRID = {**PAPER_SCALE, "targets": ("anthropic/claude-sonnet-4-5",), "n_sessions": 0,
               "n_positions": 0, "positions": "deciles", "replicates": 3}
#: The paper's parameter sets beyond ``PAPER_SCALE``, each a run of its own (the notebook
#: lists them; ``paper --plan --paper-scale`` plans each): the corpus-scale grid under both
#: protocols, e11's instruction-override stressors S1-S4 (one wording each, e11's 512 target
#: tokens; ``experiments/e11_instruction_override/run.py:228``) and e16's probe-framing
#: ablation (Coding-Self probes asked bare, 10 samples per cell, at the late position;
#: ``experiments/e16_probe_framing_ablation/run.py:47-48``; its framed arm is the panel itself).
NAMED_SETS = {
    "seed's corpus-scale grid, Claude Code sessions (CORPUS_GRID)": CORPUS_GRID,
    "seed's corpus-scale grid, Claude Code and Codex sessions under our instruments": {
        **CORPUS_GRID, "protocol": "contextecho"},
    "e11 instruction-override stressors S1-S4": {
        **PAPER_SCALE, "probes": ("coding_self",), "stressors": ("S1", "S2#01", "S3", "S4"),
        "stressor_max_tokens": 512},
    "e16 probe-framing ablation (bare probes)": {
        **PAPER_SCALE, "probes": ("coding_self",), "stressors": (), "framing": "bare", "replicates": 10,
        "positions": "late", "n_positions": 1},
}

#: The harness's negative controls (``run_negative_controls.py``): the five factual questions
#: N01-N05 (:mod:`contextecho.echo.reference.negative_controls`), asked framed on the real
#: prefix and its filler at the late position, 400 target tokens, judged on the identity rubric.
#: No harness analysis reads their cells; their drift gap is this notebook's, which should be
#: about zero (the headline battery not asked, every judged probe is the headline). A run of
#: its own, as the ablations are.
NEGATIVE_CONTROLS = {**PAPER_SCALE, "probes": (negative_controls.ITEM_SET,), "stressors": (),
                     "max_tokens": negative_controls.MAX_TOKENS, "positions": "late", "n_positions": 1}


@dataclass(frozen=True)
class Parameters(ReleasedParameters):
    n_sessions: int = 2
    n_positions: int = 3
    probes: tuple[str, ...] = ("coding_self",)
    stressors: tuple[str, ...] = ("S2#01", "S2#02")
    stressor_max_tokens: int = EMBEDDED_STRESSOR_MAX_TOKENS
    headline: str = "coding_self"
    positions: str = "panel"
    replicates: int = 1
    framing: str = "framed"
    resume_judges: tuple[str, ...] = ()
    s2_requests: str = "e08"
    arms: tuple[str, ...] = PAIRED_ARMS
    RELEASE_FOLDERS = (PANEL_CELLS,)

    HELP = {**ReleasedParameters.HELP,
            "judges": "first is primary; self: each target judges its own responses (the harness's "
                      "Fig.-1 fill runners, run_fig1_sonnet45.py:81)",
            "resume_judges": "resume from the call cache: a cell whose result one of these judges stored "
                             "keeps it (not asked, not judged again); the others are asked, a stored "
                             "permanent error too, and judged by judges (the harness's runners skip the "
                             "cells on disk; with judges self, its Fig.-1 fill runners)",
            "s2_requests": "the harness runner whose S2 requests are sent, e08 (its TargetClient and "
                           "provider rules) or e10 (run_xtarget_v2.py: plain strings, temperature 0, "
                           "replies stripped)",
            "n_sessions": "longest openly licensed sessions (0 for all)",
            "n_positions": "snapshot positions per session (0: every one the session offers)",
            "stressor_max_tokens": "target max tokens of S2 cells (the harness's 1024)",
            "headline": "battery of the per-target headline gap (the paper's: coding_self)",
            "positions": "panel, deciles (the corpus grid) or late (e16's position)",
            "framing": "framed (the framing line, then the probe) or bare (e16's ablation)",
            "replicates": "samples per cell (the corpus grid: 3)",
            "probes": "probe ids or batteries (coding_self, identity, ..., all)",
            "stressors": "S2, or single wordings S2#01 ...",
            "arms": "real and filler (the drift gap's), and any of our controls beside them: shuffled_real "
                    "(the real prefix's turns shuffled within each role), unrelated_session (another chosen "
                    "session's prefix, length-matched; needs n_sessions of 2 or more), scratch (no context); "
                    "the gaps read real and filler only"}
    PROTOCOL_HELP = {
        **ReleasedParameters.PROTOCOL_HELP,
        "n_positions": {"reference": "snapshot positions per session: the first n of the named positions "
                                     "(0: every one the session offers)",
                        "contextecho": "snapshot positions per session (positions panel: n uniform agent steps; "
                                       "0: every agent step)"},
        "positions": {"reference": "panel (harness turns: the start, then pre and post each compaction), deciles "
                                   "(turns at each tenth of the session and the compaction pairs: the corpus grid) "
                                   "or late (three turns before the end, e16's position)",
                      "contextecho": "panel (uniform agent steps), deciles (each tenth of the assistant messages: "
                                     "the corpus grid) or late (three steps before the last, e16's position)"}}
    IGNORED = {**ReleasedParameters.IGNORED,
               "stressor_max_tokens": {"contextecho": "S2 cells take max_tokens, as every cell"},
               "s2_requests": {"contextecho": "S2 cells are asked as every other cell"}}
    RANGES = {**ReleasedParameters.RANGES, "n_sessions": count(zero="all"),
              "judges": (NonEmpty(), Models(also=(SELF_JUDGE,))), "resume_judges": Models(also=(SELF_JUDGE,)),
              "s2_requests": OneOf(S2_REQUESTS.names, "S2 request rule set"),
              "n_positions": count(zero="every position the session offers"), "replicates": count(),
              "positions": OneOf(("panel", "deciles", "late"), "position scheme"),
              "framing": OneOf(FRAMINGS, "framing"),
              "probes": (NonEmpty(), PROBE_IDS), "stressors": STRESSOR_IDS,
              "stressor_max_tokens": POSITIVE, "headline": PROBE_IDS,
              "arms": (Includes("real", "the drift gap's baseline"), Includes("filler", "the drift gap's control"),
                       OneOf(ARMS.names, "arm"))}


def verbosity_variance(s2: pd.DataFrame) -> pd.DataFrame:
    """The seed's Table 2: variance of the per-pair log verbosity ratio (real / filler
    response length of the same S2 cell) between vs within sessions, per target and
    pooled (target means removed as a fixed effect)."""
    lengths = s2.assign(length=s2["response_chars"].where(s2["response_chars"] > 0), probe=s2["item"])
    ratios = []
    for target, g in lengths.groupby("target"):
        try:
            ratios.append(log_verbosity_ratios(g).assign(target=target))
        except StatsInputError:  # an arm without cells or lengths: no pairs for this target
            continue
    data = pd.concat(ratios, ignore_index=True) if ratios else pd.DataFrame()
    rows = []
    groups = [(t, g, ()) for t, g in data.groupby("target")] if len(data) else []
    if len(groups) > 1:
        groups.append(("pooled", data, ("target",)))
    for label, g, fixed in groups:
        row = {"target": label, "n": len(g), "sessions": g["session"].nunique()}
        try:
            v = variance_decomposition(g, group="session", fixed=fixed)
            row.update(sigma2_between=v.sigma2_between, sigma2_within=v.sigma2_within,
                       sigma2_total=v.sigma2_total, between_pct=100 * v.share_between, note="")
        except StatsInputError as exc:
            row.update(sigma2_between=np.nan, sigma2_within=np.nan, sigma2_total=np.nan,
                       between_pct=np.nan, note=f"not estimable: {exc}")
        rows.append(row)
    return pd.DataFrame(rows)


def stressor_compliance(s2: pd.DataFrame, *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Compliance per target × stressor (``item_group``: S1 … S4, each stressor's wordings
    together, never two stressors pooled) × arm, and the compliance gap filler − real (pp) with
    its position-clustered interval (:func:`~contextecho.stats.judge_free.compliance_gap`)."""
    rows = []
    for (target, stressor), g in s2.groupby(["target", "item_group"], sort=True):
        g = g.assign(compliant=g["score"])
        row = {"target": target, "stressor": stressor,
               "real_rate_pct": 100 * g.loc[g.arm == "real", "compliant"].mean(),
               "filler_rate_pct": 100 * g.loc[g.arm == "filler", "compliant"].mean(),
               "n_real": int(g.loc[g.arm == "real", "compliant"].notna().sum()),
               "n_filler": int(g.loc[g.arm == "filler", "compliant"].notna().sum())}
        data, _ = complete_units(g, "compliant")
        try:
            rec = compliance_gap(data, cluster="position", n_resamples=n_resamples, seed=seed)
            row.update(gap_pp=rec.estimate, ci_low=rec.ci_low, ci_high=rec.ci_high, note="")
        except StatsInputError as exc:
            row.update(gap_pp=np.nan, ci_low=np.nan, ci_high=np.nan, note=f"not estimable: {exc}")
        rows.append(row)
    return pd.DataFrame(rows, columns=["target", "stressor", "real_rate_pct", "filler_rate_pct", "n_real",
                                       "n_filler", "gap_pp", "ci_low", "ci_high", "note"])


def session_verbosity(s2: pd.DataFrame) -> pd.DataFrame:
    """The seed's Tables 1–2 verbosity by session: per target × session × stressor, the
    harness's S2 audit (:func:`~contextecho.stats.judge_free.harness_compliance_audit`) of the
    pairs stored in both arms: ``raw_ratio`` = Σ real / Σ filler lengths over the pairs with
    both lengths > 0 (``n_raw``), ``cond_ratio`` = mean real / mean filler over those where
    both arms comply (``n_cond``; NaN without one)."""
    scored = s2[s2["score"].notna()]
    rows = []
    for (target, stressor), g in scored.groupby(["target", "item_group"], sort=True):
        cells = [StressorCell(target, c.session, c.position, f"{c.item}/{c.replicate}", c.arm, bool(c.score),
                              int(c.response_chars) if pd.notna(c.response_chars) else 0)
                 for c in g.itertuples()]
        sessions = sorted(g["session"].unique())
        audit = harness_compliance_audit(cells, sessions=sessions)
        for session in sessions:
            ratios = audit["ratios_by_session"].get(session)
            row = {"target": target, "session": session, "stressor": stressor,
                   "raw_ratio": np.nan, "n_raw": 0, "cond_ratio": np.nan, "n_cond": 0,
                   "note": "not estimable: no pair with a reply in both arms"}
            if ratios is not None:
                row.update(ratios, note="" if ratios["n_cond"] else "cond_ratio not estimable: "
                                                                       "no pair complies in both arms")
            rows.append(row)
    return pd.DataFrame(rows, columns=["target", "session", "stressor", "raw_ratio", "n_raw", "cond_ratio",
                                       "n_cond", "note"])


# ---------------------------------------------------------------- what the manuscript reads
def _gap_table(stem: str, title: str) -> Table:
    return Table(stem, title, (
        Column("Target", MODEL, "target"), Column("Gap Δ [95% CI]", estimate(POINTS), ("estimate", "ci_low", "ci_high")),
        Column("Real mean", POINTS, "real_mean"), Column("Filler mean", POINTS, "filler_mean"),
        Column("Clusters", COUNT, "n_clusters"), Column("Invalid", COUNT, "n_invalid")))


#: The per-target S2 variables (compliance per arm under both scorers, the gap, the verbosity ratio).
S2_KEYS = ("s2_real_rate_pct_{target}", "s2_filler_rate_pct_{target}", "s2_contextecho_real_rate_pct_{target}",
           "s2_contextecho_filler_rate_pct_{target}", "s2_gap_pp_{target}", "s2_gap_ci_{target}",
           "verbosity_ratio_{target}", "verbosity_ci_{target}")
#: The stressors of the per-stressor S2 keys (their ids, lower-case, in a key).
STRESSOR_KEYS = ("s1", "s2", "s3", "s4")
#: Per target and stressor: compliance per arm and the compliance gap.
STRESSOR_TEMPLATES = ("s2_{stressor}_real_rate_pct_{target}", "s2_{stressor}_filler_rate_pct_{target}",
                      "s2_{stressor}_gap_pp_{target}", "s2_{stressor}_gap_ci_{target}")
MANUSCRIPT = CALIBRATION + PROTOCOL + DISTRIBUTIONS + Declared(
    variables=(
        Variable("s2_{stressor}_real_rate_pct_{target}", PERCENT, stressor=STRESSOR_KEYS),
        Variable("s2_{stressor}_filler_rate_pct_{target}", PERCENT, stressor=STRESSOR_KEYS),
        Variable("s2_{stressor}_gap_pp_{target}", POINTS_PP, stressor=STRESSOR_KEYS),
        Variable("s2_{stressor}_gap_ci_{target}", interval(POINTS_PP), stressor=STRESSOR_KEYS),
        Variable("gap_{target}", POINTS), Variable("gap_ci_{target}", interval(POINTS)),
        Variable("real_mean_{target}", POINTS), Variable("filler_mean_{target}", POINTS),
        Variable("gap_clusters_{target}", COUNT),
        Variable("perm_p_{target}", P_VALUE), Variable("holm_p_{target}", P_VALUE),
        Variable("harness_gap_{target}", POINTS), Variable("gap_failures_in_{target}", POINTS),
        Variable("gap_valid_only_{target}", POINTS), Variable("n_holm_significant", COUNT),
        Variable("harness_failures", TEXT),
        Variable("gap_{score}_{target}", POINTS, score=SCORES), Variable("gap_{score}_ci_{target}", interval(POINTS),
                                                                          score=SCORES),
        Variable("unit_gap_sd_{score}_{target}", POINTS, score=SCORES), Variable("n_invalid_{score}", COUNT, score=SCORES),
        Variable("fingerprint", TEXT), Variable("fingerprint_centroid_distance", COEFFICIENT), Variable("fingerprint_pc1_pct", PERCENT),
        Variable("s2_scorer_agreement_pct", PERCENT),
        Variable("s2_real_rate_pct_{target}", PERCENT), Variable("s2_filler_rate_pct_{target}", PERCENT),
        Variable("s2_contextecho_real_rate_pct_{target}", PERCENT),
        Variable("s2_contextecho_filler_rate_pct_{target}", PERCENT),
        Variable("s2_gap_pp_{target}", POINTS_PP), Variable("s2_gap_ci_{target}", interval(POINTS_PP)),
        Variable("verbosity_ratio_{target}", COEFFICIENT), Variable("verbosity_ci_{target}", interval(COEFFICIENT)),
        Variable("verbosity_between_pct", PERCENT), Variable("verbosity_between", TEXT), Variable("models_note", TEXT),
        Variable("build_note", TEXT), Variable("limitations_note", TEXT),
        Variable("target", TEXT), Variable("targets", TEXT), Variable("judge", TEXT), Variable("n_targets", COUNT),
        Variable("n_sessions", COUNT), Variable("n_positions", COUNT), Variable("n_probes", COUNT),
        Variable("n_stressor_wordings", COUNT), Variable("window_chars", COUNT), Variable("max_tokens", COUNT),
        Variable("n_resamples", COUNT), Variable("headline", TEXT), Variable("resample_seed", COUNT),
        Variable("n_positions_run", COUNT), Variable("n_cells", COUNT), Variable("n_failed", COUNT),
        Variable("n_cached", COUNT), Variable("n_verdicts_ok", COUNT), Variable("n_verdicts_invalid", COUNT),
        Variable("invalid_pct", PERCENT), Variable("mean_prompt_tokens", WHOLE), Variable("score", TEXT),
        Variable("judge_modal_score", COUNT), Variable("judge_modal_pct", PERCENT),
        Variable("judge_distinct_scores", COUNT), Variable("judge_reading", TEXT)),
    tables=(
        _gap_table("drift_gaps", "Drift gap per target (headline battery)"),
        _gap_table("drift_gaps_all", "Drift gap per target (every probe run)"),
        Table("harness", "Per-arm bootstrap, sign-flip p and Holm (the paper's statistics)", (
            Column("Target", MODEL, "target"),
            Column("Real mean [95% CI]", estimate(POINTS), ("real_mean", "real_lo", "real_hi")),
            Column("Filler mean [95% CI]", estimate(POINTS), ("filler_mean", "filler_lo", "filler_hi")),
            Column("Gap Δ", POINTS, "gap"), Column("Gap, valid only", POINTS, "gap_valid_only", optional=True),
            Column("Gap, −1s in", POINTS, "gap_failures_in", optional=True),
            Column("Pairs", COUNT, "n_pairs"), Column("Sign-flip p", P_VALUE, "perm_p"),
            Column("Holm p", P_VALUE, "holm_p"),
            Column("Gap [95% CI], clustered", estimate(POINTS), ("gap_clustered", "gap_lo", "gap_hi"),
                   optional=True))),
        Table("category_gaps", "Drift gap per probe category", (
            Column("Target", MODEL, "target"), Column("Category", TEXT, "category", widest="self_knowledge_extra"),
            Column("Gap Δ [95% CI]", estimate(POINTS), ("estimate", "ci_low", "ci_high")),
            Column("Invalid verdicts", COUNT, "n_invalid")), index=2),
        Table("drift_gaps_by_score", "Drift gap under both judge scores", (
            Column("Target", MODEL, "target"), Column("Score", TEXT, "score", widest="expected"),
            Column("Gap Δ [95% CI]", estimate(POINTS), ("estimate", "ci_low", "ci_high")),
            Column("Real", POINTS, "real_mean"), Column("Filler", POINTS, "filler_mean"),
            Column("Unit-gap SD", POINTS, "unit_gap_sd"), Column("Invalid", COUNT, "n_invalid")),
              index=2),
        Table("fingerprint_loadings", "Fingerprint PCA loadings", (
            Column("Feature", TEXT, "feature", widest="experiential_density"), Column("PC1", COEFFICIENT, "PC1"),
            Column("PC2", COEFFICIENT, "PC2"))),
        Table("s2", "S2 compliance and verbosity", (
            Column("Target", MODEL, "target"), Column("Real", PERCENT, "real_rate_pct"),
            Column("Filler", PERCENT, "filler_rate_pct"),
            Column("Gap [95% CI]", estimate(POINTS_PP), ("gap_pp", "ci_low", "ci_high")),
            Column("Verbosity ratio [95% CI]", estimate(COEFFICIENT),
                   ("verbosity_ratio", "verbosity_ci_low", "verbosity_ci_high")),
            Column("Ours, real", PERCENT, "contextecho_real_rate_pct", optional=True),
            Column("Ours, filler", PERCENT, "contextecho_filler_rate_pct", optional=True),
            Column("Agree", PERCENT, "scorer_agreement_pct", optional=True))),
        Table("s2_by_stressor", "Stressor compliance per stressor and arm (never pooled across stressors)", (
            Column("Target", MODEL, "target"), Column("Stressor", TEXT, "stressor", widest="S2"),
            Column("Real", PERCENT, "real_rate_pct"), Column("Filler", PERCENT, "filler_rate_pct"),
            Column("Gap [95% CI]", estimate(POINTS_PP), ("gap_pp", "ci_low", "ci_high")),
            Column("n real", COUNT, "n_real"), Column("n filler", COUNT, "n_filler")), index=2),
        Table("session_verbosity", "Verbosity ratio real/filler per session (all pairs and compliant pairs)", (
            Column("Target", MODEL, "target"), Column("Session", TEXT, "session", widest="S10"),
            Column("Stressor", TEXT, "stressor", widest="S2"), Column("Ratio", COEFFICIENT, "raw_ratio"),
            Column("Pairs", COUNT, "n_raw"), Column("Ratio, both comply", COEFFICIENT, "cond_ratio"),
            Column("Compliant pairs", COUNT, "n_cond")), index=3),
        Table("verbosity_variance", "Variance decomposition of the log verbosity ratio (Table 2)", (
            Column("Target", MODEL, "target"), Column("Pairs", COUNT, "n"), Column("Sessions", COUNT, "sessions"),
            Column("σ² between", VARIANCE, "sigma2_between"), Column("σ² within", VARIANCE, "sigma2_within"),
            Column("σ² total", VARIANCE, "sigma2_total"), Column("Between", PERCENT, "between_pct"))),
    ))


# ---------------------------------------------------------------- the stages (one notebook cell each)


def _boot(p: Parameters) -> dict:
    return {"n_resamples": p.n_resamples, "seed": p.resample_seed}


def _probe_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["item_kind"] == "probe"]


def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions (labelled S1..Sn)."""
    return spine.start_judged("panel", params, paper_scale=PAPER_SCALE, declared=MANUSCRIPT, stressor_max_tokens=params.stressor_max_tokens)


def grid(run: Run) -> pd.DataFrame:
    """The grid: targets × sessions × snapshot positions × arms (real, filler, and the control
    arms asked) × probes and S2 wordings, every cell asked through the cache, probes judged (one row per cell and
    judge); the counts of its batches are printed and logged."""
    p = run.params
    cells = build(run.protocol, p, "panel", run.sessions, list(p.probes) + list(p.stressors),
                  positions=Positions(p.positions, n=p.n_positions), replicates=p.replicates,
                  stressor_max_tokens=p.stressor_max_tokens, framing=p.framing, arms=p.arms)
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens,
                          resume_judges=p.resume_judges)


def headline(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The cells the headline estimates read: the headline battery's probes, judged by the
    first judge or kept by a resumed run (every judged probe when the battery was not asked)."""
    return headline_rows(frame, run.params.judges[0], run.params.headline)


def drift_gaps(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """The drift gap Δ = filler − real per target on the headline battery, with a
    position-clustered bootstrap CI (ContextEcho Def. 1)."""
    p = run.params
    column = score_column(p.score)
    gaps = pd.DataFrame([{"target": t, **gap_row(g, cluster="position", score=column, **_boot(p))}
                         for t, g in primary.groupby("target")])
    run.out.parquet("drift_gaps", gaps)
    estimated = gaps[gaps["estimate"].notna()] if len(gaps) else gaps
    columns = {"gap_{target}": "estimate", "gap_ci_{target}": ("ci_low", "ci_high"), "real_mean_{target}": "real_mean",
               "filler_mean_{target}": "filler_mean", "gap_clusters_{target}": "n_clusters"}
    run.out.per_target(tuple(columns), by_target(estimated, columns), p.targets, reasons(gaps))
    if not len(gaps):
        return gaps
    return run.table("drift_gaps", gaps)


def forest(run: Run, gaps: pd.DataFrame) -> SavedFigure:
    """The forest plot of the drift gap per target (a target without an estimate says why)."""
    return run.figure("forest", figures.forest(
        gaps, label="target", xlabel="drift gap Δ = filler − real (0–3 rubric points)",
        reason="no probe of the headline battery was judged"))


def drift_gaps_all(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The same gap over every probe the run asked (a secondary table)."""
    p = run.params
    judged = first_judge_rows(_probe_rows(frame), p.judges[0])
    column = score_column(p.score)
    all_gaps = pd.DataFrame([{"target": t, **gap_row(g, cluster="position", score=column, **_boot(p))}
                             for t, g in judged.groupby("target")])
    run.out.parquet("drift_gaps_all", all_gaps)
    return run.table("drift_gaps_all", all_gaps)


def harness(run: Run, primary: pd.DataFrame, gaps: pd.DataFrame) -> pd.DataFrame:
    """The paper's own statistics (:func:`~.harness_forests.harness_table`): per-arm two-stage bootstrap
    means (under ``reference`` with the judge's −1 failures averaged in, as the harness's
    forest reads them; the gap on valid verdicts only beside it, ``gap_valid_only``), the
    sign-flip permutation p of the paired differences and its Holm adjustment over
    targets, beside our position-clustered interval on the gap."""
    p = run.params
    # Under reference the harness's treatment leads (its −1 verdicts averaged in, as the Fig-2
    # forest reads them), ours beside it (failures left out and counted): both labelled.
    stored = run.protocol.stored_score is not None
    failures = "in" if stored else "out"
    table = harness_table(primary, failures=failures, **_boot(p))
    if stored and len(table):
        ours = harness_table(primary, beside=True, **_boot(p)).set_index("target")
        table["gap_valid_only"] = table["target"].map(ours["gap"])
        table["n_failed_verdicts"] = table["target"].map(ours["n_failed_verdicts"])
    run.out.parquet("harness", table)
    shown = table
    if len(table):
        shown = table.merge(gaps[["target", "estimate", "ci_low", "ci_high"]].rename(
            columns={"estimate": "gap_clustered", "ci_low": "gap_lo", "ci_high": "gap_hi"}),
            on="target", how="left") if "ci_low" in gaps else table
        run.out.set(n_holm_significant=int((table["holm_p"] < 0.05).sum()))
    run.out.set(harness_failures="averaged in (the harness's forest)" if failures == "in"
                else "left out and counted (ours)")
    columns = {"perm_p_{target}": "perm_p", "holm_p_{target}": "holm_p", "harness_gap_{target}": "gap",
               **({"gap_failures_in_{target}": "gap"} if failures == "in" else {}),
               **({"gap_valid_only_{target}": "gap_valid_only"} if "gap_valid_only" in table else {})}
    run.out.per_target(("perm_p_{target}", "holm_p_{target}", "harness_gap_{target}", "gap_failures_in_{target}",
                        "gap_valid_only_{target}"), by_target(table, columns), p.targets, reasons(table))
    return run.table("harness", shown)


def category_gaps(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """The drift gap per target and probe category, position-clustered."""
    p = run.params
    column = score_column(p.score)
    categories = pd.DataFrame([{"target": t, "category": c, **gap_row(g, cluster="position", score=column,
                                                                       **_boot(p))}
                               for (t, c), g in primary.groupby(["target", "item_group"])])
    run.out.parquet("category_gaps", categories)
    return run.table("category_gaps", categories)


def trajectory(run: Run, primary: pd.DataFrame) -> SavedFigure:
    """Each arm's mean judge score at each snapshot position, pooled over sessions."""
    column = score_column(run.params.score)
    traj = (primary.groupby(["target", "position", "arm"])[column].agg(["mean", "count"])
            .reset_index())
    run.out.parquet("trajectory", traj)
    return run.figure("trajectory", figures.trajectory(
        traj, x="position", y="mean", hue="target", style="arm", style_order=run.params.arms,
        order=session_order(zip(primary["position"], primary["step"])),
        xlabel="snapshot position (agent step / harness turn)", ylabel="mean judge score (0–3)", ylim=(-0.1, 3.1),
        reason="no probe has a valid verdict"))


def gaps_by_score(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """The drift gap under both judge scores side by side: the discrete verdicts (the
    paper's) and the expected scores Σ s·p(s), with the SD of the per-unit gaps."""
    p = run.params
    rows = []
    for name, col in SCORES.items():
        for t, g in primary.groupby("target"):
            row = gap_row(g, cluster="position", score=col, **_boot(p))
            sd = unit_gaps(g, score=col)["gap"].std()
            rows.append({"target": t, "score": name, **row, "unit_gap_sd": sd})
    by_score = pd.DataFrame(rows)
    columns = {"gap_{score}_{target}": "estimate", "gap_{score}_ci_{target}": ("ci_low", "ci_high"),
               "unit_gap_sd_{score}_{target}": "unit_gap_sd"}
    for name in SCORES:
        own = by_score[(by_score["score"] == name) & by_score["estimate"].notna()] if len(by_score) else by_score
        run.out.per_target(tuple(columns), by_target(own, columns), p.targets, reasons(by_score), score=name)
    if len(by_score):
        for name, column in SCORES.items():
            run.out.put("n_invalid_{score}", int(primary[column].isna().sum()), score=name)
        by_score = by_score[[c for c in ("target", "score", "estimate", "ci_low", "ci_high", "real_mean",
                                         "filler_mean", "unit_gap_sd", "n_invalid", "note")
                             if c in by_score.columns]]
        run.out.parquet("drift_gaps_by_score", by_score)
        run.table("drift_gaps_by_score", by_score)
    return by_score


def judge_distributions(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """How each judge's score distributions were read: ok, invalid, error, discrete; flat
    ones; how often the arg-max names the parsed verdict."""
    distributions, values = distribution_report(_probe_rows(frame), run.params.judge_models()[0])
    run.out.set(**values)
    if len(distributions):
        run.out.parquet("judge_distributions", distributions)
        run.table("judge_distributions", distributions)
    return distributions


def fingerprint(run: Run, frame: pd.DataFrame) -> SavedFigure:
    """The fingerprint persona space: the protocol's six judge-free features
    (:attr:`~contextecho.echo.protocol.Protocol.fingerprint`: ours, or the harness's Fig.-1
    features under ``reference``) of every answered probe it reads features from, projected on
    two principal components, by arm (the loadings are a table)."""
    chosen = run.protocol.fingerprint
    ok = frame[(frame["status"] == "ok") & (frame["item_kind"] == "probe")].drop_duplicates("key")
    features = chosen.frame(ok["response"])
    features.index = ok.index
    features = features.dropna()  # a reply the set reads no features from (the harness's empty reply)
    ok = ok.loc[features.index]
    run.out.set(fingerprint=f"{chosen.name} ({chosen.version})")
    if len(ok) < 3:
        return run.figure("fingerprint", figures.fingerprint(
            pd.DataFrame(), None, reason=f"{len(ok)} answered probe(s); two principal components need three"))
    pca = fit_pca(features, features=chosen.features)
    coords = pca.transform(features)
    fp = pd.concat([ok[["target", "session", "position", "arm", "item"]], features], axis=1)
    fp["PC1"], fp["PC2"] = coords[:, 0], coords[:, 1]
    run.out.parquet("fingerprint", fp)
    shown = run.figure("fingerprint", figures.fingerprint(fp, pca.explained_variance_ratio[:2],
                                                          reason="no answered probe"))
    centroid = fp.groupby("arm")[["PC1", "PC2"]].mean()
    if {"real", "filler"} <= set(centroid.index):
        run.out.set(fingerprint_centroid_distance=float(np.linalg.norm(centroid.loc["real"] - centroid.loc["filler"])))
    run.out.set(fingerprint_pc1_pct=100 * float(pca.explained_variance_ratio[0]))
    run.table("fingerprint_loadings", pca.loadings().reset_index(names="feature"))
    return shown


def s2_compliance(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The S2 output contract, judge-free: compliance per arm and the compliance gap (pp),
    and the verbosity ratio real/filler; under ``reference`` our scorer beside the harness's."""
    p = run.params
    s2 = frame[frame["item_kind"] == "stressor"].copy()
    if not len(s2):
        run.out.per_target(S2_KEYS, {}, p.targets, "the run asked no S2 stressor")
        return pd.DataFrame()
    rows = []
    for t, g in s2.groupby("target"):
        g = g.assign(compliant=g["score"])
        data, dropped = complete_units(g, "compliant")
        row = {"target": t, "real_rate_pct": 100 * g.loc[g.arm == "real", "compliant"].mean(),
               "filler_rate_pct": 100 * g.loc[g.arm == "filler", "compliant"].mean()}
        try:
            rec = compliance_gap(data, cluster="position", **_boot(p))
            row.update(gap_pp=rec.estimate, ci_low=rec.ci_low, ci_high=rec.ci_high, note="")
        except StatsInputError as exc:
            row.update(gap_pp=np.nan, ci_low=np.nan, ci_high=np.nan, note=f"not estimable: {exc}")
        v = g.assign(length=g["response_chars"].where(g["response_chars"] > 0), probe=g["item"])
        try:
            ratio = verbosity_ratio(v, cluster="session", **_boot(p))
            row.update(verbosity_ratio=ratio.estimate, verbosity_ci_low=ratio.ci_low,
                       verbosity_ci_high=ratio.ci_high)
        except StatsInputError as exc:
            row.update(verbosity_ratio=np.nan, verbosity_ci_low=np.nan, verbosity_ci_high=np.nan,
                       note=(row["note"] + f" verbosity not estimable: {exc}").strip())
        rows.append(row)
    table = pd.DataFrame(rows)
    beside = run.protocol.beside_score
    if beside is not None:  # reference: our scorer beside the harness's
        both = s2[s2["verdict_status"] == "ok"]
        ours = both.groupby(["target", "arm"])[beside].mean().unstack()
        table["contextecho_real_rate_pct"] = table["target"].map(100 * ours.get("real", pd.Series(dtype=float)))
        table["contextecho_filler_rate_pct"] = table["target"].map(100 * ours.get("filler", pd.Series(dtype=float)))
        agree = (both["score"] == both[beside]).groupby(both["target"]).mean()
        table["scorer_agreement_pct"] = table["target"].map(100 * agree)
        run.out.put("s2_scorer_agreement_pct", 100 * (both["score"] == both[beside]).mean()
                    if len(both) else None, why="no S2 reply was scored by both scorers")
    columns = {"s2_real_rate_pct_{target}": "real_rate_pct", "s2_filler_rate_pct_{target}": "filler_rate_pct",
               "s2_gap_pp_{target}": "gap_pp", "s2_gap_ci_{target}": ("ci_low", "ci_high"),
               "verbosity_ratio_{target}": "verbosity_ratio",
               "verbosity_ci_{target}": ("verbosity_ci_low", "verbosity_ci_high"),
               **({"s2_contextecho_real_rate_pct_{target}": "contextecho_real_rate_pct",
                   "s2_contextecho_filler_rate_pct_{target}": "contextecho_filler_rate_pct"}
                  if "contextecho_real_rate_pct" in table else {})}
    run.out.per_target(S2_KEYS, by_target(table, columns), p.targets, reasons(table))
    run.out.parquet("s2", table)
    return run.table("s2", table)


def s2_stressors(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """Compliance per stressor and arm per target, each stressor the run asked on its own
    (:func:`stressor_compliance`; the S2 table by stressor, never pooled across stressors)."""
    p = run.params
    table = stressor_compliance(frame[frame["item_kind"] == "stressor"], **_boot(p))
    columns = {"s2_{stressor}_real_rate_pct_{target}": "real_rate_pct",
               "s2_{stressor}_filler_rate_pct_{target}": "filler_rate_pct",
               "s2_{stressor}_gap_pp_{target}": "gap_pp", "s2_{stressor}_gap_ci_{target}": ("ci_low", "ci_high")}
    for key in STRESSOR_KEYS:
        own = table[table["stressor"].str.lower() == key]
        run.out.per_target(STRESSOR_TEMPLATES, by_target(own, columns), p.targets,
                           reasons(own) if len(own) else f"the run asked no {key.upper()} stressor", stressor=key)
    run.out.parquet("s2_by_stressor", table)
    return run.table("s2_by_stressor", table)


def verbosity_by_session(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The verbosity ratio real/filler per session × target (the seed's Tables 1–2), over
    all pairs and over the pairs where both arms comply (:func:`session_verbosity`, the
    harness's S2 audit)."""
    table = session_verbosity(frame[frame["item_kind"] == "stressor"])
    run.out.parquet("session_verbosity", table)
    return run.table("session_verbosity", table)


def verbosity(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The seed's Table 2: between- vs within-session variance of the per-pair log verbosity
    ratio of the S2 cells, per target and pooled (:func:`verbosity_variance`)."""
    s2 = frame[frame["item_kind"] == "stressor"]
    variance = pd.DataFrame({"target": [], "note": []})
    if len(s2):
        variance = verbosity_variance(s2.copy())
        run.out.parquet("verbosity_variance", variance)
        if len(variance):
            last = variance.iloc[-1]  # pooled over targets (the one target's row when alone)
            if pd.notna(last["between_pct"]):
                run.out.set(verbosity_between_pct=last["between_pct"])
            run.out.set(verbosity_between=between_sentence(last, run.out.variables.get("verbosity_between_pct")))
    if "verbosity_between" not in run.out.variables:
        run.out.set(verbosity_between="The between-session share of the log verbosity ratio's variance is not "
                                      "estimable: the run asked no S2 stressor.")
    return run.table("verbosity_variance", variance)


def between_sentence(row: pd.Series, share: str | None) -> str:
    """The between-session share of the log verbosity ratio's variance (``row``: the pooled
    row of :func:`verbosity_variance`; ``share``: its manuscript value), or the plain sentence
    that it measures nothing where REML puts the between-session variance at its boundary, 0."""
    what = "the between-session share of the log verbosity ratio's variance"
    if share is None:
        return f"{what[0].upper()}{what[1:]} is not estimable: {str(row.get('note', '')).removeprefix('not estimable: ')}"
    if row["sigma2_between"] == 0:
        return measures_nothing(what, f"with {int(row['sessions'])} sessions REML puts the between-session variance at "
                                "its boundary, 0, so the share is 0% whatever the sessions do",
                                f"{PAPER_SCALE_SET} (every session of the corpus)")
    return f"{what[0].upper()}{what[1:]} is {share}."


def build_note(targets: tuple[str, ...], judges: tuple[str, ...]) -> str:
    """The abstract's sentence on what this build ran and what its numbers can say: on the
    embedded model alone, that they say nothing about capable models; else the models named."""
    if all(m == LOCAL_MODEL for m in (*targets, *judges)):
        return (f"This build runs the whole pipeline on a tiny embedded CPU model ({LOCAL_MODEL}), and none of its "
                "numbers says anything about capable models.")
    judged = f", judged by {', '.join(judges)}" if judges else ""
    tiny = (f" {LOCAL_MODEL} among them is a tiny embedded CPU model, whose numbers say nothing about capable models."
            if LOCAL_MODEL in (*targets, *judges) else "")
    return (f"This build runs the whole pipeline on {', '.join(targets)}{judged}; its numbers are about these models "
            f"and this run's sessions, positions and probes.{tiny}")


def limitations_note(targets: tuple[str, ...], judges: tuple[str, ...], written: dict) -> str:
    """The Limitations section's first sentences: what the run's models are (as :func:`build_note`)
    and what its judge is worth (the values ``written`` so far: its calibration, its failures)."""
    roles = [role for role, models in (("target", targets), ("judge", judges)) if LOCAL_MODEL in models]
    if roles:
        models = (f"The embedded {' and '.join(roles)} is a 135M-parameter model: its numbers demonstrate that every "
                  "stage of the pipeline runs and is accounted for; they are not evidence about any capable model.")
    else:
        models = (f"The targets ({', '.join(targets)}) and judges ({', '.join(judges) or 'none'}) are the ones named; "
                  "what holds for them need not hold for other models or other sessions.")
    return (f"{models} The judge is {written['judge_calibrated']}, and {written['invalid_pct']} of its verdicts were "
            "failures (the harness's −1).")


def models_note(models: tuple[str, ...]) -> str:
    """How the run's targets and judges run: the embedded model in-process, or through LiteLLM."""
    if all(m == LOCAL_MODEL for m in models):
        return (f"both SmolLM2-135M-Instruct, its 4-bit GGUF re-encoded as {WEIGHTS}, running in-process on the CPU")
    return "called through LiteLLM" + ("" if not any(m == LOCAL_MODEL for m in models) else
                                       ", but for SmolLM2-135M-Instruct, which runs in-process on the CPU")


def judge_reading(written: dict, n_valid: int) -> str:
    """What the discrete drift gap can say, given its judge (the values ``written`` so far:
    the judge's calibration, its invalid share, its modal score): nothing where the judge gave
    no valid verdict or one score only; little where it is not calibrated; the target's
    register where it is."""
    fix = f"{CAPABLE_JUDGE} (make panel JUDGE=…)"
    failures = f"{written['invalid_pct']} of the judge's verdicts were failures (the harness's −1)"
    if not n_valid:
        return measures_nothing("the discrete drift gap", f"the judge gave no valid verdict, {failures}", fix)
    if written["judge_distinct_scores"] == 1:
        return measures_nothing("the discrete drift gap", f"every one of the judge's {n_valid} valid verdicts was "
                                f"{written['judge_modal_score']}, so the gap is 0 whatever the target answered", fix)
    if written["judge_calibrated"] != "calibrated":
        return (f"The judge is not calibrated (quadratic kappa {written['judge_kappa']}): {failures}, and "
                f"{written['judge_modal_pct']} of its valid verdicts were the same score, "
                f"{written['judge_modal_score']}, so the gap says more about the judge than about the target; "
                f"{fix} is the remedy.")
    return (f"The judge is calibrated (quadratic kappa {written['judge_kappa']} on "
            f"{written['judge_calibration_n']} labelled responses), so the gap reads the target's register.")


def variables(run: Run, frame: pd.DataFrame, primary: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers (per-target ones keyed ``<key>_<target>``, the first
    target's also unsuffixed), written with the run log."""
    p = run.params
    probes_frame = _probe_rows(frame)
    s2 = frame[frame["item_kind"] == "stressor"]
    targets = run.log.batches.get("panel:targets", Counts())
    n_invalid = int((frame["verdict_status"] == "invalid").sum())
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), judge=p.judges[0] if p.judges else "none",
                n_targets=len(p.targets), n_sessions=len(run.sessions), n_positions=p.n_positions,
                n_probes=int(primary["item"].nunique()), n_stressor_wordings=int(s2["item"].nunique()),
                window_chars=p.window, max_tokens=p.max_tokens, n_resamples=p.n_resamples,
                headline=p.headline, resample_seed=p.resample_seed, n_positions_run=int(primary["position"].nunique()),
                **protocol_variables(run.log.about["protocol"]),
                n_cells=targets.calls, n_failed=targets.failed, n_cached=targets.cached,
                n_verdicts_ok=int((frame["verdict_status"] == "ok").sum()), n_verdicts_invalid=n_invalid,
                invalid_pct=100 * n_invalid / max(1, len(probes_frame)),
                mean_prompt_tokens=frame["prompt_tokens"].dropna().mean() if frame["prompt_tokens"].notna().any() else 0,
                score=p.score)
    try:
        spread = score_spread(primary["score"])
        run.out.set(judge_modal_score=spread.modal_score, judge_modal_pct=spread.modal_pct,
                    judge_distinct_scores=spread.n_distinct)
    except StatsInputError as exc:
        run.out.set(judge_modal_score=not_estimable(str(exc)), judge_modal_pct=not_estimable(str(exc)),
                    judge_distinct_scores=0)
    run.out.set(judge_reading=judge_reading(run.out.variables, int(primary["score"].notna().sum())),
                models_note=models_note((*p.targets, *p.judges)), build_note=build_note(p.targets, p.judges),
                limitations_note=limitations_note(p.targets, p.judges, run.out.variables))
    run.out.default("this run made no estimate of it (see the stage's table)", "fingerprint_centroid_distance",
                    "fingerprint_pc1_pct", "s2_scorer_agreement_pct", "verbosity_between_pct", "n_holm_significant")
    return spine.finish(run)


def calibration(run: Run) -> pd.DataFrame:
    """Before any target is asked, each judge scores responses whose scores are known, under
    this run's protocol, prompt and parser: how far its verdicts can be trusted."""
    return spine.calibrate_judges(run)


STAGES = (Stage("run", start), Stage("calibration", calibration), Stage("frame", grid), Stage("primary", headline), Stage("gaps", drift_gaps),
          Stage("forest", forest), Stage("gaps_all", drift_gaps_all), Stage("harness", harness),
          Stage("categories", category_gaps), Stage("trajectory", trajectory), Stage("by_score", gaps_by_score),
          Stage("distributions", judge_distributions), Stage("fingerprint", fingerprint),
          Stage("s2", s2_compliance), Stage("s2_stressors", s2_stressors),
          Stage("session_verbosity", verbosity_by_session), Stage("variance", verbosity), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
