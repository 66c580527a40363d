"""ANCHOR on coding sessions: persona retention, behavioural axes, trajectory recall.

The persona is the deployed coding assistant (``anchor.persona.CODING_ASSISTANT``, or a
``persona_card.json`` in ANCHOR's layout via ``card``), shown as the system message.

1. Persona Retention (:mod:`.anchor_retention`): a trait-balanced MPI-120 subset asked
   generic, with the card only (initial), and with the card plus a session's snapshot
   prefix at ``checkpoints`` checkpoints (and the matched filler prefix); R per facet.
2. Behavioural axes (:mod:`.anchor_axes`): real assistant turns and turns regenerated
   on forks judged HELD / DEVIATED on role, boundaries, values and style, per axis and judge.
3. Trajectory recall (:mod:`.anchor_recall`): four-option questions generated from the
   sessions, ANCHOR's three filters, accuracy per family × context condition vs 0.25.
4. Optionally, externally authored ANCHOR banks (``banks``) scored with the bank scorer.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..anchor.axes.report import axis_agreement, axis_rates
from ..anchor.axes.rubric import AXES
from ..anchor.axes.turns import FORK, REAL
from ..anchor.context.conditions import CONDITIONS
from ..anchor.recall.families import FAMILIES
from ..anchor.retention.runs import ARMS
from ..cape.inventory import TRAITS
from ..anchor.banks.bank import bank_dirs, load_bank
from ..anchor.banks.scorer import score_bank
from ..anchor.persona import CODING_ASSISTANT, PersonaCard, load_card
from ..engine.cache import CallCache
from ..engine.llm import LOCAL_MODEL
from .parameters import (NON_NEGATIVE, POSITIVE, RESAMPLES, Interval, Models, NonEmpty, OneOf,
                                    Temperature, count)
from ..paper.outputs import not_estimable
from ..paper.show import Result, SavedFigure
from . import common, spine
from .anchor_axes import run_axes
from .anchor_recall import CHANCE, RecallSettings, accuracy_figure, accuracy_table, run_recall
from .anchor_retention import FACETS, retention_by_checkpoint, retention_figure, retention_wide, run_retention
from .spine import Run, Stage

TITLE = "ANCHOR on coding sessions: persona retention, behavioural axes, trajectory recall"
PAPER_SCALE = {"target": "openai/gpt-4o-mini", "judges": "anthropic/claude-sonnet-4-5,openai/gpt-4.1,gemini/gemini-2.5-flash",
               "summariser": "openai/gpt-4o-mini", "n_sessions": 0, "n_items": 0, "per_family": 8,
               "validators": "openai/gpt-4o-mini,anthropic/claude-sonnet-4-5,openai/gpt-4.1,gemini/gemini-2.5-flash",
               "window": 60000, "retention_window": 30000, "summary_turn_chars": 1200}


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
    summary_turn_chars: int = 40
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
    resample_seed: int = 20240601
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
            "output_dir": "default paper/_generated/anchor"}
    RANGES = {**common.ServingParameters.RANGES, "target": Models(), "judges": (NonEmpty(), Models()), "n_sessions": count(zero="all"),
              "inventory": common.INVENTORIES, "n_items": count(zero="all"), "checkpoints": count(),
              "facets": OneOf(FACETS, "facet scheme"), "retention_window": POSITIVE, "retention_runs": count(),
              "retention_answer": common.ANSWER_KINDS,
              "questionnaire_max_tokens": POSITIVE, "axes_window": POSITIVE, "fork_max_tokens": POSITIVE,
              "judge_max_tokens": POSITIVE, "families": (NonEmpty(), OneOf(tuple(FAMILIES), "recall family")),
              "per_family": count(), "conditions": (NonEmpty(), OneOf(tuple(CONDITIONS), "context condition")),
              "window": POSITIVE, "recent_chars": POSITIVE, "summariser": Models(), "summary_block_steps": count(),
              "summary_turn_chars": POSITIVE, "summary_max_tokens": POSITIVE, "retrieval_k": count(),
              "validators": Models(), "n_evaluators": count(),
              "min_agree": Interval(1, high=lambda p: len(p.validators) or p.n_evaluators,
                                    high_text="the number of validators (n_evaluators when none)"),
              "calibration_runs": count(), "sample_temperature": Temperature(("target", "validators")),
              "recall_max_tokens": POSITIVE, "n_resamples": RESAMPLES, "resample_seed": NON_NEGATIVE}


# ---------------------------------------------------------------- the stages (one notebook cell each)
def _card(p: Parameters) -> PersonaCard:
    return load_card(p.card) if p.card else CODING_ASSISTANT


def _banks(p: Parameters) -> list:
    return [load_bank(d) for spec in p.banks for d in bank_dirs(spec)]


def _num(value, why: str, digits: int = 2):
    """A manuscript number; a value that could not be estimated says ``why``, never NaN."""
    return not_estimable(why) if value is None or pd.isna(value) else round(float(value), digits)


def _retention_missing(table: pd.DataFrame, arm: str, facet: str, checkpoint: int) -> str:
    """Why no session has R on ``facet`` for ``arm`` at ``checkpoint``: each status, counted."""
    rows = table[(table["arm"] == arm) & (table["facet"] == facet) & (table["checkpoint"] == checkpoint)]
    if rows.empty:
        return f"no {arm} administration at checkpoint {checkpoint}"
    counts = rows["status"].value_counts()
    meaning = {"undefined": "R is undefined in {n} of {of} sessions: the persona card moves nothing on this facet, "
                            "whose initial answers equal the generic ones",
               "no valid items": "in {n} of {of} sessions no item of this facet has a valid answer in all three "
                                 "administrations"}
    return "; ".join(meaning.get(status, status + " in {n} of {of} sessions").format(n=n, of=len(rows))
                     for status, n in counts.items())


def start(params: Parameters) -> Run:
    """Open the outputs, check that every model (target, judges, summariser, validators) can
    be called and that the persona card and the banks load (before any call), and pick the
    longest openly licensed sessions."""
    _card(params)
    _banks(params)  # bad input fails before any call
    return spine.start("anchor", params,
                       models={params.target, params.summariser, *params.judges, *params.validators},
                       sessions=lambda: common.select_sessions(params.n_sessions))


def retention(run: Run) -> pd.DataFrame:
    """Persona Retention: the questionnaire asked as a generic assistant, with the card only
    (initial), and with the card plus the session's snapshot prefix at each checkpoint (and
    its filler); R per session, checkpoint, arm and facet. Every answer's option
    distribution is read too, and compared with the parsed reply."""
    p = run.params
    with CallCache() as cache:
        answers, table = run_retention(
            run, cache, _card(p), target=p.target, inventory=p.inventory, n_items=p.n_items,
            checkpoints=p.checkpoints, window=p.retention_window, n_runs=p.retention_runs, facets=p.facets,
            answer=p.retention_answer, params={"temperature": 0.0 if p.retention_runs == 1 else p.sample_temperature,
                                               "max_tokens": p.questionnaire_max_tokens})
    compared = answers[answers["agrees"].notna()]
    run.out.set(retention_answer=p.retention_answer, retention_answers_compared=len(compared),
                retention_answers_agree_pct=round(100 * float(compared["agrees"].astype(bool).mean()), 1)
                if len(compared) else not_estimable("no answer has both a parsed reply and a read distribution"),
                retention_constrained_invalid=int((answers["constrained_status"] == "invalid").sum()),
                retention_rows=len(table), retention_undefined=int((table["status"] == "undefined").sum()),
                retention_no_items=int((table["status"] == "no valid items").sum()))
    return table


def retention_summary(run: Run, retention: pd.DataFrame) -> pd.DataFrame:
    """R per facet, mean over sessions, one row per arm and checkpoint."""
    p = run.params
    summary = retention_by_checkpoint(retention)
    last = summary[(summary["checkpoint"] == p.checkpoints)].set_index(["arm", "facet"])["retention"]
    run.out.set(checkpoints=p.checkpoints, retention_window=p.retention_window,
                **{f"retention_final_{arm}_{facet}": _num(last.get((arm, facet)),
                                                          _retention_missing(retention, arm, facet, p.checkpoints))
                   for arm in ARMS for facet in TRAITS})
    return run.table("retention", retention_wide(summary), "Persona Retention R per facet (mean over sessions)")


def retention_plot(run: Run, retention: pd.DataFrame) -> SavedFigure:
    """Persona Retention per facet over the checkpoints, session prefix and filler prefix."""
    return run.figure("retention", retention_figure(retention_by_checkpoint(retention)))


def axes(run: Run) -> pd.DataFrame:
    """Behavioural axes: real assistant turns at the checkpoints and turns the target
    regenerated on forks there, each judged HELD or DEVIATED on role, boundaries, values
    and style by every judge (one row per verdict)."""
    p = run.params
    with CallCache() as cache:
        frame = run_axes(run, cache, _card(p), target=p.target, judges=p.judges, checkpoints=p.checkpoints,
                         window=p.axes_window, fork_max_tokens=p.fork_max_tokens,
                         judge_max_tokens=p.judge_max_tokens)
    run.out.parquet("axes", frame)
    run.out.set(axes_turns=int(frame["turn_id"].nunique()), axes_verdicts=len(frame),
                axes_invalid=int((frame["status"] == "invalid").sum()),
                axes_invalid_pct=_num(100 * (frame["status"] == "invalid").mean(), "no axis verdict was asked", 1))
    return frame


def axes_held(run: Run, axes: pd.DataFrame) -> pd.DataFrame:
    """The held rate among valid verdicts per judge, source (real or forked turn) and axis,
    never pooled across judges or axes; with two judges or more, their agreement per axis."""
    p = run.params
    rates = axis_rates(axes, ci=len(set(axes["session"])) > 1, n_resamples=p.n_resamples, seed=p.resample_seed)
    run.out.parquet("axes_rates", rates)
    if len(p.judges) > 1:
        run.table("axes_agreement", axis_agreement(axes), "Judge agreement per axis")
    first = rates[rates["judge_model"] == p.judges[0]].set_index(["source", "axis"])
    run.out.set(**{f"axes_held_{source}_{axis}": _num(
        first["held_rate"].get((source, axis)),
        f"none of the {int(first['n'].get((source, axis), 0))} verdicts of {p.judges[0]} on {axis} "
        f"for {source} turns is valid ({int(first['n_invalid'].get((source, axis), 0))} invalid, "
        f"{int(first['n_error'].get((source, axis), 0))} failed calls)")
        for source in (REAL, FORK) for axis in AXES})
    shown = rates[["judge_model", "source", "axis", "n", "n_valid", "n_invalid", "n_error", "held_rate"]]
    return run.table("axes", shown, "Behavioural axes: held rate among valid verdicts")


def recall(run: Run) -> pd.DataFrame:
    """Trajectory recall: four-option questions from the sessions, ANCHOR's three filters
    (blind, with-history validation, calibration), then the target's answers under each
    context condition (one row per item and condition)."""
    p = run.params
    with CallCache() as cache:
        result = run_recall(run, cache, RecallSettings(
            target=p.target, families=p.families, per_family=p.per_family, conditions=p.conditions,
            window=p.window, recent_chars=p.recent_chars, summariser=p.summariser,
            summary_block_steps=p.summary_block_steps, summary_turn_chars=p.summary_turn_chars,
            summary_max_tokens=p.summary_max_tokens, retrieval_k=p.retrieval_k, validators=p.validators,
            n_evaluators=p.n_evaluators, min_agree=p.min_agree, calibration_runs=p.calibration_runs,
            sample_temperature=p.sample_temperature, max_tokens=p.recall_max_tokens))
    for stem in ("per_item", "filters", "calibration"):
        run.out.parquet(f"recall_{stem}", result[stem])
    run.table("recall_filters", result["filters"], "Question filters: kept and discarded per step")
    filters, per_item = result["filters"].set_index("step"), result["per_item"]
    run.out.set(recall_candidates=int(filters.loc["candidates", "in"]),
                recall_blind_kept=int(filters.loc["blind filter", "kept"]),
                recall_validated=int(filters.loc["with-history validation", "kept"]),
                recall_main=int(filters.loc["calibration: main", "kept"]),
                recall_chance=CHANCE, recall_window=p.window, n_evaluators=len(p.validators) or p.n_evaluators,
                min_agree=p.min_agree, calibration_runs=p.calibration_runs,
                recall_asked=len(per_item[["session", "item"]].drop_duplicates()) if not per_item.empty else 0,
                **modal_choice(per_item))
    return per_item


def recall_accuracy(run: Run, recall: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per question family × context condition (chance 0.25), on every blind-kept
    item and on the calibrated main set, with n."""
    accuracy = accuracy_table(recall)
    run.out.parquet("recall_accuracy", accuracy)
    pooled = recall[recall["context"]].groupby("condition")["correct"].mean() if not recall.empty else {}
    run.out.set(**{f"recall_accuracy_{c}": _num(pooled.get(c), f"no recall question was answered with the {c} "
                                                             "context") for c in CONDITIONS})
    wide = accuracy.pivot_table(index=["set", "family"], columns="condition", values="accuracy",
                                dropna=False).reset_index() if not accuracy.empty else accuracy
    return run.table("recall_accuracy", wide, "Recall accuracy per family × condition (chance 0.25)")


