"""A failed call is never a score: not for the scorers (stressors), not for the judge,
whatever the fault (an empty answer, a bug inside the provider, a permanent error)."""
import pytest

from contextecho.engine.cache import CallCache
from contextecho.engine.counts import Counts
from contextecho.echo import build_cells, run_cells
from contextecho.echo.protocols import protocol

OURS = protocol("contextecho")


@pytest.mark.parametrize("target", ["fake/empty", "fake/whitespace", "fake/value-error", "fake/http-401"])
def test_a_failed_target_is_neither_scored_nor_judged(sessions, tmp_path, target, provider):
    judge = provider("seeingjudge", lambda model, messages: "Score: 2")  # records what it was shown
    cells = build_cells("x", target, sessions[:1], positions=[4], arms=["real", "filler"],
                        items=["C03", "S2#01", "C6_json"], window=2_000)
    for attempt in range(2):  # the first run, and a rerun answered by the stored errors
        frame = run_cells(cells, "seeingjudge/x", protocol=OURS, cache=CallCache(tmp_path), progress=False)
        assert (frame.status == "error").all() and frame.response.isna().all()
        assert (frame.verdict_status == "error").all() and frame.score.isna().all()
        assert frame.passed.isna().all()
        assert frame.verdict_reason.str.startswith("target call failed").all()
        batches = frame.attrs["batches"]  # counted, never silently dropped
        assert batches["cells:targets"].calls == batches["cells:targets"].failed == len(cells)
        assert batches["cells:judges"] == Counts()
    assert judge.seen == []


def test_an_empty_verdict_is_a_failed_judge_call_not_a_score(sessions, tmp_path):
    cells = build_cells("x", "fake/echo", sessions[:1], positions=[4], arms=["real"], items=["C03"],
                        window=2_000)
    frame = run_cells(cells, ["fake/whitespace"], protocol=OURS, cache=CallCache(tmp_path), progress=False)
    assert (frame.status == "ok").all() and frame.score.isna().all()
    assert (frame.verdict_status == "error").all()
    assert (frame.verdict_reason == "judge call failed: EmptyResponse").all()
    assert frame.attrs["batches"]["cells:judges"] == Counts(calls=1, computed=1, failed=1)
