"""Provider batch mode end to end (:mod:`contextecho.engine.batches`), against a loopback
server that implements OpenAI's and Anthropic's documented batch endpoints (files, batches,
results: ``tests/engine/batch_server.py``). This is the only way to run the batch path
offline; no test here reaches a provider.

Checked: a job's answers land in the call cache under the interactive keys (an interactive
rerun then makes no call, and an interactive answer is a hit for a batch run); each item is
the body the interactive path sends; an errored item is an error record classified as
interactively; a run stopped or killed while it waits resumes polling the same job and
submits nothing new; a model without a batch API is called one by one, with a line saying
so; the notebook parameter ``batch`` reaches the transport."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.engine.batch_server import BatchServer
from contextecho.engine import batches, llm
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.endpoints import parse_endpoints
from contextecho.engine.model_request import ModelRequest

KEY_ENV = "CE_BATCH_TEST_KEY"
KEY = "sk-batch-test-key-0123456789abcdef"
MODELS = {"openai": "openai/gpt-4o-mini", "anthropic": "anthropic/claude-sonnet-4-5"}
PROVIDERS = sorted(MODELS)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def server():
    with BatchServer(polls_to_finish=2) as running:
        yield running


def endpoints(server: BatchServer) -> str:
    return f"openai/*={server.url}/v1#{KEY_ENV},anthropic/*={server.url}#{KEY_ENV}"


def transport(server: BatchServer, **settings) -> Transport:
    return Transport(**{"endpoints": parse_endpoints(endpoints(server)), "batch": True, "batch_poll_s": 0.02,
                        "batch_max_wait_s": 30.0, "max_attempts": 2, "base_delay_s": 0.01, **settings})


def asks(model: str, n: int = 4, fail: int | None = None) -> list[ModelRequest]:
    """``n`` requests to ``model``; the one numbered ``fail`` is answered with an error."""
    return [ModelRequest(model, [{"role": "system", "content": "You are a coding assistant."},
                                 {"role": "user", "content": f"question {i}" + (" FAIL" if i == fail else "")}],
                         {"temperature": 0, "max_tokens": 16}) for i in range(n)]


def batch_price(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """The batch price by hand from LiteLLM's price map: its batch rates, else half the rates."""
    info = llm.litellm.get_model_info(model)
    rate_in = info.get("input_cost_per_token_batches") or info["input_cost_per_token"] / 2
    rate_out = info.get("output_cost_per_token_batches") or info["output_cost_per_token"] / 2
    return prompt_tokens * rate_in + completion_tokens * rate_out


def ledger(root: Path) -> tuple[list[dict], list[dict]]:
    """The open and the closed jobs of the cache at ``root``, as written."""
    folder = root / batches.LEDGER
    return ([json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))],
            [json.loads(p.read_text()) for p in sorted((folder / "closed").glob("*.json"))])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_answers_land_in_the_cache_under_the_interactive_keys(server, tmp_path, provider):
    model = MODELS[provider]
    requests = asks(model, 4, fail=2)
    result = generate(requests, cache=CallCache(tmp_path), transport=transport(server), progress=False)

    assert server.submissions[provider] == 1 and server.interactive[provider] == 0
    assert [r.key for r in result.records] == [r.key for r in requests]
    assert result.texts() == ["echo: question 0", "echo: question 1", None, "echo: question 3"]
    failed = result.records[2]
    assert (failed.status, failed.error_type) == ("error", "BadRequestError")  # permanent, as interactively
    assert "scripted failure" in failed.error_message
    for record in (result.records[i] for i in (0, 1, 3)):
        assert record.attempts == 1 and record.latency_s is None
        assert record.cost_usd == pytest.approx(batch_price(model, record.prompt_tokens, record.completion_tokens))
    counts = result.counts()
    assert (counts.calls, counts.cached, counts.computed, counts.failed) == (4, 0, 4, 1)
    assert counts.traffic() == {"attempts": 4, "http_requests": server.requests}  # every request it received
    still_open, closed = ledger(tmp_path)
    assert still_open == [] and [job["status"] for job in closed] == ["completed"]
    assert sorted(closed[0]["keys"]) == sorted(r.key for r in requests)
    assert KEY not in (tmp_path / batches.LEDGER / "closed" / f"{closed[0]['batch_id']}.json").read_text()

    # An interactive rerun answers everything from the cache: no call, no HTTP request.
    sent = server.requests
    again = generate(requests, cache=CallCache(tmp_path), transport=transport(server, batch=False), progress=False)
    assert all(again.cached) and server.interactive[provider] == 0 and server.requests == sent
    assert [r.response_text for r in again.records] == [r.response_text for r in result.records]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_item_is_the_request_the_interactive_path_sends(server, tmp_path, provider):
    model = MODELS[provider]
    requests = asks(model, 3)
    interactive = generate(requests, cache=CallCache(tmp_path / "one-by-one"),
                           transport=transport(server, batch=False), progress=False)
    batched = generate(requests, cache=CallCache(tmp_path / "batch"), transport=transport(server), progress=False)

    def canonical(bodies):
        return sorted(json.dumps(body, sort_keys=True) for body in bodies)

    assert len(server.items[provider]) == 3
    assert canonical(server.items[provider]) == canonical(server.interactive_bodies[provider])
    for one, other in zip(interactive.records, batched.records):
        assert (one.key, one.response_text, one.finish_reason, one.prompt_tokens, one.completion_tokens) == \
            (other.key, other.response_text, other.finish_reason, other.prompt_tokens, other.completion_tokens)
        assert other.cost_usd == pytest.approx(one.cost_usd / 2)  # both models' batch price is half

    # ... and an interactive answer is a hit for a batch run: nothing submitted.
    again = generate(requests, cache=CallCache(tmp_path / "one-by-one"), transport=transport(server),
                     progress=False)
    assert all(again.cached) and server.submissions[provider] == 1


