"""Administer an inventory: context-free or context-dependent, many runs at once.

A *run* (:class:`RunSpec`) is one pass through the items in a fixed order with one
instruction, option set, sampling setting and replicate index. ``administer`` asks
every run's items through the one call site, ``contextecho.engine.calls.generate``:

- ``context_free``: each item alone (after the run's ``prefix``, if any); every item
  of every run goes in one round.
- ``context_dependent``: r_t = f(q_t, H_{t−1}); the request for item t holds the
  earlier questions as user turns and the model's own replies as assistant turns.
  This is sequential, so each step t is one round over all runs.

Each answer is an immutable :class:`Answer` (its constrained answer, where read, added with
``dataclasses.replace``); the answers frame is built once from them (:func:`answer_frame`).

``history_pairs`` keeps only the last k question–answer pairs (the paper's few-shot
ablation, §6.1); ``None`` keeps the whole history. On the embedded model the full
MPI-120 history does not fit: measured with its tokenizer, a question–answer pair
costs 96 (paper prompt) to 124 (instruction 2) tokens, ~11.5k–14.8k tokens for 120
items against an 8,192-token context. ``history_pairs="auto"`` (the default) therefore
uses :data:`LOCAL_HISTORY_PAIRS` = 48 pairs (≤ ~6k tokens, room for the question and a
short session prefix) on ``local/*`` models and the full history elsewhere. A request
that still overflows fails before any compute (``ModelConfigError``); nothing is
truncated silently.

A failed call is an ``error`` row (no score); its pair is left out of the later
history, since there is no reply to show. ``history_letter`` (the adversarial attack,
§6.3) replaces every reply in the history by that option, written as the prompt lists
it; the reply actually recorded for item t is still the model's own.

``constrained=True`` also reads each answer's distribution over the option letters
(:mod:`contextecho.engine.token_distribution`: a call of its own, prefilled up to the letter —
``(`` for options written ``(A) ...``, nothing for ``A) ...`` — where the backend takes a
prefilled turn). The *constrained answer* is the most probable allowed letter; the text
answer, its parse and the history stay as they are, and ``agrees`` compares the two.
Columns: ``constrained_answer``, ``constrained_status`` (ok | invalid | error | discrete:
the provider returns no token probabilities and the parsed answer is used, as such),
``constrained_score``, ``constrained_probs`` (JSON), ``constrained_entropy``,
``constrained_flat``. The distribution is the model's own (before temperature), so the
constrained answer to a run at temperature 1 is that of temperature 0.
:func:`constrained_answers` puts them in place of the text answers for the analyses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import pandas as pd

from ..engine.cache import CallCache
from ..engine.calls import RoundResult, Transport, generate
from ..engine.counts import Counts
from ..engine.model_request import ModelRequest
from ..engine.token_distribution import DISCRETE, PREFILL, distribution_request, read_distribution, read_mode
from .inventory import InventoryItem
from .parsing import ERROR, item_score, parse_answer
from .prompts import (LETTERS, PAPER_INSTRUCTION, PAPER_OPTIONS, Instruction, Options, option_label,
                      render_question)

CONTEXT_FREE = "context_free"
CONTEXT_DEPENDENT = "context_dependent"
SETTINGS = (CONTEXT_FREE, CONTEXT_DEPENDENT)
# Temperature 0 unless temperature is the factor (CAPE §3.1). The paper gives no
# max_tokens; 16 holds "(B) Moderately Accurate" and keeps the history short.
DEFAULT_PARAMS: Mapping[str, Any] = {"temperature": 0.0, "max_tokens": 16}
LOCAL_HISTORY_PAIRS = 48
# Which answer the analyses read: the parsed reply (the paper's) or the most probable option letter.
ANSWERS = ("text", "constrained")


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    items: tuple[InventoryItem, ...]  # in asking order
    instruction: Instruction = PAPER_INSTRUCTION
    options: Options = PAPER_OPTIONS
    params: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_PARAMS))
    replicate: int = 0
    item_texts: Mapping[int, str] | None = None  # item index → text asked (paraphrases)
    prefix: tuple[dict, ...] = ()  # messages before the questionnaire (session snapshots)
    history_letter: str | None = None  # adversarial attack: history replies forced to this
    labels: Mapping[str, Any] = field(default_factory=dict)  # factor, variant, run, ... per row

    def question(self, item: InventoryItem) -> str:
        text = self.item_texts[item.index] if self.item_texts is not None else item.text
        return render_question(text, self.instruction, self.options)

    def answer_opening(self) -> str:
        """The text an answer written as the prompt lists the options has before its letter."""
        letter = self.options.order[0]
        label = option_label(letter, self.options, self.instruction)
        return label[: label.index(letter)]


# The answers frame: its columns in order, each with its dtype; the runs' labels (the caller's
# names, their dtypes inferred) follow ``model``, those only a later run has come last. None:
# the dtype pandas infers from the values, which depends on them: text a row may lack (``str``
# where any row has it, ``object`` where none does), a temperature a run may leave out, and
# ``agrees`` (``bool`` where every row compares, ``object`` where one cannot).
ANSWER_COLUMNS: Mapping[str, str | None] = {
    "run_id": "str", "setting": "str", "model": "str", "position": "int64", "item": "int64", "trait": "str",
    "key": "int64", "question": "str", "instruction": "str", "options": "str", "temperature": None,
    "replicate": "int64", "history_letter": None, "n_history": "int64", "response": None, "answer": None,
    "status": "str", "score": "float64", "error_type": None, "request_key": "str", "cached": "bool"}
# With ``constrained=True``, after those: :class:`ConstrainedAnswer`'s fields, then ``agrees``.
CONSTRAINED_COLUMNS: Mapping[str, str | None] = {
    "constrained_answer": None, "constrained_status": "str", "constrained_score": "float64",
    "constrained_probs": None, "constrained_entropy": "float64", "constrained_flat": "bool", "agrees": None}
RESERVED = frozenset(ANSWER_COLUMNS) | frozenset(CONSTRAINED_COLUMNS)


@dataclass(frozen=True)
class ConstrainedAnswer:
    """The most probable option letter of one answer (module doc): ``status`` ok | invalid |
    error | discrete; ``probs`` the letters' probabilities as JSON."""

    answer: str | None = None
    status: str = ERROR
    score: float = float("nan")
    probs: str | None = None
    entropy: float = float("nan")
    flat: bool = False


