"""Several servers behind one model: the endpoint syntax, and LiteLLM's Router over two
loopback servers of which one fails (HTTP 500, or nothing listening on its port)."""
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from contextecho.engine import calls
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.endpoints import Endpoint, EndpointError, parse_endpoint, parse_endpoints
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.routing import ANSWERED

MODEL = "hosted_vllm/m"


def asks(n: int, model: str = MODEL) -> list[ModelRequest]:
    return [ModelRequest(model, [{"role": "user", "content": f"question {i}"}], {"temperature": 0, "max_tokens": 4})
            for i in range(n)]


def servers(record) -> list[list]:
    return json.loads(record.servers)


# ---------------------------------------------------------------- syntax
def test_an_endpoint_lists_several_api_bases_separated_by_a_bar():
    endpoint = parse_endpoint(" hosted_vllm/*=http://a:1/v1 | http://b:2/v1#MY_KEY ")
    assert endpoint == Endpoint("hosted_vllm/*", ("http://a:1/v1", "http://b:2/v1"), "MY_KEY")
    assert endpoint.text() == "hosted_vllm/*=http://a:1/v1|http://b:2/v1#MY_KEY"
    assert parse_endpoint(endpoint.text()) == endpoint
    # one API base, given as a string, is a tuple of one
    assert Endpoint("openai/m", "http://a:1/v1").api_bases == ("http://a:1/v1",)
    both = parse_endpoints("openai/m=http://a:1/v1|http://b:1/v1,hosted_vllm/*=http://c:1/v1")
    assert [e.api_bases for e in both] == [("http://a:1/v1", "http://b:1/v1"), ("http://c:1/v1",)]


@pytest.mark.parametrize("text, message", [
    ("openai/m=http://a:1/v1|", "an empty API base"),
    ("openai/m=http://a:1/v1||http://b:1/v1", "an empty API base"),
    ("openai/m=|http://a:1/v1", "an empty API base"),
    ("openai/m=http://a:1/v1|http://a:1/v1/", "listed twice"),
    ("openai/m=http://a:1/v1|localhost:8000", "http\\(s\\) URL"),
])
def test_a_malformed_list_of_api_bases_is_an_error_naming_it(text, message):
    with pytest.raises(EndpointError, match=message):
        parse_endpoint(text)


@pytest.mark.parametrize("second", ["http://user:hunter2@gpu2:8000/v1", "https://gpu2/v1?api_key=sk-abc123",
                                    "https://gpu2/v1/sk-planted0123456789abcdefXYZ"])
def test_a_credential_in_any_api_base_is_refused_masked(second):
    with pytest.raises(EndpointError, match="KEY_ENV") as caught:
        parse_endpoint(f"openai/m=http://gpu1:8000/v1|{second}")
    for secret in ("hunter2", "sk-abc123", "sk-planted0123456789abcdefXYZ"):
        assert secret not in str(caught.value)


def test_the_routing_settings_are_checked_when_the_transport_is_made():
    with pytest.raises(ValueError, match="routing 'round-robin'.*least-busy"):
        Transport(routing="round-robin")
    with pytest.raises(ValueError, match="cooldown_s"):
        Transport(cooldown_s=0)


# ---------------------------------------------------------------- two servers, one failing
class FailingServer:
    """Answers every request with HTTP 500 and counts them."""

    def __init__(self) -> None:
        self.received = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.received += 1
                data = json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def failing_server():
    server = FailingServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture
