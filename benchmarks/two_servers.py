"""The same batch on one OpenAI-compatible server and on two behind one model.

An endpoint may list several servers of one model (``MODEL=URL1|URL2``); LiteLLM's Router
(least-busy) sends each call to the server with the fewest calls in flight. This starts
two llama-cpp-python servers on the embedded model (127.0.0.1, free ports), one thread
each, so that two servers can use two cores where one uses one, and sends one batch of
distinct greedy requests through the call site (``hosted_vllm/smollm2-135m``, a fresh cache
each time so every call reaches a server) to the first server alone and to both, at the
same concurrency (2: one call in flight per server). A warm-up batch each, then repeats
in alternating order; it prints the calls per second of each (the batch over its median
wall time) and their ratio.

The ideal ratio is 2 (the number of servers); HTTP, LiteLLM and the notebook-side Python
share the same two cores, so less is measured. On a machine with more cores, or servers on
other machines, give each server more threads (``--threads``).

Last line: ``RESULT one_server_calls_per_s=<x> two_servers_calls_per_s=<y> two_servers_speedup=<y/x> target=>=1.5``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PROBES, coding_session, timed  # noqa: E402

from contextecho.engine.cache import CallCache  # noqa: E402
from contextecho.engine.calls import Transport, generate  # noqa: E402
from contextecho.engine.endpoints import Endpoint  # noqa: E402
from contextecho.engine.local_server import serve_local_model  # noqa: E402
from contextecho.engine.model_request import ModelRequest  # noqa: E402

MODEL = "hosted_vllm/smollm2-135m"
PARAMS = {"temperature": 0, "max_tokens": 16}
CONCURRENCY = 2
TARGET = 1.5


def run_batch(requests: list[ModelRequest], endpoint: Endpoint, scratch: Path) -> tuple[list[str], Counter]:
    """The batch's answers, and how many calls each server answered."""
    folder = Path(tempfile.mkdtemp(dir=scratch))  # a fresh cache: every call goes to a server
    result = generate(requests, cache=CallCache(folder), progress=False, name="bench-two-servers",
                      transport=Transport(concurrency=CONCURRENCY, endpoints=(endpoint,), max_attempts=1))
    if result.n_errors:
        first = next(r for r in result.records if not r.ok)
        raise SystemExit(f"{result.n_errors} call(s) failed: {first.error_type}: {first.error_message}")
    served = Counter(json.loads(r.servers)[-1][0] if r.servers else endpoint.api_bases[0] for r in result.records)
    return result.texts(), served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=12, help="distinct requests in the batch")
    parser.add_argument("--repeats", type=int, default=3, help="batches timed per arm (median)")
    parser.add_argument("--threads", type=int, default=1, help="threads of each server")
    args = parser.parse_args()
    session = coding_session(target_chars=2000)
    if not 1 <= args.requests <= len(PROBES):
        raise SystemExit(f"--requests {args.requests}: give 1 to {len(PROBES)} (distinct probes)")
    requests = [ModelRequest(MODEL, session + [{"role": "user", "content": p}], PARAMS)
                for p in PROBES[: args.requests]]
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        os.environ["CONTEXTECHO_RUNS"] = str(Path(scratch) / "runs")  # no manifests in the checkout
        a = stack.enter_context(serve_local_model(n_threads=args.threads, log_dir=scratch))
        b = stack.enter_context(serve_local_model(n_threads=args.threads, log_dir=scratch))
        arms = {"one server": Endpoint(MODEL, (a.api_base,)),
                "two servers": Endpoint(MODEL, (a.api_base, b.api_base))}
        print(f"servers {a.api_base} and {b.api_base}, {args.threads} thread(s) each; {len(requests)} distinct "
              f"requests of {len(session) + 1} messages, max_tokens={PARAMS['max_tokens']}, greedy, "
              f"concurrency {CONCURRENCY}; one warm-up batch per arm, then {args.repeats} repeats in "
              "alternating order")
        for endpoint in arms.values():  # warm-up, untimed: a fresh server answers its first calls slower
            run_batch(requests, endpoint, Path(scratch))
        walls: dict[str, list[float]] = {arm: [] for arm in arms}
        answers: dict[str, list[str]] = {}
        served: dict[str, Counter] = {arm: Counter() for arm in arms}
        names = list(arms)
        for repeat in range(args.repeats):
            # Alternate the order so that drifting load on a shared machine falls on both arms alike.
            for arm in (names if repeat % 2 == 0 else names[::-1]):
                seconds, (texts, by_server) = timed(lambda: run_batch(requests, arms[arm], Path(scratch)))
                walls[arm].append(seconds)
                answers[arm] = texts
                served[arm].update(by_server)
    rates = {arm: len(requests) / statistics.median(walls[arm]) for arm in arms}
    for arm in arms:
        times = ", ".join(f"{t:.2f}" for t in walls[arm])
        shares = ", ".join(f"{base}: {n}" for base, n in sorted(served[arm].items()))
        print(f"{arm:12s} {rates[arm]:6.2f} calls/s ({statistics.median(walls[arm]):6.2f} s median wall: "
              f"{times}); calls answered per server: {shares}")
    same = sum(x == y for x, y in zip(answers["one server"], answers["two servers"]))
    print(f"identical answers on one server and on two: {same}/{len(requests)}")
    one, two = rates["one server"], rates["two servers"]
    print(f"RESULT one_server_calls_per_s={one:.3f} two_servers_calls_per_s={two:.3f} "
          f"two_servers_speedup={two / one:.2f} target=>={TARGET}")


if __name__ == "__main__":
    main()