@dataclass(frozen=True)
class Answer:
    """One item of one run as administered: a row of :attr:`Administration.answers`, its fields
    named as the columns of :data:`ANSWER_COLUMNS`. ``constrained``: its constrained answer, added
    (``dataclasses.replace``) where it was read."""

    run_id: str
    setting: str
    model: str
    labels: Mapping[str, Any]  # the run's, read-only
    position: int  # 1-based, in asking order
    item: int
    trait: str
    key: int
    question: str
    instruction: str
    options: str
    temperature: float | None
    replicate: int
    history_letter: str | None
    n_history: int  # question–answer pairs in the request's history
    response: str | None  # None: the call failed
    answer: str | None  # the option letter parsed from the response
    status: str
    score: float
    error_type: str | None
    request_key: str
    cached: bool
    constrained: ConstrainedAnswer | None = None

    @property
    def agrees(self) -> bool | None:
        """Whether the constrained answer is the text one; None where either is missing."""
        chosen = self.constrained.answer if self.constrained is not None else None
        return chosen == self.answer if chosen is not None and self.answer is not None else None

    def row(self) -> dict[str, Any]:
        """Its value in each column of :data:`ANSWER_COLUMNS` (and of :data:`CONSTRAINED_COLUMNS`
        where it has a constrained answer)."""
        row = {name: getattr(self, name) for name in ANSWER_COLUMNS}
        if self.constrained is not None:
            row.update({f"constrained_{f.name}": getattr(self.constrained, f.name)
                        for f in fields(ConstrainedAnswer)}, agrees=self.agrees)
        return row


def answer_frame(answers: Sequence[Answer]) -> pd.DataFrame:
    """``answers`` as one frame, built once: :data:`ANSWER_COLUMNS` (then :data:`CONSTRAINED_COLUMNS`
    where the answers have constrained ones) with their dtypes, and the runs' labels."""
    rows = [a.row() for a in answers]
    schema = {**ANSWER_COLUMNS, **(CONSTRAINED_COLUMNS if answers and answers[0].constrained is not None else {})}
    columns = {name: pd.Series([row[name] for row in rows], dtype=dtype) for name, dtype in schema.items()}
    labels = pd.DataFrame([dict(a.labels) for a in answers], index=pd.RangeIndex(len(rows)))
    first, leading = ("run_id", "setting", "model"), list(answers[0].labels) if answers else []
    return pd.DataFrame({**{name: columns[name] for name in first}, **{name: labels[name] for name in leading},
                         **{name: column for name, column in columns.items() if name not in first},
                         **{name: labels[name] for name in labels if name not in leading}})


