"""Two llama.cpp servers on loopback behind one model serve a notebook, and one of them is
killed mid-run: nothing is lost. The `panel` notebook asks its targets as
``hosted_vllm/smollm2-135m`` on ``hosted_vllm/*=A|B`` (LiteLLM's Router, least-busy); once
B has answered a call, B is killed (SIGKILL). Every cell must still be answered, the run
complete, and B's failed attempts recorded in the call records and retried on A.
"""
import json
import threading
import time

import pandas as pd
import pytest

from contextecho.engine.cache import CallCache
from contextecho.engine.local_model import MODEL_NAME
from contextecho.engine.local_server import serve_local_model
from contextecho.engine.paths import cache_dir, runs_dir
from contextecho.engine.routing import ANSWERED
from contextecho.notebooks import run_notebook

pytestmark = [pytest.mark.embedded, pytest.mark.server, pytest.mark.timeout(600)]

SERVED = f"hosted_vllm/{MODEL_NAME}"
ANSWER_LOGGED = '"POST /v1/chat/completions HTTP/1.1" 200'  # uvicorn's access line for an answer


def kill_after_its_first_answer(server, killed: threading.Event, stop: threading.Event) -> threading.Thread:
    """A watcher that kills ``server`` once its log shows an answered chat completion."""
    def watch() -> None:
        while not stop.is_set():
            if ANSWER_LOGGED in server.log.read_text(errors="replace"):
                server.process.kill()
                killed.set()
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.corpus
def test_a_notebook_on_two_servers_loses_nothing_when_one_is_killed(tmp_path, corpus_dir):
    # One thread each, so the two servers share the machine's two cores.
    with serve_local_model(n_threads=1, log_dir=tmp_path / "a") as a, \
            serve_local_model(n_threads=1, log_dir=tmp_path / "b") as b:
        killed, stop = threading.Event(), threading.Event()
        watcher = kill_after_its_first_answer(b, killed, stop)
        endpoint = f"hosted_vllm/*={a.api_base}|{b.api_base}"
        # Targets on the servers (1 position x 2 arms x 2 items: 4 calls, two at a time, so
        # calls remain when B has answered its first); the judge in process.
        params = {"targets": SERVED, "judges": "fake/echo", "endpoints": endpoint, "concurrency": 2,
                  "n_sessions": 1, "n_positions": 1, "probes": "C01", "stressors": "S2#01",
                  "window": 1500, "max_tokens": 16, "n_resamples": 200}
        try:
            done = run_notebook("panel", params, output_dir=tmp_path / "panel", log_output=False)
        finally:
            stop.set()
            watcher.join()
        assert killed.is_set() and b.process.poll() is not None, "B was not killed during the run"
        assert a.process.poll() is None

    # The run completed and every cell was answered.
    manifest = json.loads((done.output_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["parameters"]["endpoints"] == [endpoint]
    targets = manifest["batches"]["panel:targets"]
    assert targets["calls"] == 4 and targets["computed"] == 4 and targets["failed"] == 0, targets
    frame = pd.read_parquet(done.output_dir / "results" / "cells.parquet")
    assert len(frame) == 4 and (frame["status"] == "ok").all()
    assert frame["response"].map(lambda t: isinstance(t, str) and bool(t)).all()

    # Each record says which server each attempt went to: every call ended answered; B
    # answered before it was killed; B's failures after it were retried on A.
    cache = CallCache(cache_dir(), read_only=True)
    records = [cache.lookup(key) for key in frame["key"].drop_duplicates()]
    tried = [json.loads(r.servers) for r in records]
    assert all(attempts[-1][1] == ANSWERED and attempts[-1][0] in (a.api_base, b.api_base) for attempts in tried)
    assert any(attempts[-1][0] == b.api_base for attempts in tried), "B answered nothing before it was killed"
    failures = [(attempts[i], attempts[i + 1]) for attempts in tried for i in range(len(attempts) - 1)]
    assert failures, f"no attempt failed on the killed server: {tried}"
    assert all(failed[0] == b.api_base and failed[1] != ANSWERED for failed, _ in failures), failures
    assert any(retry == [a.api_base, ANSWERED] for _, retry in failures), failures
    print(f"\nattempts per call: {tried}")

    # The rounds' manifests count every attempt, the failed ones too.
    rounds = [json.loads(p.read_text()) for p in runs_dir().glob("*.json")]
    served = [one for one in rounds if SERVED in one["models"]]
    assert served and all(one["status"] == "complete" for one in served)
    assert sum(one["attempts"] for one in served) == sum(one["computed"] for one in served) + len(failures)
    assert all(one["transport"]["endpoints"] == [{"model": "hosted_vllm/*", "api_bases": [a.api_base, b.api_base],
                                                    "key_env": None}] for one in served)
