"""A plan: what a run will call, and what it will cost, before any call is sent.

A run in plan mode goes through every stage of its experiment as it would for real, with
one difference at the one call site (:func:`~contextecho.engine.calls.agenerate`): a
request the cache cannot answer is not sent. A :class:`Planner` writes it down (the round
that asks it, the model, its prompt tokens) and answers it with a placeholder
(:data:`PLANNED_ANSWER` and the request's key, so no two planned answers are the same),
so the stages after it build the requests they would build: the judge of each planned
answer is planned too (an upper bound: a run whose answers happen to repeat asks a
judge once per distinct answer). A request planned once is answered from
the planner for the rest of the plan, as the cache would answer it in the run.

What is counted, per round and model (the plan's ``batch`` column names the round):

- **calls**: distinct requests; **cached**: answered by the cache (or earlier in the plan);
  **to compute**: the rest, the calls the run will send.
- **prompt tokens** of the calls to compute: counted with the embedded model's own tokenizer
  and chat template for ``local/...`` (exact: what the model will evaluate), with LiteLLM's
  ``token_counter`` for every other model (exact for OpenAI's models; for the others
  LiteLLM's default tokenizer, an estimate: ``tokens_exact`` false). A request built from a
  planned answer (a judge's) holds the placeholder instead of the answer: its prompt is
  counted with the placeholder replaced by the answer's estimated length, and marked
  estimated.
- **completion tokens**: not known before the answer; estimated per model as the median of
  the completion tokens the cache holds for that model (capped by each request's
  ``max_tokens``), else ``max_tokens`` itself (an upper bound; ``completion_basis`` says
  which).
- **cost**: LiteLLM's price map (``litellm.cost_per_token``), per model and in total, and
  at the provider's batch price where the map has one (``input_cost_per_token_batches``);
  in-process models cost nothing; a model the map has no price for (a self-hosted server)
  has no cost (None, shown as such, never 0).
- **wall time**: the median latency the cache recorded for the model, times the calls to
  compute, over the concurrency; None where the cache holds no latency for the model.

The plan of a run is written beside its outputs (``plan.json``) and the run that follows
it records the plan against what it actually called (:mod:`contextecho.engine.manifest`).
"""
from __future__ import annotations

import json
import math
import statistics
import threading
from collections import defaultdict
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from . import llm
from .record import OK, CallRecord, utc_now
from .hashing import content_hash
from .model_request import ModelRequest

#: What a planned call answers: a verdict every judge parser reads (a JSON score and a
#: ``Score:`` line), so the stages after it take their usual path; the marker lets a later
#: request built from it be recognised (its prompt holds an answer not yet known).
PLANNED_MARKER = "[planned answer: not asked]"
PLANNED_ANSWER = '{"score": 2, "reason": "planned"}\nScore: 2 ' + PLANNED_MARKER
#: Per model kind: how prompt tokens are counted.
EXACT, TIKTOKEN, ESTIMATE = "model tokenizer", "tiktoken", "estimate"


@dataclass(frozen=True)
class PlannedCall:
    """One distinct request of one round of the plan."""

    round: str  # its name
    model: str
    key: str
    cached: bool
    prompt_tokens: int = 0
    tokens_exact: bool = True
    completion_tokens: int = 0
    completion_basis: str = ""  # "cache median" | "max_tokens"
    max_tokens: int | None = None


@dataclass(frozen=True)
class ModelUsage:
    """What the cache knows of one model: its stored answers' completion tokens and latencies."""

    completion_tokens: tuple[int, ...] = ()
    latencies_s: tuple[float, ...] = ()

    @property
    def completion_median(self) -> float | None:
        return statistics.median(self.completion_tokens) if self.completion_tokens else None

    @property
    def latency_median_s(self) -> float | None:
        return statistics.median(self.latencies_s) if self.latencies_s else None


