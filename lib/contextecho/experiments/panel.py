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

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..echo import fingerprint_frame, fit_pca
from ..echo import probes
from ..paper.outputs import Outputs
from .parameters import POSITIVE, NonEmpty, OneOf, count
from ..paper.show import Result
from ..stats import (StatsInputError, compliance_gap, drift_gap, holm, log_verbosity_ratios,
                     variance_decomposition, verbosity_ratio)
from ..stats.harness import clustered_bootstrap_mean, sign_flip_p
from . import common

TITLE = "Panel: drift gap per target, per position, per category; judge-free surfaces"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o", "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"),
               "judges": ("anthropic/claude-sonnet-4-5",), "n_sessions": 0, "n_positions": 12,
               "probes": ("all",), "stressors": ("S2",), "window": 30000, "max_tokens": 600,
               "stressor_max_tokens": 1024, "judge_max_tokens": 400, "n_resamples": 10_000, "seed": 42,
               "protocol": "reference", "headline": "coding_self"}
#: The seed's corpus-scale grid (§3.2; no code for it at the harness commit): every
#: session, turns at each decile plus pre/post each compaction, k = 3 samples per cell at
#: the provider's default temperature, under the reference instruments (``n_positions``
#: 100 keeps every decile and compaction checkpoint of any session in the corpus).
CORPUS_GRID = {**PAPER_SCALE, "targets": ("anthropic/claude-sonnet-4-5",), "n_sessions": 0,
               "n_positions": 100, "positions": "deciles", "replicates": 3}


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

    HELP = {**common.JudgedParameters.HELP,
            "n_sessions": "longest openly licensed sessions (0 for all)",
            "n_positions": "uniform snapshot positions per session (reference: the first n "
                           "named positions, start and pre/post each compaction)",
            "stressor_max_tokens": "target max tokens of S2 cells (reference: 1024)",
            "headline": "battery of the per-target headline gap (the paper's: coding_self)",
            "positions": "panel (start, pre/post each compaction) or deciles (the corpus grid)",
            "replicates": "samples per cell (the corpus grid: 3)",
            "probes": "probe ids or batteries (coding_self, identity, ..., all)",
            "stressors": "S2, or single wordings S2#01 ..."}
    RANGES = {**common.JudgedParameters.RANGES, "n_sessions": count(zero="all"),
              "n_positions": count(), "replicates": count(),
              "positions": OneOf(("panel", "deciles"), "position scheme"),
              "probes": (NonEmpty(), common.PROBE_IDS), "stressors": common.STRESSOR_IDS,
              "stressor_max_tokens": POSITIVE, "headline": common.PROBE_IDS}


