"""ANCHOR audit: persona retention and trajectory recall on long coding sessions.

    from contextecho.anchor import recall_items, causal_window, ask_requests, blind_filter
    items = recall_items(session)                         # deterministic, no LLM
    blind = generate(ask_requests(items, model))          # the question alone
    kept = blind_filter(items, answers_of(blind.records)).kept
    with_history = ask_requests(kept, model, session)     # causal window + question
"""
from .filters import BlindFilterResult, answers_of, ask_requests, blind_filter, parse_choice
from .items import RecallItem, prompt_text
from .recall import FAMILIES, recall_items
from .retention import DegenerateFacet, FacetRetention, facet_retention, retention
from .window import CausalWindow, causal_window

__all__ = [
    "retention", "facet_retention", "FacetRetention", "DegenerateFacet",
    "recall_items", "FAMILIES", "RecallItem", "prompt_text",
    "causal_window", "CausalWindow",
    "ask_requests", "blind_filter", "BlindFilterResult", "answers_of", "parse_choice",
]