def recall_plot(run: Run, recall: pd.DataFrame) -> SavedFigure:
    """Blind-kept accuracy per family and condition, against chance."""
    return run.figure("recall", accuracy_figure(accuracy_table(recall), run.params.conditions))


def banks(run: Run) -> pd.DataFrame:
    """Externally authored ANCHOR banks (``banks``), each scored with the bank scorer (its
    own files under ``results/banks/<bank>``)."""
    p = run.params
    with CallCache() as cache:
        scored = [score_bank(b, p.target, run.out.directory / "results" / "banks" / b.bank_id, cache=cache,
                             transport=run.transport) for b in _banks(p)]
    if not scored:
        return pd.DataFrame()
    rows = pd.DataFrame([{"bank": b.summary["bank_id"], **{k: b.summary[k] for k in ("n_items", "accuracy")}}
                         for b in scored])
    return run.table("banks", rows, "ANCHOR banks")


def variables(run: Run) -> pd.DataFrame:
    """The manuscript's numbers, written with the run log."""
    p = run.params
    run.out.set(target=p.target, judges=", ".join(p.judges), primary_judge=p.judges[0],
                n_sessions=len(run.sessions), n_items=p.n_items)
    return spine.finish(run)


def modal_choice(per_item: pd.DataFrame) -> dict:
    """The option letter the target names most often with history, and its share (%) of the
    readable answers: a model that always names one letter is at chance on every item, and at 0
    on the items the blind filter keeps (those whose answer is not that letter)."""
    choices = per_item["choice"].dropna().astype(int) if not per_item.empty else pd.Series(dtype=int)
    if choices.empty:
        why = not_estimable("no answer with history names an option letter")
        return {"recall_modal_letter": why, "recall_modal_pct": why}
    counts = choices.value_counts()
    return {"recall_modal_letter": "ABCD"[int(counts.index[0])],
            "recall_modal_pct": round(100 * float(counts.iloc[0]) / len(choices), 1)}


STAGES = (Stage("run", start), Stage("retention", retention), Stage("retention_table", retention_summary),
          Stage("retention_figure", retention_plot), Stage("axes", axes), Stage("held", axes_held),
          Stage("recall", recall), Stage("accuracy", recall_accuracy), Stage("recall_figure", recall_plot),
          Stage("banks", banks), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
