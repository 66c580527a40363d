"""The panel: targets × snapshot positions × arms (real, filler) × probes, judged, plus
the judge-free surfaces (S2 stressor compliance, verbosity, the fingerprint).

Drift gap Δ = filler − real per target (ContextEcho Def. 1) with a position-clustered
bootstrap CI (the forest plot); per-category and per-position gaps; the fingerprint
projected on two principal components; S2 compliance gap (pp) and verbosity ratio.

Beside it, the statistics the paper ran (:mod:`contextecho.stats.harness`,
:func:`harness_table`): per target on the headline battery, the per-arm two-stage
bootstrap of each arm's mean, the sign-flip permutation p of the paired filler − real
differences and its Holm adjustment over targets; under the ``reference`` protocol also
the gap with the judge's −1 failures averaged in (the forest loader's treatment).
:func:`verbosity_variance` is the seed's Table 2 (between- vs within-session variance
of the per-pair log verbosity ratio of the S2 cells), per target and pooled.
Under ``reference`` S2 compliance is reported under both scorers with their agreement.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..echo.fingerprint import fingerprint_frame, fit_pca
from ..echo.reference.positions import PANEL_POSITIONS
from ..echo import probes
from ..echo.probes import FRAMINGS
from ..echo.reference.s2_requests import S2_REQUESTS
from ..echo.runner import SELF_JUDGE
from .parameters import POSITIVE, Models, NonEmpty, OneOf, count
from ..paper.outputs import not_estimable
from ..paper.show import Result, SavedFigure
from ..stats.errors import StatsInputError
from ..stats.judge_free import compliance_gap, log_verbosity_ratios, verbosity_ratio
from ..stats.drift import drift_gap
from ..stats.multiple import holm
from ..stats.variance import variance_decomposition
from ..engine.counts import Counts
from ..stats.harness import clustered_bootstrap_mean, sign_flip_p
from . import common, spine
from .common import REFERENCE_JUDGE
from .spine import Run, Stage

TITLE = "Panel: drift gap per target, per position, per category; judge-free surfaces"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o", "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"),
               "judges": (REFERENCE_JUDGE,), "n_sessions": 0, "n_positions": 12,
               "probes": ("all",), "stressors": ("S2",), "window": 30000, "max_tokens": 600,
               "stressor_max_tokens": 1024, "judge_max_tokens": 400, "n_resamples": 10_000, "resample_seed": 42,
               "protocol": "reference", "headline": "coding_self"}
#: The seed's corpus-scale grid (§3.2; no code for it at the harness commit): every
#: session, turns at each decile plus pre/post each compaction, k = 3 samples per cell at
#: the provider's default temperature, under the reference instruments (``n_positions``
#: 100 keeps every decile and compaction checkpoint of any session in the corpus).
#: Our position scheme for each panel scheme (the reference protocol reads the name itself).
OUR_POSITIONS = {"panel": "uniform", "deciles": "deciles", "late": "late"}
#: The Fig-2 forest's position order (``plotting/fig2_forest_panelwide.py:34-38``).
FOREST_POSITIONS = tuple(label for label, _ in PANEL_POSITIONS)
CORPUS_GRID = {**PAPER_SCALE, "targets": ("anthropic/claude-sonnet-4-5",), "n_sessions": 0,
               "n_positions": 100, "positions": "deciles", "replicates": 3}


#: The harness's runnable ablations beyond the panel, as parameter sets of this notebook
#: (each a run of its own; the notebook lists them): e11's instruction-override stressors
#: S1-S4 (one wording each, e11's 512 target tokens; ``experiments/e11_instruction_override/
#: run.py:228``) and e16's probe-framing ablation (Coding-Self probes asked bare, 10 samples
#: per cell, at the late position; ``experiments/e16_probe_framing_ablation/run.py:47-48``;
#: its framed arm is the panel itself).
ABLATIONS = {
    "e11 instruction-override stressors S1-S4": {
        **PAPER_SCALE, "probes": ("coding_self",), "stressors": ("S1", "S2#01", "S3", "S4"),
        "stressor_max_tokens": 512},
    "e16 probe-framing ablation (bare probes)": {
        **PAPER_SCALE, "probes": ("coding_self",), "stressors": (), "framing": "bare", "replicates": 10,
        "positions": "late", "n_positions": 1},
}


@dataclass(frozen=True)
class Parameters(common.JudgedParameters):
    n_sessions: int = 2
    n_positions: int = 3
    probes: tuple[str, ...] = ("coding_self",)
    stressors: tuple[str, ...] = ("S2#01", "S2#02")
    stressor_max_tokens: int = 32
    headline: str = "coding_self"
    positions: str = "panel"
    replicates: int = 1
    framing: str = "framed"
    resume_judges: tuple[str, ...] = ()
    s2_requests: str = "e08"

    HELP = {**common.JudgedParameters.HELP,
            "judges": "first is primary; self: each target judges its own responses (the harness's "
                      "Fig.-1 fill runners, run_fig1_sonnet45.py:81)",
            "resume_judges": "resume from the call cache: a cell whose result one of these judges stored "
                             "keeps it (not asked, not judged again); the others are asked, a stored "
                             "permanent error too, and judged by judges (the harness's runners skip the "
                             "cells on disk; with judges self, its Fig.-1 fill runners)",
            "s2_requests": "reference: the harness runner whose S2 requests are sent, e08 (its TargetClient "
                           "and provider rules) or e10 (run_xtarget_v2.py: plain strings, temperature 0, "
                           "replies stripped)",
            "n_sessions": "longest openly licensed sessions (0 for all)",
            "n_positions": "uniform snapshot positions per session (reference: the first n "
                           "named positions, start and pre/post each compaction)",
            "stressor_max_tokens": "target max tokens of S2 cells (reference: 1024)",
            "headline": "battery of the per-target headline gap (the paper's: coding_self)",
            "positions": "panel (start, pre/post each compaction), deciles (the corpus grid) or late "
                         "(reference: three turns before the end, e16's position)",
            "framing": "framed (the framing line, then the probe) or bare (e16's ablation)",
            "replicates": "samples per cell (the corpus grid: 3)",
            "probes": "probe ids or batteries (coding_self, identity, ..., all)",
            "stressors": "S2, or single wordings S2#01 ..."}
    RANGES = {**common.JudgedParameters.RANGES, "n_sessions": count(zero="all"),
              "judges": (NonEmpty(), Models(also=(SELF_JUDGE,))), "resume_judges": Models(also=(SELF_JUDGE,)),
              "s2_requests": OneOf(S2_REQUESTS.names, "S2 request rule set"),
              "n_positions": count(), "replicates": count(),
              "positions": OneOf(("panel", "deciles", "late"), "position scheme"),
              "framing": OneOf(FRAMINGS, "framing"),
              "probes": (NonEmpty(), common.PROBE_IDS), "stressors": common.STRESSOR_IDS,
              "stressor_max_tokens": POSITIVE, "headline": common.PROBE_IDS}


def harness_table(primary: pd.DataFrame, *, n_resamples: int, seed: int, failures: str = "out",
                  positions: Sequence[str] | None = None) -> pd.DataFrame:
    """Per target: each arm's mean with the harness's two-stage bootstrap interval (positions
    in step order, scores in item/replicate order), the gap, the sign-flip p of the paired
    differences (valid pairs in that order) and Holm over the targets' p-values.

    ``failures``: ``out`` bootstraps the valid verdicts only (ours); ``in`` every score the
    harness stored, its −1s included, as the Fig-2 forest's loader reads them
    (``plotting/fig2_forest_panelwide.py:109-111``; a verdict whose parse raised lost its
    cell there and is left out here); the sign-flip test pairs valid verdicts either way
    (``consolidate_12model_perm.py`` drops failures). ``positions``: the position labels to read, in that
    order (the forest's ``FOREST_POSITIONS``; default every position, in step order). Under
    ``reference`` with ``failures="out"`` the gap with the −1s averaged in is given beside
    (``gap_failures_in``)."""
    column = common.failure_column(primary, failures)
    rows = []
    for target, g in primary.groupby("target", sort=True):
        g = g.sort_values(["session", "step", "item", "replicate"], kind="stable")
        valid = g[g[column].notna()]
        arms, counts = {}, {}
        for arm in ("real", "filler"):
            a = valid[valid["arm"] == arm]
            by_position = {f"{s}:{pos}": [float(v) for v in v_[column]] for (s, _, pos), v_
                           in a.groupby(["session", "step", "position"], sort=True)}
            if positions is not None:
                labels = {key: key.split(":", 1)[1] for key in by_position}
                by_position = {key: by_position[key] for label in positions for key in by_position
                               if labels[key] == label}
            arms[arm] = clustered_bootstrap_mean(by_position, n_boot=n_resamples, seed=seed)
            counts[arm] = len(by_position)
        # The sign-flip test pairs valid verdicts only, as consolidate_12model_perm.py does.
        pairs = g[g["score"].notna()].pivot_table(index=["session", "step", "item", "replicate"], columns="arm",
                                                  values="score", aggfunc="first").dropna()
        deltas = list(pairs["filler"] - pairs["real"]) if {"real", "filler"} <= set(pairs.columns) else []
        _, p = sign_flip_p(deltas, n_resamples=n_resamples, seed=seed)
        row = {"target": target,
               "real_mean": arms["real"].mean, "real_lo": arms["real"].lo, "real_hi": arms["real"].hi,
               "filler_mean": arms["filler"].mean, "filler_lo": arms["filler"].lo,
               "filler_hi": arms["filler"].hi, "gap": arms["filler"].mean - arms["real"].mean,
               "n_real": arms["real"].n, "n_filler": arms["filler"].n,
               "n_positions_real": counts["real"], "n_positions_filler": counts["filler"],
               "n_pairs": len(deltas), "perm_p": p}
        if "reference_score" in g and failures == "out":  # the forest loader's treatment beside
            scored = g[g["reference_score"].map(lambda v: isinstance(v, (int, float)) and pd.notna(v))]
            means = scored.groupby("arm")["reference_score"].mean()
            row["gap_failures_in"] = float(means.get("filler", np.nan) - means.get("real", np.nan))
            row["n_failed_verdicts"] = int((g["verdict_status"] == "invalid").sum())
        rows.append(row)
    table = pd.DataFrame(rows)
    if len(table):
        ok = table["perm_p"].notna()
        table["holm_p"] = np.nan
        if ok.any():
            table.loc[ok, "holm_p"] = holm(list(table.loc[ok, "perm_p"])).p_adjusted
    return table


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


def gap_row(frame: pd.DataFrame, **options) -> dict:
    """drift_gap as a dict, or the reason it cannot be estimated."""
    data, dropped = common.complete_units(frame, options.get("score", "score"))
    try:
        record = drift_gap(data, **options) if options.get("kind") != "compliance" else None
        return {**record.to_dict(), "units_dropped": dropped, "note": ""}
    except StatsInputError as exc:
        return {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "units_dropped": dropped,
                "note": f"not estimable: {exc}"}


def forest_plot(gaps: pd.DataFrame, label: str, xlabel: str):
    fig, ax = plt.subplots(figsize=(6.0, 0.6 + 0.45 * len(gaps)))
    y = np.arange(len(gaps))[::-1]
    ok = gaps["estimate"].notna()
    ax.errorbar(gaps.loc[ok, "estimate"], y[ok.to_numpy()],
                xerr=[gaps.loc[ok, "estimate"] - gaps.loc[ok, "ci_low"],
                      gaps.loc[ok, "ci_high"] - gaps.loc[ok, "estimate"]],
                fmt="o", color="black", capsize=3)
    ax.axvline(0, color="grey", lw=1, ls="--")
    ax.set_yticks(y, gaps[label])
    ax.set_xlabel(xlabel)
    return fig


def headline_ids(name: str) -> set[str]:
    """The probe ids of the headline battery (or the one probe named)."""
    return {q.id for q in probes.battery(name)} if name in probes.BATTERIES else {name}




# ---------------------------------------------------------------- the stages (one notebook cell each)
GAP_COLUMNS = ["target", "estimate", "ci_low", "ci_high", "real_mean", "filler_mean", "n_clusters", "n_invalid"]


def _boot(p: Parameters) -> dict:
    return {"n_resamples": p.n_resamples, "seed": p.resample_seed}


def _probe_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["item_kind"] == "probe"]


def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions (labelled S1..Sn)."""
    return spine.start("panel", params, models=params.targets + params.judge_models(),
                       protocol=common.protocol_record(params, params.stressor_max_tokens, PAPER_SCALE),
                       sessions=lambda: common.select_sessions(params.n_sessions, protocol=params.protocol))


def grid(run: Run) -> pd.DataFrame:
    """The grid: targets × sessions × snapshot positions × arms (real, filler) × probes and
    S2 wordings, every cell asked through the cache, probes judged (one row per cell and
    judge); the counts of its batches are printed and logged."""
    p = run.params
    cells = common.build(p, "panel", run.sessions, list(p.probes) + list(p.stressors),
                         positions=OUR_POSITIONS[p.positions], k=p.n_positions, reference_positions=p.positions,
                         limit=p.n_positions, replicates=p.replicates, stressor_max_tokens=p.stressor_max_tokens,
                         framing=p.framing, s2_requests=p.s2_requests)
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens, protocol=p.protocol,
                          resume_judges=p.resume_judges)


