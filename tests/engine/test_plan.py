"""The plan (engine/plan.py): nothing is sent, placeholders flow on, tokens are counted as the
model counts them, prices come from LiteLLM's map."""
from __future__ import annotations

import pytest

from contextecho.engine import llm
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.plan import (PLANNED_ANSWER, PLANNED_MARKER, ModelUsage, Planner, price, prompt_tokens,
                                     usage_from)


def request(text: str, model: str = "fake/echo", max_tokens: int = 16) -> ModelRequest:
    return ModelRequest(model, ({"role": "user", "content": text},), {"max_tokens": max_tokens})


def test_a_plan_sends_nothing_and_stores_nothing(tmp_path):
    cache = CallCache(tmp_path / "cache")
    fake = llm.ensure_providers() and llm.registered_providers()["fake"]
    before = dict(fake.calls)
    planner = Planner()
    result = generate([request("a"), request("b"), request("a")], cache=cache,
                      transport=Transport(planner=planner), progress=False)
    assert dict(fake.calls) == before  # not one attempt
    assert all(r.response_text.startswith(PLANNED_ANSWER) for r in result.records)  # one placeholder per request
    assert len({r.response_text for r in result.records}) == 2
    assert len(cache) == 0 and not list((tmp_path / "cache" / "records").glob("*.parquet"))
    counts = result.counts()
    assert (counts.calls, counts.cached, counts.computed) == (2, 0, 2)
    plan = planner.plan()
    assert plan.totals["calls"] == 2 and plan.totals["to_compute"] == 2


def test_a_stored_answer_is_cached_in_the_plan_and_a_planned_one_is_cached_later(tmp_path):
    cache = CallCache(tmp_path / "cache")
    generate([request("stored")], cache=cache, progress=False)  # really asked
    planner = Planner()
    transport = Transport(planner=planner)
    generate([request("stored"), request("new")], cache=cache, transport=transport, progress=False, name="one")
    generate([request("new"), request("newer")], cache=cache, transport=transport, progress=False, name="two")
    rows = {r["batch"]: r for r in planner.plan().rows()}
    assert (rows["one"]["cached"], rows["one"]["to_compute"]) == (1, 1)
    assert (rows["two"]["cached"], rows["two"]["to_compute"]) == (1, 1)  # "new" was planned in "one"


def test_completion_tokens_from_the_cache_median_else_max_tokens():
    planner = Planner(usage={"fake/echo": ModelUsage((4, 6, 100), (0.5, 1.5))})
    planner.plan_round("b", [request("x", max_tokens=50), request("y", "fake/other", max_tokens=7)], set())
    calls = {c.model: c for c in planner.calls}
    assert (calls["fake/echo"].completion_tokens, calls["fake/echo"].completion_basis) == (6, "cache median")
    assert (calls["fake/other"].completion_tokens, calls["fake/other"].completion_basis) == (7, "max_tokens")
    rows = {r["model"]: r for r in planner.plan().rows()}
    assert rows["fake/echo"]["wall_s"] == pytest.approx(1.0)  # median latency 1.0 s, one call
    assert rows["fake/other"]["wall_s"] is None  # no latency in the cache: unknown, not 0


def test_wall_time_is_median_latency_times_calls_over_concurrency():
    planner = Planner(usage={"fake/echo": ModelUsage((5,), (1.0, 3.0, 2.0))}, concurrency=2)
    planner.plan_round("b", [request(str(i)) for i in range(4)], set())
    (row,) = planner.plan().rows()
    assert row["wall_s"] == pytest.approx(2.0 * 4 / 2)


def test_a_request_built_on_a_planned_answer_is_estimated():
    planner = Planner(usage={})
    planner.plan_round("targets", [request("q", max_tokens=40)], set())
    judge = request(f"Rate this answer: {PLANNED_ANSWER}", max_tokens=8)
    planner.plan_round("judges", [judge], set())
    target, judged = planner.calls
    assert target.tokens_exact is False  # the fake model's count is LiteLLM's default one
    assert judged.tokens_exact is False
    counted, _ = prompt_tokens(judge)
    assert judged.prompt_tokens > counted - len(PLANNED_MARKER)  # the answer's 40 tokens stand in


def test_prices_from_litellms_map():
    assert price("fake/echo").cost(1000, 100) == 0.0
    gpt = price("openai/gpt-4o")
    assert gpt.cost(1000, 100) == pytest.approx(1000 * 2.5e-06 + 100 * 1e-05)
    assert gpt.cost(1000, 100, batch=True) == pytest.approx(1000 * 1.25e-06 + 100 * 5e-06)
    assert price("hosted_vllm/some/self-hosted-model").cost(1000, 100) is None  # unknown, never 0
    assert price("openrouter/openai/gpt-5").cost(1000, 100) is None  # listed at 0 in the map: no price


def test_an_unpriced_model_makes_the_total_cost_unknown_and_says_which():
    planner = Planner(usage={})
    planner.plan_round("b", [request("x", "hosted_vllm/my/model"), request("y")], set())
    totals = planner.plan().totals
    assert totals["cost_usd"] is None and totals["unpriced"] == ["hosted_vllm/my/model"]
    assert "no price in LiteLLM's map for hosted_vllm/my/model" in planner.plan().text()


def test_usage_from_stored_records(tmp_path):
    cache = CallCache(tmp_path / "cache")
    generate([request("a"), request("b")], cache=cache, progress=False)
    cache.flush()
    usage = usage_from(CallCache(tmp_path / "cache").usage())
    assert len(usage["fake/echo"].completion_tokens) == 2


def test_a_plan_needs_no_key(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    planner = Planner(usage={})
    result = generate([request("x", "openai/gpt-4o-mini")], cache=CallCache(tmp_path / "c"),
                      transport=Transport(planner=planner), progress=False)
    assert result.records[0].response_text.startswith(PLANNED_ANSWER)
    assert planner.plan().totals["cost_usd"] > 0


@pytest.mark.embedded
def test_the_embedded_models_prompt_tokens_are_what_it_evaluates(tmp_path):
    from contextecho.engine.llm import LOCAL_MODEL

    requests = [ModelRequest(LOCAL_MODEL, ({"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": f"Name a colour number {i}."}),
                             {"max_tokens": 4, "temperature": 0.0}) for i in range(2)]
    planner = Planner(usage={})
    cache = CallCache(tmp_path / "cache")
    generate(requests, cache=cache, transport=Transport(planner=planner), progress=False)
    planned = {c.key: c.prompt_tokens for c in planner.calls}
    assert all(c.tokens_exact for c in planner.calls)
    result = generate(requests, cache=cache, progress=False)
    assert {r.key: r.prompt_tokens for r in result.records} == planned
    assert result.counts().computed == planner.plan().totals["to_compute"] == 2


def test_a_request_without_a_budget_is_said_to_be_unbounded():
    planner = Planner(usage={})
    unbounded = ModelRequest("fake/echo", ({"role": "user", "content": "x"},), {})
    budgeted = ModelRequest("fake/other", ({"role": "user", "content": "y"},), {"max_completion_tokens": 9})
    planner.plan_round("b", [unbounded, budgeted], set())
    calls = {c.model: c for c in planner.calls}
    assert (calls["fake/echo"].completion_tokens, calls["fake/echo"].completion_basis) == (0, "unbounded (no max_tokens)")
    assert (calls["fake/other"].completion_tokens, calls["fake/other"].completion_basis) == (9, "max_tokens")
    assert "no max_tokens in the requests of fake/echo" in planner.plan().text()
