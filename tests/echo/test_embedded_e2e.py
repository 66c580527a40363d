"""End-to-end: real cells through arms × interventions × items, embedded target and judge.

The embedded 135M model is a weak target and a poor judge: this checks the plumbing and
the records (scores present, invalid verdicts counted, versions stored), not the science.
"""
import math

import pytest

from contextecho.engine.cache import CallCache
from contextecho.echo import build_cells, instrument_versions, run_cells, verdict_counts
from contextecho.engine.llm import LOCAL_MODEL
from contextecho.echo.protocols import protocol

OURS = protocol("contextecho")

pytestmark = pytest.mark.embedded


def test_embedded_cells_end_to_end(sessions, tmp_path):
    cells = build_cells("e2e", LOCAL_MODEL, sessions[:1], positions=[20], arms=["real", "filler"],
                        interventions=["none", "a_anchor"], items=["C03", "S2#01"],
                        window=600, params={"temperature": 0, "max_tokens": 8})
    assert len(cells) == 2 * 2 * 2
    frame = run_cells(cells, LOCAL_MODEL, protocol=OURS, cache=CallCache(tmp_path), progress=False,
                      judge_params={"temperature": 0, "max_tokens": 4})
    assert (frame.status == "ok").all() and frame.response.notna().all()
    judged = frame[frame.item_kind == "probe"]
    scored = frame[frame.item_kind == "stressor"]
    assert len(judged) == 4 and len(scored) == 4
    assert set(judged.verdict_status) <= {"ok", "invalid"}
    ok = judged[judged.verdict_status == "ok"]
    assert ok.score.between(0, 3).all()
    assert judged[judged.verdict_status == "invalid"].score.map(math.isnan).all()
    counts = verdict_counts(frame)
    assert counts.loc[LOCAL_MODEL, ["ok", "invalid", "error"]].sum() == len(judged)
    assert scored.passed.isin([True, False]).all() and scored.score.isin([0.0, 1.0]).all()
    assert (judged.judge_model == LOCAL_MODEL).all() and judged.judge_key.notna().all()
    for col, value in instrument_versions().items():
        assert (frame[col] == value).all()
    anchored = frame[frame.intervention == "a_anchor"]
    assert (anchored.inserted_tokens > 60).all() and (frame[frame.intervention == "none"].inserted_tokens == 0).all()
    # Filler and real prefixes are matched in length; all cells cached on a rerun.
    per_arm = frame.groupby("arm").prefix_chars.first()
    assert per_arm["real"] == per_arm["filler"]
    again = run_cells(cells, LOCAL_MODEL, protocol=OURS, cache=CallCache(tmp_path), progress=False,
                      judge_params={"temperature": 0, "max_tokens": 4})
    assert again.cached.all()
    assert again.verdict_status.tolist() == frame.verdict_status.tolist()