VERDICT = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {
    "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}


@pytest.mark.parametrize("model", [
    "openai/gpt-4o-mini",
    "anthropic/claude-sonnet-4-5",           # native structured output, behind a beta header
    "anthropic/claude-3-5-haiku-20241022",   # LiteLLM's JSON-mode tool, read back as text
])
def test_a_structured_answer_reads_as_it_does_interactively(server, tmp_path, model):
    requests = [ModelRequest(model, [{"role": "user", "content": f"verdict {i}"}],
                             {"max_tokens": 32, "response_format": VERDICT}) for i in range(2)]
    interactive = generate(requests, cache=CallCache(tmp_path / "one-by-one"),
                           transport=transport(server, batch=False), progress=False)
    batched = generate(requests, cache=CallCache(tmp_path / "batch"), transport=transport(server), progress=False)
    assert interactive.n_errors == batched.n_errors == 0
    assert batched.texts() == interactive.texts()
    assert [r.constrained for r in batched.records] == [r.constrained for r in interactive.records]
    if model.startswith("anthropic/"):
        sent = {h.get("anthropic-beta") for h in server.headers["POST /v1/messages"]}
        created, = server.headers["POST /v1/messages/batches"]
        assert all(beta in created["anthropic-beta"] for beta in sent if beta)


def test_a_run_that_stops_waiting_resumes_the_same_job(server, tmp_path):
    requests = asks(MODELS["openai"], 3)
    server.finish.clear()  # every job stays in progress
    with pytest.raises(batches.BatchError, match=r"batch job batch_\d+ .*still in_progress.*run again"):
        generate(requests, cache=CallCache(tmp_path), transport=transport(server, batch_max_wait_s=0.2),
                 progress=False)
    still_open, _ = ledger(tmp_path)
    job_id = still_open[0]["batch_id"]
    assert len(still_open) == 1 and server.submissions["openai"] == 1
    assert CallCache(tmp_path, read_only=True).lookup(requests[0].key) is None
    polls = server.polls[job_id]

    server.finish.set()
    result = generate(requests, cache=CallCache(tmp_path), transport=transport(server), progress=False)
    assert result.n_errors == 0 and server.submissions["openai"] == 1  # nothing submitted again
    assert server.polls[job_id] > polls and set(server.polls) == {job_id}
    assert ledger(tmp_path)[0] == [] and [job["batch_id"] for job in ledger(tmp_path)[1]] == [job_id]


RUN_IN_A_CHILD = textwrap.dedent("""
    import sys
    from contextecho.engine.cache import CallCache
    from contextecho.engine.calls import Transport, generate
    from contextecho.engine.endpoints import parse_endpoints
    from contextecho.engine.model_request import ModelRequest

    root, endpoints, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    requests = [ModelRequest("anthropic/claude-sonnet-4-5",
                             [{"role": "system", "content": "You are a coding assistant."},
                              {"role": "user", "content": f"question {i}"}],
                             {"temperature": 0, "max_tokens": 16}) for i in range(n)]
    generate(requests, cache=CallCache(root), progress=False,
             transport=Transport(endpoints=parse_endpoints(endpoints), batch=True, batch_poll_s=0.05))
""")


def test_a_killed_run_resumes_polling_and_submits_nothing(server, tmp_path):
    requests = asks(MODELS["anthropic"], 3)
    server.finish.clear()
    child = subprocess.Popen([sys.executable, "-c", RUN_IN_A_CHILD, str(tmp_path), endpoints(server), "3"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not ledger(tmp_path)[0] and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        assert ledger(tmp_path)[0], f"the child wrote no ledger entry: {child.stderr.read().decode()[-2000:]}"
        while not server.polls and time.monotonic() < deadline:  # it is polling
            time.sleep(0.05)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stderr.close()
    job_id, = server.polls
    assert server.submissions["anthropic"] == 1

    server.finish.set()
    result = generate(requests, cache=CallCache(tmp_path), transport=transport(server), progress=False)
    assert result.texts() == ["echo: question 0", "echo: question 1", "echo: question 2"]
    assert server.submissions["anthropic"] == 1 and set(server.polls) == {job_id}
    assert ledger(tmp_path)[0] == []


def test_models_without_a_batch_api_are_called_one_by_one(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(batches, "_told", set())
    requests = asks("fake/echo", 2) + asks(MODELS["openai"], 2)
    result = generate(requests, cache=CallCache(tmp_path), transport=transport(server), progress=False)
    assert result.n_errors == 0 and result.texts()[0].startswith("echo:question 0")
    assert server.submissions["openai"] == 1 and len(server.items["openai"]) == 2
    assert "batch mode: fake/echo has no batch API here (only openai, anthropic do); its calls are made " \
           "one by one" in capsys.readouterr().out
    assert batches.batch_provider("local/smollm2-135m") is None
    assert batches.batch_provider("hosted_vllm/qwen") is None
    assert batches.batch_provider("gpt-4o-mini") == "openai"  # a bare name LiteLLM knows


@pytest.mark.parametrize("provider", PROVIDERS)
def test_items_a_job_ended_without_answering_are_errors_retried_next_run(server, tmp_path, provider):
    requests = asks(MODELS[provider], 3)
    server.expire_after = 1
    result = generate(requests, cache=CallCache(tmp_path), transport=transport(server), progress=False)
    assert [r.error_type for r in result.records] == [None, "BatchIncomplete", "BatchIncomplete"]
    assert result.counts().failed == 2

    server.expire_after = None
    again = generate(requests, cache=CallCache(tmp_path), transport=transport(server), progress=False)
    assert again.n_errors == 0 and again.cached == [True, False, False]
    assert server.submissions[provider] == 2 and len(server.items[provider]) == 3 + 2


def test_a_refused_submission_is_an_error_record_for_each_request(server, tmp_path):
    server.fail_uploads = True  # 401 on the upload
    result = generate(asks(MODELS["openai"], 2), cache=CallCache(tmp_path), transport=transport(server),
                      progress=False)
    assert [r.error_type for r in result.records] == ["AuthenticationError"] * 2
    assert server.submissions["openai"] == 0 and ledger(tmp_path) == ([], [])
    assert KEY not in result.records[0].error_message


def test_a_batch_over_the_providers_limit_is_split_into_jobs(server, tmp_path, monkeypatch):
    monkeypatch.setitem(batches.LIMITS, "openai", (2, 10**9))
    result = generate(asks(MODELS["openai"], 5), cache=CallCache(tmp_path), transport=transport(server),
                      progress=False)
    assert result.n_errors == 0 and server.submissions["openai"] == 3
    assert sorted(len(job["keys"]) for job in ledger(tmp_path)[1]) == [1, 2, 2]


def test_a_poll_interval_of_zero_is_refused(server, tmp_path):
    with pytest.raises(ValueError, match="Transport.batch_poll_s 0"):
        generate(asks(MODELS["openai"], 1), cache=CallCache(tmp_path), transport=transport(server, batch_poll_s=0),
                 progress=False)


def test_the_notebook_parameter_reaches_the_transport():
    from contextecho.experiments import panel
    from contextecho.experiments.parameters import bind

    assert bind(panel.Parameters, {}).transport(["local/smollm2-135m"]).batch is False
    params = bind(panel.Parameters, {"batch": "true"})  # as papermill's -p batch true leaves it
    assert params.batch is True and params.transport(["local/smollm2-135m"]).batch is True