def headline(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The cells the headline estimates read: the headline battery's probes, judged by the
    first judge or kept by a resumed run (every judged probe when the battery was not asked)."""
    p = run.params
    judged = common.first_judge_rows(_probe_rows(frame), p.judges[0])
    chosen = judged[judged["item"].isin(headline_ids(p.headline))]
    return chosen if len(chosen) else judged


def drift_gaps(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """The drift gap Δ = filler − real per target on the headline battery, with a
    position-clustered bootstrap CI (ContextEcho Def. 1)."""
    p = run.params
    column = common.score_column(p.score)
    gaps = pd.DataFrame([{"target": t, **gap_row(g, cluster="position", score=column, **_boot(p))}
                         for t, g in primary.groupby("target")])
    run.out.parquet("drift_gaps", gaps)
    values = {row["target"]: {"gap": round(float(row["estimate"]), 2),
                              "gap_ci": f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]",
                              "real_mean": round(float(row["real_mean"]), 2),
                              "filler_mean": round(float(row["filler_mean"]), 2),
                              "gap_clusters": int(row["n_clusters"])}
              for _, row in gaps.iterrows() if pd.notna(row["estimate"])}
    run.out.set(**common.per_target(values, p.targets, ("gap", "gap_ci", "real_mean", "filler_mean",
                                                        "gap_clusters"), common.reasons(gaps))[0])
    if not len(gaps):
        return gaps
    shown = gaps[GAP_COLUMNS].copy() if "real_mean" in gaps else gaps
    return run.table("drift_gaps", shown, f"Drift gap per target ({p.headline})")


def forest(run: Run, gaps: pd.DataFrame) -> SavedFigure | None:
    """The forest plot of the drift gap per target."""
    if not len(gaps):
        return None
    return run.figure("forest", forest_plot(gaps, "target", "drift gap Δ = filler − real (0–3 rubric points)"))


def drift_gaps_all(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The same gap over every probe the run asked (a secondary table)."""
    p = run.params
    judged = common.first_judge_rows(_probe_rows(frame), p.judges[0])
    column = common.score_column(p.score)
    all_gaps = pd.DataFrame([{"target": t, **gap_row(g, cluster="position", score=column, **_boot(p))}
                             for t, g in judged.groupby("target")])
    run.out.parquet("drift_gaps_all", all_gaps)
    shown = all_gaps[GAP_COLUMNS] if "real_mean" in all_gaps else all_gaps
    return run.table("drift_gaps_all", shown,
                     f"Drift gap per target (every probe run: {', '.join(p.probes)})" if len(shown) else None)


HARNESS_COLUMNS = ["target", "real_mean", "real_lo", "real_hi", "filler_mean", "filler_lo", "filler_hi", "gap",
                   "gap_valid_only", "gap_failures_in", "n_pairs", "perm_p", "holm_p", "gap_clustered", "gap_lo",
                   "gap_hi"]


def harness(run: Run, primary: pd.DataFrame, gaps: pd.DataFrame) -> pd.DataFrame:
    """The paper's own statistics (:func:`harness_table`): per-arm two-stage bootstrap
    means (under ``reference`` with the judge's −1 failures averaged in, as the harness's
    forest reads them; the gap on valid verdicts only beside it, ``gap_valid_only``), the
    sign-flip permutation p of the paired differences and its Holm adjustment over
    targets, beside our position-clustered interval on the gap."""
    p = run.params
    # Under reference the harness's treatment leads (its −1 verdicts averaged in, as the Fig-2
    # forest reads them), ours beside it (failures left out and counted): both labelled.
    failures = "in" if "reference_score" in primary else "out"
    table = harness_table(primary, failures=failures, **_boot(p))
    if failures == "in" and len(table):
        ours = harness_table(primary, **_boot(p)).set_index("target")
        table["gap_valid_only"] = table["target"].map(ours["gap"])
        table["n_failed_verdicts"] = table["target"].map(ours["n_failed_verdicts"])
    run.out.parquet("harness", table)
    shown = pd.DataFrame({"target": [], "note": []})
    values = {}
    if len(table):
        shown = table.merge(gaps[["target", "estimate", "ci_low", "ci_high"]].rename(
            columns={"estimate": "gap_clustered", "ci_low": "gap_lo", "ci_high": "gap_hi"}),
            on="target", how="left") if "ci_low" in gaps else table
        # The manuscript's table: the estimates; the counts stay in results/harness.parquet.
        shown = shown[[c for c in HARNESS_COLUMNS if c in shown.columns]]
        for _, h in table.iterrows():
            values[h["target"]] = {
                **{key: round(float(h[column]), digits) for key, column, digits in
                   (("perm_p", "perm_p", 4), ("holm_p", "holm_p", 4), ("harness_gap", "gap", 2))
                   if pd.notna(h[column])}}
            if failures == "in" and pd.notna(h["gap"]):
                values[h["target"]]["gap_failures_in"] = round(float(h["gap"]), 2)
            if "gap_valid_only" in table and pd.notna(h["gap_valid_only"]):
                values[h["target"]]["gap_valid_only"] = round(float(h["gap_valid_only"]), 2)
        run.out.set(n_holm_significant=int((table["holm_p"] < 0.05).sum()))
    run.out.set(harness_failures="averaged in (the harness's forest)" if failures == "in"
                else "left out and counted (ours)")
    run.out.set(**common.per_target(values, p.targets, ("perm_p", "holm_p", "harness_gap", "gap_failures_in",
                                                        "gap_valid_only"), common.reasons(table))[0])
    return run.table("harness", shown, "Per-arm bootstrap, sign-flip p and Holm (the paper's statistics)"
                     if len(table) else None, floatfmt=".3f")


def category_gaps(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """The drift gap per target and probe category, position-clustered."""
    p = run.params
    column = common.score_column(p.score)
    categories = pd.DataFrame([{"target": t, "category": c, **gap_row(g, cluster="position", score=column,
                                                                       **_boot(p))}
                               for (t, c), g in primary.groupby(["target", "item_group"])])
    run.out.parquet("category_gaps", categories)
    return run.table("category_gaps", categories[["target", "category", "estimate", "ci_low", "ci_high", "note"]],
                     "Drift gap per probe category")


def trajectory(run: Run, primary: pd.DataFrame) -> SavedFigure:
    """Each arm's mean judge score at each snapshot position, pooled over sessions."""
    column = common.score_column(run.params.score)
    traj = (primary.groupby(["target", "position", "arm"])[column].agg(["mean", "count"])
            .reset_index())
    run.out.parquet("trajectory", traj)
    fig, ax = plt.subplots()
    for (target, arm), g in traj.groupby(["target", "arm"]):
        ax.plot(g["position"], g["mean"], marker="o", ls="-" if arm == "real" else "--",
                label=f"{target.split('/')[-1]} · {arm}")
    ax.set_xlabel("snapshot position (agent step / harness turn)")
    ax.set_ylabel("mean judge score (0–3)")
    ax.set_ylim(-0.1, 3.1)
    ax.legend(fontsize=7)
    return run.figure("trajectory", fig)


def gaps_by_score(run: Run, primary: pd.DataFrame) -> pd.DataFrame:
    """The drift gap under both judge scores side by side: the discrete verdicts (the
    paper's) and the expected scores Σ s·p(s), with the SD of the per-unit gaps."""
    p = run.params
    rows = []
    for name, col in common.SCORES.items():
        for t, g in primary.groupby("target"):
            row = gap_row(g, cluster="position", score=col, **_boot(p))
            sd = common.unit_gaps(g, score=col)["gap"].std()
            rows.append({"target": t, "score": name, **row, "unit_gap_sd": sd})
    by_score = pd.DataFrame(rows)
    keys = [key for n in common.SCORES for key in (f"gap_{n}", f"gap_{n}_ci", f"unit_gap_sd_{n}")]
    values: dict = {}
    for _, row in by_score.iterrows():
        if pd.notna(row["estimate"]):
            values.setdefault(row["target"], {}).update({
                f"gap_{row['score']}": round(float(row["estimate"]), 2),
                f"gap_{row['score']}_ci": f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]",
                f"unit_gap_sd_{row['score']}": round(float(row["unit_gap_sd"]), 3)})
    run.out.set(**common.per_target(values, p.targets, keys, common.reasons(by_score))[0])
    if len(by_score):
        run.out.set(**{f"n_invalid_{name}": int(primary[column].isna().sum())
                       for name, column in common.SCORES.items()})
        by_score = by_score[[c for c in ("target", "score", "estimate", "ci_low", "ci_high", "real_mean",
                                         "filler_mean", "unit_gap_sd", "n_invalid", "note")
                             if c in by_score.columns]]
        run.out.parquet("drift_gaps_by_score", by_score)
        run.table("drift_gaps_by_score", by_score, "Drift gap under both judge scores")
    return by_score


def judge_distributions(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """How each judge's score distributions were read: ok, invalid, error, discrete; flat
    ones; how often the arg-max names the parsed verdict."""
    distributions, values = common.distribution_report(_probe_rows(frame), run.params.judge_models()[0])
    run.out.set(**values)
    if len(distributions):
        run.out.parquet("judge_distributions", distributions)
        run.table("judge_distributions", distributions, "How the judges' score distributions were read")
    return distributions


def fingerprint(run: Run, frame: pd.DataFrame) -> SavedFigure | None:
    """The fingerprint persona space: six judge-free features of every answered probe,
    projected on two principal components, by arm (the loadings are a table)."""
    ok = frame[(frame["status"] == "ok") & (frame["item_kind"] == "probe")].drop_duplicates("key")
    features = fingerprint_frame(ok["response"])
    features.index = ok.index
    if len(ok) < 3:
        return None
    pca = fit_pca(features)
    coords = pca.transform(features)
    fp = pd.concat([ok[["target", "session", "position", "arm", "item"]], features], axis=1)
    fp["PC1"], fp["PC2"] = coords[:, 0], coords[:, 1]
    run.out.parquet("fingerprint", fp)
    fig, ax = plt.subplots(figsize=(4.8, 3.8))
    for arm, marker in (("real", "o"), ("filler", "^")):
        g = fp[fp["arm"] == arm]
        ax.scatter(g["PC1"], g["PC2"], marker=marker, alpha=0.6, label=arm)
    ax.set_xlabel(f"PC1 ({100 * pca.explained_variance_ratio[0]:.0f}% of variance)")
    ax.set_ylabel(f"PC2 ({100 * pca.explained_variance_ratio[1]:.0f}%)")
    ax.legend()
    shown = run.figure("fingerprint", fig)
    centroid = fp.groupby("arm")[["PC1", "PC2"]].mean()
    if {"real", "filler"} <= set(centroid.index):
        run.out.set(fingerprint_centroid_distance=round(float(np.linalg.norm(
            centroid.loc["real"] - centroid.loc["filler"])), 3))
    run.out.set(fingerprint_pc1_pct=round(100 * float(pca.explained_variance_ratio[0]), 1))
    loadings = pca.loadings()
    run.out.table("fingerprint_loadings", common.markdown(loadings.reset_index(names="feature")))
    run.tables["Fingerprint PCA loadings"] = loadings
    return shown


def s2_compliance(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The S2 output contract, judge-free: compliance per arm and the compliance gap (pp),
    and the verbosity ratio real/filler; under ``reference`` our scorer beside the harness's."""
    p = run.params
    s2 = frame[frame["item_kind"] == "stressor"].copy()
    if not len(s2):
        run.out.set(**common.per_target({}, p.targets, S2_KEYS, "the run asked no S2 stressor")[0])
        return pd.DataFrame()
    rows = []
    for t, g in s2.groupby("target"):
        g = g.assign(compliant=g["score"])
        data, dropped = common.complete_units(g, "compliant")
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
    if "contextecho_score" in s2:  # reference: our scorer beside the harness's
        both = s2[s2["verdict_status"] == "ok"]
        ours = both.groupby(["target", "arm"])["contextecho_score"].mean().unstack()
        table["contextecho_real_rate_pct"] = table["target"].map(100 * ours.get("real", pd.Series(dtype=float)))
        table["contextecho_filler_rate_pct"] = table["target"].map(100 * ours.get("filler", pd.Series(dtype=float)))
        agree = (both["score"] == both["contextecho_score"]).groupby(both["target"]).mean()
        table["scorer_agreement_pct"] = table["target"].map(100 * agree)
        run.out.set(s2_scorer_agreement_pct=round(float(100 * (both["score"] == both["contextecho_score"]).mean()), 1)
                    if len(both) else not_estimable("no S2 reply was scored by both scorers"))
    values = {}
    for _, row in table.iterrows():
        own = values.setdefault(row["target"], {})
        own.update(s2_real_rate_pct=round(float(row["real_rate_pct"]), 1),
                   s2_filler_rate_pct=round(float(row["filler_rate_pct"]), 1))
        if "contextecho_real_rate_pct" in table and pd.notna(row["contextecho_real_rate_pct"]):
            own.update(s2_contextecho_real_rate_pct=round(float(row["contextecho_real_rate_pct"]), 1),
                       s2_contextecho_filler_rate_pct=round(float(row["contextecho_filler_rate_pct"]), 1))
        if pd.notna(row["gap_pp"]):
            own["s2_gap_pp"] = round(float(row["gap_pp"]), 1)
            own["s2_gap_ci"] = f"[{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
        if pd.notna(row.get("verbosity_ratio", np.nan)):
            own["verbosity_ratio"] = round(float(row["verbosity_ratio"]), 2)
            own["verbosity_ci"] = f"[{row['verbosity_ci_low']:.2f}, {row['verbosity_ci_high']:.2f}]"
    run.out.set(**common.per_target(values, p.targets, S2_KEYS, common.reasons(table))[0])
    run.out.parquet("s2", table)
    return run.table("s2", table, "S2 compliance and verbosity")


S2_KEYS = ("s2_real_rate_pct", "s2_filler_rate_pct", "s2_contextecho_real_rate_pct",
           "s2_contextecho_filler_rate_pct", "s2_gap_pp", "s2_gap_ci", "verbosity_ratio", "verbosity_ci")


def verbosity(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The seed's Table 2: between- vs within-session variance of the per-pair log verbosity
    ratio of the S2 cells, per target and pooled (:func:`verbosity_variance`)."""
    s2 = frame[frame["item_kind"] == "stressor"]
    variance = pd.DataFrame({"target": [], "note": []})
    if len(s2):
        variance = verbosity_variance(s2.copy())
        run.out.parquet("verbosity_variance", variance)
        if len(variance):
            run.tables["Variance decomposition of the log verbosity ratio (Table 2)"] = variance
            last = variance.iloc[-1]  # pooled over targets (the one target's row when alone)
            if pd.notna(last["between_pct"]):
                run.out.set(verbosity_between_pct=round(float(last["between_pct"]), 1))
    run.out.table("verbosity_variance", common.markdown(variance, floatfmt=".3f"))
    return variance


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
                **common.protocol_variables(run.log.about["protocol"]),
                n_cells=targets.calls, n_failed=targets.failed, n_cached=targets.cached,
                n_verdicts_ok=int((frame["verdict_status"] == "ok").sum()), n_verdicts_invalid=n_invalid,
                invalid_pct=round(100 * n_invalid / max(1, len(probes_frame)), 1),
                mean_prompt_tokens=int(frame["prompt_tokens"].dropna().mean())
                if frame["prompt_tokens"].notna().any() else 0,
                score=p.score, **common.judge_spread(primary["score"]))
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
          Stage("s2", s2_compliance), Stage("variance", verbosity), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
