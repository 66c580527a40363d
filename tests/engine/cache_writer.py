"""A separate writer process for the cache tests: ``python cache_writer.py ROOT START STOP CHUNK``."""
import sys

from contextecho.engine.cache import CallCache
from contextecho.engine.record import OK, CallRecord


def record(i: int) -> CallRecord:
    return CallRecord(key=f"k{i:06d}", model="fake/echo", request_json="{}", status=OK,
                      response_text=f"answer {i}")


if __name__ == "__main__":
    root, start, stop, chunk = sys.argv[1], *map(int, sys.argv[2:5])
    with CallCache(root) as cache:
        for first in range(start, stop, chunk):
            cache.put_many(record(i) for i in range(first, min(stop, first + chunk)))
            if (first // chunk) % 5 == 4:
                cache.flush()  # several shards per writer, interleaved with the other's
