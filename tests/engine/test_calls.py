import json
import subprocess
import sys
from pathlib import Path

import pytest

from litellm import CustomLLM

from contextecho.engine import llm
from contextecho.engine.responses import fill_response
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import (CACHE_ONLY_ENV, ModelConfigError, Transport, UncachedCall, _mark_shared_prefix,
                                     generate)
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.paths import runs_dir

FAST = Transport(base_delay_s=0.001, max_delay_s=0.01, max_attempts=4)


def ask(model: str, text: str = "hi", replicate: int = 0, **params) -> ModelRequest:
    return ModelRequest(model, [{"role": "user", "content": text}], params, replicate)


@pytest.fixture
def fake():
    return llm.ensure_providers() and llm.registered_providers()["fake"]


def test_a_round_answers_in_order_and_reruns_from_the_cache(tmp_path, fake):
    requests = [ask("fake/echo", f"q{i}") for i in range(5)]
    first = generate(requests, cache=CallCache(tmp_path), transport=FAST, progress=False)
    assert [r.response_text.split("|")[0] for r in first.records] == [f"echo:q{i}" for i in range(5)]
    assert first.n_hits == 0 and first.n_errors == 0
    calls_before = fake.calls["echo"]
    second = generate(requests, cache=CallCache(tmp_path), transport=FAST, progress=False)
    assert second.cached == [True] * 5 and fake.calls["echo"] == calls_before
    assert second.records == first.records


