"""Reasoning models: per-model request options reach the request body (loopback server), keys
do not churn without them, the budget rule, and the reasoning kept apart from the answer."""
import json

import pytest

from contextecho.echo.judge import parse_verdict
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import ModelConfigError, Transport, generate
from contextecho.engine.endpoints import parse_endpoints
from contextecho.engine.fake_model import THINKING
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.reasoning import split_reasoning
from contextecho.engine.request_options import OptionsError, RequestOptions
from contextecho.experiments import cape
from contextecho.experiments.parameters import RangeError, coerce

SERVER_THINKING = "Score: 0 at first sight."  # what the loopback server's think... and reasoning... models think
NO_THINKING = {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}


def ask(model: str, text: str = "hi", **params) -> ModelRequest:
    return ModelRequest(model, [{"role": "user", "content": text}], {"temperature": 0, "max_tokens": 4, **params})


def loopback(server, options: dict) -> Transport:
    return Transport(endpoints=parse_endpoints(f"hosted_vllm/*={server.url},anthropic/*={server.url}"),
                     options=RequestOptions.parse(json.dumps(options)), max_attempts=1, timeout_s=5.0)


@pytest.mark.parametrize("text, answer, reasoning", [
    ("<think>A, or B?</think>\n\n(B)", "(B)", "A, or B?"),
    ("  <think>\nhm\n</think>Score: 2", "Score: 2", "hm"),
    ("<think>still thinking when the budget ran out", "", "still thinking when the budget ran out"),
    ("(B) as in <think>...</think>", "(B) as in <think>...</think>", None),  # not at the start: text
    ("(B)", "(B)", None),
])
@pytest.mark.parametrize("thinking", [False, True])
def test_a_think_block_is_reasoning_and_what_follows_the_answer(text, answer, reasoning, thinking):
    assert split_reasoning(text, thinking=thinking) == (answer, reasoning)


def test_a_lone_closing_tag_ends_the_templates_block_only_when_the_request_thinks():
    text = "I pick A.</think>\n(B)"
    assert split_reasoning(text, thinking=True) == ("(B)", "I pick A.")  # the chat template wrote the opening tag
    # a model not asked to think, whose answer names the tag, keeps its answer whole
    assert split_reasoning(text) == (text, None)
    plain = "Close the block with </think> and the parser stops there."
    assert split_reasoning(plain) == (plain, None)


def test_a_fake_reasoning_reply_is_scored_on_its_answer_only(tmp_path):
    """The reasoning names score 0 and option (A); the answer is a verdict of 2."""
    record, = generate([ask("fake/think", "Judge this.\nANSWER 2", max_tokens=64)], cache=CallCache(tmp_path),
                       progress=False).records
    assert record.ok and record.response_text == "2" and record.reasoning == THINKING
    assert parse_verdict(record.response_text).score == 2.0
    assert parse_verdict(f"<think>{THINKING}</think>\n\n2").score == 0.0  # what reading it whole would give
    assert record.completion_tokens == len(f"<think>{THINKING}</think>\n\n2") // 4  # the reasoning counted
    again = CallCache(tmp_path).lookup(record.key)  # stored apart, and read back so
    assert (again.response_text, again.reasoning) == ("2", THINKING)


