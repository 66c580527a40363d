"""Run a round of slow fake calls in its own process (the concurrency and kill tests).

``python round_runner.py ROOT START STOP [FIRST_SHARED] [GO_FILE]``: asks ``fake/echo@0.1``
for the probes START..STOP-1 (those from FIRST_SHARED on first, so two runners that share
keys reach them at the same moment), with 8 calls at a time. With GO_FILE it says it is
ready (``GO_FILE.<pid>.ready``) and waits for GO_FILE to exist, so two runners start together.

The tests start it as :func:`main` in a process of their own forked from a server that has
imported it and LiteLLM once (:func:`spawn`), so each runner is a real process, killed by a real
signal, without paying its ~5 s of imports each time; ``python round_runner.py ...`` runs it
the same way by hand.
"""
import multiprocessing
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


def main(argv: list[str], environ: dict[str, str] | None = None) -> None:
    """The round for ``argv`` (the command line's arguments), under ``environ`` when given
    (a forked runner's: the test's call log and output folders, not the fork server's)."""
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    root, start, stop = argv[0], int(argv[1]), int(argv[2])
    first_shared = int(argv[3]) if len(argv) > 3 and argv[3] != "-" else None
    if len(argv) > 4:
        go = Path(argv[4])
        Path(f"{go}.{os.getpid()}.ready").touch()
        while not go.exists():
            time.sleep(0.01)
    with CallCache(root) as cache:
        generate(requests(start, stop, first_shared), cache=cache,
                 transport=Transport(concurrency=CONCURRENCY), progress=False, name="round-runner")


def spawn(*argv: str) -> multiprocessing.Process:
    """A runner for ``argv`` in a process of its own, forked from a server that imported this
    module and LiteLLM once (the first call starts it), under this process's environment now."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["litellm", __name__])
    process = context.Process(target=main, args=(list(argv), dict(os.environ)), daemon=True)
    process.start()
    return process


if __name__ == "__main__":
    main(sys.argv[1:])
