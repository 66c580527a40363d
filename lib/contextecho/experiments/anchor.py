"""ANCHOR on coding sessions: persona retention, behavioural axes, trajectory recall.

The persona is the deployed coding assistant (``anchor.persona.CODING_ASSISTANT``, or a
``persona_card.json`` in ANCHOR's layout via ``card``), shown as the system message.

1. Persona Retention (:mod:`.anchor_retention`): a trait-balanced MPI-120 subset asked
   generic, with the card only (initial), and with the card plus a session's snapshot
   prefix at ``checkpoints`` checkpoints (and the matched filler prefix); R per facet.
2. Behavioural axes (:mod:`.anchor_axes`): real assistant turns and turns regenerated
   on forks judged HELD / DEVIATED on role, boundaries, values and style, per axis and judge;
   ANCHOR's headline, the share of turns that held all four axes, per judge, source and
   target with its interval resampling sessions, and per session. Before any turn is judged
   each axes judge is calibrated on hand-labelled turns (:mod:`.axes_calibration`;
   ``require_calibrated`` stops the run there when one fails); after, a stratified validation
   sample of the judged turns is re-judged by three raters, majority of three, reweighted to the
   population (:mod:`contextecho.anchor.axes.validation`).
3. Trajectory recall (:mod:`.anchor_recall`): four-option questions generated from the
   sessions, ANCHOR's three filters, accuracy per family × context condition vs 0.25.
4. Ranking the targets (:mod:`contextecho.anchor.ranking`): by retention, by recall and by
   each judge's all-four-axes share, and Kendall's τ-b between every pair of rankings with
   its interval resampling sessions (ANCHOR's seed: the questionnaire and the turn-level judge
   "can rank the same models differently").
5. Optionally, externally authored ANCHOR banks (``banks``) scored with the bank scorer.

Every section runs for each of ``targets`` (the real turns, the same for all, are judged
once); a table shows a Target column where there are several, and the text's values (one
number each) are the first target's, the primary one.

``PAPER_SCALE`` runs ANCHOR's four evaluated models (GPT-4o-mini first, the primary target,
then Gemini 2.5 Pro, Claude Sonnet 4.6 and GPT-5-mini) and takes ANCHOR's filter settings (3 of 4 validators recover the answer, five
calibration runs: the ANCHOR seed's "Questions pass three filters"); its judges answer in the
reference judge's budget (``JUDGE_MAX_TOKENS``, 400) under each provider's rule, which gives
the thinking Gemini judge at least 16,384 tokens (:func:`.anchor_axes.axes_judge_params`); a
forked turn is written in the harness's budget for a target's turn (``STRESSOR_MAX_TOKENS``, 1,024,
the paper's generation ``max_tokens``), so it is not cut before its style is judged. ANCHOR's
seed sizes no self-managed memory ("a compact JSON memory"): the paper's scale cuts it at the
hierarchical summary's blocks (40 steps, where the embedded default's 400 keeps the 135M
model's cold run in budget by asking no update on the two default sessions) and lets an
update take 400 tokens, so a 600-character memory fits (a hosted model's reply cut at 48
tokens is no JSON object).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from ..anchor.axes.report import DEFAULT_BY, all_axes_held, all_axes_rates, axis_agreement, axis_rates
from ..anchor.axes.validation import ALL_FOUR, STRATIFICATIONS, majority, rater_agreement, reweighted_rates, stratified_sample
from ..echo.calibration import MAX_INVALID_RATE, MIN_KAPPA
from ..anchor.axes.rubric import AXES
from ..anchor.axes.turns import FORK, REAL
from ..anchor.context.conditions import CONTEXT_CONDITIONS
from ..anchor.recall.families import RECALL_FAMILIES
from ..anchor.retention.runs import CHECKPOINT, FILLER, RETENTION_ARMS
from ..cape.inventory import TRAITS
from ..anchor.banks.bank import bank_dirs, load_bank
from ..anchor.banks.scorer import score_bank
from ..anchor.persona import CODING_ASSISTANT, PersonaCard, load_card
from ..anchor.ranking import agreement_table, axes_instruments, ranking_table, recall_instrument, retention_instrument
from ..engine.cache import CallCache
from ..engine.llm import LOCAL_MODEL
from ..engine.paths import REPO_ROOT
from ..echo.reference.judge import JUDGE_MAX_TOKENS
from ..echo.reference.texts import STRESSOR_MAX_TOKENS
from .parameters import (NON_NEGATIVE, POSITIVE, RESAMPLES, File, Interval, Lengths, Models, NonEmpty, OneOf,
                                    Temperature, count, resolve_path)
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COEFFICIENT, COUNT, MODEL, PERCENT, TEXT, Decimals, estimate, interval, not_estimable
from ..paper.tables import Column, Table, explained_if_empty
from ..paper.variables import Variable
from ..paper.sentences import CAPABLE_JUDGE, CAPABLE_TARGET, PAPER_SCALE_SET, joined, measures_nothing, reason_of
from ..paper.show import Result, SavedFigure
from . import spine
from .parameter_sets import ServingParameters
from .item_ids import ANSWER_KINDS, INVENTORIES
from .selection import select_sessions
from .anchor_axes import axes_judge_params, axes_turns, run_axes, validate_axes, validation_raters
from .axes_calibration import AXES_LABELS, calibrate_axes, read_axes_labels
from .anchor_recall import CHANCE, RecallSettings, accuracy_table, run_recall
from .anchor_retention import FACETS, ordered_facets, retention_by_checkpoint, retention_rows, run_retention
from .spine import JudgeNotCalibrated, Run, Stage

TITLE = "ANCHOR on coding sessions: persona retention, behavioural axes, trajectory recall"
PAPER_SCALE = {"targets": ("openai/gpt-4o-mini", "gemini/gemini-2.5-pro", "anthropic/claude-sonnet-4-6", "openai/gpt-5-mini"),
               "judges": "anthropic/claude-sonnet-4-5,openai/gpt-4.1,gemini/gemini-2.5-flash",
               "summariser": "openai/gpt-4o-mini", "n_sessions": 0, "n_items": 0, "per_family": 8,
               "checkpoints": 4, "axes_positions": 3,
               "validators": "openai/gpt-4o-mini,anthropic/claude-sonnet-4-5,openai/gpt-4.1,gemini/gemini-2.5-flash",
               "min_agree": 3, "calibration_runs": 5, "judge_max_tokens": JUDGE_MAX_TOKENS,
               "fork_max_tokens": STRESSOR_MAX_TOKENS,
               "validation_judges": "anthropic/claude-sonnet-4-5,openai/gpt-4.1,gemini/gemini-2.5-flash",
               "validation_turns": 133, "validation_strata": "source_checkpoint",
               "window": 60000, "retention_window": 30000, "summary_turn_chars": 1200,
               "memory_chunk_steps": 40, "memory_max_tokens": 400,
               # two of ANCHOR's targets think before they answer: a reasoning budget on top of each
               # answer's (a questionnaire letter, a recall option: 4 tokens), as the README's budget rule
               "model_options": json.dumps({"gemini/gemini-2.5-pro": {"reasoning_effort": "low", "reasoning_budget": 2048},
                                            "openai/gpt-5-mini": {"reasoning_effort": "minimal", "reasoning_budget": 1024}})}


@dataclass(frozen=True)
class Parameters(ServingParameters):
    targets: tuple[str, ...] = (LOCAL_MODEL,)
    judges: tuple[str, ...] = (LOCAL_MODEL,)
    card: str = ""
    n_sessions: int = 2
    inventory: str = "mpi_120"
    n_items: int = 5
    checkpoints: int = 2
    facets: str = "trait"
    retention_window: int = 2000
    retention_runs: int = 1
    questionnaire_max_tokens: int = 4
    retention_answer: str = "text"
    axes_window: int = 2000
    axes_positions: int = 2
    fork_max_tokens: int = 64
    judge_max_tokens: int = 8
    require_calibrated: bool = False
    validation_judges: tuple[str, ...] = ()
    validation_turns: int = 1
    validation_strata: str = "source"
    axes_labels: str = ""
    families: tuple[str, ...] = tuple(RECALL_FAMILIES)
    per_family: int = 1
    conditions: tuple[str, ...] = ("long_context", "hierarchical_summary", "self_managed", "retrieval")
    window: int = 2000
    recent_chars: int = 1000
    summariser: str = LOCAL_MODEL
    summary_block_steps: int = 40
    summary_turn_chars: int = 24
    summary_max_tokens: int = 48
    retrieval_k: int = 4
    memory_chunk_steps: int = 400
    memory_max_tokens: int = 48
    memory_chars: int = 600
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

    HELP = {**ServingParameters.HELP,
            "targets": "LiteLLM model strings, each run through every section; the first target is the primary one "
                       "the text reports (the paper's scale: ANCHOR's four evaluated models)",
            "card": "persona_card.json in ANCHOR's layout (empty: the built-in coding assistant)",
            "n_sessions": "longest openly licensed sessions (0 for all)",
            "n_items": "trait-balanced questionnaire subset (0 for all 120; the embedded build asks one item per "
                       "trait, so its checkpoints fit the cold run's budget)",
            "checkpoints": "questionnaire checkpoints per session, evenly spaced, the last at the session's end "
                           "(ANCHOR and the paper's scale: 4; the embedded build's 2, the middle and the end, "
                           "are two of those four and keep the cold run in budget)",
            "axes_positions": "uniform positions per session whose nearest recorded assistant turns, and a fork "
                              "at each, are judged on the behavioural axes (the paper's scale: 3; the embedded "
                              "build's 2, the first and the last, are two of those three)",
            "facets": "retention per OCEAN trait, or per IPIP facet with ipip",
            "retention_window": "session prefix characters at each checkpoint",
            "retention_answer": "text (the parsed reply) or constrained (the most probable option letter)",
            "window": "long-context characters for recall (the embedded model's 8k context limits it)",
            "validators": "with-history validators; empty: n_evaluators sampled replicates of the target",
            "min_agree": "validators that must recover the answer (ANCHOR: 3 of 4)",
            "calibration_runs": "sampled runs a validated item must answer stably (ANCHOR: 5)",
            "fork_max_tokens": "tokens a forked turn may take (the paper's scale: the harness's 1,024, so its style "
                               "is judged uncut)",
            "judge_max_tokens": "the axes judges' budget, under each provider's rule (a Gemini judge, a thinking "
                                "model, at least 16,384)",
            "require_calibrated": "stop before any axes judge call when an axes judge fails its calibration on the "
                                  "labelled turns of axes_labels (Cohen's kappa at least 0.60, at most 10% invalid)",
            "validation_judges": "the three judges of the axes validation sample; empty: the primary judge's own "
                                 "verdict and two replicates of it sampled at sample_temperature",
            "validation_turns": "judged turns drawn per stratum for the axes validation sample (the paper's scale: "
                                "133, ANCHOR's 798 turns over six strata of source x checkpoint)",
            "axes_labels": "labelled turns the axes judges are calibrated on, JSONL with id, axis, user, turn, "
                           "label (HELD or DEVIATED) and note per line (empty: data/axes_labels/axes_labels.jsonl, "
                           "three held and three deviated turns per axis)",
            "validation_strata": "the validation sample's strata: source (real or forked turn; the embedded build's, "
                                 "so its validation fits the cold run) or source_checkpoint (source x checkpoint)",
            "per_family": "recall items per family and session (ANCHOR: 8; the embedded 135M model recalls none, so "
                          "one each keeps the cold run in budget)",
            "memory_chunk_steps": "agent steps per chunk of the self-managed memory, which the target updates once per "
                                  "chunk (ANCHOR's seed gives no size; 400 asks no update of the embedded model on the "
                                  "two default sessions, as 80 took 4 minutes; the paper's scale: 40, the summary's blocks)",
            "memory_max_tokens": "the target's budget for each memory update, a JSON object (the seed gives none; the "
                                 "embedded model closes its object within it, the paper's scale allows 400)",
            "memory_chars": "the most characters a memory may hold (canonical JSON); a longer update is rejected and "
                            "the previous memory kept (the seed's 'compact JSON memory' gives no size: the default "
                            "at every scale)",
            "summary_turn_chars": "characters of each entry a summary block or memory chunk shows",
            "banks": "ANCHOR bank folders (or a release root) to score as well",
            "output_dir": "default paper/_generated/anchor"}
    RANGES = {**ServingParameters.RANGES, "targets": (NonEmpty(), Models()), "judges": (NonEmpty(), Models()), "n_sessions": count(zero="all"),
              "inventory": INVENTORIES, "n_items": count(zero="all"), "checkpoints": count(), "axes_positions": count(),
              "facets": OneOf(FACETS, "facet scheme"), "retention_window": POSITIVE, "retention_runs": count(),
              "retention_answer": ANSWER_KINDS,
              "questionnaire_max_tokens": POSITIVE, "axes_window": POSITIVE, "fork_max_tokens": POSITIVE,
              "judge_max_tokens": POSITIVE, "validation_judges": (Lengths((0, 3), "three judges for a majority of three, or none: replicates of "
                                                       "the primary judge"), Models()), "validation_turns": count(),
              "validation_strata": OneOf(tuple(STRATIFICATIONS), "stratification"),
              "axes_labels": File(".jsonl", "data/axes_labels/axes_labels.jsonl"),
              "families": (NonEmpty(), OneOf(tuple(RECALL_FAMILIES), "recall family")),
              "per_family": count(), "conditions": (NonEmpty(), OneOf(tuple(CONTEXT_CONDITIONS), "context condition")),
              "window": POSITIVE, "recent_chars": POSITIVE, "summariser": Models(), "summary_block_steps": count(),
              "summary_turn_chars": POSITIVE, "summary_max_tokens": POSITIVE, "retrieval_k": count(),
              "memory_chunk_steps": count(), "memory_max_tokens": POSITIVE, "memory_chars": POSITIVE,
              "validators": Models(), "n_evaluators": count(),
              "min_agree": Interval(1, high=lambda p: len(p.validators) or p.n_evaluators,
                                    high_text="the number of validators (n_evaluators when none)"),
              "calibration_runs": count(), "sample_temperature": Temperature(("targets", "validators", "judges")),
              "recall_max_tokens": POSITIVE, "n_resamples": RESAMPLES, "resample_seed": NON_NEGATIVE}


# ---------------------------------------------------------------- what the manuscript reads
#: How the retention table names each arm.
ARM_NAMES = {CHECKPOINT: "session prefix", FILLER: "filler prefix"}
_JUDGE = Column("Judge", MODEL, "judge_model")
_AXIS = Column("Axis", TEXT, "axis", widest="boundaries")
_SOURCE = Column("Turns", TEXT, "source", widest="fork")
_TARGET = Column("Target", MODEL, "target", optional=True)  # shown with several targets (:func:`_by_target`)
#: A rank among the targets (tied targets share their average rank: 1.5).
RANK = Decimals("rank", digits=1)
_ALL_HELD_COUNTS = (Column("All four held", COUNT, "n_all_held"), Column("Deviated", COUNT, "n_deviated"),
                    Column("Undecided", COUNT, "n_undecided"))
MANUSCRIPT = Declared(
    variables=(
        Variable("retention_answer", TEXT), Variable("retention_answers_compared", COUNT),
        Variable("retention_answers_agree_pct", PERCENT), Variable("retention_constrained_invalid", COUNT),
        Variable("retention_rows", COUNT), Variable("retention_undefined", COUNT), Variable("retention_no_items", COUNT),
        Variable("checkpoints", COUNT), Variable("retention_window", COUNT),
        Variable("retention_final_{arm}_{facet}", COEFFICIENT, arm=RETENTION_ARMS, facet=TRAITS),
        Variable("axes_positions", COUNT), Variable("axes_turns", COUNT), Variable("axes_verdicts", COUNT), Variable("axes_invalid", COUNT),
        Variable("axes_invalid_pct", PERCENT), Variable("axes_held_{source}_{axis}", COEFFICIENT, source=(REAL, FORK),
                                                        axis=AXES),
        Variable("axes_all_held_{source}", COEFFICIENT, source=(REAL, FORK)),
        Variable("axes_all_held_ci_{source}", interval(COEFFICIENT), source=(REAL, FORK)),
        Variable("axes_all_held_finding", TEXT), Variable("axes_agreement_finding", TEXT),
        Variable("axes_calibration_labels", TEXT), Variable("axes_calibration_n", COUNT), Variable("axes_judge_kappa", COEFFICIENT),
        Variable("axes_judge_agreement", COEFFICIENT), Variable("axes_judge_invalid_pct", PERCENT),
        Variable("axes_judge_calibrated", TEXT), Variable("axes_calibration_finding", TEXT),
        Variable("axes_validation_turns", COUNT), Variable("axes_validation_population", COUNT),
        Variable("axes_validation_per_stratum", COUNT), Variable("axes_validation_stratified_by", TEXT), Variable("axes_validation_strata", COUNT),
        Variable("axes_validation_raters", TEXT), Variable("axes_validation_all_held", COEFFICIENT),
        Variable("axes_validation_all_held_sample", COEFFICIENT),
        Variable("axes_validation_kappa_{axis}", COEFFICIENT, axis=AXES), Variable("axes_validation_finding", TEXT),
        Variable("recall_candidates", COUNT), Variable("recall_blind_kept", COUNT), Variable("recall_validated", COUNT),
        Variable("recall_main", COUNT), Variable("recall_chance", COEFFICIENT), Variable("recall_window", COUNT),
        Variable("n_evaluators", COUNT), Variable("min_agree", COUNT), Variable("calibration_runs", COUNT),
        Variable("recall_asked", COUNT), Variable("recall_modal_letter", TEXT), Variable("recall_modal_pct", PERCENT),
        Variable("recall_accuracy_{condition}", COEFFICIENT, condition=tuple(CONTEXT_CONDITIONS)),
        Variable("memory_chunks", COUNT), Variable("memory_updates_accepted", COUNT),
        Variable("memory_chars_final", COUNT), Variable("memory_chunk_steps", COUNT), Variable("memory_chars", COUNT),
        Variable("memory_finding", TEXT),
        Variable("retention_final", TEXT), Variable("recall_finding", TEXT), Variable("recall_bias", TEXT),
        Variable("n_targets", COUNT), Variable("rank_agreement_finding", TEXT),
        Variable("target", TEXT), Variable("targets", TEXT), Variable("judges", TEXT), Variable("primary_judge", TEXT),
        Variable("n_sessions", COUNT), Variable("n_items", COUNT)),
    tables=(
        Table("retention", "Persona Retention R per facet (mean over sessions)", (
            _TARGET, Column("Arm", TEXT, "arm", widest="session prefix"), Column("Checkpoint", COUNT, "checkpoint"),
            Column("Facet", TEXT, "facet", widest="A:Cooperation"), Column("R", COEFFICIENT, "retention"),
            Column("Sessions with R", COUNT, "n_defined"), Column("Sessions", COUNT, "n_sessions")), index=4),
        Table("axes", "Behavioural axes: held rate among valid verdicts", (
            _JUDGE, _SOURCE, _TARGET, _AXIS,
            Column("Held [95% CI]", estimate(COEFFICIENT), ("held_rate", "ci_low", "ci_high")),
            Column("Valid", COUNT, "n_valid"), Column("Invalid", COUNT, "n_invalid"),
            Column("Failed", COUNT, "n_error")), index=4,
              notes="ci_note"),
        Table("axes_all_held", "All four axes held: share of the decided turns", (
            _JUDGE, _SOURCE, _TARGET, Column("Share [95% CI]", estimate(COEFFICIENT), ("all_held_rate", "ci_low", "ci_high")),
            *_ALL_HELD_COUNTS), index=3),
        Table("axes_all_held_sessions", "All four axes held per session", (
            _JUDGE, _SOURCE, _TARGET, Column("Session", TEXT, "session", widest="S12"),
            Column("Share", COEFFICIENT, "all_held_rate"), *_ALL_HELD_COUNTS), index=4),
        Table("axes_agreement", "Judge agreement per axis", (
            Column("Judge A", MODEL, "judge_a"), Column("Judge B", MODEL, "judge_b"), _AXIS,
            Column("Turns", COUNT, "n_turns"), Column("Both valid", COUNT, "n_both_valid"),
            Column("Agree", COEFFICIENT, "share_agree"), Column("κ", COEFFICIENT, "kappa")), index=3),
        Table("axes_calibration", "Axes judge calibration against hand-labelled turns (HELD/DEVIATED)", (
            Column("Judge", MODEL, "judge"), Column("n", COUNT, "n"), Column("Invalid", PERCENT, "invalid_pct"),
            Column("Agreement", COEFFICIENT, "agreement"), Column("κ", COEFFICIENT, "kappa"),
            Column("Verdict", TEXT, "verdict", widest="not calibrated"))),
        Table("axes_validation", "Axes validation sample: majority of three, sample and population-reweighted "
              "held rates, agreement among the three", (
            Column("Axis", TEXT, "axis", widest="boundaries"), Column("Turns", COUNT, "n_turns"),
            Column("Decided", COUNT, "n_decided"), Column("Held (sample)", COEFFICIENT, "sample_rate"),
            Column("Held (reweighted)", COEFFICIENT, "reweighted_rate"),
            Column("Fleiss κ", COEFFICIENT, "fleiss_kappa", optional=True),
            Column("All three valid", COUNT, "n_all_valid", optional=True))),
        Table("axes_validation_pairs", "Axes validation sample: agreement per pair of raters", (
            Column("Rater A", TEXT, "judge_a", widest="replicate 0 (greedy)"),
            Column("Rater B", TEXT, "judge_b", widest="replicate 2 (T=1)"), _AXIS,
            Column("Both valid", COUNT, "n_both_valid"), Column("Agree", COEFFICIENT, "share_agree"),
            Column("κ", COEFFICIENT, "kappa")), index=3),
        Table("recall_filters", "Question filters: kept and discarded per step", (
            _TARGET, Column("Step", TEXT, "step", widest="with-history validation"), Column("In", COUNT, "in"),
            Column("Kept", COUNT, "kept"), Column("Discarded", COUNT, "discarded")), index=2),
        Table("recall_accuracy", "Recall accuracy per family × condition (chance 0.25)", (
            _TARGET, Column("Set", TEXT, "set", widest="blind-kept"), Column("Family", TEXT, "family", widest="compaction_dropped"),
            *(Column(c.replace("_", " ").capitalize(), COEFFICIENT, c, optional=True) for c in CONTEXT_CONDITIONS)), index=3),
        Table("memory", "Self-managed memory: each update per session and chunk", (
            _TARGET, Column("Session", TEXT, "session", widest="S12"), Column("Chunk", COUNT, "chunk"),
            Column("First step", COUNT, "first_step"), Column("Last step", COUNT, "last_step"),
            Column("Memory chars", COUNT, "memory_chars"), Column("Keys", COUNT, "keys"),
            Column("Update", TEXT, "update", widest="OverBudget")), index=3),
        Table("ranking", "The targets ranked by each instrument", (
            Column("Instrument", TEXT, "instrument", widest="recall (blind-kept)"), Column("Target", MODEL, "target"),
            Column("Score", COEFFICIENT, "score"), Column("Rank", RANK, "rank"),
            Column("Observations", COUNT, "n")), index=2),
        Table("rank_agreement", "Rank agreement between the instruments (Kendall's τ-b)", (
            Column("Instrument A", TEXT, "instrument_a", widest="recall (blind-kept)"),
            Column("Instrument B", TEXT, "instrument_b", widest="recall (blind-kept)"),
            Column("Targets", COUNT, "n_targets"),
            Column("τ [95% CI]", estimate(COEFFICIENT), ("tau", "ci_low", "ci_high")),
            Column("Resamples used", COUNT, "n_used")), index=2),
        Table("banks", "ANCHOR banks", (
            _TARGET, Column("Bank", TEXT, "bank", widest="anchor_bank_coding_v1"), Column("Items", COUNT, "n_items"),
            Column("Accuracy", COEFFICIENT, "accuracy")), index=2),
    ))


# ---------------------------------------------------------------- the stages (one notebook cell each)
def _card(p: Parameters) -> PersonaCard:
    return load_card(p.card) if p.card else CODING_ASSISTANT


def _banks(p: Parameters) -> list:
    return [load_bank(d) for spec in p.banks for d in bank_dirs(spec)]


def _retention_missing(table: pd.DataFrame, arm: str, facet: str, checkpoint: int) -> str:
    """Why no session has R on ``facet`` for ``arm`` at ``checkpoint``: each status, counted."""
    rows = table[(table["arm"] == arm) & (table["facet"] == facet) & (table["checkpoint"] == checkpoint)]
    if rows.empty:
        return f"no {arm} administration at checkpoint {checkpoint}"
    counts = rows["status"].value_counts()
    meaning = {"undefined": "R is undefined in {n} of {of} sessions, as the persona card leaves the facet's answers "
                            "at the generic ones",
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
                       models={*params.targets, params.summariser, *params.judges, *params.validators,
                               *params.validation_judges},
                       sessions=lambda: select_sessions(params.n_sessions), declared=MANUSCRIPT)


def _primary(frame: pd.DataFrame, p: Parameters) -> pd.DataFrame:
    """The rows of ``frame`` of the primary target (the first), whose numbers the text reports."""
    return frame[frame["target"] == p.targets[0]] if len(frame) else frame


def retention(run: Run) -> pd.DataFrame:
    """Persona Retention: the questionnaire asked as a generic assistant, with the card only
    (initial), and with the card plus the session's snapshot prefix at each checkpoint (and
    its filler); R per target, session, checkpoint, arm and facet. Every answer's option
    distribution is read too, and compared with the parsed reply (the counts the text gives
    are the primary target's)."""
    p = run.params
    with CallCache() as cache:
        runs = [run_retention(
            run, cache, _card(p), target=target, inventory=p.inventory, n_items=p.n_items,
            checkpoints=p.checkpoints, window=p.retention_window, n_runs=p.retention_runs, facets=p.facets,
            answer=p.retention_answer, params={"temperature": 0.0 if p.retention_runs == 1 else p.sample_temperature,
                                               "max_tokens": p.questionnaire_max_tokens}) for target in p.targets]
    run.out.parquet("retention_answers", pd.concat([a for a, _ in runs], ignore_index=True))
    run.out.parquet("retention", pd.concat([t for _, t in runs], ignore_index=True))
    answers, table = runs[0]
    compared = answers[answers["agrees"].notna()]
    run.out.set(retention_answer=p.retention_answer, retention_answers_compared=len(compared),
                retention_answers_agree_pct=100 * float(compared["agrees"].astype(bool).mean())
                if len(compared) else not_estimable("no answer has both a parsed reply and a read distribution"),
                retention_constrained_invalid=int((answers["constrained_status"] == "invalid").sum()),
                retention_rows=len(table), retention_undefined=int((table["status"] == "undefined").sum()),
                retention_no_items=int((table["status"] == "no valid items").sum()))
    return pd.concat([t for _, t in runs], ignore_index=True)


def retention_summary(run: Run, retention: pd.DataFrame) -> pd.DataFrame:
    """R per facet, mean over sessions, one row per target, arm and checkpoint (a Target
    column where there are several; the text's values are the primary target's)."""
    p = run.params
    everyone, retention = retention, _primary(retention, p)
    summary = retention_by_checkpoint(retention)
    last = summary[(summary["checkpoint"] == p.checkpoints)].set_index(["arm", "facet"])["retention"]
    run.out.set(checkpoints=p.checkpoints, retention_window=p.retention_window)
    for arm in RETENTION_ARMS:
        for facet in TRAITS:
            run.out.put("retention_final_{arm}_{facet}", last.get((arm, facet)), arm=arm, facet=facet,
                        why=_retention_missing(retention, arm, facet, p.checkpoints))
    run.out.set(retention_final=retention_sentence(run.out.variables))
    shown = retention_rows(retention_by_checkpoint(everyone))
    if len(shown):
        shown["note"] = [_retention_missing(everyone[everyone["target"] == target], arm, facet, checkpoint)
                         if pd.isna(r) else ""
                         for target, arm, facet, checkpoint, r in
                         shown[["target", "arm", "facet", "checkpoint", "retention"]].itertuples(index=False)]
        shown["arm"] = shown["arm"].map(ARM_NAMES)
    return run.table("retention", shown if len(p.targets) > 1 else shown.drop(columns="target", errors="ignore"))


def retention_sentence(written: dict) -> str:
    """R at the last checkpoint per facet on both prefixes, as the manuscript's values
    (``written``), each reason R is missing for named once, with the facets and prefixes it
    holds for."""
    shown, missing = {}, {}
    for arm in RETENTION_ARMS:
        values = [(facet, written[f"retention_final_{arm}_{facet}"]) for facet in TRAITS]
        shown[arm] = joined([f"{v} ({facet})" for facet, v in values if reason_of(v) is None]) or "not estimable"
        for facet, v in values:
            if reason_of(v) is not None:
                missing.setdefault(reason_of(v), {}).setdefault(facet, []).append(ARM_NAMES[arm])
    said = f"R on the session prefix was {shown[CHECKPOINT]}, on the filler prefix {shown[FILLER]}"
    for reason, facets in missing.items():
        where = {", ".join(arms) for arms in facets.values()}
        on = "on both prefixes" if where == {", ".join(ARM_NAMES[a] for a in RETENTION_ARMS)} else \
            "on the " + " or ".join(sorted(where))
        said += f"; for {joined(list(facets))} {on} it is not estimable: {reason}"
    return said


def retention_plot(run: Run, retention: pd.DataFrame) -> SavedFigure:
    """Persona Retention per facet over the checkpoints, session prefix and filler prefix, of
    the primary target (a point without a value says why)."""
    retention = _primary(retention, run.params)
    summary = retention_by_checkpoint(retention) if len(retention) else pd.DataFrame()
    if len(summary):
        summary["note"] = [_retention_missing(retention, arm, facet, checkpoint) if pd.isna(r) else ""
                           for arm, facet, checkpoint, r in summary[["arm", "facet", "checkpoint", "retention"]]
                           .itertuples(index=False)]
    return run.figure("retention", figures.trajectory(
        summary, x="checkpoint", y="retention", hue="facet",
        hue_order=ordered_facets(set(summary["facet"])) if len(summary) else None, panel="arm",
        titles={CHECKPOINT: "session prefix", FILLER: "filler prefix"}, levels=(0.0, 1.0), xlabel="checkpoint",
        ylabel="Persona Retention R", reason="no session has R on any facet at any checkpoint"))


def axes_calibration(run: Run) -> pd.DataFrame:
    """Axes judge calibration, before any turn is judged: every axes judge (the run's and the
    validation judges) answers HELD or DEVIATED on the hand-labelled turns of ``axes_labels``
    (by default ``data/axes_labels``: three held and three deviated per axis, labelled under the built-in
    coding-assistant card, which they are judged against whatever ``card`` the run uses), through
    the axes stage's requests and verdict reader at its budget; n, the invalid share, agreement
    and Cohen's kappa per judge. A judge is calibrated at kappa 0.60 or more with at most 10%
    invalid verdicts (the 0-3 judge's threshold); with ``require_calibrated`` a judge below it
    stops the run here, before any axes judge call."""
    p = run.params
    items = read_axes_labels(resolve_path(p.axes_labels) if p.axes_labels else AXES_LABELS)
    rows = []
    with CallCache() as cache:
        for judge in dict.fromkeys((*p.judges, *p.validation_judges)):
            result = calibrate_axes(judge, items, params=axes_judge_params(judge, p.judge_max_tokens), cache=cache,
                                    transport=run.transport, name="anchor:axes calibration")
            run.batch("anchor:axes calibration", result.counts)
            a = result.agreement
            rows.append({"judge": judge, "n": a.n, "n_valid": a.n_valid, "invalid_pct": 100 * a.invalid_rate,
                         "agreement": a.exact, "kappa": a.kappa, "verdict": result.verdict,
                         "labels_sha256": result.labels_sha256[:12],
                         "note": "" if not pd.isna(a.kappa) else
                         "no verdict is valid" if not a.n_valid else
                         f"κ undefined: the {a.n_valid} valid verdicts and their labels leave chance agreement certain"})
    table = pd.DataFrame(rows)
    run.out.parquet("axes_calibration", table)
    first = rows[0]
    why = (f"{first['n_valid']} of {first['judge']}'s {first['n']} verdicts on the labelled turns are valid"
           + (", all of one verdict" if first["n_valid"] else ""))
    run.out.set(axes_calibration_labels=p.axes_labels or str(AXES_LABELS.relative_to(REPO_ROOT)),
                axes_calibration_n=first["n"], axes_judge_invalid_pct=first["invalid_pct"],
                axes_judge_calibrated=first["verdict"])
    run.out.put("axes_judge_kappa", first["kappa"], why=why)
    run.out.put("axes_judge_agreement", first["agreement"], why=why)
    run.out.set(axes_calibration_finding=axes_calibration_sentence(run.out.variables, first["judge"]))
    failing = [r["judge"] for r in rows if r["verdict"] != "calibrated"]
    if failing and p.require_calibrated and run.planner is None:  # a plan's verdicts are placeholders
        raise JudgeNotCalibrated(f"axes judge(s) {', '.join(failing)} failed calibration (Cohen's kappa >= {MIN_KAPPA} "
                                 f"and invalid <= {100 * MAX_INVALID_RATE:.0f}% on {p.axes_labels or 'data/axes_labels'} needed); no "
                                 "turn was judged. Run with require_calibrated false to measure anyway, beside the "
                                 "calibration.")
    return run.table("axes_calibration", table)


def axes_calibration_sentence(written: dict, judge: str) -> str:
    """What the primary axes judge's calibration (``written``: the manuscript's values) says of
    its verdicts."""
    kappa, n, verdict = written["axes_judge_kappa"], written["axes_calibration_n"], written["axes_judge_calibrated"]
    invalid = written["axes_judge_invalid_pct"]
    said = (f"On {n} hand-labelled turns the primary axes judge ({judge}) gave {invalid} invalid verdicts and "
            + (f"agreed with the labels at Cohen's κ {kappa}" if reason_of(kappa) is None
               else f"its κ is {kappa}"))
    if verdict == "calibrated":
        return said + f", at or above the threshold of {MIN_KAPPA:.2f} with at most {100 * MAX_INVALID_RATE:.0f}% invalid: it is calibrated."
    return (said + f": it is not calibrated (κ at least {MIN_KAPPA:.2f} with at most {100 * MAX_INVALID_RATE:.0f}% "
            "invalid is needed), so its axis verdicts below are reported as measured, not as a validated judgement.")


def _primary_turns(axes: pd.DataFrame, p: Parameters) -> pd.DataFrame:
    """The verdicts on the real turns and on the primary target's forked turns."""
    return axes[(axes["source"] == REAL) | (axes["target"] == p.targets[0])] if len(axes) else axes


def axes(run: Run) -> pd.DataFrame:
    """Behavioural axes: real assistant turns at the checkpoints (judged once, whatever the
    targets) and turns each target regenerated on forks there, each judged HELD or DEVIATED
    on role, boundaries, values and style by every judge (one row per verdict; the counts the
    text gives are of the real turns and the primary target's forks)."""
    p = run.params
    with CallCache() as cache:
        frame = run_axes(run, cache, _card(p), targets=p.targets, judges=p.judges, checkpoints=p.axes_positions,
                         window=p.axes_window, fork_max_tokens=p.fork_max_tokens,
                         judge_max_tokens=p.judge_max_tokens)
    run.out.parquet("axes", frame)
    primary = _primary_turns(frame, p)
    run.out.set(axes_positions=p.axes_positions, axes_turns=int(primary["turn_id"].nunique()),
                axes_verdicts=len(primary), axes_invalid=int((primary["status"] == "invalid").sum()),
                axes_invalid_pct=100 * (primary["status"] == "invalid").mean() if len(primary)
                else not_estimable("no axis verdict was asked"))
    return frame


def axes_held(run: Run, axes: pd.DataFrame) -> pd.DataFrame:
    """The held rate among valid verdicts per judge, source (real or forked turn) and axis,
    never pooled across judges or axes; with two judges or more, their agreement per axis."""
    p = run.params
    rates = axis_rates(axes, ci=len(set(axes["session"])) > 1, n_resamples=p.n_resamples, seed=p.resample_seed)
    run.out.parquet("axes_rates", rates)
    agreement = axis_agreement(axes, list(p.judges))
    run.table("axes_agreement", explained_if_empty(
        agreement, "one judge: no pair of judges to compare" if len(p.judges) < 2 else "no axis verdict was asked",
        MANUSCRIPT.table("axes_agreement"), judge_a=p.judges[0]))
    run.out.set(axes_agreement_finding=agreement_sentence(agreement, p.judges))
    first = _primary_turns(rates, p)
    first = first[first["judge_model"] == p.judges[0]].set_index(["source", "axis"])
    for source in (REAL, FORK):
        for axis in AXES:
            run.out.put("axes_held_{source}_{axis}", first["held_rate"].get((source, axis)), source=source, axis=axis,
                        why=f"none of the {int(first['n'].get((source, axis), 0))} verdicts of {p.judges[0]} on "
                            f"{axis} for {source} turns is valid ({int(first['n_invalid'].get((source, axis), 0))} "
                            f"invalid, {int(first['n_error'].get((source, axis), 0))} failed calls)")
    return run.table("axes", _by_target(rates.reindex(columns=list(dict.fromkeys(
        [*rates.columns, "ci_low", "ci_high", "ci_note"])))))


def agreement_sentence(agreement: pd.DataFrame, judges) -> str:
    """What the judges' agreement per axis (:func:`~contextecho.anchor.axes.report.axis_agreement`)
    says, in words: the range of Cohen's kappa over judge pairs and axes, or why there is none."""
    if len(judges) < 2:
        return (f"With one judge ({judges[0]}) there is no pair of judges to compare; the validation sample below "
                "measures agreement among three raters instead")
    kappas = agreement["kappa"].dropna()
    if kappas.empty:
        return "No pair of judges has a κ on any axis: " + str(agreement["note"].iloc[0])
    return (f"Cohen's κ between pairs of judges ranged from {COEFFICIENT.text(kappas.min())} to "
            f"{COEFFICIENT.text(kappas.max())} over the axes ({len(kappas)} of {len(agreement)} pair-axis cells "
            "estimable)")


#: How the manuscript names the turns of each source.
SOURCE_WORDS = {REAL: "real", FORK: "forked"}


def _all_held_note(row) -> str:
    """Why a row of the all-four tables has no share, or no interval."""
    if pd.isna(row["all_held_rate"]):
        return f"none of the {row['n_turns']} turns has a valid verdict on every axis, nor a deviation on one"
    note = row.get("ci_note", "")
    return "" if pd.isna(note) else str(note)


def axes_all_held(run: Run, axes: pd.DataFrame) -> pd.DataFrame:
    """ANCHOR's headline: per judge, source and target, the share of the decided turns that
    held all four axes (a turn with no deviation but an axis without a valid verdict is
    undecided, counted and left out), with its 95% interval resampling sessions; the same per
    session; each turn's count in ``results/axes_all_held.parquet``. The text reports the
    primary judge on the real turns and the primary target's forks."""
    p = run.params
    run.out.parquet("axes_all_held", all_axes_held(axes))
    rates = all_axes_rates(axes, ci=True, n_resamples=p.n_resamples, seed=p.resample_seed)
    rates["note"] = [_all_held_note(r) for _, r in rates.iterrows()]
    sessions = all_axes_rates(axes, by=(*DEFAULT_BY, "session"))
    sessions["note"] = [_all_held_note(r) for _, r in sessions.iterrows()]
    run.table("axes_all_held_sessions", _by_target(sessions))
    first = _primary_turns(rates, p)
    first = first[first["judge_model"] == p.judges[0]].set_index("source")
    for source in (REAL, FORK):
        row = first.loc[source] if source in first.index else None
        run.out.put("axes_all_held_{source}", None if row is None else row["all_held_rate"], source=source,
                    why=f"no {SOURCE_WORDS[source]} turn was judged" if row is None else _all_held_note(row))
        run.out.put("axes_all_held_ci_{source}", None if row is None else (row["ci_low"], row["ci_high"]),
                    source=source, why="no share to give an interval to" if row is None or pd.isna(row["all_held_rate"])
                    else str(row["ci_note"]) or "no interval")
    run.out.set(axes_all_held_finding=all_held_sentence(run.out.variables, first, p.judges[0]))
    return run.table("axes_all_held", _by_target(rates))


def _by_target(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its target column where forks of several targets are in it; without it
    where one target wrote every forked turn (the source says whose turn a row counts)."""
    several = frame.loc[frame["source"] == FORK, "target"].nunique() > 1
    return frame if several else frame.drop(columns="target")


def all_held_sentence(written: dict, first: pd.DataFrame, judge: str) -> str:
    """The all-four-axes share of the primary ``judge`` per source, as the manuscript's values
    (``written``) with the counts of its table (``first``: the judge's rows by source); the plain
    sentence that it measures nothing where no turn is decided, or every decided turn held all
    four, or none did (the share does not vary between turns)."""
    counts = first.reindex([s for s in (REAL, FORK) if s in first.index])
    held, deviated, undecided = (int(counts[c].sum()) for c in ("n_all_held", "n_deviated", "n_undecided"))
    what = "the share of turns holding all four axes"
    left = f" ({undecided} more had no deviation but an axis without a valid verdict)" if undecided else ""
    if not held + deviated:
        return measures_nothing(what, f"no turn has a valid verdict from {judge} on every axis, nor a deviation "
                                f"({undecided} turns undecided)", CAPABLE_JUDGE)
    if not deviated or not held:
        return measures_nothing(what, (f"every one of the {held} turns decided under {judge} held all four{left}" if held else
                                       f"none of the {deviated} turns decided under {judge} held all four: each deviated on "
                                       f"at least one axis{left}") + ", so the share does not vary between turns",
                                f"{CAPABLE_JUDGE} and {PAPER_SCALE_SET}")
    parts, none = [], []
    for source, row in counts.iterrows():
        share, ci = written[f"axes_all_held_{source}"], written[f"axes_all_held_ci_{source}"]
        if reason_of(share) is not None:
            none.append(f"no {SOURCE_WORDS[source]} turn was decided")
            continue
        bounds = f"95% CI {ci}" if reason_of(ci) is None else f"no interval: {reason_of(ci)}"
        parts.append(f"{int(row['n_all_held'])} of the {int(row['n_all_held'] + row['n_deviated'])} decided "
                     f"{SOURCE_WORDS[source]} turns ({share}, {bounds})")
    return (f"Under the primary judge ({judge}) {joined(parts)} held all four axes{left}"
            + "".join(f"; {n}" for n in none) + "; a turn counts once, and the interval resamples sessions.")


def axes_validation(run: Run, axes: pd.DataFrame) -> pd.DataFrame:
    """ANCHOR's validation sample: a stratified sample of the turns the primary judge judged
    (``validation_turns`` per stratum; our strata, ``validation_strata``, are the turn's source,
    real or forked, alone or × its checkpoint, since the seed does not list ANCHOR's), seeded with ``resample_seed``, judged on
    all four axes by three raters: the three ``validation_judges``, or, without them, the primary
    judge three times (its own greedy verdict and two replicates sampled at ``sample_temperature``:
    replicates of one judge, not three judges). Per (turn, axis) the majority of the three (of
    the valid verdicts where one is invalid; undecided without a majority); per axis and for all
    four axes held, the sample rate beside the rate reweighted by each stratum's share of the
    judged turns; the raters' agreement per axis, Fleiss' kappa and Cohen's kappa per pair."""
    p = run.params
    raters = validation_raters(p.judges, p.validation_judges, sample_temperature=p.sample_temperature,
                               max_tokens=p.judge_max_tokens)
    labels = [r.label for r in raters]
    primary = axes[(axes["judge_model"] == p.judges[0]) & axes["judge_key"].notna()] if len(axes) else axes
    strata = STRATIFICATIONS[p.validation_strata]
    population = primary.drop_duplicates("turn_id")[["turn_id", *strata]] if len(primary) else pd.DataFrame()
    run.out.set(axes_validation_per_stratum=p.validation_turns, axes_validation_population=len(population),
                axes_validation_stratified_by=STRATA_WORDS[p.validation_strata],
                axes_validation_raters=raters_text(raters, p.judges[0], p.sample_temperature))
    if population.empty:
        sample, verdicts = pd.DataFrame(columns=["turn_id", *strata, "population", "sampled"]), pd.DataFrame()
        rates, per_axis, pairs = pd.DataFrame(), pd.DataFrame(), pd.DataFrame()
    else:
        sample = stratified_sample(population, p.validation_turns, p.resample_seed, strata)
        chosen = set(sample["turn_id"])
        card = _card(p)
        with CallCache() as cache:
            turns = [t for t in axes_turns(run, cache, card, targets=p.targets, checkpoints=p.axes_positions,
                                           window=p.axes_window, fork_max_tokens=p.fork_max_tokens, count=False)
                     if t.id in chosen]
            verdicts = validate_axes(run, cache, card, turns, raters)
        rates = reweighted_rates(majority(verdicts), sample, strata)
        per_axis, pairs = rater_agreement(verdicts, labels)
        run.out.parquet("axes_validation_verdicts", verdicts.drop(columns=["session"]))
    run.out.parquet("axes_validation_sample", sample)
    run.out.set(axes_validation_turns=len(sample),
                axes_validation_strata=int(sample[list(strata)].drop_duplicates().shape[0]) if len(sample) else 0)
    table = validation_table(rates, per_axis)
    by = table.set_index("axis") if len(table) else pd.DataFrame()
    for axis in AXES:
        kappa = by["fleiss_kappa"].get(axis) if len(by) else None
        run.out.put("axes_validation_kappa_{axis}", kappa, axis=axis,
                    why=(by["kappa_note"].get(axis) if len(by) and by["kappa_note"].get(axis) else "no turn was sampled"))
    row = by.loc[ALL_FOUR] if len(by) and ALL_FOUR in by.index else None
    undecided = ("no turn was sampled" if row is None else
                 f"none of the {int(row['n_turns'])} sampled turns has a majority on every axis or a majority deviation")
    run.out.put("axes_validation_all_held", None if row is None else row["reweighted_rate"], why=undecided)
    run.out.put("axes_validation_all_held_sample", None if row is None else row["sample_rate"], why=undecided)
    run.out.set(axes_validation_finding=validation_sentence(run.out.variables, row, any(r.is_replicate for r in raters)))
    run.table("axes_validation_pairs", pairs)
    return run.table("axes_validation", table)


#: How the manuscript names each stratification of the validation sample.
STRATA_WORDS = {"source": "turn source, real or forked", "source_checkpoint": "turn source × checkpoint"}


def raters_text(raters, judge: str, temperature: float) -> str:
    """Who the validation sample's three raters are, in words."""
    if any(r.is_replicate for r in raters):
        return (f"the primary judge ({judge}) three times, its own greedy verdict and two replicates sampled at "
                f"temperature {temperature:g}")
    return "three judges (" + joined([r.model for r in raters]) + ")"


def validation_table(rates: pd.DataFrame, per_axis: pd.DataFrame) -> pd.DataFrame:
    """One row per axis and one for all four: the rates of
    :func:`~contextecho.anchor.axes.validation.reweighted_rates` beside the raters' Fleiss' kappa,
    and a note where a value is missing."""
    if rates.empty:
        return rates
    table = rates.merge(per_axis[["axis", "fleiss_kappa", "n_all_valid", "note"]].rename(columns={"note": "kappa_note"}),
                        on="axis", how="left")
    table["kappa_note"] = table["kappa_note"].fillna("")
    table.loc[table["axis"] == ALL_FOUR, "kappa_note"] = "the raters' agreement is measured per axis"
    table["note"] = ["; ".join(n for n in ("no sampled turn has a majority verdict" if pd.isna(rate) else "",
                                            f"Fleiss' κ: {note}" if note else "") if n)
                     for note, rate in zip(table["kappa_note"], table["reweighted_rate"])]
    return table


def validation_sentence(written: dict, row, replicates: bool) -> str:
    """The validation sample in words (``written``: the manuscript's values; ``row``: its
    all-four row; ``replicates``: the raters are replicates of one judge); that it measures
    nothing where no sampled turn is decided on all four axes, or every decided one held (or
    none did)."""
    raters = "replicates" if replicates else "judges"
    what = "the validation sample's majority-of-three share of turns holding all four axes"
    if row is None:
        return measures_nothing(what, "no turn was judged, so none was sampled", CAPABLE_JUDGE)
    sampled = (f"The validation sample holds {written['axes_validation_turns']} of the "
               f"{written['axes_validation_population']} judged turns (up to {written['axes_validation_per_stratum']} "
               f"per stratum of {written['axes_validation_stratified_by']}; {written['axes_validation_strata']} strata).")
    kappas = [(axis, written[f"axes_validation_kappa_{axis}"]) for axis in AXES]
    estimable = [f"{k} ({axis})" for axis, k in kappas if reason_of(k) is None]
    agreement = (f"Fleiss' κ among the three {raters} was {joined(estimable)}" if estimable else
                 f"Agreement among the three {raters} is not estimable on any axis: "
                 + joined(sorted({reason_of(k) for _, k in kappas})))
    missing = [axis for axis, k in kappas if reason_of(k) is not None]
    if estimable and missing:
        agreement += f"; on {joined(missing)} it is not estimable"
    decided, held = int(row["n_decided"]), int(row["n_held"])
    if not decided:
        return " ".join((sampled, measures_nothing(
            what, f"none of the {int(row['n_turns'])} sampled turns has a majority verdict on every axis nor a "
                  "majority deviation", CAPABLE_JUDGE), agreement + "."))
    if held in (0, decided):
        return " ".join((sampled, measures_nothing(
            what, (f"every one of the {decided} decided turns held all four" if held else
                   f"none of the {decided} decided turns held all four") + ", so the share does not vary between turns",
            f"{CAPABLE_JUDGE} and {PAPER_SCALE_SET}"), agreement + "."))
    return (f"{sampled} The majority of the three {raters} held all four axes on {held} of {decided} decided turns "
            f"({written['axes_validation_all_held_sample']}); reweighted by each stratum's share of the judged turns "
            f"the share is {written['axes_validation_all_held']}. {agreement}.")


def recall(run: Run) -> pd.DataFrame:
    """Trajectory recall: four-option questions from the sessions, ANCHOR's three filters
    (blind, with-history validation, calibration), then the target's answers under each
    context condition (one row per target, item and condition). Each target is asked on its
    own: the blind filter keeps the items its own blind answers miss, and the self-managed
    memory is its own; the hierarchical summaries are the summariser's, the same request for
    every target asking an item at the same point (answered from the call cache after the
    first). The counts the text gives are the primary target's."""
    p = run.params
    with CallCache() as cache:
        results = [run_recall(run, cache, RecallSettings(
            target=target, families=p.families, per_family=p.per_family, conditions=p.conditions,
            window=p.window, recent_chars=p.recent_chars, summariser=p.summariser,
            summary_block_steps=p.summary_block_steps, summary_turn_chars=p.summary_turn_chars,
            summary_max_tokens=p.summary_max_tokens, retrieval_k=p.retrieval_k,
            memory_chunk_steps=p.memory_chunk_steps, memory_max_tokens=p.memory_max_tokens, memory_chars=p.memory_chars,
            validators=p.validators,
            n_evaluators=p.n_evaluators, min_agree=p.min_agree, calibration_runs=p.calibration_runs,
            sample_temperature=p.sample_temperature, max_tokens=p.recall_max_tokens)) for target in p.targets]
    result = {stem: pd.concat([r[stem].assign(target=target) for target, r in zip(p.targets, results)],
                              ignore_index=True) for stem in ("per_item", "filters", "calibration", "memory")}
    for stem in ("per_item", "filters", "calibration", "memory"):
        run.out.parquet(f"recall_{stem}", result[stem])
    several = len(p.targets) > 1
    run.table("recall_filters", result["filters"] if several else results[0]["filters"])
    memory_summary(run, result["memory"])
    filters, per_item = results[0]["filters"].set_index("step"), results[0]["per_item"]
    run.out.set(recall_candidates=int(filters.loc["candidates", "in"]),
                recall_blind_kept=int(filters.loc["blind filter", "kept"]),
                recall_validated=int(filters.loc["with-history validation", "kept"]),
                recall_main=int(filters.loc["calibration: main", "kept"]),
                recall_chance=CHANCE, recall_window=p.window, n_evaluators=len(p.validators) or p.n_evaluators,
                min_agree=p.min_agree, calibration_runs=p.calibration_runs,
                recall_asked=len(per_item[["session", "item"]].drop_duplicates()) if not per_item.empty else 0,
                **modal_choice(per_item))
    return result["per_item"]


def memory_summary(run: Run, memory: pd.DataFrame) -> pd.DataFrame:
    """The self-managed memory's updates (one row per target, session and chunk) as the
    ``memory`` table, and how many of the primary target's there were, how many were accepted,
    and its longest final memory."""
    p = run.params
    shown = memory if len(p.targets) > 1 else memory.drop(columns="target")
    memory = _primary(memory, p)
    final = memory.groupby("session")["memory_chars"].last() if len(memory) else pd.Series(dtype=int)
    why = ("self-managed memory is not among this run's conditions" if "self_managed" not in p.conditions else
           f"no chunk of {p.memory_chunk_steps} agent steps was complete before any blind-kept item")
    run.out.set(memory_chunks=len(memory), memory_updates_accepted=int(memory["accepted"].sum()) if len(memory) else 0,
                memory_chars_final=int(final.max()) if len(final) else not_estimable(why),
                memory_chunk_steps=p.memory_chunk_steps, memory_chars=p.memory_chars)
    run.out.set(memory_finding=memory_sentence(run.out.variables, len(memory), why))
    return run.table("memory", explained_if_empty(shown, f"the target kept no memory: {why}", MANUSCRIPT.table("memory")))


def memory_sentence(written: dict, n_updates: int, why: str) -> str:
    """How many memory updates the target made and kept, and the longest final memory, as
    the manuscript's values (``written``); the plain sentence that the memory measures
    nothing where no update was asked (``n_updates`` 0, for ``why``)."""
    if not n_updates:
        return measures_nothing("the self-managed memory", f"{why}, so the target kept none and every item read an "
                                "empty memory before the recent turns", f"longer sessions or {PAPER_SCALE_SET}")
    return (f"Of its {written['memory_chunks']} updates {written['memory_updates_accepted']} were accepted (a reply "
            "that is no JSON object, or too long, keeps the memory it had), and the final memories held at most "
            f"{written['memory_chars_final']} characters.")


def recall_accuracy(run: Run, recall: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per question family × context condition (chance 0.25), on every blind-kept
    item and on the calibrated main set, with n, per target (the text's values are the
    primary target's)."""
    p = run.params
    accuracy = pd.concat([accuracy_table(recall[recall["target"] == t] if len(recall) else recall).assign(target=t)
                          for t in p.targets], ignore_index=True)
    run.out.parquet("recall_accuracy", accuracy)
    recall = _primary(recall, p)
    pooled = recall[recall["context"]].groupby("condition")["correct"].mean() if not recall.empty else {}
    for condition in CONTEXT_CONDITIONS:
        run.out.put("recall_accuracy_{condition}", pooled.get(condition), condition=condition,
                    why=f"no recall question was answered with the {condition} context")
    asked = [c for c in run.params.conditions if c in getattr(pooled, "index", ())]
    run.out.set(**recall_sentences(run.out.variables, {c: float(pooled[c]) for c in asked}))
    index = ["target", "set", "family"] if len(p.targets) > 1 else ["set", "family"]
    wide = accuracy.pivot_table(index=index, columns="condition", values="accuracy", dropna=False).reset_index() \
        .merge(accuracy[index].drop_duplicates(), on=index) if not accuracy.empty else accuracy.drop(columns="target")
    return run.table("recall_accuracy", wide)


#: How the manuscript names each context condition of recall.
CONDITION_WORDS = {"long_context": "with the long-context window", "hierarchical_summary": "with a hierarchical summary",
                   "self_managed": "with the memory it kept itself",
                   "retrieval": "with retrieval of the most relevant earlier turns"}
#: A share of the readable answers above which one letter is the target's position bias.
BIAS_PCT = 50.0


def recall_sentences(written: dict, pooled: dict[str, float]) -> dict[str, str]:
    """``recall_finding``: the pooled accuracy per context condition against chance, or the plain
    sentence that recall measures nothing where no condition recalled anything; ``recall_bias``:
    the letter the target names most often with history and what that does to the blind-kept
    set (``written``: the manuscript's values; ``pooled``: accuracy per condition asked)."""
    letter, pct = written["recall_modal_letter"], written["recall_modal_pct"]
    biased = reason_of(pct) is None and float(str(pct).rstrip("%")) > BIAS_PCT
    bias = (f"With history the target named option {letter} in {pct} of its readable answers: each item's option "
            "order is drawn at random, so a model that names one letter is at chance over all candidates, and the "
            "blind filter keeps exactly the items whose answer is another letter" if biased else
            f"With history the target's answers spread over the letters (the most frequent, {letter}, in {pct} of "
            "them)" if reason_of(pct) is None else f"No answer with history named a letter: {reason_of(pct)}")
    asked = written["recall_asked"]
    if not pooled:
        finding = measures_nothing("trajectory recall", "no blind-kept item was asked under any context condition",
                                   f"{CAPABLE_TARGET} and {PAPER_SCALE_SET}")
    elif not any(pooled.values()):
        finding = measures_nothing("trajectory recall", f"the target answered none of the {asked} blind-kept items "
                                   "correctly under any context condition (accuracy 0.00 throughout, so the figure "
                                   "has no bars)", CAPABLE_TARGET)
    else:
        finding = (f"Pooled over families, accuracy on the {asked} blind-kept items was "
                   + joined([f"{written[f'recall_accuracy_{c}']} {CONDITION_WORDS.get(c, c)}" for c in pooled])
                   + f", against a chance level of {written['recall_chance']}.")
    return {"recall_finding": finding, "recall_bias": bias + "."}


def recall_plot(run: Run, recall: pd.DataFrame) -> SavedFigure:
    """Blind-kept accuracy of the primary target per family and condition, against chance (a
    bar without a value says why)."""
    accuracy = accuracy_table(_primary(recall, run.params))
    kept = accuracy[accuracy["set"] == "blind-kept"]
    kept = kept.assign(note=["" if n else "no blind-kept item was asked with this context" for n in kept["n"]])
    return run.figure("recall", figures.bars(
        kept, x="family", y="accuracy", hue="condition", order=sorted(set(kept["family"])),
        hue_order=run.params.conditions, ylim=(0, 1), reference=(CHANCE, f"chance ({CHANCE:g})"),
        ylabel="accuracy (blind-kept items)", reason="no recall item was kept by the blind filter"))


def banks(run: Run) -> pd.DataFrame:
    """Externally authored ANCHOR banks (``banks``), each scored with the bank scorer for
    every target (its own files under ``results/banks/<bank>``, or ``results/banks/<k>/<bank>``
    for the k-th target, from 1, where there are several)."""
    p = run.params
    folder = run.out.directory / "results" / "banks"
    with CallCache() as cache:
        scored = [(target, score_bank(b, target, (folder / str(k) if len(p.targets) > 1 else folder) / b.bank_id,
                                      cache=cache, transport=run.transport))
                  for k, target in enumerate(p.targets, 1) for b in _banks(p)]
    if not scored:
        return pd.DataFrame()
    rows = pd.DataFrame([{"bank": b.summary["bank_id"], **{k: b.summary[k] for k in ("n_items", "accuracy")},
                          **({"target": target} if len(p.targets) > 1 else {})} for target, b in scored])
    return run.table("banks", rows)


def ranking(run: Run, retention: pd.DataFrame, axes: pd.DataFrame, recall: pd.DataFrame) -> pd.DataFrame:
    """The targets ranked by each instrument — Persona Retention at the last checkpoint on
    the session prefix, recall accuracy with the long-context window, and per judge the share
    of the target's forked turns holding all four axes (1 = best, ties share their average
    rank) — and Kendall's τ-b between every pair of rankings, with its 95% interval resampling
    sessions (:mod:`contextecho.anchor.ranking`); no model call."""
    p = run.params
    sessions = [run.labels[s.session_id] for s in run.sessions]
    instruments = [retention_instrument(retention, p.targets, sessions, p.checkpoints),
                   recall_instrument(recall, p.targets, sessions),
                   *axes_instruments(axes, p.targets, sessions, p.judges)]
    ranked = ranking_table(instruments)
    agreement = agreement_table(instruments, n_resamples=p.n_resamples, seed=p.resample_seed)
    run.out.parquet("ranking", ranked)
    run.out.parquet("rank_agreement", agreement)
    run.table("rank_agreement", agreement)
    run.out.set(n_targets=len(p.targets), rank_agreement_finding=rank_agreement_sentence(agreement, p.targets))
    return run.table("ranking", ranked)


def rank_agreement_sentence(agreement: pd.DataFrame, targets: Sequence[str]) -> str:
    """Kendall's τ-b between each pair of instruments' rankings of the ``targets`` with its
    interval, from the ``rank_agreement`` table; the plain sentence that the ranking measures
    nothing where no pair has a τ (one target, or no two scored under both)."""
    what = "the agreement between the instruments' rankings of the targets"
    if len(targets) < 2:
        return measures_nothing(what, f"this run has one target ({targets[0]}), and a ranking needs two",
                                f"{PAPER_SCALE_SET} (ANCHOR's four evaluated models, each {CAPABLE_TARGET})")
    defined = agreement[agreement["tau"].notna()]
    if defined.empty:
        why = joined(sorted(set(agreement["note"]))) or "no two instruments were compared"
        return measures_nothing(what, f"no pair of instruments ranks two targets apart ({why})",
                                f"{CAPABLE_TARGET} among the targets and {PAPER_SCALE_SET}")
    parts = []
    for row in defined.itertuples(index=False):
        bounds = (f"95% CI {interval(COEFFICIENT).text((row.ci_low, row.ci_high))}" if pd.notna(row.ci_low)
                  else "no interval")
        parts.append(f"{COEFFICIENT.text(row.tau)} between {row.instrument_a} and {row.instrument_b} "
                     f"({row.n_targets} targets scored under both; {bounds}, {row.n_used} of "
                     f"{row.n_used + row.n_undefined} resamples used)")
    left = len(agreement) - len(defined)
    return (f"Kendall's τ-b between the instruments' rankings of the {len(targets)} targets was {joined(parts)}"
            + (f"; {left} pair{'s' if left > 1 else ''} of instruments had no τ (its table says "
               "why)" if left else "")
            + "; the intervals resample sessions, leaving out a resample where τ is undefined.")


def variables(run: Run) -> pd.DataFrame:
    """The manuscript's numbers, written with the run log."""
    p = run.params
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), judges=", ".join(p.judges), primary_judge=p.judges[0],
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
            "recall_modal_pct": 100 * float(counts.iloc[0]) / len(choices)}


STAGES = (Stage("run", start), Stage("retention", retention), Stage("retention_table", retention_summary),
          Stage("retention_figure", retention_plot), Stage("axes_calibration", axes_calibration), Stage("axes", axes),
          Stage("held", axes_held), Stage("all_held", axes_all_held), Stage("axes_validation", axes_validation),
          Stage("recall", recall), Stage("accuracy", recall_accuracy), Stage("recall_figure", recall_plot),
          Stage("ranking", ranking), Stage("banks", banks), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
