"""Run a round of slow fake calls in its own process (the concurrency and kill tests).

``python round_runner.py ROOT START STOP [FIRST_SHARED] [GO_FILE]``: asks ``fake/echo@0.1``
for the probes START..STOP-1 (those from FIRST_SHARED on first, so two runners that share
keys reach them at the same moment), with 8 calls at a time. With GO_FILE it says it is
ready (``GO_FILE.<pid>.ready``) and waits for GO_FILE to exist, so two runners start together.
"""
import os
import sys
import time
from pathlib import Path

from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.model_request import ModelRequest

MODEL = "fake/echo@0.1"
CONCURRENCY = 8


def request(i: int) -> ModelRequest:
    return ModelRequest(MODEL, [{"role": "user", "content": f"probe {i}"}])


def requests(start: int, stop: int, first_shared: int | None = None) -> list[ModelRequest]:
    order = list(range(start, stop))
    if first_shared is not None:
        order = [i for i in order if i >= first_shared] + [i for i in order if i < first_shared]
    return [request(i) for i in order]


if __name__ == "__main__":
    root, start, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    first_shared = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != "-" else None
    if len(sys.argv) > 5:
        go = Path(sys.argv[5])
        Path(f"{go}.{os.getpid()}.ready").touch()
        while not go.exists():
            time.sleep(0.01)
    with CallCache(root) as cache:
        generate(requests(start, stop, first_shared), cache=cache,
                 transport=Transport(concurrency=CONCURRENCY), progress=False, name="round-runner")
