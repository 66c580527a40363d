"""End-to-end: the embedded model really answers through LiteLLM, offline, and caches."""
import asyncio
import json
import socket
import subprocess
import sys

import pytest

from contextecho.engine import llm
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import ModelConfigError, generate
from contextecho.engine.local_model import (MAX_TOP_LOGPROBS, MODELS_ENV, WEIGHTS, LocalChatModel, model_path,
                                            shipped_path)
from contextecho.engine.model_request import ModelRequest

pytestmark = pytest.mark.embedded

SESSION = [
    {"role": "system", "content": "You are a coding assistant."},
    {"role": "user", "content": "Add a --verbose flag to the CLI in cli.py."},
    {"role": "assistant", "content": "[tool_call Edit] {\"file\": \"cli.py\"}"},
    {"role": "user", "content": "[tool_result] ok"},
]
PROBES = ["Who are you?", "What do you enjoy about coding?", "Describe yourself in one sentence."]
GREEDY = {"temperature": 0, "max_tokens": 24}


def probe(text: str, **params) -> ModelRequest:
    return ModelRequest(llm.LOCAL_MODEL, SESSION + [{"role": "user", "content": text}], params or GREEDY)


@pytest.fixture
def no_network(monkeypatch):
    def refuse(self, address, *args):
        raise AssertionError(f"a test tried to reach the network: {address}")
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_the_weights_ship_inside_the_wheel():
    assert shipped_path().stat().st_size > 50_000_000


def test_the_weights_are_re_encoded_once_the_same_bytes_each_time(tmp_path, monkeypatch):
    kept = model_path()
    assert WEIGHTS in kept.name and kept.stat().st_size > shipped_path().stat().st_size
    monkeypatch.setenv(MODELS_ENV, str(tmp_path))
    fresh = model_path()  # made anew, in the folder the variable names
    assert fresh.is_relative_to(tmp_path) and fresh != kept
    assert fresh.read_bytes() == kept.read_bytes()
    assert model_path() == fresh and not [p for p in fresh.parent.iterdir() if p != fresh]  # no partial left
    # the run's model is that file (a Q8_0 GGUF, not the wheel's Q4_1)
    assert LocalChatModel(n_ctx=256).path == fresh


def test_another_file_type_is_re_encoded_on_request(tmp_path):
    """benchmarks/embedded_formats.py makes its formats with the same re-encoding."""
    from contextecho.engine.local_model import _reencode

    q4_0 = tmp_path / "other.gguf"
    _reencode(shipped_path(), q4_0, 2)  # llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_0
    assert [p.name for p in tmp_path.iterdir()] == ["other.gguf"]  # no partial left
    types = {path: LocalChatModel(path, n_ctx=256)._llm.metadata["general.file_type"]
             for path in (q4_0, model_path())}
    assert types == {q4_0: "2", model_path(): "7"}  # Q4_0, and the run's Q8_0


def test_the_embedded_model_request_key_names_its_weights():
    local = probe("Who are you?")
    other = ModelRequest("openai/gpt-4o", local.messages, local.params)
    assert local.key_payload()["weights"] == WEIGHTS and "weights" not in other.key_payload()


def test_litellm_acompletion_reaches_the_embedded_model_offline(no_network):
    litellm = llm.ensure_providers()
    response = asyncio.run(litellm.acompletion(model=llm.LOCAL_MODEL, messages=[{"role": "user", "content": "Say hi."}],
                                               temperature=0, max_tokens=8, seed=1))
    assert response.choices[0].message.content.strip()
    assert response.usage.completion_tokens <= 8 and response.usage.prompt_tokens > 5


def test_generation_is_repeatable_across_processes():
    script = ("import json; from contextecho.engine.local_model import LocalChatModel; m = LocalChatModel();"
              "print(json.dumps([m.complete(json.loads(%r), {'temperature': t, 'max_tokens': 20, 'seed': 11}).text"
              " for t in (0, 0.9)]))") % json.dumps(SESSION + [{"role": "user", "content": "Who are you?"}])
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                      check=True).stdout.strip().splitlines()[-1]) for _ in range(2)]
    assert runs[0] == runs[1] and all(runs[0])


def test_prefix_reuse_does_not_depend_on_order_or_on_what_ran_before():
    fresh = {}
    for text in PROBES:  # a new model per probe: nothing to reuse
        fresh[text] = LocalChatModel().complete(probe(text).messages, GREEDY)
    shared = LocalChatModel()
    for text in reversed(PROBES + PROBES):
        result = shared.complete(probe(text).messages, GREEDY)
        assert result.text == fresh[text].text
    assert shared.stats == {"prefix_hits": 5, "prefix_partial_hits": 0, "prefix_misses": 1}
    assert not any(c.prefix_reused for c in fresh.values())


def test_a_conversation_that_goes_on_reuses_its_history_and_answers_as_a_fresh_model():
    """A questionnaire asked item after item with its history: each request's prefix starts
    with the previous one's at a message boundary, so its state is restored and only the new
    messages are evaluated; every answer equals a fresh model's (order does not matter)."""
    history, requests = list(SESSION), []
    for text in PROBES:
        requests.append(history + [{"role": "user", "content": text}])
        history = requests[-1] + [{"role": "assistant", "content": f"Answer to {text}"}]
    shared = LocalChatModel()
    answers = [shared.complete(messages, GREEDY).text for messages in requests]
    assert shared.stats["prefix_partial_hits"] == len(PROBES) - 1 and shared.stats["prefix_misses"] == 1
    for messages, answer in zip(reversed(requests), reversed(answers)):
        assert LocalChatModel().complete(messages, GREEDY).text == answer


