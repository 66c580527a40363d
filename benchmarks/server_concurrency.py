"""The same batch through an OpenAI-compatible server at concurrency 1 and 4.

Concurrency is a transport setting (never part of a request key): it changes how long a
batch takes, never what it answers. This starts llama-cpp-python's server on the
embedded model (127.0.0.1, a free port), sends one batch of distinct greedy requests
through the call site (``hosted_vllm/smollm2-135m`` on that endpoint, a fresh cache each
time so every call reaches the server) at each concurrency, a warm-up batch each and then
repeats in alternating order, and prints the median wall time of each, then the ratio.

llama-cpp-python's server answers one request at a time, so here the ratio stays near 1:
concurrency only overlaps the HTTP round trips. A server that batches requests (vLLM)
turns concurrency into throughput; run this against yours with ``--api-base`` and
``--model`` to know what to set (``-p concurrency N`` / ``CONCURRENCY=N``).

Last line: ``RESULT server_concurrency_speedup=<median wall at 1 / median wall at 4> target=1``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PROBES, coding_session, timed  # noqa: E402

from contextecho.engine.cache import CallCache  # noqa: E402
from contextecho.engine.calls import Transport, generate  # noqa: E402
from contextecho.engine.endpoints import Endpoint  # noqa: E402
from contextecho.engine.local_server import serve_local_model  # noqa: E402
from contextecho.engine.model_request import ModelRequest  # noqa: E402

PARAMS = {"temperature": 0, "max_tokens": 16}
LEVELS = (1, 4)


def run_batch(requests: list[ModelRequest], endpoint: Endpoint, concurrency: int, scratch: Path) -> list[str]:
    folder = Path(tempfile.mkdtemp(dir=scratch))  # a fresh cache: every call goes to the server
    result = generate(requests, cache=CallCache(folder), progress=False, name="bench-server",
                      transport=Transport(concurrency=concurrency, endpoints=(endpoint,), max_attempts=1))
    if result.n_errors:
        first = next(r for r in result.records if not r.ok)
        raise SystemExit(f"{result.n_errors} call(s) failed: {first.error_type}: {first.error_message}")
    return result.texts()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8, help="distinct requests in the batch")
    parser.add_argument("--repeats", type=int, default=4, help="batches timed per concurrency (median)")
    parser.add_argument("--api-base", help="an already running server (default: start the embedded one)")
    parser.add_argument("--model", default="hosted_vllm/smollm2-135m", help="the model string to send")
    args = parser.parse_args()
    session = coding_session(target_chars=2000)
    requests = [ModelRequest(args.model, session + [{"role": "user", "content": p}], PARAMS)
                for p in PROBES[: args.requests]]
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        os.environ["CONTEXTECHO_RUNS"] = str(Path(scratch) / "runs")  # no manifests in the checkout
        api_base = args.api_base or stack.enter_context(serve_local_model(log_dir=scratch)).api_base
        endpoint = Endpoint(args.model, api_base)
        print(f"server {api_base}; {len(requests)} distinct requests of {len(session) + 1} messages, "
              f"max_tokens={PARAMS['max_tokens']}, greedy; one warm-up batch per level, then {args.repeats} "
              "repeats in alternating order")
        # Warm-up, untimed: a fresh server answers its first calls several times slower.
        for concurrency in LEVELS:
            run_batch(requests, endpoint, concurrency, Path(scratch))
        walls: dict[int, list[float]] = {c: [] for c in LEVELS}
        answers: dict[int, list[str]] = {}
        for repeat in range(args.repeats):
            # Alternate the order (1, 4, 4, 1, ...) so that drifting load on a shared
            # machine falls on both levels alike.
            for concurrency in (LEVELS if repeat % 2 == 0 else LEVELS[::-1]):
                seconds, texts = timed(lambda: run_batch(requests, endpoint, concurrency, Path(scratch)))
                walls[concurrency].append(seconds)
                answers[concurrency] = texts
    for concurrency in LEVELS:
        times = ", ".join(f"{t:.2f}" for t in walls[concurrency])
        print(f"concurrency {concurrency}: {statistics.median(walls[concurrency]):7.2f} s median wall "
              f"({times})")
    same = sum(a == b for a, b in zip(answers[LEVELS[0]], answers[LEVELS[-1]]))
    print(f"identical answers at concurrency {LEVELS[0]} and {LEVELS[-1]}: {same}/{len(requests)}")
    ratio = statistics.median(walls[LEVELS[0]]) / statistics.median(walls[LEVELS[-1]])
    print(f"RESULT server_concurrency_speedup={ratio:.2f} target=1")


if __name__ == "__main__":
    main()
