"""Call-cache index: load time and lookup rate for 100,000 synthetic call records in 100 shards."""
from __future__ import annotations

import random
import statistics
import tempfile
import time

from contextecho.engine.cache import CallCache
from contextecho.engine.record import OK, CallRecord

N_CELLS, N_SHARDS = 100_000, 100


def build(root: str) -> list[str]:
    keys = [f"{random.Random(i).getrandbits(256):064x}" for i in range(N_CELLS)]
    per_shard = N_CELLS // N_SHARDS
    for s in range(N_SHARDS):
        cache = CallCache(root)
        cache.put_many(CallRecord(key=k, model="bench/model", request_json='{"messages": []}', status=OK,
                                  response_text="an answer of moderate length " * 4, prompt_tokens=900,
                                  completion_tokens=40) for k in keys[s * per_shard:(s + 1) * per_shard])
        cache.flush()
    return keys


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        keys = build(root)
        loads = []
        for _ in range(5):
            start = time.perf_counter()
            cache = CallCache(root)
            loads.append(time.perf_counter() - start)
        assert len(cache) == N_CELLS
        probe = random.Random(0).sample(keys, 100_000)
        start = time.perf_counter()
        hits = sum(k in cache for k in probe)
        membership_rate = len(probe) / (time.perf_counter() - start)
        start = time.perf_counter()
        records = [cache.lookup(k) for k in probe]  # reads each shard whole on first touch
        record_rate = len(probe) / (time.perf_counter() - start)
        assert hits == len(probe) and all(r.ok for r in records)
        start = time.perf_counter()
        records = [cache.lookup(k) for k in probe]
        warm_rate = len(probe) / (time.perf_counter() - start)
    print(f"{N_CELLS} call records in {N_SHARDS} shards")
    print(f"index load: median {statistics.median(loads):.3f} s of 5 (min {min(loads):.3f}, max {max(loads):.3f}); target < 2 s")
    print(f"key lookups:              {membership_rate:12,.0f} /s")
    print(f"record lookups (cold):    {record_rate:12,.0f} /s  (first touch reads the shard)")
    print(f"record lookups (warm):    {warm_rate:12,.0f} /s  target > 100,000 /s")
    print(f"RESULT index_load_seconds={statistics.median(loads):.3f} target=2")


if __name__ == "__main__":
    main()
