"""CAPE: personality-questionnaire consistency, context-free vs context-dependent, and the
bridge to drift (the questionnaire asked after real vs filler session prefixes).

1. Table 1: TAR, ED, TC, OC per sensitivity factor and setting (CAPE §3.1) on a
   trait-balanced subset of MPI-120 (``n_items``; 0 = all 120).
2. Adversarial history attack (§6.3): the context-dependent runs with every earlier reply
   replaced by option C; the shift of the chosen options.
3. Ordering (§6.4): the OCEAN profile under random, trait-grouped and cyclic orders.
4. Bridge: the questionnaire (context-free) after a real session prefix vs a matched
   filler prefix at snapshot positions; mean OCEAN profile per arm.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..engine.cache import CellCache
from ..cape import CONTEXT_DEPENDENT, CONTEXT_FREE, DEFAULT_PARAMS, FACTORS, ORDERINGS, TRAITS, answer_counts, attack_runs, bridge_runs, bridge_summary, factor_consistency, factor_runs, load_inventory, ocean_profiles, option_shift, ordering_runs, table1
from ..cape import administer
from ..cape.administer import constrained_answers
from ..cape.prompts import LETTERS
from ..cli.data import inventory_manifest
from ..echo import ArmContext, make_prefix
from ..engine.llm import LOCAL_MODEL
from ..paper.outputs import Outputs
from .parameters import NON_NEGATIVE, POSITIVE, Models, NonEmpty, OneOf, Temperature, count
from ..engine.paths import data_dir
from ..sessions.corpus import read_manifest
from ..paper.show import Result
from ..sessions import positions as scheme_positions
from ..sessions import render_prefix
from ..engine.hashing import rng_for
from . import common

TITLE = "CAPE: questionnaire consistency (Table 1), history attack, ordering, and the drift bridge"
PAPER_SCALE = {"target": "openai/gpt-4o", "n_items": 0,
               "factors": ("stability", "temperature", "option_wording", "option_order", "instruction",
                           "paraphrasing"), "history_window": 0, "bridge_positions": 12}


def inventory_names() -> list[str]:
    """The inventories ``load_inventory`` finds by name: those `make data` fetches (the
    committed inventory manifest) and any CSV already in data/mpi."""
    fetched = [Path(r["file"]).stem for r in read_manifest(inventory_manifest()) if r["file"].endswith(".csv")]
    present = [p.stem for p in sorted((data_dir() / "mpi").glob("*.csv"))]
    return list(dict.fromkeys(fetched + present))


INVENTORIES = OneOf(inventory_names, "inventory", files=".csv")
ANSWERS = ("text", "constrained")


@dataclass(frozen=True)
class Parameters(common.ServingParameters):
    target: str = LOCAL_MODEL
    inventory: str = "mpi_120"
    n_items: int = 10
    factors: tuple[str, ...] = ("stability", "option_order")
    n_runs: int = 1
    history_window: int = 6
    max_tokens: int = 4
    attack_letter: str = "C"
    orderings: tuple[str, ...] = ("random", "trait_grouped", "cyclic")
    bridge_sessions: int = 1
    bridge_positions: int = 2
    bridge_window: int = 2000
    bridge_runs: int = 1
    bridge_temperature: float = 1.0
    seed: int = 20240601
    output_dir: str = ""
    answer: str = "text"

    HELP = {**common.ServingParameters.HELP, "answer": "text (the reply's parsed option, the paper's) or constrained (the most probable "
                      "option letter from the model's token probabilities); both are read and reported",
            "n_items": "trait-balanced subset of the inventory (0 for all)",
            "n_runs": "runs per variant (a factor's three variants form one triple per run)",
            "max_tokens": "4 keeps the option letter (the paper: 16, which lets a reply contradict its letter)",
            "history_window": "question-answer pairs kept in context-dependent history (0 for auto)",
            "attack_letter": "every history reply replaced by this option",
            "bridge_window": "session prefix characters for the bridge"}
    RANGES = {**common.ServingParameters.RANGES, "target": Models(), "inventory": INVENTORIES, "n_items": count(zero="all"),
              "factors": (NonEmpty(), OneOf(tuple(FACTORS), "factor")), "n_runs": count(),
              "history_window": count(zero="auto"), "max_tokens": POSITIVE,
              "attack_letter": OneOf(LETTERS, "option letter"),
              "orderings": (NonEmpty(), OneOf(ORDERINGS, "ordering")), "bridge_sessions": count(),
              "bridge_positions": count(), "bridge_window": POSITIVE, "bridge_runs": count(),
              "bridge_temperature": Temperature(("target",)), "seed": NON_NEGATIVE,
              "answer": OneOf(ANSWERS, "answer")}


def answered(answers: pd.DataFrame, answer: str) -> pd.DataFrame:
    """The answers the analyses use: the text ones, or the constrained ones in their place."""
    return constrained_answers(answers) if answer == "constrained" else answers


def balanced(inventory, n_items: int):
    if n_items <= 0 or n_items >= len(inventory):
        return inventory
    per = max(1, n_items // len(TRAITS))
    groups = inventory.by_trait()
    picked = [i.index for k in range(per) for t in TRAITS if k < len(groups[t]) for i in [groups[t][k]]]
    return inventory.subset(picked)


def run(p: Parameters) -> Result:
    out = Outputs.open("cape", p.output_dir or None)
    out.models.add(p.target)
    transport = p.transport(out.models)
    inventory = balanced(load_inventory(p.inventory), p.n_items)
    window = p.history_window if p.history_window > 0 else "auto"
    cache = CellCache()
    tables, figures = {}, []
    try:
        # 1. Table 1.
        runs = [r for f in p.factors for r in factor_runs(f, inventory, n_runs=p.n_runs,
                                                             params={**DEFAULT_PARAMS, "max_tokens": p.max_tokens})]
        answers = pd.concat([administer(runs, p.target, setting=s, window=window, cache=cache,
                                        transport=transport, progress=True, name=f"cape:{s}", constrained=True).answers
                             for s in (CONTEXT_FREE, CONTEXT_DEPENDENT)], ignore_index=True)
        out.parquet("answers", answers)
        counts = out.count("factors", **answer_counts(answers))
        common.print_counts("cape factors", counts)
        # Table 1 under both answers (text: the paper's), the chosen one first.
        both_vars = {}
        for name in ANSWERS:
            t = table1(factor_consistency(answered(answers, name)))
            shown = t.copy()
            shown.columns = [f"{'CF' if s == CONTEXT_FREE else 'CD'} {m.upper()}" for s, m in t.columns]
            out.table(f"table1_{name}", common.markdown(shown.reset_index(), ".1f"))
            tables[f"Table 1 under {name} answers"] = shown.reset_index()
            both_vars[f"table1_factors_{name}"] = ", ".join(t.index)
            both_vars[f"table1_rows_{name}"] = len(t)
        compared = answers[answers["agrees"].notna()]
        both_vars.update(
            answers_compared=len(compared),
            answers_agree_pct=round(100 * float(compared["agrees"].astype(bool).mean()), 1) if len(compared) else "n/a",
            n_constrained_ok=int((answers["constrained_status"] == "ok").sum()),
            n_constrained_invalid=int((answers["constrained_status"] == "invalid").sum()),
            n_constrained_flat=int(answers["constrained_flat"].astype(bool).sum()),
            n_text_invalid=int((answers["status"] != "ok").sum()), answer=p.answer)
        answers = answered(answers, p.answer)
        consistency = factor_consistency(answers)
        counts["triples_not_comparable"] = consistency.attrs["n_not_comparable"]
        t1 = table1(consistency)
        out.parquet("consistency", consistency)
        flat = t1.copy()
        flat.columns = [f"{'CF' if s == CONTEXT_FREE else 'CD'} {m.upper()}" for s, m in t1.columns]
        flat = flat.reset_index()
        out.table("table1", common.markdown(flat, ".1f"))
        tables["Table 1 (TAR, TC, OC in %)"] = flat

        # 2. The history attack, on the first factor's runs.
        base = [r for r in runs if r.labels["factor"] == p.factors[0]]
        attacked = answered(administer(attack_runs(base, p.attack_letter), p.target, setting=CONTEXT_DEPENDENT,
                                       window=window, cache=cache, transport=transport, progress=True,
                                       name="cape:attack",
                                       constrained=p.answer == "constrained").answers, p.answer)
        before = answers[(answers["setting"] == CONTEXT_DEPENDENT) & answers["run_id"].isin([r.run_id for r in base])]
        shift = option_shift(before, attacked)
        out.parquet("attack", attacked)
        out.table("attack", common.markdown(shift))
        tables[f"Option shift under the history attack ({p.attack_letter})"] = shift
        out.count("attack", **answer_counts(attacked))

        # 3. Ordering (context-dependent: the order matters only with history).
        o_runs = ordering_runs(inventory, rng_for(p.seed, "cape-ordering"), orderings=p.orderings,
                               params={**DEFAULT_PARAMS, "max_tokens": p.max_tokens})
        ordered = answered(administer(o_runs, p.target, setting=CONTEXT_DEPENDENT, window=window, cache=cache,
                                      transport=transport, progress=True, name="cape:ordering",
                                      constrained=p.answer == "constrained").answers, p.answer)
        profiles = ocean_profiles(ordered, by=["ordering"])
        out.parquet("ordering", ordered)
        out.table("ordering", common.markdown(profiles))
        tables["OCEAN profile by question order"] = profiles

        # 4. The bridge: real vs filler session prefixes.
        sessions = common.select_sessions(p.bridge_sessions)
        labels = common.session_labels(sessions)
        b_runs = []
        for s in sessions:
            def filler(snapshot, w=p.bridge_window):
                ctx = ArmContext(window=w, real=render_prefix(snapshot, window=w))
                return list(make_prefix("filler", snapshot, ctx).messages)

            def real(snapshot, w=p.bridge_window):
                return list(render_prefix(snapshot, window=w).messages)

            b_runs += bridge_runs(s, scheme_positions(s, "uniform", k=p.bridge_positions),
                                  {"real": real, "filler": filler}, inventory, n_runs=p.bridge_runs,
                                  params={"temperature": p.bridge_temperature, "max_tokens": p.max_tokens})
        bridged = answered(administer(b_runs, p.target, setting=CONTEXT_FREE, cache=cache, transport=transport,
                                      progress=True, name="cape:bridge", constrained=p.answer == "constrained").answers,
                           p.answer)
        bridged["session"] = bridged["session"].map(labels)
        summary = bridge_summary(bridged)
        out.parquet("bridge", summary)
        out.table("bridge", common.markdown(summary))
        tables["Bridge: OCEAN profile after real vs filler prefixes"] = summary
        out.count("bridge", **answer_counts(bridged))
    finally:
        cache.close()

    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    means = summary.groupby("arm")[list(TRAITS)].mean()
    x = np.arange(len(TRAITS))
    for k, arm in enumerate(means.index):
        ax.bar(x + 0.38 * k - 0.19, means.loc[arm], width=0.38, label=arm)
    ax.set_xticks(x, list(TRAITS))
    ax.set_ylabel("mean item score (1–5)")
    ax.legend()
    figures.append(out.figure("bridge", fig))
    plt.close(fig)

    def metric(setting: str, name: str) -> float:
        col = (setting, name)
        value = t1[col].mean() if col in t1.columns else float("nan")
        return round(float(value), 1) if pd.notna(value) else -1.0

    delta = (means.loc["real"] - means.loc["filler"]).abs() if {"real", "filler"} <= set(means.index) else None
    out.set(target=p.target, n_items=len(inventory), max_tokens=p.max_tokens, n_factors=len(p.factors), n_runs=p.n_runs,
            factors=", ".join(p.factors), table1_factors=", ".join(t1.index),
            triples_not_comparable=counts["triples_not_comparable"], history_window=p.history_window,
            n_answers=counts["cells"], n_invalid=counts["invalid"], n_failed=counts["failed"],
            invalid_pct=round(100 * counts["invalid"] / max(1, counts["cells"]), 1),
            cf_tar=metric(CONTEXT_FREE, "tar"), cd_tar=metric(CONTEXT_DEPENDENT, "tar"),
            attack_letter=p.attack_letter,
            attack_letter_before=int(shift.loc[shift["option"] == p.attack_letter, "before"].iloc[0]),
            attack_letter_after=int(shift.loc[shift["option"] == p.attack_letter, "after"].iloc[0]),
            n_orderings=len(p.orderings), bridge_positions=p.bridge_positions,
            bridge_window=p.bridge_window, bridge_runs=p.bridge_runs,
            bridge_max_trait_difference=round(float(delta.max()), 2) if delta is not None else 0.0,
            bridge_trait_of_max=str(delta.idxmax()) if delta is not None else "none", **both_vars)
    out.finish(p)
    return Result("cape", tables, figures, out.variables, out.counts, out.directory)
