"""Cross-judge audit: the same responses scored by two or more raters.

The responses are the panel's cells (same parameters, so every target call is answered
from the cache). Raters: each LLM judge in ``judges`` (the same rubric, cached per judge)
and each offline rater in ``raters`` (``tfidf``: nearest rubric anchor by TF-IDF cosine;
see :mod:`.raters`). For every pair of raters: exact and within-one agreement and Cohen's
kappa (unweighted, linear, quadratic) on the cells both scored; per target, the drift gap
under each rater and whether their signs agree.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..paper.outputs import Outputs
from .parameters import NonEmpty, OneOf, count
from ..paper.show import Result
from ..stats import StatsInputError, direction_agreement, drift_gap, judge_agreement, score_agreement
from . import common
from .raters import DESCRIPTIONS, RATERS, rate

TITLE = "Cross-judge audit: agreement of an LLM judge and an offline lexical rater"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o", "anthropic/claude-haiku-4-5"),
               "judges": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o", "gemini/gemini-2.5-pro"),
               "n_sessions": 0, "n_positions": 12, "probes": ("all",), "window": 30000, "max_tokens": 600,
               "judge_max_tokens": 400, "n_resamples": 10_000, "seed": 42, "protocol": "reference"}


@dataclass(frozen=True)
class Parameters(common.JudgedParameters):
    raters: tuple[str, ...] = ("tfidf",)
    n_sessions: int = 2
    n_positions: int = 3
    probes: tuple[str, ...] = ("coding_self",)

    HELP = {**common.JudgedParameters.HELP,
            "judges": "LLM judges (LiteLLM model strings)",
            "raters": "offline raters (tfidf)",
            "n_sessions": "keep equal to the panel's so its cells are reused from the cache"}
    RANGES = {**common.JudgedParameters.RANGES, "raters": OneOf(RATERS, "offline rater"),
              "n_sessions": count(zero="all"), "n_positions": count(), "probes": (NonEmpty(), common.PROBE_IDS)}


def run(p: Parameters) -> Result:
    out = Outputs.open("cross_judge", p.output_dir or None)
    out.models.update(p.targets + p.judges)
    out.protocol = common.protocol_record(p)
    transport = p.transport(out.models)
    sessions = common.select_sessions(p.n_sessions, protocol=p.protocol)
    labels = common.session_labels(sessions)
    cells = common.build(p, "panel", sessions, p.probes, positions="uniform", k=p.n_positions,
                         reference_positions="panel", limit=p.n_positions)
    frame = common.run(cells, p.judges, "cross_judge", judge_max_tokens=p.judge_max_tokens,
                       protocol=p.protocol, transport=transport)
    frame["session"] = frame["session"].map(labels)
    counts = out.count("cross_judge", frame)
    common.print_counts("cross_judge", counts)

    # One row per cell, one score column per rater.
    wide = frame.pivot_table(index="key", columns="judge_model", values=common.score_column(p.score),
                             aggfunc="first", dropna=False)
    cellinfo = frame.drop_duplicates("key").set_index("key")
    scores = cellinfo[["target", "session", "position", "arm", "item", "response"]].copy()
    for judge in p.judges:
        scores[judge] = wide[judge] if judge in wide.columns else np.nan
    ok = cellinfo["status"] == "ok"
    for rater in p.raters:
        scores[rater] = np.where(ok, rate(rater, cellinfo["response"].where(ok)), np.nan)
    scores = scores.reset_index()
    out.parquet("scores", scores)
    raters = list(p.judges) + list(p.raters)

    rows = []
    for a, b in combinations(raters, 2):
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
    agreement = pd.DataFrame(rows)
    out.parquet("agreement", agreement)
    out.table("agreement", common.markdown(agreement))

    gap_rows = []
    for rater in raters:
        for target, g in scores.groupby("target"):
            row = {"rater": rater, "target": target}
            try:
                r = drift_gap(g, score=rater, cluster="position", n_resamples=p.n_resamples, seed=p.seed)
                row.update(gap=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high, n_invalid=r.n_invalid, note="")
            except StatsInputError as exc:
                row.update(gap=np.nan, ci_low=np.nan, ci_high=np.nan, n_invalid=np.nan,
                           note=f"not estimable: {exc}")
            gap_rows.append(row)
    gaps = pd.DataFrame(gap_rows)
    out.parquet("gaps", gaps)
    direction_rows = []
    for a, b in combinations(raters, 2):
        ga = gaps[gaps["rater"] == a].set_index("target")["gap"]
        gb = gaps[gaps["rater"] == b].set_index("target")["gap"]
        both = ga.notna() & gb.notna()
        if both.any():
            d = direction_agreement(ga[both], gb[both])
            direction_rows += [{"rater_a": a, "rater_b": b, **row} for row in d.to_frame().to_dict("records")]
    directions = pd.DataFrame(direction_rows, columns=["rater_a", "rater_b", "target", "gap_a", "gap_b",
                                                       "direction"])
    out.parquet("directions", directions)
    out.table("directions", common.markdown(directions))
    out.table("raters", common.markdown(pd.DataFrame(
        [{"rater": j, "what it is": "LLM judge, 0–3 rubric (cached per judge)"} for j in p.judges]
        + [{"rater": r, "what it is": DESCRIPTIONS[r]} for r in p.raters])))

    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.2))
    if len(raters) >= 2:
        a, b = raters[0], raters[1]
        both = scores[[a, b]].dropna()
        if p.score == "expected":  # expected scores shown at their nearest rubric category
            both = both.round()
        confusion = pd.crosstab(both[a], both[b]).reindex(index=range(4), columns=range(4), fill_value=0)
        axes[0].imshow(confusion.to_numpy(), cmap="Greys")
        for (i, j), v in np.ndenumerate(confusion.to_numpy()):
            axes[0].text(j, i, str(v), ha="center", va="center", color="tab:red")
        axes[0].set_xlabel(b.split("/")[-1])
        axes[0].set_ylabel(a.split("/")[-1])
        axes[0].set_xticks(range(4))
        axes[0].set_yticks(range(4))
        axes[0].grid(False)
    shown = gaps.dropna(subset=["gap"])
    y = np.arange(len(shown))[::-1]
    axes[1].errorbar(shown["gap"], y, xerr=[shown["gap"] - shown["ci_low"], shown["ci_high"] - shown["gap"]],
                     fmt="o", color="black", capsize=3)
    axes[1].set_yticks(y, [f"{r.split('/')[-1]} · {t.split('/')[-1]}" for r, t in zip(shown["rater"], shown["target"])])
    axes[1].axvline(0, color="grey", ls="--", lw=1)
    axes[1].set_xlabel("drift gap under each rater")
    figures = [out.figure("agreement", fig)]
    plt.close(fig)

    out.set(n_cells=int(len(scores)), n_raters=len(raters), primary_judge=p.judges[0],
            second_rater=raters[1] if len(raters) > 1 else "none", n_cached=counts["cached"],
            n_failed=counts["failed"], **common.protocol_variables(out.protocol))
    if p.score == "expected" and len(agreement) and pd.notna(agreement["pearson"].iloc[0]):
        out.set(pearson=round(float(agreement["pearson"].iloc[0]), 2),
                mean_abs_diff=round(float(agreement["mean_abs_diff"].iloc[0]), 2))
    out.set(score=p.score)
    if len(agreement) and pd.notna(agreement["exact"].iloc[0]):
        first = agreement.iloc[0]
        out.set(n_both=int(first["n"]), exact_pct=round(100 * float(first["exact"]), 1),
                within_one_pct=round(100 * float(first["within_one"]), 1),
                kappa=round(float(first["kappa"]), 2), kappa_linear=round(float(first["kappa_linear"]), 2))
    for rater, tag in zip(raters[:2], ("a", "b")):
        g = gaps[(gaps["rater"] == rater)].dropna(subset=["gap"])
        if len(g):
            out.set(**{f"gap_{tag}": round(float(g["gap"].iloc[0]), 2)})
    if len(directions):
        out.set(direction=str(directions["direction"].iloc[0]))
    out.default("n/a", "pearson", "mean_abs_diff", "n_both", "exact_pct", "within_one_pct", "kappa", "kappa_linear", "gap_a", "gap_b", "direction")
    out.finish(p)
    tables = {"Pairwise agreement": agreement, "Drift gap per rater": gaps, "Direction": directions}
    return Result("cross_judge", tables, figures, out.variables, out.counts, out.directory)
