"""25 probes on one ~6k-token prefix: re-reading the prefix each time vs restoring its state.

Both arms use the same embedded model and the same prompt split, so their answers must be
identical; only the wall time differs. Prints both times and the speed-up ratio.

The naive arm costs a full prefill per probe (about half a minute each on two cores), so
by default it is measured on ``--naive-probes 5`` of the 25 probes and its median scaled to
25 (every naive call does the same work); ``--naive-probes 25`` measures it whole.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PROBES, coding_session, timed  # noqa: E402

from contextecho.engine.local_model import LocalChatModel  # noqa: E402

PARAMS = {"temperature": 0, "max_tokens": 16}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--naive-probes", type=int, default=5, help="probes timed in the naive arm")
    args = parser.parse_args()
    session = coding_session(target_chars=21_000)
    requests = [session + [{"role": "user", "content": p}] for p in PROBES]
    naive_model = LocalChatModel(reuse_prefix=False)
    reuse_model = LocalChatModel(reuse_prefix=True)
    n_prompt = reuse_model.check_fits(requests[0], PARAMS["max_tokens"])
    print(f"prefix: {len(session)} messages, prompt {n_prompt} tokens; {len(PROBES)} probes, "
          f"max_tokens={PARAMS['max_tokens']}, greedy")
    k = max(1, min(args.naive_probes, len(requests)))
    # Interleave the arms probe by probe so that load from other processes on a shared
    # machine falls on both alike; the reuse arm's first call builds the prefix state.
    naive_times, reuse_times, naive, reused = [], [], [], []
    for i, messages in enumerate(requests):
        if i < k:
            seconds, result = timed(lambda: naive_model.complete(messages, PARAMS).text)
            naive_times.append(seconds)
            naive.append(result)
        seconds, result = timed(lambda: reuse_model.complete(messages, PARAMS).text)
        reuse_times.append(seconds)
        reused.append(result)
    naive_s = statistics.median(naive_times) * len(requests)
    reuse_s = sum(reuse_times)
    print(f"naive (re-read the prefix for every probe): {naive_s:8.2f} s "
          f"(median {statistics.median(naive_times):.2f} s per probe over {k} probes, times {len(requests)})")
    print(f"prefix reuse (evaluate once, restore state): {reuse_s:8.2f} s "
          f"(first call {reuse_times[0]:.2f} s builds the state; median of the rest "
          f"{statistics.median(reuse_times[1:]):.2f} s)   {reuse_model.stats}")
    same = sum(a == b for a, b in zip(naive, reused))
    print(f"identical answers where both ran: {same}/{k}")
    if same != k:
        raise SystemExit("prefix reuse changed an answer")
    print(f"RESULT prefix_reuse_speedup={naive_s / reuse_s:.1f} target=10")


if __name__ == "__main__":
    main()