def refusing_url():
    """An API base on a loopback port nothing listens on: every connection is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def two_servers(good: str, bad: str, **settings) -> Transport:
    return Transport(endpoints=parse_endpoints(f"hosted_vllm/*={bad}|{good}"), concurrency=2,
                     base_delay_s=0.01, max_delay_s=0.05, **settings)


@pytest.mark.parametrize("failure", ["http 500", "connection refused"])
def test_a_failing_server_is_retried_on_the_other_and_recorded(openai_server, failing_server, refusing_url,
                                                              failure, tmp_path):
    bad = failing_server.url if failure == "http 500" else refusing_url
    transport = two_servers(openai_server.url, bad, cooldown_s=60)
    result = generate(asks(8), cache=CallCache(tmp_path), transport=transport, progress=False)

    # Every call answered, by the good server; the bad one was tried (least-busy sends the
    # second of two concurrent calls to the idle server), each failure retried on the good
    # one, and then left out: a call picked it only while its first failure was in flight.
    assert result.n_errors == 0
    tried = [servers(r) for r in result.records]
    assert all(attempts[-1] == [openai_server.url, ANSWERED] for attempts in tried), tried
    failed = [attempt for attempts in tried for attempt in attempts[:-1]]
    error = "InternalServerError" if failure == "http 500" else "APIConnectionError"
    assert 1 <= len(failed) <= 2 and all(f == [bad, error] for f in failed), tried
    assert [r.attempts for r in result.records] == [len(attempts) for attempts in tried]
    # Our loop made every attempt, each one HTTP request (none hidden in the Router); a
    # refused connection is sent twice, as on one server: LiteLLM's HTTP handler reconnects
    # once on a connection error (AsyncHTTPHandler.post), and the count shows it.
    counts = result.counts()
    resent = len(failed) if failure == "connection refused" else 0
    assert counts.attempts == 8 + len(failed) and counts.http_requests == counts.attempts + resent, counts
    assert sum(openai_server.received.values()) == 8
    if failure == "http 500":
        assert failing_server.received == len(failed)
    # The manifest counts the traffic, and a server is no part of a request key: the same
    # requests on the good server alone are cache hits.
    assert result.manifest["attempts"] == counts.attempts and result.manifest["http_requests"] == counts.http_requests
    again = generate(asks(8), cache=CallCache(tmp_path), progress=False,
                     transport=Transport(endpoints=parse_endpoints(f"hosted_vllm/*={openai_server.url}")))
    assert again.cached == [True] * 8


def test_the_router_is_built_once_and_a_failed_server_stays_out_across_rounds(openai_server, failing_server,
                                                                               tmp_path):
    transport = two_servers(openai_server.url, failing_server.url, cooldown_s=60)
    key = calls._route_kwargs(MODEL, transport).get("api_key")
    assert calls._servers(MODEL, transport, key) is calls._servers(MODEL, transport, key)
    assert calls._servers(MODEL, Transport(endpoints=parse_endpoints(f"hosted_vllm/*={openai_server.url}")),
                          key) is None  # one server: no Router
    first = generate(asks(4), cache=CallCache(tmp_path / "a"), transport=transport, progress=False)
    assert failing_server.received >= 1
    sent = failing_server.received
    second = generate(asks(4), cache=CallCache(tmp_path / "b"), transport=transport, progress=False)
    assert first.n_errors == second.n_errors == 0
    assert failing_server.received == sent  # the second round sent it nothing: it is still left out
    assert all(servers(r) == [[openai_server.url, ANSWERED]] for r in second.records)


def test_when_every_server_fails_the_call_is_an_error_record_after_max_attempts(tmp_path):
    a, b = FailingServer(), FailingServer()
    try:
        transport = Transport(endpoints=parse_endpoints(f"{MODEL}={a.url}|{b.url}"), concurrency=1,
                              max_attempts=3, base_delay_s=0.01, max_delay_s=0.05, cooldown_s=60)
        result = generate(asks(1), cache=CallCache(tmp_path), transport=transport, progress=False)
    finally:
        for server in (a, b):
            server.httpd.shutdown()
            server.httpd.server_close()
    record = result.records[0]
    assert not record.ok and record.attempts == 3 and record.error_type == "ServiceUnavailableError"
    # Both servers failed once and were left out; the third attempt reached no server.
    assert sorted(s for s, _ in servers(record)[:2]) == sorted([a.url, b.url])
    assert servers(record)[2] == [None, "ServiceUnavailableError"]
    assert "no server of hosted_vllm/m is available" in record.error_message
    assert a.received == b.received == 1 and result.http_requests == 2
    # Transient: the next run calls it again.
    assert result.manifest["errors_by_type"] == {"ServiceUnavailableError": 1}


def test_both_servers_share_the_load_and_the_calls_in_flight(openai_server, tmp_path):
    other = type(openai_server)()  # a second OpenAI-compatible answerer of the same kind
    other.thread.start()
    try:
        transport = Transport(endpoints=parse_endpoints(f"hosted_vllm/*={openai_server.url}|{other.url}"),
                              concurrency=4)
        result = generate(asks(16), cache=CallCache(tmp_path), transport=transport, progress=False)
    finally:
        other.release.set()
        other.httpd.shutdown()
        other.httpd.server_close()
    assert result.n_errors == 0 and result.counts().attempts == 16
    answered = [servers(r)[0][0] for r in result.records]
    assert sorted(set(answered)) == sorted([openai_server.url, other.url])
    assert sum(openai_server.received.values()) == answered.count(openai_server.url)
    assert sum(other.received.values()) == answered.count(other.url)
    assert min(answered.count(openai_server.url), answered.count(other.url)) >= 4  # least-busy spreads them
