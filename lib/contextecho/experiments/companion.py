"""ANCHOR on coding sessions: persona retention, behavioural axes, trajectory recall.

The persona is the deployed coding assistant (``anchor.persona.CODING_ASSISTANT``, or a
``persona_card.json`` in ANCHOR's layout via ``card``), shown as the system message.

1. Persona Retention (:mod:`.companion_retention`): a trait-balanced MPI-120 subset asked
   generic, with the card only (initial), and with the card plus a session's snapshot
   prefix at ``checkpoints`` checkpoints (and the matched filler prefix); R per facet.
2. Behavioural axes (:mod:`.companion_axes`): real assistant turns and turns regenerated
   on forks judged HELD / DEVIATED on role, boundaries, values and style, per axis and judge.
3. Trajectory recall (:mod:`.companion_recall`): four-option questions generated from the
   sessions, ANCHOR's three filters, accuracy per family × context condition vs 0.25.
4. Optionally, externally authored ANCHOR banks (``banks``) scored with the bank scorer.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ..anchor.axes.rubric import AXES
from ..anchor.axes.turns import FORK, REAL
from ..anchor.context.conditions import CONDITIONS
from ..anchor.recall.families import FAMILIES
from ..anchor.retention.runs import ARMS
from ..cape import TRAITS
from ..anchor.banks.bank import bank_dirs, load_bank
from ..anchor.banks.scorer import score_bank
from ..anchor.persona import CODING_ASSISTANT, load_card
from ..engine.cache import CellCache
from ..engine.llm import LOCAL_MODEL
from ..paper.outputs import Outputs
from .parameters import (NON_NEGATIVE, POSITIVE, RESAMPLES, Interval, Models, NonEmpty, OneOf,
                                    Temperature, count)
from ..paper.show import Result
from . import common
from .companion_axes import run_axes
from .companion_recall import CHANCE, RecallSettings, accuracy_figure, run_recall
from .cape import ANSWERS, INVENTORIES
from .companion_retention import FACETS, retention_by_checkpoint, retention_figure, retention_wide, run_retention

TITLE = "ANCHOR on coding sessions: persona retention, behavioural axes, trajectory recall"
PAPER_SCALE = {"target": "openai/gpt-4o-mini", "judges": "anthropic/claude-sonnet-4-5,openai/gpt-4.1,gemini/gemini-2.5-flash",
               "summariser": "openai/gpt-4o-mini", "n_sessions": 0, "n_items": 0, "per_family": 8,
               "validators": "openai/gpt-4o-mini,anthropic/claude-sonnet-4-5,openai/gpt-4.1,gemini/gemini-2.5-flash",
               "window": 60000, "retention_window": 30000}


@dataclass(frozen=True)
class Parameters(common.ServingParameters):
    target: str = LOCAL_MODEL
    judges: tuple[str, ...] = (LOCAL_MODEL,)
    card: str = ""
    n_sessions: int = 2
    inventory: str = "mpi_120"
    n_items: int = 10
    checkpoints: int = 3
    facets: str = "trait"
    retention_window: int = 2000
    retention_runs: int = 1
    questionnaire_max_tokens: int = 4
    retention_answer: str = "text"
    axes_window: int = 3000
    fork_max_tokens: int = 64
    judge_max_tokens: int = 8
    families: tuple[str, ...] = tuple(FAMILIES)
    per_family: int = 2
    conditions: tuple[str, ...] = ("long_context", "hierarchical_summary", "retrieval")
    window: int = 3000
    recent_chars: int = 1000
    summariser: str = LOCAL_MODEL
    summary_block_steps: int = 40
    summary_turn_chars: int = 80
    summary_max_tokens: int = 48
    retrieval_k: int = 4
    validators: tuple[str, ...] = ()
    n_evaluators: int = 3
    min_agree: int = 2
    calibration_runs: int = 3
    sample_temperature: float = 1.0
    recall_max_tokens: int = 4
    banks: tuple[str, ...] = ()
    n_resamples: int = 2000
    seed: int = 20240601
    output_dir: str = ""

    HELP = {**common.ServingParameters.HELP,
            "card": "persona_card.json in ANCHOR's layout (empty: the built-in coding assistant)",
            "n_sessions": "longest openly licensed sessions (0 for all)",
            "n_items": "trait-balanced questionnaire subset (0 for all 120)",
            "facets": "retention per OCEAN trait, or per IPIP facet with ipip",
            "retention_window": "session prefix characters at each checkpoint",
            "retention_answer": "text (the parsed reply) or constrained (the most probable option letter)",
            "window": "long-context characters for recall (the embedded model's 8k context limits it)",
            "validators": "with-history validators; empty: n_evaluators sampled replicates of the target",
            "min_agree": "validators that must recover the answer (ANCHOR: 3 of 4)",
            "banks": "ANCHOR bank folders (or a release root) to score as well",
            "output_dir": "default paper/_generated/companion"}
    RANGES = {**common.ServingParameters.RANGES, "target": Models(), "judges": (NonEmpty(), Models()), "n_sessions": count(zero="all"),
              "inventory": INVENTORIES, "n_items": count(zero="all"), "checkpoints": count(),
              "facets": OneOf(FACETS, "facet scheme"), "retention_window": POSITIVE, "retention_runs": count(),
              "retention_answer": OneOf(ANSWERS, "answer"),
              "questionnaire_max_tokens": POSITIVE, "axes_window": POSITIVE, "fork_max_tokens": POSITIVE,
              "judge_max_tokens": POSITIVE, "families": (NonEmpty(), OneOf(tuple(FAMILIES), "recall family")),
              "per_family": count(), "conditions": (NonEmpty(), OneOf(tuple(CONDITIONS), "context condition")),
              "window": POSITIVE, "recent_chars": POSITIVE, "summariser": Models(), "summary_block_steps": count(),
              "summary_turn_chars": POSITIVE, "summary_max_tokens": POSITIVE, "retrieval_k": count(),
              "validators": Models(), "n_evaluators": count(),
              "min_agree": Interval(1, high=lambda p: len(p.validators) or p.n_evaluators,
                                    high_text="the number of validators (n_evaluators when none)"),
              "calibration_runs": count(), "sample_temperature": Temperature(("target", "validators")),
              "recall_max_tokens": POSITIVE, "n_resamples": RESAMPLES, "seed": NON_NEGATIVE}


def run(p: Parameters) -> Result:
    out = Outputs.open("companion", p.output_dir or None)
    out.models.update({p.target, p.summariser, *p.judges, *p.validators})
    transport = p.transport(out.models)
    card = load_card(p.card) if p.card else CODING_ASSISTANT
    banks_in = [load_bank(d) for spec in p.banks for d in bank_dirs(spec)]  # bad input fails before any call
    sessions = common.select_sessions(p.n_sessions)
    labels = common.session_labels(sessions)
    cache = CellCache()
    tables, figures = {}, []
    try:
        retention_answers, retention = run_retention(
            out, cache, card, sessions, labels, target=p.target, inventory=p.inventory, n_items=p.n_items,
            checkpoints=p.checkpoints, window=p.retention_window, n_runs=p.retention_runs, facets=p.facets,
            answer=p.retention_answer, params={"temperature": 0.0 if p.retention_runs == 1 else p.sample_temperature,
                    "max_tokens": p.questionnaire_max_tokens}, transport=transport)
        axes = run_axes(out, cache, card, sessions, labels, target=p.target, judges=p.judges,
                        checkpoints=p.checkpoints, window=p.axes_window, fork_max_tokens=p.fork_max_tokens,
                        judge_max_tokens=p.judge_max_tokens, n_resamples=p.n_resamples, seed=p.seed,
                        transport=transport)
        recall = run_recall(out, cache, sessions, labels, RecallSettings(
            target=p.target, families=p.families, per_family=p.per_family, conditions=p.conditions,
            window=p.window, recent_chars=p.recent_chars, summariser=p.summariser,
            summary_block_steps=p.summary_block_steps, summary_turn_chars=p.summary_turn_chars,
            summary_max_tokens=p.summary_max_tokens, retrieval_k=p.retrieval_k, validators=p.validators,
            n_evaluators=p.n_evaluators, min_agree=p.min_agree, calibration_runs=p.calibration_runs,
            sample_temperature=p.sample_temperature, max_tokens=p.recall_max_tokens), transport)
        banks = [score_bank(b, p.target, out.directory / "results" / "banks" / b.bank_id, cache=cache,
                            transport=transport)
                 for b in banks_in]
    finally:
        cache.close()

    summary = retention_by_checkpoint(retention)
    wide = retention_wide(summary)
    out.table("retention", common.markdown(wide))
    tables["Persona Retention R per facet (mean over sessions)"] = wide
    figures.append(_saved(out, "retention", retention_figure(summary)))

    rates = axes["rates"]
    out.parquet("axes", axes["frame"])
    out.parquet("axes_rates", rates)
    shown = rates[["judge_model", "source", "axis", "n", "n_valid", "n_invalid", "n_error", "held_rate"]]
    out.table("axes", common.markdown(shown))
    tables["Behavioural axes: held rate among valid verdicts"] = shown
    if axes["agreement"] is not None:
        out.table("axes_agreement", common.markdown(axes["agreement"]))
        tables["Judge agreement per axis"] = axes["agreement"]

    for stem in ("per_item", "filters", "accuracy", "calibration"):
        out.parquet(f"recall_{stem}", recall[stem])
    accuracy = recall["accuracy"]
    wide_acc = accuracy.pivot_table(index=["set", "family"], columns="condition", values="accuracy",
                                    dropna=False).reset_index() if not accuracy.empty else accuracy
    out.table("recall_accuracy", common.markdown(wide_acc))
    out.table("recall_filters", common.markdown(recall["filters"]))
    tables["Recall accuracy per family × condition (chance 0.25)"] = wide_acc
    figures.append(_saved(out, "recall", accuracy_figure(accuracy, p.conditions)))
    tables["Question filters: kept and discarded per step"] = recall["filters"]
    if banks:
        bank_rows = pd.DataFrame([{"bank": b.summary["bank_id"], **{k: b.summary[k] for k in ("n_items", "accuracy")}}
                                  for b in banks])
        out.table("banks", common.markdown(bank_rows))
        tables["ANCHOR banks"] = bank_rows

    out.set(**variables(p, retention, summary, rates, axes["frame"], recall, len(sessions)))
    compared = retention_answers[retention_answers["agrees"].notna()]
    out.set(retention_answer=p.retention_answer, retention_answers_compared=len(compared),
            retention_answers_agree_pct=round(100 * float(compared["agrees"].astype(bool).mean()), 1)
            if len(compared) else "n/a",
            retention_constrained_invalid=int((retention_answers["constrained_status"] == "invalid").sum()))
    out.finish(p)
    return Result("companion", tables, figures, out.variables, out.counts, out.directory)


def _saved(out: Outputs, stem: str, fig) -> Path:
    path = out.figure(stem, fig)
    plt.close(fig)
    return path


def variables(p: Parameters, retention: pd.DataFrame, summary: pd.DataFrame, rates: pd.DataFrame,
              axes_frame: pd.DataFrame, recall: dict, n_sessions: int) -> dict:
    """The manuscript's numbers; a value that could not be estimated is 'n/a', never NaN."""
    def num(value, digits=2):
        return "n/a" if value is None or pd.isna(value) else round(float(value), digits)

    last = summary[(summary["checkpoint"] == p.checkpoints)].set_index(["arm", "facet"])["retention"]
    final = {f"retention_final_{arm}_{facet}": num(last.get((arm, facet))) for arm in ARMS for facet in TRAITS}
    per_item, filters = recall["per_item"], recall["filters"].set_index("step")
    pooled = per_item[per_item["context"]].groupby("condition")["correct"].mean() if not per_item.empty else {}
    # The primary judge's rates (ANCHOR reports per judge, never pooled across judges).
    rate = rates[rates["judge_model"] == p.judges[0]].set_index(["source", "axis"])["held_rate"]
    held = {f"axes_held_{source}_{axis}": num(rate.get((source, axis))) for source in (REAL, FORK) for axis in AXES}
    return {
        "target": p.target, "judges": ", ".join(p.judges), "primary_judge": p.judges[0],
        "n_sessions": n_sessions, "n_items": p.n_items,
        "checkpoints": p.checkpoints, "retention_window": p.retention_window,
        "retention_rows": len(retention), "retention_undefined": int((retention["status"] == "undefined").sum()),
        "retention_no_items": int((retention["status"] == "no valid items").sum()), **final,
        "axes_turns": int(axes_frame["turn_id"].nunique()), "axes_verdicts": len(axes_frame),
        "axes_invalid": int((axes_frame["status"] == "invalid").sum()),
        "axes_invalid_pct": num(100 * (axes_frame["status"] == "invalid").mean(), 1), **held,
        "recall_candidates": int(filters.loc["candidates", "in"]),
        "recall_blind_kept": int(filters.loc["blind filter", "kept"]),
        "recall_validated": int(filters.loc["with-history validation", "kept"]),
        "recall_main": int(filters.loc["calibration: main", "kept"]),
        "recall_chance": CHANCE, "recall_window": p.window, "n_evaluators": len(p.validators) or p.n_evaluators,
        "min_agree": p.min_agree, "calibration_runs": p.calibration_runs,
        "recall_asked": len(per_item[["session", "item"]].drop_duplicates()) if not per_item.empty else 0,
        **modal_choice(per_item),
        **{f"recall_accuracy_{c}": num(pooled.get(c)) for c in CONDITIONS},
    }


def modal_choice(per_item: pd.DataFrame) -> dict:
    """The option letter the target names most often with history, and its share (%) of the
    readable answers: a model that always names one letter is at chance on every item, and at 0
    on the items the blind filter keeps (those whose answer is not that letter)."""
    choices = per_item["choice"].dropna().astype(int) if not per_item.empty else pd.Series(dtype=int)
    if choices.empty:
        return {"recall_modal_letter": "n/a", "recall_modal_pct": "n/a"}
    counts = choices.value_counts()
    return {"recall_modal_letter": "ABCD"[int(counts.index[0])],
            "recall_modal_pct": round(100 * float(counts.iloc[0]) / len(choices), 1)}