def prompt_tokens(request: ModelRequest) -> tuple[int, bool]:
    """(prompt tokens, exact) of ``request`` as its model will count them (module doc)."""
    if request.model == llm.LOCAL_MODEL:
        from .local_model import DEFAULT_MAX_TOKENS, shared_model

        params = request.params
        n = shared_model().check_fits(request.messages, int(params.get("max_tokens") or DEFAULT_MAX_TOKENS),
                                      bool(params.get("continue_final_message")),
                                      tools=params.get("tools"), tool_choice=params.get("tool_choice"))
        return int(n), True
    if llm.is_in_process(request.model):  # the fake model: LiteLLM's default count
        return _litellm_count(request), False
    provider = llm.provider_of(request.model)
    return _litellm_count(request), provider in ("openai", "azure", "text-completion-openai")


def _counted(request: ModelRequest) -> str:
    """What :func:`prompt_tokens` reads of ``request``, as one hash: the model, the messages and
    the parameters its count depends on (not the replicate, the temperature, the key's tag)."""
    params = request.params
    return content_hash({
        "model": request.model, "messages": list(request.messages), "tools": params.get("tools"),
        "tool_choice": params.get("tool_choice"), "max_tokens": params.get("max_tokens"),
        "continue_final_message": bool(params.get("continue_final_message"))})


def _litellm_count(request: ModelRequest) -> int:
    litellm = llm.ensure_providers()
    messages = [{k: v for k, v in m.items() if k != "cache_control"} for m in request.messages]
    try:
        return int(litellm.token_counter(model=request.model, messages=messages,
                                         tools=request.params.get("tools")))
    except Exception:  # a tokenizer LiteLLM cannot load offline: its default one
        return int(litellm.token_counter(model="gpt-4o", messages=messages))


@dataclass(frozen=True)
class Price:
    """Dollars per token of one model, interactive and at the batch price (None: not in the map)."""

    prompt: float | None
    completion: float | None
    batch_prompt: float | None = None
    batch_completion: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int, *, batch: bool = False) -> float | None:
        p, c = (self.batch_prompt, self.batch_completion) if batch else (self.prompt, self.completion)
        if p is None or c is None:
            return None
        return p * prompt_tokens + c * completion_tokens


def price(model: str) -> Price:
    """The price of ``model`` in LiteLLM's map; 0 for an in-process model; None where unknown."""
    if llm.is_in_process(model):
        return Price(0.0, 0.0, 0.0, 0.0)
    litellm = llm.ensure_providers()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # not in the map: a self-hosted model, a new one
        return Price(None, None)
    prompt, completion = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not prompt and not completion:  # a hosted model the map lists at 0: no price, not free
        return Price(None, None)
    return Price(prompt, completion, info.get("input_cost_per_token_batches"),
                 info.get("output_cost_per_token_batches"))


