"""Anchor ablations: does one short exchange restore the assistant register?

On the real prefix at a late snapshot of each session, every intervention (A-anchor and
its ablations V0-only, V2-only, the 200-token anchor, placebos, the sandwich, goal
re-injection) is compared with no intervention: the effect is mean(score with the
intervention) − mean(score without) per (session, snapshot, probe), averaged, with a
bootstrap CI that resamples probes (the anchor forest); a pair without a valid verdict
under either condition is left out and counted. The same interventions are scored on the contract
surface (S2 wordings and the hardened contracts: compliance, judge-free). Decay: the
A-anchor inserted ``distance`` session messages before the probe.
"""
from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..echo import INTERVENTIONS, build_cells
from ..paper.outputs import Outputs
from .parameters import NON_NEGATIVE, Includes, NonEmpty, OneOf, count
from ..paper.show import Result
from ..sessions import Position
from ..stats import StatsInputError, drift_gap
from . import common

TITLE = "Anchor ablations: A-anchor vs its parts, placebos, sandwich, goal re-injection; decay"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o"),
               "judges": ("anthropic/claude-sonnet-4-5",), "n_sessions": 3,
               "interventions": ("none", "a_anchor", "v0_only", "v2_only", "a_anchor_200", "placebo_anchor",
                                 "placebo_iso_notes", "placebo_iso_recipe", "sandwich", "goal_reinjection",
                                 "goal_reinjection_c30"),
               "probes": ("all",), "contracts": ("S2", "hardened"), "distances": (0, 10, 50, 200),
               "window": 30000, "max_tokens": 300}


@dataclass(frozen=True)
class Parameters(common.JudgedParameters):
    n_sessions: int = 2
    interventions: tuple[str, ...] = ("none", "a_anchor", "v0_only", "v2_only", "placebo_anchor",
                                      "sandwich", "goal_reinjection")
    probes: tuple[str, ...] = ("C01", "C03")
    contracts: tuple[str, ...] = ("S2#01", "C1_csv")
    distances: tuple[int, ...] = (0, 8)
    # The interventions edit our chat-turn prefixes; the reference harness defines none on
    # its one-blob prefix, so this experiment runs under our protocol only.
    protocol: str = "contextecho"

    HELP = {**common.JudgedParameters.HELP,
            "protocol": "contextecho only: the reference harness has no intervention on its prefix",
            "interventions": "none is the control and must be listed",
            "contracts": "S2, S2#01, hardened, C1_csv ... (scored, no judge)",
            "distances": "session messages between the A-anchor and the probe (decay)"}
    RANGES = {**common.JudgedParameters.RANGES, "n_sessions": count(zero="all"),
              "interventions": (NonEmpty(), Includes("none", "the control"),
                                OneOf(INTERVENTIONS.names, "intervention")),
              "probes": (NonEmpty(), common.PROBE_IDS), "contracts": (NonEmpty(), common.CONTRACT_IDS),
              "distances": NON_NEGATIVE, "protocol": OneOf(("contextecho",), "protocol for interventions")}


def effect_rows(frame: pd.DataFrame, control: str, p: Parameters, scale: float = 1.0,
                score: str = "score") -> pd.DataFrame:
    """Per target and intervention: mean ``score`` with − without (``control``), unit-paired."""
    rows = []
    for (target, iv), g in frame[frame["intervention"] != control].groupby(["target", "intervention"]):
        both = pd.concat([frame[(frame["target"] == target) & (frame["intervention"] == control)], g])
        unit = ["session", "position", "item"]
        valid = both[both[score].notna()].groupby(unit)["intervention"].nunique()
        keep = valid[valid == 2].index
        units = both.set_index(unit).index
        row = {"target": target, "intervention": iv,
               "units_dropped": int(both.groupby(unit).ngroups - len(keep))}
        both = both[units.isin(keep)]
        try:
            r = drift_gap(both, arm="intervention", filler_arm=iv, real_arm=control,
                          unit=tuple(unit), cluster="item", score=score,
                          n_resamples=p.n_resamples, seed=p.seed, scale=scale)
            row.update(estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                       with_mean=r.filler_mean, control_mean=r.real_mean, n_units=r.n_units, note="")
        except StatsInputError as exc:
            row.update(estimate=np.nan, ci_low=np.nan, ci_high=np.nan, with_mean=np.nan,
                       control_mean=np.nan, n_units=0, note=f"not estimable: {exc}")
        rows.append(row)
    return pd.DataFrame(rows)


