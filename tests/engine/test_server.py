"""End to end against a real OpenAI-compatible server: llama-cpp-python's, serving the
embedded model on 127.0.0.1, as vLLM would serve an open-weight model. The `panel`
notebook runs through it as ``hosted_vllm/smollm2-135m`` with the endpoint given as a
parameter; the answers must be stored, scored and judged, redacted, counted; and the
server must have been sent the prompt the in-process model evaluates (its template and
tokenizer). How often their greedy answers agree is measured by
``benchmarks/server_agreement.py``.
"""
import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.endpoints import parse_endpoints
from contextecho.echo.protocols import protocol
from contextecho.experiments import selection
from contextecho.echo.reference.transcript import session_prefix
from contextecho.engine.local_model import MODEL_NAME, shared_model
from contextecho.engine.local_server import serve_local_model
from contextecho.engine.model_request import ModelRequest
from contextecho.notebooks import run_notebook
from contextecho.engine.paths import cache_dir, runs_dir
from contextecho.echo import build_cells
from contextecho.sessions import positions, redact, render_prefix, snapshot_at
from contextecho.sessions.loader import load_session
from tests.conftest import JUDGE_LABELS

pytestmark = [pytest.mark.embedded, pytest.mark.server, pytest.mark.timeout(900)]

SERVED = f"hosted_vllm/{MODEL_NAME}"
HOME = re.compile(r"(?:/home|/Users)/([A-Za-z0-9._-]+)")
PLACEHOLDER = re.compile(r"<[A-Z_]+_\d+>")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve_local_model(log_dir=tmp_path_factory.mktemp("server")) as running:
        yield running
    assert running.process.poll() is not None, "the server outlived its fixture"


def stored(key: str):
    record = CallCache(cache_dir()).lookup(key)
    assert record is not None, f"cell {key[:12]} is not in the cache"
    return record


def unredacted_findings(session, step: int, window: int):
    """What the redactor finds in the unredacted prefix window at ``step``."""
    raw = render_prefix(snapshot_at(session, step), window=window, redact=False)
    return redact("\n".join(m["content"] for m in raw.messages))[1]


