"""The embedded model behind an OpenAI-compatible HTTP server, on 127.0.0.1.

llama-cpp-python's own server (its ``server`` extra) serves the embedded GGUF the way vLLM
or llama.cpp's ``llama-server`` serve open-weight models at scale, so the HTTP path that
real deployments take (endpoints, keys, concurrency, errors over the wire) can be run and
measured on one machine, with no network and no key::

    with serve_local_model() as server:
        transport = Transport(endpoints=(Endpoint("hosted_vllm/*", server.api_base),))
        generate([ModelRequest(f"hosted_vllm/{MODEL_NAME}", messages, params)], transport=transport)

The server is started on a free port, waited for until it answers ``/v1/models``, and
always stopped on leaving the block (terminated, then killed if it lingers).

Tool calls: started with ``chat_format=TOOL_CHAT_FORMAT`` (llama-cpp-python's
``chatml-function-calling`` handler) the server answers OpenAI ``tools`` with
``message.tool_calls`` (finish reason ``tool_calls``), by its own rules, not the in-process
model's (:mod:`.local_model`): it lists the tools (name and parameter schema, no
description) in the system message, and only when the request has one; it prompts its own
``functions.<name>:`` / ``message:`` format and decodes a call's arguments under a grammar
built from the tool's JSON schema; its chat template is its own ChatML, not the GGUF's.

- ``tool_choice`` a named function: one call of that function, always;
- ``"auto"``: a grammar lets the model pick ``message:`` (text, content) or
  ``functions.<name>:`` (a call), greedy whatever the temperature; after a call it may
  go on to further calls, so one answer can hold several; the text or calls that follow
  are generated without the request's ``max_tokens`` (the handler passes none);
- ``"none"`` or no tools: plain text;
- ``"required"`` is NOT supported: the handler meets it with a bare ``assert`` (on "auto"),
  which the server answers with HTTP 500 and an empty message: a transient server error
  to the engine, retried, then stored as an ``InternalServerError`` record. Ask a named
  function instead.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .local_model import MODEL_NAME, N_CTX, configured_threads, model_path

HOST = "127.0.0.1"
#: The server's chat format that answers OpenAI tool calls (module doc).
TOOL_CHAT_FORMAT = "chatml-function-calling"


class ServerError(RuntimeError):
    """The server did not start or did not answer in time (its log's tail says why)."""


@dataclass(frozen=True)
class LocalServer:
    port: int
    log: Path
    process: subprocess.Popen

    @property
    def api_base(self) -> str:
        return f"http://{HOST}:{self.port}/v1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _log_tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def _wait_until_ready(server: LocalServer, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    url = f"{server.api_base}/models"
    while True:
        if server.process.poll() is not None:
            raise ServerError(f"the server exited with status {server.process.returncode} before "
                              f"answering; its log ends:\n{_log_tail(server.log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                models = [m.get("id") for m in json.load(response).get("data", [])]
            if MODEL_NAME in models:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise ServerError(f"the server did not answer {url} within {timeout_s:.0f} s; its log "
                              f"ends:\n{_log_tail(server.log)}")
        time.sleep(0.25)


def _stop(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def serve_local_model(*, n_threads: int | None = None, n_ctx: int = N_CTX, startup_timeout_s: float = 120.0,
                      log_dir: str | os.PathLike | None = None,
                      chat_format: str | None = None) -> Iterator[LocalServer]:
    """Run ``python -m llama_cpp.server`` on the embedded GGUF for the duration of the block.

    The model settings match the in-process provider's (context, threads, flash
    attention, threads), so greedy answers can be compared request by request. ``n_threads``:
    the threads the server uses, for prompts as for generation (None: the in-process model's,
    :func:`~contextecho.engine.local_model.configured_threads`); several servers on one machine
    each need their share, or their spinning threads contend for the same cores.
    ``chat_format``: the server's ``--chat_format`` (e.g. :data:`TOOL_CHAT_FORMAT` for tool
    calls); None: the GGUF's own chat template.
    """
    n_threads = n_threads or configured_threads()
    port = free_port()
    folder = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="contextecho-server-"))
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"llama-server-{port}.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()),
               "--model_alias", MODEL_NAME, "--host", HOST, "--port", str(port),
               "--n_ctx", str(n_ctx), "--n_threads", str(n_threads), "--n_threads_batch", str(n_threads),
               "--flash_attn", "true"]
    if chat_format is not None:
        command += ["--chat_format", chat_format]
    with open(log, "wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LocalServer(port, log, process)
    try:
        _wait_until_ready(server, startup_timeout_s)
        yield server
    finally:
        _stop(process)
