"""Every request counted: against a fault-injecting OpenAI-compatible server on loopback
(``openai_server``, tests/engine/conftest.py), the HTTP requests the server receives are
the attempts the records and the manifests count (no provider client retries on its own),
and each fault carries the label of what happened."""
import json
import time
from pathlib import Path

import pytest

from contextecho.engine import llm
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate, retry_delay
from contextecho.engine.endpoints import parse_endpoints
from contextecho.engine.faults import TRANSIENT, classify
from contextecho.engine.model_request import ModelRequest

KEY_ENV = "CE_FAULT_SERVER_KEY"
ATTEMPTS = 3


def ask(model: str) -> ModelRequest:
    return ModelRequest(model, [{"role": "user", "content": "hi"}], {"temperature": 0, "max_tokens": 4})


def transport(server, **kw) -> Transport:
    settings = dict(max_attempts=ATTEMPTS, base_delay_s=0.01, max_delay_s=0.05, timeout_s=1.0)
    return Transport(endpoints=parse_endpoints(f"openai/*={server.url}#{KEY_ENV},hosted_vllm/*={server.url}"),
                     **{**settings, **kw})


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-fault-test-key-000000000000")


@pytest.mark.parametrize("model, label", [
    ("openai/rate-limit", "RateLimitError"),      # 429, Retry-After 3600: a rate limit, never a timeout
    ("openai/server-error", "InternalServerError"),
    ("openai/reset", "APIConnectionError"),       # a connection reset, not a server error
    ("openai/hang", "Timeout"),                   # no answer within timeout_s
    ("hosted_vllm/server-error", "InternalServerError"),
    ("hosted_vllm/reset", "APIConnectionError"),
])
def test_http_requests_received_are_the_attempts_recorded(openai_server, tmp_path, model, label):
    start = time.perf_counter()
    result = generate([ask(model)], cache=CallCache(tmp_path), transport=transport(openai_server), progress=False)
    elapsed = time.perf_counter() - start
    record, = result.records
    received = openai_server.received[model.split("/", 1)[1]]
    assert (record.status, record.error_type) == ("error", label)
    assert received == record.attempts == ATTEMPTS  # one HTTP request per attempt, nothing hidden
    saved = json.loads(Path(result.manifest["path"]).read_text())
    assert (saved["attempts"], saved["http_requests"]) == (ATTEMPTS, ATTEMPTS)
    assert result.counts().traffic() == {"attempts": ATTEMPTS, "http_requests": ATTEMPTS}
    # the waits: Retry-After capped at max_delay_s (0.05 s), a hang at timeout_s (1 s) per attempt
    assert elapsed < (ATTEMPTS * 1.0 + 2.5 if label == "Timeout" else 2.5)
    if label == "Timeout":
        assert elapsed >= ATTEMPTS * 1.0 * 0.9


def test_a_success_and_a_rerun_count_their_requests(openai_server, tmp_path):
    first = generate([ask("openai/fine"), ask("openai/fine")], cache=CallCache(tmp_path),
                     transport=transport(openai_server), progress=False)
    assert first.texts()[0].startswith("Score: 2") and openai_server.received["fine"] == 1
    assert first.counts().traffic() == {"attempts": 1, "http_requests": 1}
    again = generate([ask("openai/fine")], cache=CallCache(tmp_path), transport=transport(openai_server),
                     progress=False)
    assert again.cached == [True] and openai_server.received["fine"] == 1
    assert again.manifest["attempts"] == again.manifest["http_requests"] == 0
    # the key sent is the one the endpoint's variable holds
    assert openai_server.keys_sent() == {"sk-fault-test-key-000000000000"}


