"""The panel: targets × snapshot positions × arms (real, filler) × probes, judged, plus
the judge-free surfaces (S2 stressor compliance, verbosity, the fingerprint).

Drift gap Δ = filler − real per target (ContextEcho Def. 1) with a position-clustered
bootstrap CI (the forest plot); per-category and per-position gaps; the fingerprint
projected on two principal components; S2 compliance gap (pp) and verbosity ratio.
"""
from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..instruments import build_cells, fingerprint_frame, fit_pca
from ..notebooks.outputs import Outputs
from ..notebooks.parameters import NonEmpty, count
from ..notebooks.show import Result
from ..stats import StatsInputError, compliance_gap, drift_gap, verbosity_ratio
from . import common

TITLE = "Panel: drift gap per target, per position, per category; judge-free surfaces"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o", "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"),
               "judges": ("anthropic/claude-sonnet-4-5",), "n_sessions": 0, "n_positions": 12,
               "probes": ("all",), "stressors": ("S2",), "window": 30000, "max_tokens": 300, "judge_max_tokens": 64}


@dataclass(frozen=True)
class Parameters(common.JudgedParameters):
    n_sessions: int = 3
    n_positions: int = 3
    probes: tuple[str, ...] = ("coding_self",)
    stressors: tuple[str, ...] = ("S2#01", "S2#02")

    HELP = {**common.JudgedParameters.HELP,
            "n_sessions": "longest openly licensed sessions (0 for all)",
            "n_positions": "uniform snapshot positions per session",
            "probes": "probe ids or batteries (coding_self, identity, ..., all)",
            "stressors": "S2, or single wordings S2#01 ..."}
    RANGES = {**common.JudgedParameters.RANGES, "n_sessions": count(zero="all"), "n_positions": count(),
              "probes": (NonEmpty(), common.PROBE_IDS), "stressors": common.STRESSOR_IDS}


def complete_units(frame: pd.DataFrame, score: str = "score") -> tuple[pd.DataFrame, int]:
    """Keep (session, position) units with a valid score in both arms; count the rest."""
    valid = frame[frame[score].notna()]
    arms = valid.groupby(["session", "position"])["arm"].nunique()
    keep = arms[arms == 2].index
    units = frame.set_index(["session", "position"]).index
    dropped = frame.groupby(["session", "position"]).ngroups - len(keep)
    return frame[units.isin(keep)], int(dropped)


def gap_row(frame: pd.DataFrame, **options) -> dict:
    """drift_gap as a dict, or the reason it cannot be estimated."""
    data, dropped = complete_units(frame, options.get("score", "score"))
    try:
        record = drift_gap(data, **options) if options.get("kind") != "compliance" else None
        return {**record.to_dict(), "units_dropped": dropped, "note": ""}
    except StatsInputError as exc:
        return {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "units_dropped": dropped,
                "note": f"not estimable: {exc}"}


def forest(gaps: pd.DataFrame, label: str, xlabel: str):
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


