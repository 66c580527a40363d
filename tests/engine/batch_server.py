"""A loopback server that implements the providers' documented batch endpoints, for the
batch-mode tests (``tests/engine/test_batches.py``): the only way to run the batch path
offline.

OpenAI (https://platform.openai.com/docs/api-reference/batch), under ``{url}/v1``:

- ``POST /v1/files`` (multipart: ``purpose=batch``, ``file``) stores a JSONL input file;
- ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``) submits it;
- ``GET /v1/batches/{id}`` answers ``in_progress`` until the job is done, then ``completed``
  with ``output_file_id`` (the 200 answers) and ``error_file_id`` (the others);
- ``GET /v1/files/{id}/content`` returns a file.

Anthropic (https://docs.anthropic.com/en/api/creating-message-batches), under ``{url}``:

- ``POST /v1/messages/batches`` (``requests``: ``custom_id`` and ``params``) submits a job;
- ``GET /v1/messages/batches/{id}`` answers ``in_progress`` until done, then ``ended`` with
  its ``results_url``;
- ``GET /v1/messages/batches/{id}/results`` returns the results, one JSON line per request.

It answers the interactive endpoints too (``POST /v1/chat/completions``, ``POST
/v1/messages``), with the same scripted replies, so a test can compare what the batch path
sends and stores with what the interactive path does.

Each item is answered ``echo: <the last user message>``; a last message that contains
``FAIL`` is answered with a 400 ``invalid_request_error`` (``scripted failure``); with
``expire_after`` set, a job answers that many items and the others expire. A job is
done once it has been polled ``polls_to_finish`` times and ``finish`` is set (clear it to
hold every job in progress). The server counts what it received: ``submissions`` (jobs
created, by provider), ``polls`` (by job id), ``interactive`` (answers, by provider),
``requests`` (every HTTP request); ``items`` keeps each submitted line's body by provider,
``headers`` each POST's headers by path.
"""
from __future__ import annotations

import itertools
import json
import re
import threading
from collections import Counter, defaultdict
from email.parser import BytesParser
from email.policy import default as email_policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAIL = "FAIL"
CREATED = 1_700_000_000


def last_text(messages: list[dict]) -> str:
    """The text of the last message (a string, or the text parts of a list)."""
    content = messages[-1]["content"]
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))


def scripted(messages: list[dict]) -> tuple[str | None, int, int]:
    """``(answer or None for the scripted failure, prompt tokens, completion tokens)``."""
    text = last_text(messages)
    if FAIL in text:
        return None, 0, 0
    answer = f"echo: {text}"
    return answer, len(json.dumps(messages)) // 4, len(answer.split())


def openai_answer(body: dict) -> tuple[int, dict]:
    answer, prompt, completion = scripted(body["messages"])
    if answer is None:
        return 400, {"error": {"message": "scripted failure", "type": "invalid_request_error",
                               "param": None, "code": None}}
    return 200, {"id": "chatcmpl-batch", "object": "chat.completion", "created": CREATED, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": answer}}],
                 "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}}


def anthropic_answer(params: dict) -> tuple[int, dict]:
    """As :func:`openai_answer`; a request offering LiteLLM's JSON-mode tool (``json_tool_call``,
    how it asks older models for a structured answer) is answered by a call of that tool."""
    answer, prompt, completion = scripted(params["messages"])
    if answer is None:
        return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "scripted failure"}}
    content, stop = [{"type": "text", "text": answer}], "end_turn"
    if any(tool.get("name") == "json_tool_call" for tool in params.get("tools") or ()):
        content, stop = [{"type": "tool_use", "id": "toolu_1", "name": "json_tool_call",
                          "input": {"answer": answer}}], "tool_use"
    return 200, {"id": "msg_batch", "type": "message", "role": "assistant", "model": params["model"],
                 "content": content, "stop_reason": stop, "stop_sequence": None,
                 "usage": {"input_tokens": prompt, "output_tokens": completion}}


