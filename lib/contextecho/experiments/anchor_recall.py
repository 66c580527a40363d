"""The anchor notebook's Trajectory Recall section: items, ANCHOR's three filters,
and accuracy per question family × context condition.

1. Items: every recall family on every session (deterministic, no LLM).
2. Blind filter: the target answers each question alone (greedy); correct → discarded.
3. With-history validation: ``validators`` (model strings), or, when none are given,
   ``n_evaluators`` sampled replicates of the target, answer with the long-context causal
   window; an item needs ``min_agree`` of them to recover the answer. A validator answers
   greedily at its provider's budget rule
   (:func:`~contextecho.echo.reference.providers.target_params`: a thinking Gemini model at
   least 16,384 tokens, so it answers at all).
4. Calibration: ``calibration_runs`` further sampled runs with the same context
   (replicate indices after the validators', so no answer is reused): main / hard / invalid.
5. Conditions: the target answers greedily under each context condition (self-managed
   memory: the target first keeps its memory over the sessions' chunks, one batch per chunk;
   every update is a row of the ``memory`` table). Accuracy is
   reported on two item sets — every blind-kept item, and the calibrated main set — with
   n per cell: ANCHOR reports the latter; on a weak model it may be empty, which is said.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from ..anchor.recall.asking import answers_of, ask_requests, choice_of
from ..anchor.recall.families import recall_items
from ..anchor.recall.filters import MAIN, blind_filter, calibrate_recall, filter_counts, validate_with_history
from ..anchor.context.conditions import (CONTEXT_CONDITIONS, HierarchicalSummary, LongContext, Retrieval, SelfManaged,
                                         build_contexts, horizon)
from ..anchor.context.memory import Memories, MemoryChain, memory_params, run_memories
from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.counts import Counts
from ..echo.reference.providers import target_params
from .spine import Run

CHANCE = 0.25


@dataclass(frozen=True)
class RecallSettings:
    target: str
    families: tuple[str, ...]
    per_family: int
    conditions: tuple[str, ...]
    window: int  # long-context characters
    recent_chars: int  # verbatim part of the summary and retrieval conditions
    summariser: str
    summary_block_steps: int
    summary_turn_chars: int
    summary_max_tokens: int
    retrieval_k: int
    memory_chunk_steps: int
    memory_max_tokens: int
    memory_chars: int
    validators: tuple[str, ...]
    n_evaluators: int
    min_agree: int
    calibration_runs: int
    sample_temperature: float
    max_tokens: int


def _ask(counts: dict[str, Counts], cache: CallCache, transport: Transport, stage: str, by_session: dict,
         sessions: dict, model: str, *, condition=None, window=None, params: dict,
         replicate: int = 0, built: dict | None = None) -> dict[str, str | None]:
    """Answers by item id for one model/replicate, through one generate batch (counted
    under ``stage`` in ``counts``); ``built``: the item messages of this condition and window,
    each built once for every model and replicate asked with the same dict
    (:func:`~contextecho.anchor.recall.asking.ask_requests`)."""
    requests, order = [], []
    for sid, items in by_session.items():
        if not items:
            continue
        if condition is None and window is None:
            requests += ask_requests(items, model, params=params, replicate=replicate, built=built)
        else:
            requests += ask_requests(items, model, sessions[sid], condition=condition or "long_context",
                                     window=window, params=params, replicate=replicate, built=built)
        order += [(sid, i.id) for i in items]
    if not requests:
        return {}
    result = generate(requests, cache=cache, transport=transport, progress=True, name=f"anchor:{stage}")
    counts[stage] = counts.get(stage, Counts()) + result.counts()
    return dict(zip(order, answers_of(result.records)))


def _group(items, sessions) -> dict[str, list]:
    by = {s.session_id: [] for s in sessions}
    for i in items:
        by[i.session_id].append(i)
    return by


def _condition(name: str, s: RecallSettings, sessions: dict, by_session: dict, cache, transport: Transport,
               counts: dict[str, Counts]):
    """The condition object for ``name``, with its summaries run where it needs them."""
    if name == "long_context":
        return LongContext(limit=s.window)
    if name == "retrieval":
        return Retrieval(k=s.retrieval_k, recent_chars=s.recent_chars)
    if name == "self_managed":
        cond = SelfManaged(MemoryChain(model=s.target, chunk_steps=s.memory_chunk_steps,
                                       turn_chars=s.summary_turn_chars, memory_chars=s.memory_chars,
                                       params=memory_params(s.memory_max_tokens)), recent_chars=s.recent_chars)
        memories, counts["memory"] = run_memories(
            cond.chain, [(sessions[sid], horizon(sessions[sid], items)) for sid, items in by_session.items() if items],
            cache=cache, transport=transport, progress=True, name="anchor:memory")
        return cond.with_memories(memories)
    cond = HierarchicalSummary(model=s.summariser, recent_chars=s.recent_chars, block_steps=s.summary_block_steps,
                               turn_chars=s.summary_turn_chars,
                               params={"temperature": 0, "max_tokens": s.summary_max_tokens})
    requests = [r for sid, items in by_session.items() if items
                for r in cond.summary_requests(sessions[sid], items)]
    requests = list({r.key: r for r in requests}.values())
    result = generate(requests, cache=cache, transport=transport, progress=True, name="anchor:summaries")
    counts["summaries"] = result.counts()
    return cond.with_summaries(requests, result.records)


def run_recall(run: Run, cache: CallCache, s: RecallSettings) -> dict[str, pd.DataFrame]:
    """Items, the three filters and the answers under each condition (module doc); each
    stage's batches counted in ``run``'s log as ``anchor:recall <stage>``."""
    transport, sessions, labels = run.transport, run.sessions, run.labels
    n_evaluators = len(s.validators) or s.n_evaluators
    if not 1 <= s.min_agree <= n_evaluators:
        raise ValueError(f"min_agree={s.min_agree} needs between 1 and {n_evaluators} evaluators "
                         "(validators, or n_evaluators sampled replicates)")
    unknown = sorted(set(s.conditions) - set(CONTEXT_CONDITIONS))
    if unknown:
        raise KeyError(f"unknown context condition(s) {unknown}; known: {sorted(CONTEXT_CONDITIONS)}")
    by_id = {x.session_id: x for x in sessions}
    items = [i for x in sessions for i in recall_items(x, families=s.families, per_family=s.per_family)]
    greedy = {"temperature": 0.0, "max_tokens": s.max_tokens}
    sampled = {"temperature": s.sample_temperature, "max_tokens": s.max_tokens}
    counts: dict[str, Counts] = {}
    blind_answers = _ask(counts, cache, transport, "blind", _group(items, sessions), by_id, s.target, params=greedy)
    blind = blind_filter(items, [blind_answers[(i.session_id, i.id)] for i in items])
    kept = _group(blind.kept, sessions)

    evaluators = [(m, 0, {"temperature": 0.0, **target_params(m, s.max_tokens)}) for m in s.validators] or \
        [(s.target, r, sampled) for r in range(s.n_evaluators)]
    with_history: dict = {}  # the long-context messages of each item, built once for validation and calibration
    validation_answers = {f"{m}#{r}": _ask(counts, cache, transport, "validation", kept, by_id, m, window=s.window,
                                           params=params, replicate=r, built=with_history)
                          for m, r, params in evaluators}
    validation = validate_with_history(
        list(blind.kept), {k: [v[(i.session_id, i.id)] for i in blind.kept] for k, v in validation_answers.items()},
        min_agree=s.min_agree)
    first = 0 if s.validators else s.n_evaluators
    runs = [_ask(counts, cache, transport, "calibration", _group(validation.kept, sessions), by_id, s.target, window=s.window,
                 params=sampled, replicate=first + r, built=with_history) for r in range(s.calibration_runs)]
    calibration = calibrate_recall(list(validation.kept), [[run[(i.session_id, i.id)] for i in validation.kept]
                                                           for run in runs]) if validation.kept and runs else []
    main = {(c.item.session_id, c.item.id) for c in calibration if c.verdict == MAIN}  # ids repeat across sessions

    rows, memories = [], Memories()
    for name in s.conditions:
        cond = _condition(name, s, by_id, kept, cache, transport, counts)
        memories = cond.memories if isinstance(cond, SelfManaged) else memories
        usable = {sid: build_contexts(cond, by_id[sid], its).usable(its) for sid, its in kept.items() if its}
        answers = _ask(counts, cache, transport, f"condition:{name}", usable, by_id, s.target, condition=cond, params=greedy)
        rows += condition_rows(blind.kept, name, answers, main, labels)
    for stage, c in counts.items():
        run.batch(f"anchor:recall {stage}", c)
    per_item = pd.DataFrame(rows)
    filters = pd.DataFrame(filter_counts(blind, validation, calibration))
    return {"per_item": per_item, "filters": filters, "accuracy": accuracy_table(per_item),
            "memory": memory_table(memories, labels),
            "calibration": pd.DataFrame([{"session": labels[c.item.session_id], "item": c.item.id,
                                          "family": c.item.family, "verdict": c.verdict,
                                          "modal_share": c.modal_share, "accuracy": c.accuracy}
                                         for c in calibration])}


def condition_rows(items: Sequence, condition: str, answers: dict, main: set, labels: dict) -> list[dict]:
    """One row per item under one condition. ``answers`` and ``main`` are keyed by
    (session id, item id): item ids repeat across sessions. An item missing from ``answers``
    had no context (a failed summary); a None answer is a failed call. Neither is a guess."""
    rows = []
    for item in items:
        key = (item.session_id, item.id)
        answer = answers.get(key)
        choice = choice_of(answer)
        rows.append({"session": labels[item.session_id], "item": item.id, "family": item.family,
                     "condition": condition, "main": key in main, "context": key in answers,
                     "failed": key in answers and answer is None, "choice": choice,
                     "correct": choice == item.answer})
    return rows


def accuracy_table(per_item: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per family × condition on the blind-kept set and the main set, with n.
    Items without a context (a failed summary) are left out and counted in ``n_no_context``."""
    if per_item.empty:
        return pd.DataFrame(columns=["family", "condition", "set", "n", "n_no_context", "accuracy"])
    rows = []
    for label, frame in (("blind-kept", per_item), ("main", per_item[per_item["main"]])):
        for (family, condition), g in frame.groupby(["family", "condition"]):
            asked = g[g["context"]]
            rows.append({"family": family, "condition": condition, "set": label, "n": len(asked),
                         "n_no_context": int((~g["context"]).sum()),
                         "accuracy": asked["correct"].mean() if len(asked) else float("nan")})
    return pd.DataFrame(rows)


MEMORY_COLUMNS = ["session", "chunk", "first_step", "last_step", "memory_chars", "keys", "accepted", "reason",
                  "update", "sha256"]


def memory_table(memories: Memories, labels: dict) -> pd.DataFrame:
    """One row per session and chunk of the self-managed memory: its steps, the memory's size
    and keys after the update, whether the update was accepted or why not."""
    return pd.DataFrame([{"session": labels[u.session_id], "chunk": u.chunk, "first_step": u.first_step,
                          "last_step": u.last_step, "memory_chars": u.memory_chars, "keys": len(u.keys),
                          "accepted": u.accepted, "reason": u.reason,
                          "update": "accepted" if u.accepted else u.reason, "sha256": u.sha256}
                         for u in memories.updates], columns=MEMORY_COLUMNS)