@dataclass(frozen=True)
class Administration:
    """What ``administer`` produced: one record per (run, item), and the same as one tidy frame."""

    records: tuple[Answer, ...]
    answers: pd.DataFrame  # answer_frame(records)
    model: str
    setting: str
    history_pairs: int | None
    n_calls: int
    n_cached: int


def answer_counts(answers: pd.DataFrame) -> Counts:
    """The calls behind ``answers`` (rows of one or more administrations): cached, computed,
    failed, and answered but not parsed as an option (``invalid``)."""
    cached = answers["cached"].astype(bool)
    failed = answers["error_type"].notna()
    return Counts(calls=len(answers), cached=int(cached.sum()), computed=int((~cached).sum()),
                  failed=int(failed.sum()), invalid=int(((answers["status"] != "ok") & ~failed).sum()))


def default_history_pairs(model: str) -> int | None:
    return LOCAL_HISTORY_PAIRS if model.startswith("local/") else None


def _resolve_history_pairs(history_pairs, model: str) -> int | None:
    if history_pairs == "auto":
        return default_history_pairs(model)
    if history_pairs is not None and (not isinstance(history_pairs, int) or history_pairs < 0):
        raise ValueError(f"history_pairs must be 'auto', None or a number of pairs >= 0, got {history_pairs!r}")
    return history_pairs


def history_messages(history: Sequence[tuple[str, str]], history_pairs: int | None) -> list[dict]:
    pairs = history if history_pairs is None else (history[-history_pairs:] if history_pairs else [])
    return [m for q, a in pairs for m in ({"role": "user", "content": q},
                                          {"role": "assistant", "content": a})]


