"""The audit end to end on real models: ``--quick`` on two sessions of the shared corpus with
the embedded model, then the same sessions with the target behind llama.cpp's
OpenAI-compatible server (the judge in-process, its calibration answered by the first test's
cache). Both read the report's page and check the plan's calls against the calls made.

Small on purpose (CI's budget): one probe and one S2 wording, short prefixes and answers,
under our protocol, whose judge answers in one line (the reference judge's JSON verdicts
after a prompt three times as long make its calibration alone take minutes on two cores).
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from contextecho.__main__ import main
from contextecho.engine.local_model import MODEL_NAME
from contextecho.engine.local_server import serve_local_model
from tests.conftest import JUDGE_LABELS
from tests.experiments.test_audit import planned_against_made
from tests.paper.test_report import Page, decoded

pytestmark = [pytest.mark.embedded, pytest.mark.corpus, pytest.mark.timeout(900)]

SESSIONS = ("sword/projects/-home-ubuntu-Documents-livecd-gen/e1ffaf02-1289-4b61-ae2e-694bf373993b.jsonl",
            "sword/projects/-home-ubuntu-Documents-livecd-gen/155c3456-9cd0-4d8f-8db3-d0560ca1851c.jsonl")
SMALL = ["--quick", "--protocol", "contextecho", "--yes", "-p", "probes", "C01", "-p", "stressors", "S2#01",
         "-p", "contracts", "S2#01", "-p", "window", "1200", "-p", "max_tokens", "8", "-p", "stressor_max_tokens", "8",
         "-p", "judge_max_tokens", "8", "-p", "n_resamples", "200", "-p", "judge_labels", str(JUDGE_LABELS)]


@pytest.fixture(scope="module")
def two_sessions(corpus_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("two")
    for name in SESSIONS:
        (folder / name.rsplit("/", 1)[1]).symlink_to(corpus_dir / name)
    return folder


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One call cache for both tests: the second finds the judge's calibration there."""
    return tmp_path_factory.mktemp("cache")


def audited(out, capsys) -> tuple[dict, pd.DataFrame]:
    """The run's manifest and plan-against-actual table; the report's page checked."""
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    versus = planned_against_made(out)
    assert versus.loc["total", "failed"] == 0
    page = Page((out / "report.html").read_text())
    assert "drift" in page.sections and "manifest" in page.sections and len(page.images) == 3
    assert all(decoded(src).size[0] > 200 for src, _ in page.images)
    printed = capsys.readouterr().out
    assert "audit: plan" in printed and "audit: report" in printed
    return manifest, versus


def test_quick_audit_of_two_shared_sessions_with_the_embedded_model(two_sessions, cache, tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(cache))
    out = tmp_path / "out"
    assert main(["audit", "--sessions", str(two_sessions), "--model", "local/smollm2-135m", "--out", str(out),
                 *SMALL]) == 0
    manifest, versus = audited(out, capsys)
    assert manifest["models"] == ["local/smollm2-135m"]
    cells = pd.read_parquet(out / "results" / "cells.parquet")
    assert set(cells["session"]) == {"S1", "S2"} and (cells["status"] == "ok").all()
    positions = pd.read_parquet(out / "results" / "positions.parquet")
    asked = positions[positions["asked"]]
    assert asked.groupby("session").size().tolist() == [3, 3]
    assert {"start", "compaction"} <= set(asked["kind"])  # one session has a compaction: its pre and post
    # Everything ran in-process: nothing was redacted for sending.
    redacted = pd.read_parquet(out / "results" / "redaction.parquet")
    assert not redacted["where"].str.contains("sent off").any()


@pytest.mark.server
def test_quick_audit_through_a_llama_cpp_server(two_sessions, cache, tmp_path, tmp_path_factory, monkeypatch,
                                                capsys):
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(cache))
    served = f"hosted_vllm/{MODEL_NAME}"
    out = tmp_path / "out"
    with serve_local_model(log_dir=tmp_path_factory.mktemp("server")) as server:
        assert main(["audit", "--sessions", str(two_sessions), "--model", served, "--judge", "local/smollm2-135m",
                     "--endpoints", f"hosted_vllm/*={server.api_base}", "--concurrency", "2", "--out", str(out),
                     *SMALL]) == 0
    manifest, versus = audited(out, capsys)
    assert manifest["parameters"]["endpoints"] == [f"hosted_vllm/*={server.api_base}"]
    assert manifest["traffic"]["audit:panel:targets"]["http_requests"] >= versus.loc["audit:panel:targets", "computed"] > 0
    cells = pd.read_parquet(out / "results" / "cells.parquet")
    assert (cells.loc[cells["target"] == served, "status"] == "ok").all()