def test_a_round_reprs_what_it_came_to_not_its_records(tmp_path, fake):
    """asyncio.run formats its finished task, result included, as it restores Ctrl-C's handler:
    a round's repr is its counts, as short for 200 records as for 2."""
    def round_of(n):
        requests = [ask("fake/echo", f"a long question {i} " * 40) for i in range(n)]
        generate(requests[: n // 2], cache=CallCache(tmp_path), transport=FAST, progress=False)
        return generate(requests, cache=CallCache(tmp_path), transport=FAST, progress=False)

    small, large = round_of(2), round_of(200)
    assert repr(large) == "RoundResult(200 records: 100 from the cache, 0 failed, 0 HTTP requests)"
    assert repr(small) == "RoundResult(2 records: 1 from the cache, 0 failed, 0 HTTP requests)"


def test_identical_requests_in_one_round_are_computed_once(tmp_path, fake):
    before = fake.calls["echo"]
    result = generate([ask("fake/echo", "same")] * 3, cache=CallCache(tmp_path), transport=FAST, progress=False)
    assert fake.calls["echo"] - before == 1 and len(result.records) == 3


def test_where_only_the_cache_may_answer_a_round_that_would_call_raises_before_any_call(tmp_path, fake,
                                                                                       monkeypatch):
    cached = [ask("fake/echo", "stored")]
    generate(cached, cache=CallCache(tmp_path), transport=FAST, progress=False)
    monkeypatch.setenv(CACHE_ONLY_ENV, "1")
    calls, logs = fake.calls["echo"], sorted(runs_dir().glob("*.json"))
    # every answer stored: answered as always, and logged
    again = generate(cached, cache=CallCache(tmp_path), transport=FAST, progress=False)
    assert again.cached == [True] and len(sorted(runs_dir().glob("*.json"))) == len(logs) + 1
    logs = sorted(runs_dir().glob("*.json"))
    # one not stored: nothing is called, not even a model no route reaches, and no round is logged
    with pytest.raises(UncachedCall, match=r"round 'mixed': 2 of its 3 requests are not in the cache"):
        generate(cached + [ask("fake/echo", "new"), ask("nowhere/model")], cache=CallCache(tmp_path),
                 transport=FAST, progress=False, name="mixed")
    assert fake.calls["echo"] == calls and sorted(runs_dir().glob("*.json")) == logs
    monkeypatch.setenv(CACHE_ONLY_ENV, "0")
    assert generate([ask("fake/echo", "new")], cache=CallCache(tmp_path), transport=FAST,
                    progress=False).n_hits == 0 and fake.calls["echo"] == calls + 1


def test_injected_faults_are_recorded_as_errors_and_counted(tmp_path):
    requests = [ask("fake/rate-limited:2"), ask("fake/server-error:1"), ask("fake/always-429"),
                ask("fake/timeout"), ask("fake/garbage"), ask("fake/auth"), ask("fake/echo")]
    result = generate(requests, cache=CallCache(tmp_path), transport=FAST, progress=False)
    outcome = [(r.status, r.error_type, r.attempts) for r in result.records]
    assert outcome == [
        ("ok", None, 3),                  # two 429s, then an answer
        ("ok", None, 2),
        ("error", "RateLimitError", 4),   # gave up after max_attempts
        ("error", "Timeout", 4),
        ("error", "NoContent", 1),  # no content is not a retryable fault
        ("error", "AuthenticationError", 1),
        ("ok", None, 1),
    ]
    assert result.manifest["failed"] == 4
    assert result.manifest["errors_by_type"] == {"RateLimitError": 1, "Timeout": 1,
                                                 "NoContent": 1, "AuthenticationError": 1}
    # Errors are kept as data, and are retried on the next run; successes are not, and
    # neither is a permanent error (authentication) unless asked.
    cache = CallCache(tmp_path)
    assert cache.n_errors == 4 and len(cache) == 3
    again = generate(requests, cache=cache, transport=FAST, progress=False)
    assert again.cached == [True, True, False, False, False, True, True]
    assert again.skipped == [False] * 5 + [True, False] and again.manifest["skipped_permanent_errors"] == 1


def test_small_rounds_into_a_callers_cache_make_one_shard(tmp_path):
    cache = CallCache(tmp_path)
    for i in range(5):  # e.g. a context-dependent questionnaire: one round per item
        generate([ask("fake/echo", f"item {i}")], cache=cache, transport=FAST, progress=False)
    assert not list((tmp_path / "records").glob("*.parquet"))  # journaled, durable, not yet a shard
    assert len(CallCache(tmp_path)) == 5
    cache.close()
    assert len(list((tmp_path / "records").glob("*.parquet"))) == 1
    assert not list((tmp_path / "journal").glob("*.jsonl"))


def test_a_cache_left_open_is_flushed_at_exit(tmp_path):
    script = ("import sys; from contextecho.engine.cache import CallCache; from contextecho.engine.calls import generate;"
              "from contextecho.engine.model_request import ModelRequest;"
              "c = CallCache(sys.argv[1]);"
              "generate([ModelRequest('fake/echo', [{'role': 'user', 'content': 'x'}])], cache=c, progress=False)")
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True)
    assert len(list((tmp_path / "records").glob("*.parquet"))) == 1
    assert not list((tmp_path / "journal").glob("*.jsonl"))


def test_manifest_records_provenance(tmp_path):
    result = generate([ask("fake/echo")], cache=CallCache(tmp_path), transport=FAST, progress=False,
                      name="unit", parameters={"probe_set": "v1"})
    saved = json.loads(Path(result.manifest["path"]).read_text())
    assert saved["parameters"] == {"probe_set": "v1"} and saved["computed"] == 1
    assert set(saved["git"]) == {"commit", "dirty"} and saved["packages"]["litellm"]
    assert saved["transport"]["concurrency"] == FAST.concurrency


def test_unknown_model_fails_before_any_call(tmp_path, fake):
    before = sum(fake.calls.values())
    with pytest.raises(ModelConfigError, match="nonsense-model-xyz"):
        generate([ask("fake/echo"), ask("nonsense-model-xyz")], cache=CallCache(tmp_path), progress=False)
    assert sum(fake.calls.values()) == before


def test_missing_api_key_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        generate([ask("anthropic/claude-3-5-haiku-20241022")], cache=CallCache(tmp_path), progress=False)


def test_sampling_params_pass_through_untouched_and_seeds_follow_the_replicate(tmp_path):
    seen = []

    class Capture(CustomLLM):
        async def acompletion(self, model, messages, *args, optional_params, model_response, **kw):
            seen.append(dict(optional_params))
            return fill_response(model_response, model, "ok", "stop", 1, 1)

    llm.register_provider("capture", Capture())
    generate([ask("capture/x", temperature=0.7, top_p=0.9, max_tokens=12, stop=["\n"])],
             cache=CallCache(tmp_path), progress=False)
    assert seen[-1] == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 12, "stop": ["\n"]}
    # In-process models get a seed derived from the request key, unless one is given.
    r0, r1, given = generate([ask("fake/echo", replicate=0), ask("fake/echo", replicate=1),
                              ask("fake/echo", seed=5)], cache=CallCache(tmp_path), progress=False).records
    seed0, seed1 = (int(r.response_text.rsplit("seed=", 1)[1]) for r in (r0, r1))
    assert seed0 != seed1 and given.response_text.endswith("seed=5")


def test_shared_prefix_is_marked_for_explicit_prompt_caching_providers():
    messages = [{"role": "user", "content": "long session"}, {"role": "user", "content": "probe"}]
    marked = _mark_shared_prefix(ModelRequest("anthropic/claude-sonnet-4-5", messages))
    assert marked[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert marked[1] == messages[1]
    assert _mark_shared_prefix(ModelRequest("fake/echo", messages)) == messages