def run(p: Parameters) -> Result:
    out = Outputs.open("anchor_ablations", p.output_dir or None)
    out.models.update(p.targets + p.judges)
    out.protocol = common.protocol_record(p)
    transport = p.transport(out.models)
    sessions = common.select_sessions(p.n_sessions)
    labels = common.session_labels(sessions)
    late = {s.session_id: (Position(s.n_agent_steps, "last", "steps"),) for s in sessions}
    params = {"temperature": p.temperature, "max_tokens": p.max_tokens}
    cells = build_cells("anchor_ablations", list(p.targets), sessions, positions=late, arms=["real"],
                        interventions=list(p.interventions), items=list(p.probes) + list(p.contracts),
                        window=p.window, params=params)
    for d in p.distances:
        if d > 0:
            cells += build_cells("anchor_decay", list(p.targets), sessions, positions=late, arms=["real"],
                                 interventions=["a_anchor"], items=list(p.probes), window=p.window,
                                 params=params, distance=d)
    frame = common.run(cells, p.judges, "anchor_ablations", judge_max_tokens=p.judge_max_tokens,
                       protocol=p.protocol, transport=transport)
    frame["session"] = frame["session"].map(labels)
    counts = out.count("anchor_ablations", frame)
    common.print_counts("anchor_ablations", counts)
    out.parquet("cells", frame)

    main = frame[frame["experiment"] == "anchor_ablations"]
    probes = main[(main["item_kind"] == "probe") & (main["judge_model"] == p.judges[0])]
    effects = effect_rows(probes, "none", p, score=common.score_column(p.score))
    by_score = pd.concat([effect_rows(probes, "none", p, score=column).assign(score=name)
                          for name, column in common.SCORES.items()], ignore_index=True)
    out.parquet("effects", effects)
    out.parquet("effects_by_score", by_score)
    if len(by_score):
        out.table("effects_by_score", common.markdown(by_score[[
            "target", "intervention", "score", "estimate", "ci_low", "ci_high", "n_units", "note"]]))
    out.table("effects", common.markdown(effects[["target", "intervention", "estimate", "ci_low", "ci_high",
                                                  "with_mean", "control_mean", "n_units", "note"]]))
    contracts = main[main["item_kind"] != "probe"]
    # The same contrast on the judge-free contract surface (0/1 compliance, in points of %).
    contract_effects = effect_rows(contracts, "none", p, scale=100.0)
    out.parquet("contract_effects", contract_effects)
    out.table("contract_effects", common.markdown(contract_effects[[
        "target", "intervention", "estimate", "ci_low", "ci_high", "with_mean", "control_mean", "n_units", "note"]], ".1f"))
    figures = []
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 0.9 + 0.45 * max(1, len(effects))), sharey=True)
    for ax, data, xlabel in ((axes[0], effects, "probe surface: judge score with − without (0–3)"),
                             (axes[1], contract_effects, "contract surface: compliance with − without (pp)")):
        if len(data):
            y = np.arange(len(data))[::-1]
            ok = data["estimate"].notna().to_numpy()
            d = data[ok]
            ax.errorbar(d["estimate"], y[ok], xerr=[d["estimate"] - d["ci_low"], d["ci_high"] - d["estimate"]],
                        fmt="o", color="black", capsize=3)
            for yi in y[~ok]:
                ax.text(0, yi, "not estimable (see table)", ha="center", va="center", fontsize=7, color="grey")
            ax.set_yticks(y, data["intervention"])
        ax.axvline(0, color="grey", lw=1, ls="--")
        ax.set_xlabel(xlabel, fontsize=8)
    figures.append(out.figure("anchor_forest", fig))
    plt.close(fig)

    compliance = (contracts.groupby(["target", "intervention"])["score"].agg(["mean", "count"])
                  .rename(columns={"mean": "compliance", "count": "cells"}).reset_index())
    compliance["compliance_pct"] = 100 * compliance.pop("compliance")
    out.parquet("contracts", compliance)
    out.table("contracts", common.markdown(compliance, ".1f"))

    decay_cells = frame[(frame["item_kind"] == "probe") & (frame["judge_model"] == p.judges[0])
                        & (frame["intervention"].isin(["none", "a_anchor"]))]
    decay = (decay_cells.groupby(["target", "intervention", "distance"])[common.score_column(p.score)].mean()
             .rename("mean_score").reset_index())
    out.parquet("decay", decay)
    out.table("decay", common.markdown(decay))
    fig, ax = plt.subplots(figsize=(5.0, 3.2))
    for target, g in decay[decay["intervention"] == "a_anchor"].groupby("target"):
        ax.plot(g["distance"], g["mean_score"], marker="o", label=f"{target.split('/')[-1]} · A-anchor")
    for target, g in decay[decay["intervention"] == "none"].groupby("target"):
        ax.axhline(g["mean_score"].mean(), ls="--", color="grey", label="no intervention")
    ax.set_xlabel("session messages between the anchor and the probe")
    ax.set_ylabel("mean judge score (0–3)")
    ax.set_ylim(-0.1, 3.1)
    ax.legend(fontsize=7)
    figures.append(out.figure("decay", fig))
    plt.close(fig)

    out.set(target=p.targets[0], **common.protocol_variables(out.protocol), n_sessions=len(sessions), n_interventions=len(p.interventions) - 1,
            n_probes=len(p.probes), n_contracts=int(contracts["item"].nunique()),
            distances=", ".join(map(str, p.distances)), n_cells=counts["cells"],
            n_failed=counts["failed"], n_cached=counts["cached"],
            n_verdicts_invalid=counts.get("verdicts_invalid", 0), window_chars=p.window)
    a = effects[(effects["intervention"] == "a_anchor")] if len(effects) else effects
    if len(a) and pd.notna(a["estimate"].iloc[0]):
        out.set(a_anchor_effect=round(float(a["estimate"].iloc[0]), 2),
                a_anchor_ci=f"[{a['ci_low'].iloc[0]:.2f}, {a['ci_high'].iloc[0]:.2f}]")
    for name in common.SCORES:
        e = by_score[(by_score["intervention"] == "a_anchor") & (by_score["score"] == name)] \
            if len(by_score) else by_score
        if len(e) and pd.notna(e["estimate"].iloc[0]):
            out.set(**{f"a_anchor_effect_{name}": round(float(e["estimate"].iloc[0]), 2),
                       f"a_anchor_ci_{name}": f"[{e['ci_low'].iloc[0]:.2f}, {e['ci_high'].iloc[0]:.2f}]"})
    out.set(score=p.score)
    c = contract_effects[contract_effects["intervention"] == "a_anchor"] if len(contract_effects) else contract_effects
    if len(c) and pd.notna(c["estimate"].iloc[0]):
        out.set(a_anchor_contract_effect=round(float(c["estimate"].iloc[0]), 1),
                a_anchor_contract_ci=f"[{c['ci_low'].iloc[0]:.1f}, {c['ci_high'].iloc[0]:.1f}]")
    for iv in ("none", "a_anchor"):
        rate = compliance.loc[compliance["intervention"] == iv, "compliance_pct"]
        if len(rate):
            out.set(**{f"compliance_{iv}_pct": round(float(rate.iloc[0]), 1)})
    out.default("n/a", *(f"a_anchor_{k}_{n}" for n in common.SCORES for k in ("effect", "ci")))
    out.default("n/a", "a_anchor_effect", "a_anchor_ci", "a_anchor_contract_effect", "a_anchor_contract_ci", "compliance_none_pct", "compliance_a_anchor_pct")
    out.finish(p)
    tables = {"Effect per intervention (probe surface)": effects, "Contract surface": compliance,
              "Decay with distance": decay}
    return Result("anchor_ablations", tables, figures, out.variables, out.counts, out.directory)