def run(p: Parameters) -> Result:
    out = Outputs.open("panel", p.output_dir or None)
    out.models.update(p.targets + p.judges)
    sessions = common.select_sessions(p.n_sessions)
    labels = common.session_labels(sessions)
    params = {"temperature": p.temperature, "max_tokens": p.max_tokens}
    cells = build_cells("panel", list(p.targets), sessions, positions="uniform", k=p.n_positions,
                        arms=["real", "filler"], items=list(p.probes) + list(p.stressors),
                        window=p.window, params=params)
    frame = common.run(cells, p.judges, "panel", judge_max_tokens=p.judge_max_tokens)
    frame["session"] = frame["session"].map(labels)
    counts = out.count("panel", frame)
    common.print_counts("panel", counts)
    out.parquet("cells", frame)

    probes = frame[frame["item_kind"] == "probe"]
    primary = probes[probes["judge_model"] == p.judges[0]] if p.judges else probes.iloc[0:0]
    column = common.score_column(p.score)
    boot = {"n_resamples": p.n_resamples, "seed": p.seed}
    rows = [{"target": t, **gap_row(g, cluster="position", score=column, **boot)}
            for t, g in primary.groupby("target")]
    gaps = pd.DataFrame(rows)
    out.parquet("drift_gaps", gaps)
    tables = {}
    if len(gaps):
        fig = forest(gaps, "target", "drift gap Δ = filler − real (0–3 rubric points)")
        out.figures_list = [out.figure("forest", fig)]
        plt.close(fig)
        show = gaps[["target", "estimate", "ci_low", "ci_high", "real_mean", "filler_mean",
                     "n_clusters", "n_invalid"]].copy() if "real_mean" in gaps else gaps
        out.table("drift_gaps", common.markdown(show))
        tables["Drift gap per target"] = show

    # Per category (all targets pooled per target-category pair), position-clustered.
    cat_rows = [{"target": t, "category": c, **gap_row(g, cluster="position", score=column, **boot)}
                for (t, c), g in primary.groupby(["target", "item_group"])]
    categories = pd.DataFrame(cat_rows)
    out.parquet("category_gaps", categories)
    cat_show = categories[["target", "category", "estimate", "ci_low", "ci_high", "note"]]
    out.table("category_gaps", common.markdown(cat_show))
    tables["Drift gap per probe category"] = cat_show

    # Per position: arm means (the trajectory) and the per-position gap (cell bootstrap).
    traj = (primary.groupby(["target", "position", "arm"])[column].agg(["mean", "count"])
            .reset_index())
    out.parquet("trajectory", traj)
    fig, ax = plt.subplots()
    for (target, arm), g in traj.groupby(["target", "arm"]):
        ax.plot(g["position"], g["mean"], marker="o", ls="-" if arm == "real" else "--",
                label=f"{target.split('/')[-1]} · {arm}")
    ax.set_xlabel("snapshot position (uniform over the session)")
    ax.set_ylabel("mean judge score (0–3)")
    ax.set_ylim(-0.1, 3.1)
    ax.legend(fontsize=7)
    figures = [out.figure("trajectory", fig)]
    plt.close(fig)
    if len(gaps):
        figures.insert(0, out.directory / "figures" / "forest.png")

    # Both judge scores side by side (the chosen one above): discrete verdicts, expected scores.
    both_rows, score_vars = [], {}
    for name, col in common.SCORES.items():
        for t, g in primary.groupby("target"):
            row = gap_row(g, cluster="position", score=col, **boot)
            sd = common.unit_gaps(g, score=col)["gap"].std()
            both_rows.append({"target": t, "score": name, **row, "unit_gap_sd": sd})
    by_score = pd.DataFrame(both_rows)
    if len(by_score):
        by_score = by_score[[c for c in ("target", "score", "estimate", "ci_low", "ci_high", "real_mean",
                                         "filler_mean", "unit_gap_sd", "n_invalid", "note")
                             if c in by_score.columns]]
        out.parquet("drift_gaps_by_score", by_score)
        out.table("drift_gaps_by_score", common.markdown(by_score))
        tables["Drift gap under both judge scores"] = by_score
        for name in common.SCORES:
            first = by_score[by_score["score"] == name].iloc[0]
            if pd.notna(first["estimate"]):
                score_vars[f"gap_{name}"] = round(float(first["estimate"]), 2)
                score_vars[f"gap_{name}_ci"] = f"[{first['ci_low']:.2f}, {first['ci_high']:.2f}]"
                score_vars[f"unit_gap_sd_{name}"] = round(float(first["unit_gap_sd"]), 3)
            score_vars[f"n_invalid_{name}"] = int(primary[common.SCORES[name]].isna().sum())
    distributions, distribution_vars = common.distribution_report(probes, p.judges[0])
    if len(distributions):
        out.parquet("judge_distributions", distributions)
        out.table("judge_distributions", common.markdown(distributions))
        tables["How the judges' score distributions were read"] = distributions

    # Fingerprint persona space: six judge-free features, PCA, coloured by arm.
    ok = frame[(frame["status"] == "ok") & (frame["item_kind"] == "probe")].drop_duplicates("key")
    features = fingerprint_frame(ok["response"])
    features.index = ok.index
    fp_vars = {}
    if len(ok) >= 3:
        pca = fit_pca(features)
        coords = pca.transform(features)
        fp = pd.concat([ok[["target", "session", "position", "arm", "item"]], features], axis=1)
        fp["PC1"], fp["PC2"] = coords[:, 0], coords[:, 1]
        out.parquet("fingerprint", fp)
        fig, ax = plt.subplots(figsize=(4.8, 3.8))
        for arm, marker in (("real", "o"), ("filler", "^")):
            g = fp[fp["arm"] == arm]
            ax.scatter(g["PC1"], g["PC2"], marker=marker, alpha=0.6, label=arm)
        ax.set_xlabel(f"PC1 ({100 * pca.explained_variance_ratio[0]:.0f}% of variance)")
        ax.set_ylabel(f"PC2 ({100 * pca.explained_variance_ratio[1]:.0f}%)")
        ax.legend()
        figures.append(out.figure("fingerprint", fig))
        plt.close(fig)
        centroid = fp.groupby("arm")[["PC1", "PC2"]].mean()
        if {"real", "filler"} <= set(centroid.index):
            fp_vars["fingerprint_centroid_distance"] = round(float(np.linalg.norm(
                centroid.loc["real"] - centroid.loc["filler"])), 3)
        fp_vars["fingerprint_pc1_pct"] = round(100 * float(pca.explained_variance_ratio[0]), 1)
        loadings = pca.loadings()
        out.table("fingerprint_loadings", common.markdown(loadings.reset_index(names="feature")))
        tables["Fingerprint PCA loadings"] = loadings

    # S2 compliance (judge-free, 0/1 scorer) and the verbosity ratio real/filler.
    s2 = frame[frame["item_kind"] == "stressor"].copy()
    s2_vars = {}
    if len(s2):
        s2_rows = []
        for t, g in s2.groupby("target"):
            g = g.assign(compliant=g["score"])
            data, dropped = complete_units(g, "compliant")
            row = {"target": t, "real_rate_pct": 100 * g.loc[g.arm == "real", "compliant"].mean(),
                   "filler_rate_pct": 100 * g.loc[g.arm == "filler", "compliant"].mean()}
            try:
                rec = compliance_gap(data, cluster="position", **boot)
                row.update(gap_pp=rec.estimate, ci_low=rec.ci_low, ci_high=rec.ci_high, note="")
            except StatsInputError as exc:
                row.update(gap_pp=np.nan, ci_low=np.nan, ci_high=np.nan, note=f"not estimable: {exc}")
            v = g.assign(length=g["response_chars"].where(g["response_chars"] > 0), probe=g["item"])
            try:
                ratio = verbosity_ratio(v, cluster="session", **boot)
                row.update(verbosity_ratio=ratio.estimate, verbosity_ci_low=ratio.ci_low,
                           verbosity_ci_high=ratio.ci_high)
            except StatsInputError as exc:
                row.update(verbosity_ratio=np.nan, verbosity_ci_low=np.nan, verbosity_ci_high=np.nan,
                           note=(row["note"] + f" verbosity not estimable: {exc}").strip())
            s2_rows.append(row)
        s2_table = pd.DataFrame(s2_rows)
        out.parquet("s2", s2_table)
        out.table("s2", common.markdown(s2_table))
        tables["S2 compliance and verbosity"] = s2_table
        first = s2_table.iloc[0]
        s2_vars = {"s2_real_rate_pct": round(float(first["real_rate_pct"]), 1),
                   "s2_filler_rate_pct": round(float(first["filler_rate_pct"]), 1)}
        if pd.notna(first["gap_pp"]):
            s2_vars["s2_gap_pp"] = round(float(first["gap_pp"]), 1)
            s2_vars["s2_gap_ci"] = f"[{first['ci_low']:.1f}, {first['ci_high']:.1f}]"
        if pd.notna(first.get("verbosity_ratio", np.nan)):
            s2_vars["verbosity_ratio"] = round(float(first["verbosity_ratio"]), 2)
            s2_vars["verbosity_ci"] = f"[{first['verbosity_ci_low']:.2f}, {first['verbosity_ci_high']:.2f}]"

    first_gap = gaps.iloc[0] if len(gaps) else None
    out.set(target=p.targets[0], judge=p.judges[0] if p.judges else "none",
            n_targets=len(p.targets), n_sessions=len(sessions), n_positions=p.n_positions,
            n_probes=int(primary["item"].nunique()), n_stressor_wordings=int(s2["item"].nunique()),
            window_chars=p.window, max_tokens=p.max_tokens, n_resamples=p.n_resamples,
            n_cells=counts["cells"], n_failed=counts["failed"], n_cached=counts["cached"],
            n_verdicts_ok=counts.get("verdicts_ok", 0),
            n_verdicts_invalid=counts.get("verdicts_invalid", 0),
            invalid_pct=round(100 * counts.get("verdicts_invalid", 0)
                              / max(1, len(probes)), 1),
            mean_prompt_tokens=int(frame["prompt_tokens"].dropna().mean())
            if frame["prompt_tokens"].notna().any() else 0,
            score=p.score, **score_vars, **distribution_vars,
            **s2_vars, **fp_vars, **common.judge_spread(primary["score"]))
    if first_gap is not None and pd.notna(first_gap["estimate"]):
        out.set(gap=round(float(first_gap["estimate"]), 2),
                gap_ci=f"[{first_gap['ci_low']:.2f}, {first_gap['ci_high']:.2f}]",
                real_mean=round(float(first_gap["real_mean"]), 2),
                filler_mean=round(float(first_gap["filler_mean"]), 2),
                gap_clusters=int(first_gap["n_clusters"]))
    out.default("n/a", *(key for n in common.SCORES for key in (f"gap_{n}", f"gap_{n}_ci", f"unit_gap_sd_{n}")))
    out.default("n/a", "gap", "gap_ci", "real_mean", "filler_mean", "gap_clusters", "s2_gap_pp", "s2_gap_ci", "verbosity_ratio", "verbosity_ci", "fingerprint_centroid_distance", "fingerprint_pc1_pct", "s2_real_rate_pct", "s2_filler_rate_pct")
    out.finish(p)
    return Result("panel", tables, figures, out.variables, out.counts, out.directory)