def test_a_refused_connection_is_a_connection_error_and_each_attempt_a_request_tried(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    t = Transport(endpoints=parse_endpoints(f"openai/*=http://127.0.0.1:{port}/v1#{KEY_ENV}"), max_attempts=ATTEMPTS,
                  base_delay_s=0.01, max_delay_s=0.05, timeout_s=1.0)
    result = generate([ask("openai/nobody")], cache=CallCache(tmp_path), transport=t, progress=False)
    assert (result.records[0].error_type, result.records[0].attempts) == ("APIConnectionError", ATTEMPTS)
    assert result.counts().traffic() == {"attempts": ATTEMPTS, "http_requests": ATTEMPTS}


def test_a_client_that_refuses_to_send_sent_nothing_and_is_not_retried(openai_server, tmp_path, monkeypatch):
    """The OpenAI client raises before sending when the provider's variable is set but empty."""
    monkeypatch.setenv("OPENAI_API_KEY", "")
    t = Transport(endpoints=parse_endpoints(f"openai/*={openai_server.url}"), max_attempts=ATTEMPTS,
                  base_delay_s=0.01, max_delay_s=0.05, timeout_s=1.0)
    result = generate([ask("openai/never-sent")], cache=CallCache(tmp_path), transport=t, progress=False)
    record, = result.records
    assert (record.error_type, record.attempts) == ("OpenAIError", 1)  # not an InternalServerError, retried
    assert "before sending" in record.error_message and openai_server.received["never-sent"] == 0
    assert result.counts().traffic() == {"attempts": 1, "http_requests": 0}


def test_an_error_that_quotes_the_key_is_stored_with_the_key_masked(openai_server, tmp_path, written_text):
    with CallCache(tmp_path) as cache:
        result = generate([ask("openai/echo-key")], cache=cache, transport=transport(openai_server), progress=False)
        cache.flush()  # a shard as well as the journal
    record, = result.records
    assert record.error_type == "AuthenticationError" and openai_server.received["echo-key"] == 1
    assert "Incorrect API key provided: ***" in record.error_message
    stored = written_text(tmp_path, Path(result.manifest["path"]).parent)
    assert "Incorrect API key provided: ***" in stored  # the scan reads the stored record ...
    assert "sk-fault-test-key-000000000000" not in stored  # ... which holds no key
    assert "sk-fault-test-key-000000000000" in openai_server.keys_sent()  # it was sent, to the server only


def test_in_process_calls_make_attempts_but_no_http_requests(tmp_path):
    result = generate([ask("fake/server-error:1")], cache=CallCache(tmp_path),
                      transport=Transport(base_delay_s=0.001, max_delay_s=0.01), progress=False)
    assert result.records[0].ok and result.counts().traffic() == {"attempts": 2, "http_requests": 0}


def test_a_429_carries_its_retry_after_and_is_a_rate_limit(openai_server):
    """One call through LiteLLM with the clients' retries off, classified by hand."""
    import asyncio

    async def once():
        return await llm.litellm.acompletion(model="openai/rate-limit-once", messages=[{"role": "user", "content": "hi"}],
                                             api_base=openai_server.url, api_key="x", num_retries=0, max_retries=0,
                                             timeout=5)

    with pytest.raises(Exception) as caught:
        asyncio.run(once())
    fault = classify(caught.value)
    assert (fault.kind, fault.error_type, fault.retry_after_s) == (TRANSIENT, "RateLimitError", 3600.0)
    assert openai_server.received["rate-limit-once"] == 1


@pytest.mark.parametrize("attempt, retry_after, jitter, expected", [
    (1, None, 1.0, 1.0),      # the backoff: base_delay_s * 2 ** (attempt - 1)
    (3, None, 1.0, 4.0),
    (8, None, 1.0, 60.0),     # at most max_delay_s
    (1, None, 1.5, 1.5),      # times the jitter
    (1, 10.0, 1.0, 10.0),     # a longer Retry-After is honoured
    (3, 0.5, 1.0, 4.0),       # a shorter one does not cut the backoff
    (1, 3600.0, 1.0, 60.0),   # up to max_delay_s
])
def test_retry_delay(attempt, retry_after, jitter, expected):
    t = Transport(base_delay_s=1.0, max_delay_s=60.0)
    assert retry_delay(attempt, t, retry_after, jitter) == pytest.approx(expected)


def test_classify_reads_the_chain_for_429s_resets_and_timeouts():
    import httpx

    def wrapped(inner: BaseException, outer: BaseException) -> BaseException:
        try:
            try:
                raise inner
            except BaseException as exc:
                raise outer from exc
        except BaseException as exc:
            return exc

    def server_error():
        return llm.litellm.InternalServerError(message="x", llm_provider="openai", model="m")

    reset = wrapped(httpx.ReadError("[Errno 104] Connection reset by peer"), server_error())
    assert classify(reset).error_type == "APIConnectionError"
    refused = wrapped(ConnectionRefusedError(111, "refused"), server_error())
    assert classify(refused).error_type == "APIConnectionError"
    timed_out = wrapped(httpx.ReadTimeout("read timed out"), server_error())
    assert classify(timed_out).error_type == "Timeout"
    assert classify(TimeoutError()).error_type == "Timeout"  # the call site's own wait_for
    assert classify(server_error()).error_type == "InternalServerError"  # nothing further down: as raised
    limited = wrapped(llm.litellm.RateLimitError(message="x", llm_provider="openai", model="m"), server_error())
    assert classify(limited).error_type == "RateLimitError"


def test_generate_timeout_bounds_each_attempt(openai_server, capsys, monkeypatch):
    from contextecho.__main__ import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-000000000000000000")
    start = time.perf_counter()
    status = main(["generate", "--model", "openai/slow-first", "--api-base", openai_server.url,
                   "--timeout", "0.5", "hello"])
    out = capsys.readouterr()
    assert status == 0 and "Score: 2" in out.out
    assert openai_server.received["slow-first"] == 2  # the first attempt timed out after 0.5 s, the second answered
    assert "attempts=2, http_requests=2" in out.err
    assert time.perf_counter() - start < 10
    assert main(["generate", "--model", "openai/x", "--timeout", "0", "hello"]) == 2
    assert "--timeout 0: give a number of seconds > 0" in capsys.readouterr().err


def test_generate_help_names_the_timeout(capsys):
    from contextecho.__main__ import main

    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--timeout SECONDS" in text and "how long one attempt (one HTTP request) may take" in text