@pytest.mark.corpus
def test_panel_notebook_through_a_real_server(server, tmp_path, corpus_dir):
    endpoint = f"hosted_vllm/*={server.api_base}"
    params = {"targets": SERVED, "judges": SERVED, "endpoints": endpoint, "concurrency": 2,
              "n_sessions": 1, "n_positions": 1, "probes": "C01", "stressors": "S2#01",
              "window": 1500, "max_tokens": 16, "judge_max_tokens": 8, "n_resamples": 200,
              "judge_labels": str(JUDGE_LABELS)}
    done = run_notebook("panel", params, output_dir=tmp_path / "panel", log_output=False)

    # The notebook's manifest records the endpoint (it holds no key) and the counts.
    manifest = json.loads((done.output_dir / "manifest.json").read_text())
    assert manifest["parameters"]["endpoints"] == [endpoint]
    assert manifest["parameters"]["concurrency"] == 2 and manifest["models"] == [SERVED]
    counts, judges = manifest["batches"]["panel:targets"], manifest["batches"]["panel:judges"]
    assert counts["calls"] == 4 and counts["computed"] == 4 and counts["failed"] == 0, counts
    assert 1 <= judges["calls"] <= 2 and judges["failed"] == 0, judges  # the two probe cells judged
    # Every round went over HTTP to that server, errors counted (none here).
    rounds = [json.loads(p.read_text()) for p in runs_dir().glob("*.json")]
    served = [b for b in rounds if SERVED in b["models"]]
    assert served and all(b["failed"] == 0 and b["errors_by_type"] == {} for b in served)
    assert all(b["transport"]["endpoints"] == [{"model": "hosted_vllm/*", "api_bases": [server.api_base],
                                                "key_env": None}] for b in served)

    # Answers stored and scored: the stressor by its contract, the probe by the judge.
    frame = pd.read_parquet(done.output_dir / "results" / "cells.parquet")
    assert (frame["status"] == "ok").all() and frame["response"].map(lambda t: isinstance(t, str) and t).all()
    stressors = frame[frame["item_kind"] != "probe"]
    probes = frame[frame["item_kind"] == "probe"]
    assert len(stressors) == 2 and stressors["score"].notna().all()
    assert len(probes) == 2 and (probes["judge_model"] == SERVED).all()
    assert probes["verdict_status"].isin(["ok", "invalid"]).all()

    # Redaction applied to what was sent to the (non-local) server, and so to what is stored:
    # the redactor finds nothing left, and what it finds in the unredacted window became
    # placeholders.
    session = selection.select_sessions(1, protocol=protocol("reference"))[0]  # the panel's default protocol
    target_records = [stored(k) for k in frame["key"].drop_duplicates()]
    judge_records = [stored(k) for k in probes["judge_key"].drop_duplicates()]
    assert all(r.model == SERVED for r in target_records + judge_records)
    real = frame[frame["arm"] == "real"].iloc[0]
    sent = "\n".join(m["content"] for m in json.loads(stored(real["key"]).request_json)["messages"])
    found = redact(session_prefix(session.path, int(real["step"]), params["window"]).text)[1]
    _, left = redact(sent)
    assert left.n_replacements == 0, left.replacements
    assert not found.n_replacements or PLACEHOLDER.search(sent), found.replacements
    users = set(HOME.findall(session.path.read_text(errors="replace")))
    assert not [u for u in users if f"/{u}/" in sent], "a home path reached the server"
    print(f"\nredaction: the notebook's window holds {found.n_replacements} finding(s) "
          f"{found.replacements}; none reached the server")
    # A window where the redactor does find something (home paths, hosts, ...), built as the
    # experiments build cells (our protocol's, on our parser's reading of the same file) and
    # sent through the same endpoint.
    window = params["window"]
    session = load_session(session.path)
    step = next((pos.step for pos in positions(session, "deciles")
                 if unredacted_findings(session, pos.step, window).n_replacements), None)
    if step is not None:
        cells = build_cells("server-redaction", [SERVED], [session], positions=[step], arms=["real"],
                            items=["S2#01"], window=window, params={"temperature": 0, "max_tokens": 4})
        result = generate([c.request for c in cells], progress=False, name="server-redaction",
                          transport=Transport(endpoints=parse_endpoints(endpoint)))
        assert result.n_errors == 0
        sent = "\n".join(m["content"] for m in json.loads(stored(cells[0].request.key).request_json)["messages"])
        assert redact(sent)[1].n_replacements == 0 and PLACEHOLDER.search(sent)
        print(f"redaction at step {step}: {unredacted_findings(session, step, window).replacements} "
              "became placeholders before reaching the server")

    # The same prompt as the in-process model's (its chat template and tokenizer): what the
    # server counted is what the embedded model would evaluate. Whether the greedy answers are
    # the same too is a reading, not a gate (near-ties, the server's repeat penalty):
    # benchmarks/server_agreement.py.
    model = shared_model()
    for record in target_records + judge_records:
        request = json.loads(record.request_json)
        assert record.prompt_tokens == model.check_fits(request["messages"], request["params"]["max_tokens"]), \
            record.key


def test_openai_prefix_on_an_endpoint_without_key_and_errors_over_the_wire(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    transport = Transport(endpoints=parse_endpoints(f"openai/{MODEL_NAME}={server.api_base}"),
                          base_delay_s=0.01, max_delay_s=0.05)
    ok = ModelRequest(f"openai/{MODEL_NAME}", [{"role": "user", "content": "Who are you?"}],
                      {"temperature": 0, "max_tokens": 8})
    # A prompt longer than the server's context: refused by the server, an error record,
    # not retried (a bad request stays bad), counted in the manifest.
    too_long = ModelRequest(f"openai/{MODEL_NAME}", [{"role": "user", "content": "word " * 12000}],
                            {"temperature": 0, "max_tokens": 8})
    result = generate([ok, too_long], cache=CallCache(tmp_path), transport=transport, progress=False)
    good, bad = result.records
    assert good.ok and good.response_text and good.attempts == 1
    assert not bad.ok and bad.attempts == 1, (bad.error_type, bad.attempts)
    assert result.manifest["failed"] == 1 and sum(result.manifest["errors_by_type"].values()) == 1
    assert "OPENAI_API_KEY" not in os.environ
    assert Path(server.log).is_file()
