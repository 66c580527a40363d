"""Greedy answers of llama-cpp-python's server beside the in-process model's, on the same requests.

The same prompt reaches both (template and tokenizer: ``tests/engine/test_server.py`` asserts
the prompt token counts agree); the answers need not. The in-process model evaluates the
shared prefix and the last message as two segments (to reuse the prefix), the server the whole
prompt at once, so near-ties between tokens can fall either way; and llama-cpp-python's server
penalises repeats (``repeat_penalty`` 1.1) unless told not to, which vLLM does not. This starts
the server on the embedded model (127.0.0.1, a free port), sends one batch of distinct greedy
requests (a coding prefix and a probe each) through the call site three ways: in process, to
the server with its defaults, and to the server with ``repeat_penalty`` 1.0; each on a fresh
cache. It prints how many answers are identical, and the ones that differ.

Last lines: ``RESULT server_identical_default=<n>/<requests>`` and
``RESULT server_identical_repeat_penalty_1=<n>/<requests> target=<requests>`` (no floor: a
reading, not a gate).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PROBES, coding_session  # noqa: E402

from contextecho.engine.cache import CallCache  # noqa: E402
from contextecho.engine.calls import Transport, generate  # noqa: E402
from contextecho.engine.endpoints import Endpoint  # noqa: E402
from contextecho.engine.llm import LOCAL_MODEL  # noqa: E402
from contextecho.engine.local_model import MODEL_NAME  # noqa: E402
from contextecho.engine.local_server import serve_local_model  # noqa: E402
from contextecho.engine.model_request import ModelRequest  # noqa: E402

SERVED = f"hosted_vllm/{MODEL_NAME}"
PARAMS = {"temperature": 0, "max_tokens": 16}


def answered(model: str, messages: list[list[dict]], params: dict, transport: Transport, scratch: Path):
    """The batch's records on a fresh cache (every call computed); exits on a failed call."""
    requests = [ModelRequest(model, m, params) for m in messages]
    result = generate(requests, cache=CallCache(Path(tempfile.mkdtemp(dir=scratch))), transport=transport,
                      progress=False, name="bench-agreement")
    if result.n_errors:
        first = next(r for r in result.records if not r.ok)
        raise SystemExit(f"{result.n_errors} call(s) of {model} failed: {first.error_type}: {first.error_message}")
    return result.records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8, help="distinct requests in the batch")
    args = parser.parse_args()
    session = coding_session(target_chars=2000)
    messages = [session + [{"role": "user", "content": p}] for p in PROBES[: args.requests]]
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        os.environ["CONTEXTECHO_RUNS"] = str(Path(scratch) / "runs")  # no manifests in the checkout
        server = stack.enter_context(serve_local_model(log_dir=scratch))
        served = Transport(endpoints=(Endpoint(SERVED, server.api_base),), max_attempts=1)
        local = answered(LOCAL_MODEL, messages, PARAMS, Transport(concurrency=1), Path(scratch))
        default = answered(SERVED, messages, PARAMS, served, Path(scratch))
        plain = answered(SERVED, messages, {**PARAMS, "extra_body": {"repeat_penalty": 1.0}}, served, Path(scratch))
    if [r.prompt_tokens for r in local] != [r.prompt_tokens for r in default]:
        raise SystemExit("the server and the in-process model were sent prompts of different lengths")
    print(f"{len(messages)} distinct requests of {len(session) + 1} messages, max_tokens={PARAMS['max_tokens']}, "
          "greedy; the same prompt tokens in process and on the server")
    counts = {}
    for name, records in (("default", default), ("repeat_penalty_1", plain)):
        counts[name] = sum(s.response_text == i.response_text for s, i in zip(records, local))
        print(f"server ({name}) vs in-process: {counts[name]}/{len(local)} identical answers")
        for s, i in zip(records, local):
            if s.response_text != i.response_text:
                print(f"  server:     {s.response_text!r}\n  in-process: {i.response_text!r}")
    print(f"RESULT server_identical_default={counts['default']}/{len(local)}")
    print(f"RESULT server_identical_repeat_penalty_1={counts['repeat_penalty_1']}/{len(local)} target={len(local)}")


if __name__ == "__main__":
    main()