def test_options_reach_the_request_body_and_the_reasoning_is_kept_apart(openai_server, tmp_path):
    options = {"hosted_vllm/think-*": NO_THINKING,
               "hosted_vllm/reasoning-*": {"reasoning_effort": "low", "reasoning_budget": 100},
               "anthropic/*": {"thinking": {"type": "disabled"}}}
    requests = [ask("hosted_vllm/think-qwen"), ask("hosted_vllm/reasoning-r1"), ask("hosted_vllm/plain"),
                ask("anthropic/claude-sonnet-4-5")]
    result = generate(requests, cache=CallCache(tmp_path), transport=loopback(openai_server, options),
                      progress=False)
    bodies = {r["model"]: json.loads(r["body"]) for r in openai_server.requests}
    assert bodies["think-qwen"]["chat_template_kwargs"] == {"enable_thinking": False}  # extra_body's, top level
    assert bodies["reasoning-r1"]["reasoning_effort"] == "low"
    assert bodies["reasoning-r1"]["max_tokens"] == 104  # the answer's 4 and the reasoning's 100
    assert bodies["plain"]["max_tokens"] == 4 and "reasoning_effort" not in bodies["plain"] \
        and "chat_template_kwargs" not in bodies["plain"]
    assert bodies["claude-sonnet-4-5"]["thinking"] == {"type": "disabled"}  # Anthropic's body (its reply is not one)
    think, reasoned, plain, _ = result.records
    answer = plain.response_text
    assert answer.startswith("Score: 2") and plain.reasoning is None
    assert (think.response_text, think.reasoning) == (answer, SERVER_THINKING)  # <think> block taken out
    assert (reasoned.response_text, reasoned.reasoning) == (answer, SERVER_THINKING)  # reasoning_content
    # options are part of the keys they apply to; a model without options keeps its key
    assert think.key != requests[0].key and plain.key == requests[2].key
    assert json.loads(think.request_json)["params"]["extra_body"] == NO_THINKING["extra_body"]


def test_without_options_every_request_and_key_is_as_built(tmp_path):
    request = ask("fake/echo")
    options = RequestOptions.parse({"hosted_vllm/*": NO_THINKING})
    assert RequestOptions().apply(request) is request and options.apply(request) is request
    assert RequestOptions.parse("") == RequestOptions() == Transport().options
    record, = generate([request], cache=CallCache(tmp_path), progress=False).records
    assert record.key == request.key and json.loads(record.request_json) == request.key_payload()


def test_the_budget_rule_and_what_options_may_not_do(tmp_path):
    assert RequestOptions.parse({"anthropic/*": {"thinking": {"type": "enabled", "budget_tokens": 1024}}}) \
        .apply(ask("anthropic/claude-x")).params["max_tokens"] == 1028  # thinking's budget, by default
    exact = RequestOptions.parse({"hosted_vllm/*": {"reasoning_budget": 8}, "hosted_vllm/a": NO_THINKING})
    assert exact.apply(ask("hosted_vllm/a")).params["max_tokens"] == 4  # the exact name before a pattern
    assert exact.apply(ask("hosted_vllm/b")).params["max_tokens"] == 12
    for starving in ({"reasoning_effort": "high"}, {"thinking": {"type": "enabled"}},
                     {"extra_body": {"chat_template_kwargs": {"enable_thinking": True}}}):
        with pytest.raises(OptionsError, match="reasoning_budget"):
            RequestOptions.parse({"m/x": starving})
    assert RequestOptions.parse({"m/x": {"reasoning_effort": "none"}}).models[0].budget == 0
    for bad, message in (("{", "not JSON"), ("[1]", "JSON list"), ('{"m": 3}', "give an object"),
                         ('{"m": {"reasoning_budget": -1}}', "tokens >= 0")):
        with pytest.raises(OptionsError, match=message):
            RequestOptions.parse(bad)
    clash = Transport(options=RequestOptions.parse({"fake/*": {"temperature": 1.0}}))
    with pytest.raises(ModelConfigError, match="temperature"):  # the experiment's own, before any call
        generate([ask("fake/echo")], cache=CallCache(tmp_path), transport=clash, progress=False)


def test_a_notebook_names_bad_options_before_it_starts():
    with pytest.raises(RangeError, match="model_options"):
        coerce(cape.Parameters, {"model_options": '{"m/x": {"reasoning_effort": "low"}}'})
    params = coerce(cape.Parameters, {"model_options": json.dumps({"hosted_vllm/*": NO_THINKING})})
    assert params.transport(()).options == RequestOptions.parse({"hosted_vllm/*": NO_THINKING})