class BatchServer:
    def __init__(self, polls_to_finish: int = 2) -> None:
        self.polls_to_finish = polls_to_finish
        self.finish = threading.Event()
        self.finish.set()
        self.submissions: Counter[str] = Counter()
        self.polls: Counter[str] = Counter()
        self.interactive: Counter[str] = Counter()
        self.requests = 0
        self.items: dict[str, list[dict]] = defaultdict(list)  # provider -> submitted bodies
        self.interactive_bodies: dict[str, list[dict]] = defaultdict(list)
        self.headers: dict[str, list[dict]] = defaultdict(list)  # "POST <path>" -> each request's headers
        self.files: dict[str, bytes] = {}
        self.jobs: dict[str, dict[str, Any]] = {}  # id -> {"provider", "lines": [(custom_id, body)]}
        self.fail_uploads = False  # answer every upload with a 401
        self.expire_after: int | None = None  # a job answers this many items, then expires
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server.lock:
                    server.requests += 1
                    server.headers[f"POST {self.path}"].append({k.lower(): v for k, v in self.headers.items()})
                    status, payload = server.post(self.path, self.headers, body)
                self._reply(status, payload)

            def do_GET(self) -> None:  # noqa: N802
                with server.lock:
                    server.requests += 1
                    status, payload = server.get(self.path)
                self._reply(status, payload)

            def _reply(self, status: int, payload: dict | bytes) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream" if isinstance(payload, bytes)
                                 else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # ---------------------------------------------------------------- routes
    def post(self, path: str, headers, body: bytes) -> tuple[int, Any]:
        if path == "/v1/chat/completions":
            request = json.loads(body)
            self.interactive["openai"] += 1
            self.interactive_bodies["openai"].append(request)
            return openai_answer(request)
        if path == "/v1/messages":
            request = json.loads(body)
            self.interactive["anthropic"] += 1
            self.interactive_bodies["anthropic"].append(request)
            return anthropic_answer(request)
        if path == "/v1/files":
            if self.fail_uploads:
                return 401, {"error": {"message": "scripted: invalid key", "type": "invalid_request_error",
                                       "code": "invalid_api_key"}}
            fields = self._multipart(headers["Content-Type"], body)
            if fields.get("purpose") != b"batch":
                return 400, {"error": {"message": f"purpose must be batch, got {fields.get('purpose')!r}"}}
            file_id = f"file-{next(self._ids)}"
            self.files[file_id] = fields["file"]
            return 200, {"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": CREATED,
                         "filename": "input.jsonl", "purpose": "batch", "status": "processed"}
        if path == "/v1/batches":
            request = json.loads(body)
            lines = [json.loads(line) for line in self.files[request["input_file_id"]].splitlines() if line]
            for line in lines:
                assert line["method"] == "POST" and line["url"] == request["endpoint"] == "/v1/chat/completions"
                self.items["openai"].append(line["body"])
            return 200, self._new_job("openai", [(line["custom_id"], line["body"]) for line in lines],
                                      input_file_id=request["input_file_id"])
        if path == "/v1/messages/batches":
            request = json.loads(body)
            for item in request["requests"]:
                assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", item["custom_id"])
                self.items["anthropic"].append(item["params"])
            return 200, self._new_job("anthropic", [(item["custom_id"], item["params"]) for item in request["requests"]])
        return 404, {"error": {"message": f"no route POST {path}"}}

    def get(self, path: str) -> tuple[int, Any]:
        if match := re.fullmatch(r"/v1/batches/([\w-]+)", path):
            return self._poll(match[1], "openai")
        if match := re.fullmatch(r"/v1/messages/batches/([\w-]+)", path):
            return self._poll(match[1], "anthropic")
        if match := re.fullmatch(r"/v1/messages/batches/([\w-]+)/results", path):
            job = self.jobs.get(match[1])
            if job is None or not job["done"]:
                return 404, {"type": "error", "error": {"type": "not_found_error", "message": "no results"}}
            return 200, self._anthropic_results(job)
        if match := re.fullmatch(r"/v1/files/([\w-]+)/content", path):
            data = self.files.get(match[1])
            return (200, data) if data is not None else (404, {"error": {"message": "no such file"}})
        return 404, {"error": {"message": f"no route GET {path}"}}

    # ---------------------------------------------------------------- jobs
    def _new_job(self, provider: str, lines: list[tuple[str, dict]], input_file_id: str | None = None) -> dict:
        job_id = f"batch_{next(self._ids)}" if provider == "openai" else f"msgbatch_{next(self._ids)}"
        self.submissions[provider] += 1
        self.jobs[job_id] = {"provider": provider, "lines": lines, "done": False, "input_file_id": input_file_id}
        return self._status(job_id)

    def _poll(self, job_id: str, provider: str) -> tuple[int, dict]:
        job = self.jobs.get(job_id)
        if job is None or job["provider"] != provider:
            return 404, {"error": {"message": f"no batch {job_id}", "type": "not_found_error"}}
        self.polls[job_id] += 1
        if not job["done"] and self.finish.is_set() and self.polls[job_id] >= self.polls_to_finish:
            job["done"] = True
            if provider == "openai":
                self._openai_files(job_id, job)
        return 200, self._status(job_id)

    def _answered(self, job: dict) -> int:
        """How many of the job's items it answers (the others expired)."""
        return len(job["lines"]) if self.expire_after is None else self.expire_after

    def _openai_files(self, job_id: str, job: dict) -> None:
        out, err = [], []
        for index, (custom_id, body) in enumerate(job["lines"]):
            if index >= self._answered(job):
                err.append(json.dumps({"id": f"req_{custom_id[:8]}", "custom_id": custom_id, "response": None,
                                       "error": {"code": "batch_expired", "message": "This request could not "
                                                 "be executed before the completion window expired."}}))
                continue
            status, payload = openai_answer(body)
            line = {"id": f"req_{custom_id[:8]}", "custom_id": custom_id,
                    "response": {"status_code": status, "request_id": "req", "body": payload}, "error": None}
            (out if status == 200 else err).append(json.dumps(line))
        for name, lines in (("output_file_id", out), ("error_file_id", err)):
            if lines:
                file_id = f"file-{job_id}-{name[:3]}"
                self.files[file_id] = ("\n".join(lines) + "\n").encode()
                job[name] = file_id

    def _anthropic_results(self, job: dict) -> bytes:
        lines = []
        for index, (custom_id, params) in enumerate(job["lines"]):
            status, payload = anthropic_answer(params)
            result = {"type": "succeeded", "message": payload} if status == 200 else \
                {"type": "errored", "error": payload}
            if index >= self._answered(job):
                result = {"type": "expired"}
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        return ("\n".join(lines) + "\n").encode()

    def _status(self, job_id: str) -> dict:
        job = self.jobs[job_id]
        n, done = len(job["lines"]), job["done"]
        if job["provider"] == "openai":
            return {"id": job_id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                    "input_file_id": job["input_file_id"], "completion_window": "24h",
                    "status": ("completed" if self.expire_after is None else "expired") if done else "in_progress",
                    "created_at": CREATED,
                    "output_file_id": job.get("output_file_id"), "error_file_id": job.get("error_file_id"),
                    "request_counts": {"total": n, "completed": n if done else 0, "failed": 0}}
        return {"id": job_id, "type": "message_batch", "processing_status": "ended" if done else "in_progress",
                "request_counts": {"processing": 0 if done else n, "succeeded": n if done else 0, "errored": 0,
                                   "canceled": 0, "expired": 0},
                "created_at": "2024-09-24T18:37:24.100435Z", "expires_at": "2024-09-25T18:37:24.100435Z",
                "ended_at": "2024-09-24T18:39:24.100435Z" if done else None,
                "results_url": f"{self.url}/v1/messages/batches/{job_id}/results" if done else None}

    @staticmethod
    def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
        message = BytesParser(policy=email_policy).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body)
        return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                for part in message.iter_parts()}

    # ---------------------------------------------------------------- life
    def __enter__(self) -> "BatchServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
