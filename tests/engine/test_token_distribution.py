"""Distributions over allowed answers read from token log-probabilities (hand-made cases)."""
import json
import math

import numpy as np
import pytest
import scipy.stats
from litellm.types.utils import ChatCompletionTokenLogprob, ChoiceLogprobs, TopLogprob

from contextecho.engine import token_distribution as td
from contextecho.engine.record import CallRecord, token_logprobs_json
from contextecho.echo.judge import SCORE_LABEL, SCORE_PREFILL, SCORES, judge_request
from contextecho.echo.reference.judge import SCORE_LABEL as JSON_LABEL
from contextecho.echo.reference.judge import SCORE_PREFILL as JSON_PREFILL


def entry(token, top):
    """One generated token with its top list; ``top`` maps token text -> probability."""
    return [token, math.log(top.get(token, 1e-9)), [[t, math.log(p)] for t, p in top.items()]]


def read(entries, **kw):
    return td.read_distribution(json.dumps(entries), list(SCORES), label=SCORE_LABEL,
                                values=SCORES, **kw)


def test_expected_score_is_the_probability_weighted_sum():
    top = {"2": 0.5, "3": 0.2, "1": 0.1, "0": 0.05, " the": 0.15}
    d = read([entry("2", top)], prefill=SCORE_PREFILL)
    allowed = {"0": 0.05, "1": 0.1, "2": 0.5, "3": 0.2}
    total = sum(allowed.values())
    assert d.ok and d.probs == pytest.approx({k: v / total for k, v in allowed.items()})
    assert d.expected == pytest.approx(sum(int(k) * v / total for k, v in allowed.items()))
    assert d.argmax == "2"
    assert d.entropy == pytest.approx(scipy.stats.entropy(list(allowed.values())))
    assert not d.flat


def test_variants_of_one_answer_add_up_and_whitespace_tokens_are_skipped():
    # Prefill "Score:", then a space token, then the digit: read at the digit.
    first = entry(" ", {" ": 0.8, "2": 0.1, "\n": 0.1})
    second = entry("3", {"3": 0.3, " 3": 0.3, "1": 0.4})
    d = read([first, second], prefill=SCORE_PREFILL)
    assert d.probs == pytest.approx({"0": 0.0, "1": 0.4, "2": 0.0, "3": 0.6})
    assert d.expected == pytest.approx(0.4 * 1 + 0.6 * 3)


def test_generated_verdict_is_read_after_its_label_only():
    tokens = [entry("I", {"I": 1.0}), entry(" think", {" think": 1.0}), entry(" 1", {" 1": 1.0}),
              entry(".", {".": 1.0}), entry(" Score", {" Score": 1.0}), entry(":", {":": 1.0}),
              entry(" 0", {" 0": 0.25, " 1": 0.25, " 2": 0.25, " 3": 0.25})]
    d = read(tokens)  # the "1" before the label is not the verdict
    assert d.probs == pytest.approx({s: 0.25 for s in SCORES}) and d.expected == pytest.approx(1.5)
    assert d.flat and d.entropy == pytest.approx(math.log(4))


def test_reference_json_field():
    tokens = [entry(" ", {" ": 1.0}), entry("1", {"1": 0.7, "0": 0.3}), entry(",", {",": 1.0})]
    d = td.read_distribution(json.dumps(tokens), ["0", "1", "2", "3"], label=JSON_LABEL,
                             prefill=JSON_PREFILL, values=SCORES)
    assert d.expected == pytest.approx(0.7) and d.argmax == "1"


def test_no_allowed_answer_is_invalid_never_a_guess():
    d = read([entry("yes", {"yes": 0.9, "no": 0.1})], prefill=SCORE_PREFILL)
    assert not d.ok and "none of" in d.reason and math.isnan(d.expected) and d.argmax is None
    assert not read([entry("Hi", {"Hi": 1.0})]).ok  # no label at all
    assert not td.read_distribution(None, ["A"], label="x").ok
    with pytest.raises(td.DistributionError):
        td.read_distribution('[["a", "b"]]', ["A"], label="x")


def test_flat_threshold():
    # H/ln K just below and above FLAT_ENTROPY.
    sharp = td.distribution_of({"A": 0.97, "B": 0.01, "C": 0.01, "D": 0.01})
    flat = td.distribution_of({"A": 0.4, "B": 0.3, "C": 0.2, "D": 0.1})
    assert not sharp.flat and flat.flat
    assert flat.entropy / math.log(4) > td.FLAT_ENTROPY > sharp.entropy / math.log(4)
    assert math.isnan(flat.expected)  # letters carry no values


def test_distribution_requests_have_their_own_keys():
    verdict = judge_request("local/smollm2-135m", "Who are you?", "I am Ethan.")
    before = verdict.key
    prefill = td.distribution_request(verdict, td.PREFILL, SCORE_PREFILL)
    generated = td.distribution_request(verdict, td.GENERATED, SCORE_PREFILL)
    assert td.distribution_request(verdict, td.DISCRETE, SCORE_PREFILL) is None
    assert verdict.key == before and len({before, prefill.key, generated.key}) == 3
    assert prefill.messages[-1] == {"role": "assistant", "content": SCORE_PREFILL}
    assert prefill.params["continue_final_message"] and prefill.params["top_logprobs"] == td.TOP_LOGPROBS
    assert generated.messages == verdict.messages and generated.params["logprobs"]
    with pytest.raises(ValueError, match="unknown read mode"):
        td.distribution_request(verdict, "guess", SCORE_PREFILL)


def test_read_modes():
    assert td.read_mode("local/smollm2-135m") == td.PREFILL
    assert td.read_mode("hosted_vllm/Qwen/Qwen2.5-7B-Instruct") == td.PREFILL
    assert td.read_mode("openai/gpt-4o-mini") == td.GENERATED
    assert td.read_mode("anthropic/claude-sonnet-4-5") == td.DISCRETE
    assert td.read_mode("fake/echo") == td.DISCRETE


def test_logprobs_are_stored_with_the_record():
    class Choice:
        logprobs = ChoiceLogprobs(content=[ChatCompletionTokenLogprob(
            token="2", logprob=-0.1, top_logprobs=[TopLogprob(token="2", logprob=-0.1),
                                                   TopLogprob(token="3", logprob=-2.5)])])
    stored = token_logprobs_json(Choice())
    assert json.loads(stored) == [["2", -0.1, [["2", -0.1], ["3", -2.5]]]]
    record = CallRecord("k", "m", "{}", "ok", "2", logprobs=stored)
    assert CallRecord.from_row(record.to_row()) == record
    assert CallRecord.from_row({k: v for k, v in record.to_row().items() if k != "logprobs"}).logprobs is None
    assert token_logprobs_json(object()) is None
    assert np.isclose(sum(math.exp(lp) for _, lp in json.loads(stored)[0][2]), math.exp(-0.1) + math.exp(-2.5))



def test_a_shard_written_before_logprobs_existed_still_answers(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from contextecho.engine.cache import CallCache
    from contextecho.engine.record import SCHEMA

    record = CallRecord("k" * 64, "fake/echo", "{}", "ok", "Score: 2", attempts=1, created_at="t")
    old = pa.schema([f for f in SCHEMA if f.name != "logprobs"])
    row = {k: v for k, v in record.to_row().items() if k != "logprobs"}
    (tmp_path / "cells").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([row], schema=old), tmp_path / "cells" / "old.parquet")
    cache = CallCache(tmp_path)
    try:
        assert cache.lookup(record.key) == record and cache.lookup(record.key).logprobs is None
    finally:
        cache.close()
