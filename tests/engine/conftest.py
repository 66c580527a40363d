"""A fault-injecting OpenAI-compatible server on 127.0.0.1, for the engine's tests.

``openai_server`` starts one per test (``http.server`` in a thread) and counts every HTTP
request it receives, by the model the request names. The model's name says what it does:

- ``rate-limit...``: 429 with ``Retry-After: 3600``;
- ``server-error...``: 500;
- ``reset...``: the connection is reset (RST) once the request is read;
- ``hang...``: no answer (until the test ends);
- ``slow-first...``: the first request hangs, later ones answer;
- ``echo-key...``: 401 quoting the bearer token it was sent (as some providers do);
- ``think...``: the answer after a ``<think>`` block (a server without a reasoning parser);
- ``reasoning...``: the answer, and its reasoning in the message's ``reasoning_content``
  (vLLM's reasoning parser);
- anything else: an answer, ``Score: 2`` and a JSON verdict (what a judge's parser reads).

It keeps each request's headers and body, so a test can see which key was sent.

``written_text(*roots)`` is everything under the folders a run wrote to, as text: each
file's bytes, and a Parquet shard's rows (compressed on disk) as JSON.
"""
from __future__ import annotations

import json
import socket
import struct
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ANSWER = 'Score: 2\n{"score": 2, "label": "x", "reason": "y"}'
RETRY_AFTER_S = 3600
THINKING = "Score: 0 at first sight."  # the reasoning of think... and reasoning... models


class FaultServer:
    def __init__(self) -> None:
        self.received: Counter[str] = Counter()  # model -> HTTP requests received
        self.requests: list[dict] = []  # {"model", "headers", "body"} of each
        self.release = threading.Event()  # ends every hang
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    model = json.loads(body).get("model", "")
                except ValueError:
                    model = ""
                with server.lock:
                    server.received[model] += 1
                    server.requests.append({"model": model, "headers": dict(self.headers),
                                            "body": body.decode("utf-8", "replace")})
                    first = server.received[model] == 1
                if model.startswith("rate-limit"):
                    self._reply(429, {"error": {"message": "slow down", "type": "rate_limit_exceeded"}},
                                {"Retry-After": str(RETRY_AFTER_S)})
                elif model.startswith("server-error"):
                    self._reply(500, {"error": {"message": "boom", "type": "server_error"}})
                elif model.startswith("echo-key"):
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    self._reply(401, {"error": {"message": f"Incorrect API key provided: {token}",
                                                "type": "invalid_request_error", "code": "invalid_api_key"}})
                elif model.startswith("reset"):
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                elif model.startswith("hang") or (model.startswith("slow-first") and first):
                    server.release.wait(30)
                    self.close_connection = True
                else:
                    message = {"role": "assistant", "content": ANSWER}
                    if model.startswith("think"):
                        message["content"] = f"<think>{THINKING}</think>\n{ANSWER}"
                    elif model.startswith("reasoning"):
                        message["reasoning_content"] = THINKING
                    self._reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                                      "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                                                   "message": message}],
                                      "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}})

            def _reply(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def finish(self) -> None:
                try:
                    super().finish()
                except OSError:  # the connection was reset or the client left
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def keys_sent(self) -> set[str]:
        """The bearer tokens the requests carried."""
        return {v.removeprefix("Bearer ") for r in self.requests for k, v in r["headers"].items()
                if k.lower() == "authorization"}


def _written_text(*roots: Path) -> str:
    import pyarrow.parquet as pq

    out = []
    for root in roots:
        for path in sorted(Path(root).rglob("*")) if Path(root).exists() else ():
            if path.is_file():
                out.append(path.read_bytes().decode("utf-8", "replace"))
                if path.suffix == ".parquet":
                    out.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
    return "\n".join(out)


@pytest.fixture
def written_text():
    return _written_text


@pytest.fixture
def openai_server():
    server = FaultServer()
    server.thread.start()
    yield server
    server.release.set()
    server.httpd.shutdown()
    server.httpd.server_close()
