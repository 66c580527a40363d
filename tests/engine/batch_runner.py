"""Run a batch of slow fake calls in its own process (the kill-and-resume test kills it)."""
import sys

from contextecho.cache import CellCache
from contextecho.calls import Transport, generate
from contextecho.model_request import ModelRequest


def requests(n: int) -> list[ModelRequest]:
    return [ModelRequest("fake/echo@0.2", [{"role": "user", "content": f"probe {i}"}]) for i in range(n)]


if __name__ == "__main__":
    root, n = sys.argv[1], int(sys.argv[2])
    generate(requests(n), cache=CellCache(root), transport=Transport(concurrency=2), progress=False)
