"""``preregister`` then ``compare`` end to end on the embedded model: local/smollm2-135m against
itself at another temperature, at the smallest size (two sessions, one position, one probe,
one S2 wording, answers of 8 tokens: about thirty calls). What it checks is the path, not a
verdict: the plan is written and held, the report is written, the exit status is documented."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from contextecho.__main__ import main
from tests.conftest import JUDGE_LABELS
from tests.experiments.test_audit import claude
from tests.paper.test_report import Page

pytestmark = [pytest.mark.embedded, pytest.mark.timeout(600)]

TINY = ["--protocol", "contextecho", "-p", "n_sessions", "2", "-p", "n_positions", "1", "-p", "probes", "C01",
        "-p", "stressors", "S2#01", "-p", "window", "600", "-p", "max_tokens", "8", "-p", "stressor_max_tokens", "8",
        "-p", "judge_max_tokens", "8", "-p", "n_resamples", "200", "-p", "judge_labels", str(JUDGE_LABELS)]


def test_the_embedded_model_against_itself_at_another_temperature(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path / "cache"))
    for i, rounds in enumerate((12, 10)):
        claude(tmp_path / "sessions" / f"s{i}.jsonl", rounds=rounds)
    plan = tmp_path / "plan.json"
    assert main(["preregister", "--sessions", str(tmp_path / "sessions"), "--baseline", "local/smollm2-135m",
                 "--candidate-temperature", "0.8", "--out", str(plan), *TINY]) == 0
    registered = json.loads(plan.read_text())
    assert registered["targets"]["candidate"] == {"model": "local/smollm2-135m", "temperature": 0.8}
    assert registered["cells"]["baseline"]["n"] == 8  # 2 sessions × 1 position × 2 arms × 2 items
    out = tmp_path / "out"
    status = main(["compare", "--plan", str(plan), "--yes", "--out", str(out)])
    assert status in (0, 1, 3), capsys.readouterr().err[-2000:]
    verdicts = pd.read_parquet(out / "results" / "verdicts.parquet").set_index("endpoint")
    assert verdicts.loc["overall", "verdict"] in ("equivalent", "improved", "regressed", "inconclusive")
    assert status == {"equivalent": 0, "improved": 0, "regressed": 1, "inconclusive": 3}[
        verdicts.loc["overall", "verdict"]]
    page = Page((out / "report.html").read_text())
    assert "verdicts" in page.sections and "preregistration" in page.sections
    assert registered["sha256"] in (out / "report.html").read_text()
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