@dataclass
class Planner:
    """Collects a run's planned calls (module doc); one planner may span several runs (the
    notebooks of ``make paper``), so a request one notebook plans is cached for the next,
    as the cache would answer it."""

    usage: Mapping[str, ModelUsage] | None = None  # None: read from the cache at the first round
    concurrency: int = 1
    calls: list[PlannedCall] = field(default_factory=list)
    _answers: dict[str, CallRecord] = field(default_factory=dict, repr=False)
    #: Prompt tokens by what a count reads (:func:`_counted`): replicates, and the arms and
    #: items that send one prompt, are counted once (a corpus grid's counts took minutes each).
    _counts: dict[str, tuple[int, bool]] = field(default_factory=dict, repr=False)
    _answer_median: tuple[tuple[int, str], int] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: Requests answered with a placeholder so far, each time one is (a caller compares two
    #: readings: did what ran between them read an answer not yet known?).
    placeholders_read: int = 0

    def answered(self, key: str) -> CallRecord | None:
        """The placeholder this plan gave ``key`` earlier (the run's cache would hold it)."""
        return self._answers.get(key)

    def plan_round(self, name: str, requests: Sequence[ModelRequest], cached: set[str],
                   usage: Mapping[str, ModelUsage] | None = None) -> dict[str, CallRecord]:
        """Write down one round (``cached``: the keys the cache or this plan answered) and
        answer its other requests with placeholders; the placeholders by key."""
        usage = (self.usage or {}) if usage is None else usage
        fresh: dict[str, CallRecord] = {}
        seen: set[str] = set()
        rows = []
        for request in requests:
            if request.key in seen:
                continue
            seen.add(request.key)
            if request.key in cached:
                rows.append(PlannedCall(name, request.model, request.key, True))
                continue
            call = self._planned(name, request, usage.get(request.model, ModelUsage()))
            rows.append(call)
            # One placeholder per request: the judges of two answers are two requests, as in
            # the run where answers differ (where two answers coincide the run asks fewer).
            fresh[request.key] = CallRecord(
                key=request.key, model=request.model, request_json=request.to_json(), status=OK,
                response_text=f"{PLANNED_ANSWER} {request.key[:12]}", finish_reason="stop",
                prompt_tokens=call.prompt_tokens,
                completion_tokens=call.completion_tokens, latency_s=0.0, attempts=0, created_at=utc_now())
        with self._lock:
            self.calls.extend(rows)
            self._answers.update(fresh)
            self.placeholders_read += sum(r.key in self._answers for r in requests)
        return fresh

    def _planned(self, name: str, request: ModelRequest, usage: ModelUsage) -> PlannedCall:
        max_tokens = request.params.get("max_tokens", request.params.get("max_completion_tokens"))
        max_tokens = int(max_tokens) if max_tokens is not None else None
        median = usage.completion_median
        if median is not None:
            completion = int(round(min(median, max_tokens) if max_tokens else median))
            basis = "cache median"
        elif max_tokens is not None:
            completion, basis = max_tokens, "max_tokens"
        else:  # no budget sent and nothing in the cache: unknown, counted as 0 and said so
            completion, basis = 0, "unbounded (no max_tokens)"
        counted = _counted(request)
        if counted not in self._counts:
            self._counts[counted] = prompt_tokens(request)
        tokens, exact = self._counts[counted]
        built_on = sum(json.dumps(m.get("content"), ensure_ascii=False).count(PLANNED_MARKER)
                       for m in request.messages)
        if built_on:  # holds planned answers: count their estimated length instead
            answer = self._answer_tokens(request.model, usage)
            tokens = max(0, tokens + built_on * (answer - _PLACEHOLDER_TOKENS))
            exact = False
        return PlannedCall(name, request.model, request.key, False, tokens, exact, completion, basis, max_tokens)

    def _answer_tokens(self, model: str, usage: ModelUsage) -> int:
        """The length of an answer a planned call stands for: the completion tokens planned
        for the upstream calls (their median), else the model's cache median. Computed once
        while the calls written down stay the same (a round's judges all ask it: recomputing
        it per judge made a corpus grid's plan quadratic)."""
        known = (len(self.calls), model)
        if self._answer_median is None or self._answer_median[0] != known:
            planned = [c.completion_tokens for c in self.calls if not c.cached]
            value = int(statistics.median(planned)) if planned else int(usage.completion_median or 0)
            self._answer_median = (known, value)
        return self._answer_median[1]

    def plan(self, since: int = 0) -> "Plan":
        """The plan of the calls written down so far, from the ``since``-th on (a run's own
        share of a planner that spans several runs)."""
        with self._lock:
            return Plan(tuple(self.calls[since:]), {m: asdict(u) for m, u in (self.usage or {}).items()},
                        self.concurrency)


_PLACEHOLDER_TOKENS = max(1, len(PLANNED_ANSWER) // 4)


@dataclass(frozen=True)
class Plan:
    """The planned calls of a run (or several), summarised per round and model."""

    calls: tuple[PlannedCall, ...]
    usage: Mapping[str, Any] = field(default_factory=dict)
    concurrency: int = 1

    COLUMNS = ("batch", "model", "calls", "cached", "to_compute", "prompt_tokens", "completion_tokens",
               "tokens_exact", "completion_basis", "cost_usd", "batch_cost_usd", "wall_s")

    def rows(self) -> list[dict[str, Any]]:
        """One row per (round, model), in the order the rounds were asked (``batch``: the round)."""
        groups: dict[tuple[str, str], list[PlannedCall]] = defaultdict(list)
        for call in self.calls:
            groups[(call.round, call.model)].append(call)
        prices = {model: price(model) for _, model in groups}
        rows = []
        for (round_name, model), calls in groups.items():
            todo = [c for c in calls if not c.cached]
            p_tokens = sum(c.prompt_tokens for c in todo)
            c_tokens = sum(c.completion_tokens for c in todo)
            latency = ModelUsage(**self.usage[model]).latency_median_s if model in self.usage else None
            rows.append({
                "batch": round_name, "model": model, "calls": len(calls), "cached": len(calls) - len(todo),
                "to_compute": len(todo), "prompt_tokens": p_tokens, "completion_tokens": c_tokens,
                "tokens_exact": all(c.tokens_exact for c in todo),
                "completion_basis": ", ".join(sorted({c.completion_basis for c in todo})),
                "cost_usd": prices[model].cost(p_tokens, c_tokens),
                "batch_cost_usd": prices[model].cost(p_tokens, c_tokens, batch=True),
                "wall_s": (latency * len(todo) / max(1, self.concurrency)) if latency is not None and todo
                else (0.0 if not todo else None)})
        return rows

    def frame(self):
        """:meth:`rows` as a DataFrame (the plan table)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=list(self.COLUMNS))

    @property
    def totals(self) -> dict[str, Any]:
        """The whole plan: calls, cached, to compute, tokens; cost and wall time (None when any
        model's is unknown, with ``unpriced`` naming those models)."""
        rows = self.rows()
        unpriced = sorted({r["model"] for r in rows if r["cost_usd"] is None and r["to_compute"]})
        no_batch_price = sorted({r["model"] for r in rows if r["batch_cost_usd"] is None and r["to_compute"]})
        untimed = sorted({r["model"] for r in rows if r["wall_s"] is None})
        return {"calls": sum(r["calls"] for r in rows), "cached": sum(r["cached"] for r in rows),
                "to_compute": sum(r["to_compute"] for r in rows),
                "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
                "completion_tokens": sum(r["completion_tokens"] for r in rows),
                "tokens_exact": all(r["tokens_exact"] for r in rows),
                "cost_usd": None if unpriced else sum(r["cost_usd"] or 0.0 for r in rows),
                "batch_cost_usd": None if no_batch_price else sum(r["batch_cost_usd"] or 0.0 for r in rows),
                "wall_s": None if untimed else sum(r["wall_s"] or 0.0 for r in rows),
                "unpriced": unpriced, "no_batch_price": no_batch_price, "untimed": untimed,
                "concurrency": self.concurrency}

    def per_model(self) -> dict[str, dict[str, Any]]:
        """Totals per model (calls to compute, tokens, cost)."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.rows():
            m = out.setdefault(r["model"], {"calls": 0, "to_compute": 0, "prompt_tokens": 0,
                                            "completion_tokens": 0, "cost_usd": 0.0, "batch_cost_usd": 0.0})
            for k in ("calls", "to_compute", "prompt_tokens", "completion_tokens"):
                m[k] += r[k]
            for k in ("cost_usd", "batch_cost_usd"):
                m[k] = None if m[k] is None or (r[k] is None and r["to_compute"]) else m[k] + (r[k] or 0.0)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"totals": self.totals, "per_model": self.per_model(), "batches": self.rows(),
                "planned_at": utc_now()}

    def text(self, title: str = "plan") -> str:
        """The plan as printed before a run: one line per round and model, then the totals."""
        rows = self.rows()
        lines = [f"{title}: nothing is sent until the run; tokens of calls to compute"]
        width = max([len(r["batch"]) for r in rows] + [5])
        mwidth = max([len(r["model"]) for r in rows] + [5])
        lines.append(f"  {'batch':<{width}}  {'model':<{mwidth}}  {'calls':>6} {'cached':>6} {'compute':>7} "
                     f"{'prompt tok':>11} {'compl. tok':>10} {'cost $':>9} {'time':>8}")
        for r in rows:
            lines.append(f"  {r['batch']:<{width}}  {r['model']:<{mwidth}}  {r['calls']:>6} {r['cached']:>6} "
                         f"{r['to_compute']:>7} {_tokens(r['prompt_tokens'], r['tokens_exact']):>11} "
                         f"{_tokens(r['completion_tokens'], r['completion_basis'] == 'cache median' or not r['to_compute']):>10} "
                         f"{_dollars(r['cost_usd']):>9} {_duration(r['wall_s']):>8}")
        t = self.totals
        lines.append(f"  total: {t['calls']} calls, {t['cached']} cached, {t['to_compute']} to compute; "
                     f"{t['prompt_tokens']:,} prompt and ~{t['completion_tokens']:,} completion tokens"
                     f"{'' if t['tokens_exact'] else ' (~: estimated)'}")
        cost = _dollars(t["cost_usd"]) if t["cost_usd"] is not None else \
            f"unknown (no price in LiteLLM's map for {', '.join(t['unpriced'])})"
        batch = _dollars(t["batch_cost_usd"]) if t["batch_cost_usd"] is not None else \
            f"no batch price for {', '.join(t['no_batch_price'])}"
        lines.append(f"  cost: {cost}; with batch pricing: {batch}")
        wall = _duration(t["wall_s"]) if t["wall_s"] is not None else \
            f"unknown for {', '.join(t['untimed'])} (no latency in the cache yet)"
        lines.append(f"  time at concurrency {t['concurrency']}: {wall}")
        lines.append("  completion tokens: the cache's median per model where it has answers, else max_tokens "
                     "(an upper bound); judges' prompts hold answers not yet known (estimated)")
        unbounded = sorted({r["model"] for r in rows if "unbounded" in r["completion_basis"]})
        if unbounded:
            lines.append(f"  no max_tokens in the requests of {', '.join(unbounded)} and no answer in the cache: "
                         "their completion tokens (and cost) are counted as 0, an underestimate")
        return "\n".join(lines)


def _tokens(n: int, exact: bool) -> str:
    return f"{'' if exact else '~'}{n:,}"


def _dollars(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.2f}" if value >= 0.01 or value == 0 else f"{value:.4f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ---------------------------------------------------------------- the current planner
_current: ContextVar[Planner | None] = ContextVar("contextecho_planner", default=None)


@contextmanager
def planning(planner: Planner) -> Iterator[Planner]:
    """Within: every run opened in plan mode adds to ``planner`` (``make paper PLAN=1``'s
    notebooks share one, so one notebook's planned calls are cached for the next)."""
    token = _current.set(planner)
    try:
        yield planner
    finally:
        _current.reset(token)


def current_planner() -> Planner | None:
    return _current.get()


def usage_from(records: Iterable[Mapping[str, Any]]) -> dict[str, ModelUsage]:
    """Per model, from stored answers (rows with ``model``, ``completion_tokens``, ``latency_s``)."""
    tokens: dict[str, list[int]] = defaultdict(list)
    latencies: dict[str, list[float]] = defaultdict(list)
    for row in records:
        if row.get("completion_tokens"):  # an answer has at least one token; 0 is a replay's unknown
            tokens[row["model"]].append(int(row["completion_tokens"]))
        latency = row.get("latency_s")
        if latency is not None and not math.isnan(latency) and latency > 0:
            latencies[row["model"]].append(float(latency))
    return {m: ModelUsage(tuple(tokens.get(m, ())), tuple(latencies.get(m, ())))
            for m in set(tokens) | set(latencies)}