def harness_table(primary: pd.DataFrame, *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Per target: each arm's mean with the harness's two-stage bootstrap interval (positions
    in step order, scores in item/replicate order), the gap, the sign-flip p of the paired
    differences (valid pairs in that order) and Holm over the targets' p-values."""
    rows = []
    for target, g in primary.groupby("target", sort=True):
        g = g.sort_values(["session", "step", "item", "replicate"], kind="stable")
        valid = g[g["score"].notna()]
        arms = {}
        for arm in ("real", "filler"):
            a = valid[valid["arm"] == arm]
            by_position = {f"{s}:{pos}": list(v["score"]) for (s, _, pos), v
                           in a.groupby(["session", "step", "position"], sort=True)}
            arms[arm] = clustered_bootstrap_mean(by_position, n_boot=n_resamples, seed=seed)
        pairs = valid.pivot_table(index=["session", "step", "item", "replicate"], columns="arm",
                                  values="score", aggfunc="first").dropna()
        deltas = list(pairs["filler"] - pairs["real"]) if {"real", "filler"} <= set(pairs.columns) else []
        _, p = sign_flip_p(deltas, n_resamples=n_resamples, seed=seed)
        row = {"target": target,
               "real_mean": arms["real"].mean, "real_lo": arms["real"].lo, "real_hi": arms["real"].hi,
               "filler_mean": arms["filler"].mean, "filler_lo": arms["filler"].lo,
               "filler_hi": arms["filler"].hi, "gap": arms["filler"].mean - arms["real"].mean,
               "n_pairs": len(deltas), "perm_p": p}
        if "reference_score" in g:  # the forest loader's treatment: every int, −1 included
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


def headline_ids(name: str) -> set[str]:
    """The probe ids of the headline battery (or the one probe named)."""
    return {q.id for q in probes.battery(name)} if name in probes.BATTERIES else {name}


def run(p: Parameters) -> Result:
    out = Outputs.open("panel", p.output_dir or None)
    out.models.update(p.targets + p.judges)
    out.protocol = common.protocol_record(p, p.stressor_max_tokens)
    transport = p.transport(out.models)
    sessions = common.select_sessions(p.n_sessions, protocol=p.protocol)
    labels = common.session_labels(sessions)
    cells = common.build(p, "panel", sessions, list(p.probes) + list(p.stressors),
                         positions="uniform" if p.positions == "panel" else "deciles",
                         k=p.n_positions, reference_positions=p.positions, limit=p.n_positions,
                         replicates=p.replicates, stressor_max_tokens=p.stressor_max_tokens)
    frame = common.run(cells, p.judges, "panel", judge_max_tokens=p.judge_max_tokens,
                       protocol=p.protocol, transport=transport)
    frame["session"] = frame["session"].map(labels)
    counts = out.count("panel", frame)
    common.print_counts("panel", counts)
    out.parquet("cells", frame)

    probes_frame = frame[frame["item_kind"] == "probe"]
    judged = probes_frame[probes_frame["judge_model"] == p.judges[0]] if p.judges else probes_frame.iloc[0:0]
    headline = judged[judged["item"].isin(headline_ids(p.headline))]
    primary = headline if len(headline) else judged
    column = common.score_column(p.score)
    boot = {"n_resamples": p.n_resamples, "seed": p.seed}
    rows = [{"target": t, **gap_row(g, cluster="position", score=column, **boot)}
            for t, g in primary.groupby("target")]
    gaps = pd.DataFrame(rows)
    out.parquet("drift_gaps", gaps)
    all_rows = [{"target": t, **gap_row(g, cluster="position", score=column, **boot)}
                for t, g in judged.groupby("target")]
    all_gaps = pd.DataFrame(all_rows)
    out.parquet("drift_gaps_all", all_gaps)
    harness = harness_table(primary, **{"n_resamples": p.n_resamples, "seed": p.seed})
    out.parquet("harness", harness)
    probes = probes_frame  # every probe row (all judges), as before
    tables = {}
    if len(gaps):
        fig = forest(gaps, "target", "drift gap Δ = filler − real (0–3 rubric points)")
        out.figures_list = [out.figure("forest", fig)]
        plt.close(fig)
        show = gaps[["target", "estimate", "ci_low", "ci_high", "real_mean", "filler_mean",
                     "n_clusters", "n_invalid"]].copy() if "real_mean" in gaps else gaps
        out.table("drift_gaps", common.markdown(show))
        tables[f"Drift gap per target ({p.headline})"] = show
    all_show = all_gaps[["target", "estimate", "ci_low", "ci_high", "real_mean", "filler_mean",
                         "n_clusters", "n_invalid"]] if "real_mean" in all_gaps else all_gaps
    out.table("drift_gaps_all", common.markdown(all_show))
    if len(all_show):
        tables[f"Drift gap per target (every probe run: {', '.join(p.probes)})"] = all_show
    harness_show = pd.DataFrame({"target": [], "note": []})
    if len(harness):
        harness_show = harness.merge(gaps[["target", "estimate", "ci_low", "ci_high"]].rename(
            columns={"estimate": "gap_clustered", "ci_low": "gap_lo", "ci_high": "gap_hi"}),
            on="target", how="left") if "ci_low" in gaps else harness
        tables["Per-arm bootstrap, sign-flip p and Holm (the paper's statistics)"] = harness_show
    out.table("harness", common.markdown(harness_show, floatfmt=".3f"))

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
    ax.set_xlabel("snapshot position (agent step / harness turn)")
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
    variance = pd.DataFrame({"target": [], "note": []})
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
        if "contextecho_score" in s2:  # reference: our scorer beside the harness's
            both = s2[s2["verdict_status"] == "ok"]
            ours = both.groupby(["target", "arm"])["contextecho_score"].mean().unstack()
            s2_table["contextecho_real_rate_pct"] = s2_table["target"].map(100 * ours.get("real", pd.Series(dtype=float)))
            s2_table["contextecho_filler_rate_pct"] = s2_table["target"].map(100 * ours.get("filler", pd.Series(dtype=float)))
            agree = (both["score"] == both["contextecho_score"]).groupby(both["target"]).mean()
            s2_table["scorer_agreement_pct"] = s2_table["target"].map(100 * agree)
            s2_vars["s2_scorer_agreement_pct"] = round(float(100 * (both["score"] == both["contextecho_score"]).mean()), 1) \
                if len(both) else "n/a"
        variance = verbosity_variance(s2)
        out.parquet("verbosity_variance", variance)
        if len(variance):
            tables["Variance decomposition of the log verbosity ratio (Table 2)"] = variance
            last = variance.iloc[-1]
            if pd.notna(last["between_pct"]):
                s2_vars["verbosity_between_pct"] = round(float(last["between_pct"]), 1)
        out.parquet("s2", s2_table)
        out.table("s2", common.markdown(s2_table))
        tables["S2 compliance and verbosity"] = s2_table
        first = s2_table.iloc[0]
        s2_vars.update(s2_real_rate_pct=round(float(first["real_rate_pct"]), 1),
                       s2_filler_rate_pct=round(float(first["filler_rate_pct"]), 1))
        if "contextecho_real_rate_pct" in s2_table and pd.notna(first["contextecho_real_rate_pct"]):
            s2_vars.update(s2_contextecho_real_rate_pct=round(float(first["contextecho_real_rate_pct"]), 1),
                           s2_contextecho_filler_rate_pct=round(float(first["contextecho_filler_rate_pct"]), 1))
        if pd.notna(first["gap_pp"]):
            s2_vars["s2_gap_pp"] = round(float(first["gap_pp"]), 1)
            s2_vars["s2_gap_ci"] = f"[{first['ci_low']:.1f}, {first['ci_high']:.1f}]"
        if pd.notna(first.get("verbosity_ratio", np.nan)):
            s2_vars["verbosity_ratio"] = round(float(first["verbosity_ratio"]), 2)
            s2_vars["verbosity_ci"] = f"[{first['verbosity_ci_low']:.2f}, {first['verbosity_ci_high']:.2f}]"

    out.table("verbosity_variance", common.markdown(variance, floatfmt=".3f"))

    first_gap = gaps.iloc[0] if len(gaps) else None
    out.set(target=p.targets[0], judge=p.judges[0] if p.judges else "none",
            n_targets=len(p.targets), n_sessions=len(sessions), n_positions=p.n_positions,
            n_probes=int(primary["item"].nunique()), n_stressor_wordings=int(s2["item"].nunique()),
            window_chars=p.window, max_tokens=p.max_tokens, n_resamples=p.n_resamples,
            headline=p.headline, seed=p.seed, n_positions_run=int(primary["position"].nunique()),
            **common.protocol_variables(out.protocol),
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
    if len(harness):
        h = harness.iloc[0]
        out.set(perm_p=round(float(h["perm_p"]), 4) if pd.notna(h["perm_p"]) else "n/a",
                holm_p=round(float(h["holm_p"]), 4) if pd.notna(h["holm_p"]) else "n/a",
                harness_gap=round(float(h["gap"]), 2) if pd.notna(h["gap"]) else "n/a",
                n_holm_significant=int((harness["holm_p"] < 0.05).sum()))
        if "gap_failures_in" in harness and pd.notna(h["gap_failures_in"]):
            out.set(gap_failures_in=round(float(h["gap_failures_in"]), 2))
    out.default("n/a", *(key for n in common.SCORES for key in (f"gap_{n}", f"gap_{n}_ci", f"unit_gap_sd_{n}")))
    out.default("n/a", "gap", "gap_ci", "real_mean", "filler_mean", "gap_clusters", "s2_gap_pp", "s2_gap_ci", "verbosity_ratio", "verbosity_ci", "fingerprint_centroid_distance", "fingerprint_pc1_pct", "s2_real_rate_pct", "s2_filler_rate_pct", "perm_p", "holm_p",
                "harness_gap", "gap_failures_in", "s2_scorer_agreement_pct",
                "s2_contextecho_real_rate_pct", "s2_contextecho_filler_rate_pct",
                "verbosity_between_pct", "n_holm_significant")
    out.finish(p)
    return Result("panel", tables, figures, out.variables, out.counts, out.directory)