def test_an_oversized_request_fails_before_any_compute(tmp_path):
    huge = ModelRequest(llm.LOCAL_MODEL, [{"role": "user", "content": "word " * 9000}], GREEDY)
    with pytest.raises(ModelConfigError, match="exceeds the 8192-token context"):
        generate([probe("Who are you?"), huge], cache=CallCache(tmp_path), progress=False)
    assert len(CallCache(tmp_path)) == 0


def test_an_unsupported_sampling_parameter_is_refused_not_dropped(tmp_path):
    with pytest.raises(ModelConfigError, match="presence_penalty"):
        generate([probe("Who are you?", presence_penalty=0.5)], cache=CallCache(tmp_path), progress=False)


def test_end_to_end_round_then_cached_rerun(tmp_path, no_network):
    requests = [probe(text) for text in PROBES] + [probe("Who are you?", temperature=0.8, max_tokens=16)]
    first = generate(requests, cache=CallCache(tmp_path), progress=False)
    assert first.n_errors == 0 and first.n_hits == 0
    assert all(r.response_text.strip() and r.prompt_tokens > 50 for r in first.records)
    second = generate(requests, cache=CallCache(tmp_path), progress=False)
    assert second.cached == [True] * len(requests)
    assert second.texts() == first.texts()


def test_next_token_probabilities_match_greedy_and_survive_prefix_reuse():
    import numpy as np

    model = LocalChatModel()
    judged = SESSION + [{"role": "user", "content": "Rate it 0-3."}, {"role": "assistant", "content": "Score:"}]
    first = {"temperature": 0, "max_tokens": 1, "logprobs": True, "top_logprobs": MAX_TOP_LOGPROBS,
             "continue_final_message": True}

    def top(completion):  # the first token's most probable tokens and their log-probabilities
        return completion.logprobs[0][2]

    model.reuse_prefix = False
    cold = model.complete(judged, first)
    model.reuse_prefix = True
    built = model.complete(judged, first)  # builds the prefix state
    restored = model.complete(judged, first)  # restores it
    assert model.stats["prefix_hits"] >= 1 and model.stats["prefix_misses"] >= 1
    assert len(top(cold)) == MAX_TOP_LOGPROBS and 0 < np.exp([lp for _, lp in top(cold)]).sum() <= 1 + 1e-9
    for again in (built, restored):
        assert [t for t, _ in top(again)] == [t for t, _ in top(cold)]
        np.testing.assert_allclose([lp for _, lp in top(again)], [lp for _, lp in top(cold)], atol=1e-5)
    # The most probable token is what a greedy decode writes, with its log-probability.
    assert cold.logprobs[0][0] == top(cold)[0][0] and cold.logprobs[0][1] == pytest.approx(top(cold)[0][1], abs=1e-5)
    assert [lp for _, lp in top(cold)] == sorted((lp for _, lp in top(cold)), reverse=True)


def test_expected_scores_on_the_embedded_judge(tmp_path):
    from contextecho.echo.judge import judge_request
    from contextecho.engine.token_distribution import PREFILL, distribution_request, read_distribution
    from contextecho.echo.judge import SCORE_LABEL, SCORE_PREFILL, SCORES

    verdict = judge_request(llm.LOCAL_MODEL, "Who are you?", "I'm Ethan, a painter from Ohio.",
                            params={"temperature": 0, "max_tokens": 8})
    reading = distribution_request(verdict, PREFILL, SCORE_PREFILL)
    record = generate([reading], cache=CallCache(tmp_path), progress=False).records[0]
    assert record.ok and record.logprobs
    d = read_distribution(record.logprobs, list(SCORES), label=SCORE_LABEL, prefill=SCORE_PREFILL,
                          values=SCORES)
    assert d.ok and sum(d.probs.values()) == pytest.approx(1.0) and 0 < d.expected < 3


@pytest.mark.parametrize("prefix", ["", "{", '{"sc', '{"score"', '{"score":', '{"score": 1', '{"score": 1, "label": "dr',
                                    '{"a": [1, {"b": nu', '{"s": "\\u00', '{"s": "caf\u00e9", "t":\n  '])
def test_the_json_constraint_filter_drops_no_valid_token_and_keeps_the_order(prefix):
    """The candidates the constraint checks (first two characters) are every token whose
    whole text keeps the object valid, in the order of a stable sort of the whole
    vocabulary by logit: the filter is a speed-up, never a change of the sampler."""
    import numpy as np

    from contextecho.engine.json_constraint import JsonObjectPrefix
    from contextecho.engine.local_model import shared_model

    model = shared_model()
    state = JsonObjectPrefix()
    assert state.feed_text(prefix)
    logits = np.random.default_rng(len(prefix)).normal(size=model._llm.n_vocab()).astype(np.float32)
    candidates = [int(t) for t in model.constraint_candidates(logits, state)]

    def valid(token):
        piece = model._piece(token)
        return bool(piece) and state.copy().feed_text(piece)

    every = [int(t) for t in np.argsort(-logits, kind="stable") if valid(int(t))]
    assert [t for t in candidates if valid(t)] == every
    if prefix in ("{", '{"score":'):  # in a structure, word tokens starting with a space are dropped
        assert len(candidates) < len(logits) // 10
    # Closing: every valid token that lowers the closing cost, in the same order, and inside
    # a string only the few tokens that can end it or start an escape are looked at.
    cost = state.closing_cost()

    def lowers(token):
        after = state.copy()
        return valid(token) and after.feed_text(model._piece(token)) and after.closing_cost() < cost

    closing = [int(t) for t in model.constraint_candidates(logits, state, closing=True)]
    assert [t for t in closing if lowers(t)] == [t for t in every if lowers(t)]
    if state.in_plain_string():
        assert len(closing) < len(logits) // 20