def administer(runs: Sequence[RunSpec], model: str, *, setting: str = CONTEXT_FREE,
               history_pairs: int | None | str = "auto", cache: CallCache | None = None,
               transport: Transport = Transport(), progress: bool = False,
               name: str = "cape", constrained: bool = False) -> Administration:
    """Ask every run's items; see the module doc."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    runs = list(runs)
    clash = {k for r in runs for k in r.labels} & RESERVED
    if clash:
        raise ValueError(f"run labels {sorted(clash)} would overwrite answer columns")
    if len({r.run_id for r in runs}) != len(runs):
        raise ValueError("run_id must be unique within an administration")
    history_pairs = _resolve_history_pairs(history_pairs, model) if setting == CONTEXT_DEPENDENT else None
    parameters = {"setting": setting, "history_pairs": history_pairs, "runs": [r.run_id for r in runs]}
    answers: list[Answer] = []
    calls = cached = 0

    def request(run: RunSpec, t: int, history: list[tuple[str, str]]) -> ModelRequest:
        messages = list(run.prefix) + history_messages(history, history_pairs) + \
            [{"role": "user", "content": run.question(run.items[t])}]
        return ModelRequest(model, messages, dict(run.params), run.replicate)

    if setting == CONTEXT_FREE:
        asked = [(run, t) for run in runs for t in range(len(run.items))]
        requests = [request(run, t, []) for run, t in asked]
        result = generate(requests, cache=cache, transport=transport, progress=progress,
                          name=f"{name}:context_free", parameters=parameters)
        calls, cached = len(requests), result.n_hits
        answers = [_answer(run, t, req, result, k, 0, setting=setting, model=model)
                   for k, ((run, t), req) in enumerate(zip(asked, requests))]
        if constrained:
            answers, n = _constrain(answers, [run for run, _ in asked], requests, cache=cache, transport=transport,
                                    progress=progress, name=f"{name}:context_free:constrained")
            calls += n
    else:
        histories: dict[str, list[tuple[str, str]]] = {r.run_id: [] for r in runs}
        for t in range(max(len(r.items) for r in runs)):
            active = [r for r in runs if t < len(r.items)]
            requests = [request(r, t, histories[r.run_id]) for r in active]
            result = generate(requests, cache=cache, transport=transport, progress=progress,
                              name=f"{name}:step{t + 1}", parameters=parameters)
            calls, cached = calls + len(requests), cached + result.n_hits
            step = [_answer(run, t, req, result, k, len(history_messages(histories[run.run_id], history_pairs)) // 2,
                            setting=setting, model=model) for k, (run, req) in enumerate(zip(active, requests))]
            for run, answer in zip(active, step):
                if answer.response is not None:
                    reply = option_label(run.history_letter, run.options, run.instruction) \
                        if run.history_letter else answer.response
                    histories[run.run_id].append((answer.question, reply))
            if constrained:
                step, n = _constrain(step, active, requests, cache=cache, transport=transport,
                                     progress=progress, name=f"{name}:step{t + 1}:constrained")
                calls += n
            answers += step
    return Administration(tuple(answers), answer_frame(answers), model, setting, history_pairs, calls, cached)


def _answer(run: RunSpec, t: int, request: ModelRequest, result: RoundResult, k: int, n_history: int, *,
            setting: str, model: str) -> Answer:
    record = result.records[k]
    item = run.items[t]
    text = record.response_text if record.ok else None
    parsed = parse_answer(text, run.options)
    return Answer(
        run_id=run.run_id, setting=setting, model=model, labels=MappingProxyType(dict(run.labels)),
        position=t + 1, item=item.index, trait=item.trait, key=item.key,
        question=request.messages[-1]["content"], instruction=run.instruction.name, options=run.options.name,
        temperature=run.params.get("temperature"), replicate=run.replicate, history_letter=run.history_letter,
        n_history=n_history, response=text, answer=parsed.letter, status=parsed.status,
        score=item_score(parsed.letter, item.key), error_type=record.error_type, request_key=record.key,
        cached=result.cached[k])


def _constrain(answers: list[Answer], runs: Sequence[RunSpec], requests: Sequence[ModelRequest], *,
               cache: CallCache | None, transport: Transport, progress: bool, name: str) -> tuple[list[Answer], int]:
    """``answers`` with their constrained answers (module doc), and the calls made."""
    mode = read_mode(requests[0].model) if requests else DISCRETE
    readings = [distribution_request(req, mode, run.answer_opening()) for run, req in zip(runs, requests)]
    records = generate([r for r in readings if r is not None], cache=cache, transport=transport,
                       progress=progress, name=name).records if mode != DISCRETE else []
    it = iter(records)
    out = []
    for answer, run, reading in zip(answers, runs, readings):
        if reading is None:
            chosen = ConstrainedAnswer(answer=answer.answer, score=answer.score,
                                       status=DISCRETE if answer.error_type is None else ERROR)
        else:
            record = next(it)
            chosen = ConstrainedAnswer()
            if record.ok:
                opening = run.answer_opening()
                d = read_distribution(record.logprobs, list(LETTERS),
                                      label="^" + re.escape(opening) if mode == PREFILL else
                                      r"(?:^|\n)\s*" + re.escape(opening),
                                      prefill=opening if mode == PREFILL else "")
                chosen = ConstrainedAnswer(answer=d.argmax, status=d.status, score=item_score(d.argmax, answer.key),
                                           probs=d.probs_json(), entropy=d.entropy, flat=d.flat)
        out.append(replace(answer, constrained=chosen))
    return out, len(records)


def chosen_answers(answers: pd.DataFrame, answer: str) -> pd.DataFrame:
    """The answers an analysis uses (one of :data:`ANSWERS`): the text ones, or the
    constrained ones in their place (:func:`constrained_answers`)."""
    if answer not in ANSWERS:
        raise ValueError(f"answer must be one of {ANSWERS}, got {answer!r}")
    return constrained_answers(answers) if answer == "constrained" else answers


def constrained_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """``answers`` with the constrained answer in place of the text answer (``answer``,
    ``status``, ``score``), for the consistency analyses; the text ones are kept as
    ``text_answer``, ``text_status``, ``text_score``."""
    if "constrained_answer" not in answers.columns:
        raise ValueError("these answers were administered without constrained=True")
    out = answers.rename(columns={"answer": "text_answer", "status": "text_status", "score": "text_score"})
    out["answer"] = answers["constrained_answer"]
    out["status"] = answers["constrained_status"].where(answers["constrained_status"] != DISCRETE,
                                                        answers["status"])
    out["score"] = answers["constrained_score"]
    return out
