"""ANCHOR audit: persona retention, behavioural axes and trajectory recall on long coding sessions.

    from contextecho.anchor import recall_items, ask_requests, blind_filter, answers_of
    items = recall_items(session)                         # deterministic, no LLM
    blind = generate(ask_requests(items, model))          # the question alone
    kept = blind_filter(items, answers_of(blind.records)).kept
    with_history = ask_requests(kept, model, session, condition="long_context")

    runs = retention_runs(CODING_ASSISTANT, sessions, filler=...)  # generic/initial/checkpoints
    retention_table(answers)                                       # R per facet, from CAPE's answers

    frame = judge_axes(real_turns(session), judges, CODING_ASSISTANT) # role/boundaries/values/style
    score_bank(load_bank("path/to/bank"), model, "out/")              # ANCHOR's released layout

- :mod:`.persona`: the persona card every part shows the model;
- :mod:`.retention`: Persona Retention (the measure; where the questionnaire is asked);
- :mod:`.axes`: turn-level behavioural axes (rubric, verdicts, turns, report);
- :mod:`.recall`: trajectory-recall questions (events, items, families; asking; filters);
- :mod:`.context`: what a recall item is answered from (causal window, conditions,
  summaries, retrieval);
- :mod:`.banks`: ANCHOR's released banks (layout, causal window, scorer).

ANCHOR imports the engine, sessions and stats, never ContextEcho's or CAPE's internals:
what it needs of them (CAPE's questionnaire, ContextEcho's filler) the experiment passes
in. The notebook ``anchor`` (``contextecho.experiments.anchor``) runs all of it.
"""
from .axes.report import judge_axes
from .axes.turns import real_turns
from .banks.bank import load_bank
from .banks.scorer import score_bank
from .persona import CODING_ASSISTANT
from .recall.asking import answers_of, ask_requests
from .recall.families import recall_items
from .recall.filters import blind_filter
from .retention.runs import retention_runs, retention_table

__all__ = [
    "CODING_ASSISTANT", "recall_items", "ask_requests", "blind_filter", "answers_of",
    "retention_runs", "retention_table", "judge_axes", "real_turns", "load_bank", "score_bank",
]
