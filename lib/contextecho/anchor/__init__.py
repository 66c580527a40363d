"""ANCHOR audit: persona retention, behavioural axes and trajectory recall on long coding sessions.

    from contextecho.anchor import recall_items, ask_requests, blind_filter, answers_of
    items = recall_items(session)                         # deterministic, no LLM
    blind = generate(ask_requests(items, model))          # the question alone
    kept = blind_filter(items, answers_of(blind.records)).kept
    with_history = ask_requests(kept, model, session, condition="long_context")

    runs = retention_runs(CODING_ASSISTANT, inventory, sessions)      # generic/initial/checkpoints
    retention_table(cape.administer(runs, model).answers)            # R per facet

    frame = judge_axes(real_turns(session), judges, CODING_ASSISTANT) # role/boundaries/values/style
    score_bank(load_bank("path/to/bank"), model, "out/")              # ANCHOR's released layout

The notebook ``companion`` (``contextecho.experiments.companion``) runs all of it.
"""
from .axes.rubric import AXES, AXIS_RUBRIC, AxisRubric, axis_request
from .axes.verdicts import parse_axis_verdict
from .axes.report import all_axes_held, axis_agreement, axis_frame, axis_jobs, axis_rates, judge_axes, judge_requests
from .axes.turns import JudgedTurn, fork_requests, forked_turns, real_turns
from .banks.bank import Bank, bank_dirs, load_bank
from .banks.jsonl import BankError
from .banks.items import BankItem
from .banks.window import BankContext, bank_context
from .banks.scorer import BankRun, BankRunFailed, score_bank
from .context.conditions import CONDITIONS, HierarchicalSummary, LongContext, Retrieval, build_contexts, condition_for
from .context.record import ContextBatch, ItemContext
from .recall.calibration import Calibration, ValidationResult, calibrate, filter_counts, validate_with_history
from .recall.filters import BlindFilterResult, answers_of, ask_requests, blind_filter, parse_choice
from .recall.items import RecallItem, prompt_text
from .persona import CODING_ASSISTANT, PersonaCard, PersonaCardError, card_from_dict, load_card
from .recall.requests import user_requests
from .recall.families import FAMILIES, recall_items
from .context.summary import ContextUnavailable
from .retention.measure import DegenerateFacet, FacetRetention, facet_retention, retention
from .retention.runs import checkpoint_steps, retention_runs, retention_table
from .context.window import CausalWindow, causal_window

__all__ = [
    "retention", "facet_retention", "FacetRetention", "DegenerateFacet",
    "retention_runs", "retention_table", "checkpoint_steps",
    "PersonaCard", "PersonaCardError", "CODING_ASSISTANT", "load_card", "card_from_dict",
    "recall_items", "FAMILIES", "RecallItem", "prompt_text",
    "causal_window", "CausalWindow", "user_requests",
    "CONDITIONS", "LongContext", "HierarchicalSummary", "Retrieval", "condition_for", "build_contexts",
    "ContextBatch", "ItemContext", "ContextUnavailable",
    "ask_requests", "blind_filter", "BlindFilterResult", "answers_of", "parse_choice",
    "validate_with_history", "ValidationResult", "calibrate", "Calibration", "filter_counts",
    "AXES", "AXIS_RUBRIC", "AxisRubric", "axis_request", "parse_axis_verdict",
    "JudgedTurn", "real_turns", "fork_requests", "forked_turns",
    "axis_jobs", "judge_requests", "axis_frame", "judge_axes", "axis_rates", "all_axes_held", "axis_agreement",
    "load_bank", "bank_dirs", "Bank", "BankItem", "BankError",
    "score_bank", "bank_context", "BankContext", "BankRun", "BankRunFailed",
]
