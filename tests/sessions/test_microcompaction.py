"""Microcompactions: the timeline keeps the dropped tool results, a snapshot after the
boundary leaves them out (and says how many), positions can be anchored on them."""
from __future__ import annotations

import pytest

from contextecho.sessions import load_session, positions, render_prefix, snapshot_at
from contextecho.sessions.model import TOOL_RESULT


@pytest.fixture
def micro_session(tmp_path, cc, write):
    recs = [cc.user("go"),
            cc.assistant("m1", cc.tool("t1", "Read", file_path="a.py")), cc.result("t1", "OUT-ONE " * 50),
            cc.assistant("m2", cc.tool("t2", "Read", file_path="b.py")), cc.result("t2", "OUT-TWO"),
            cc.assistant("m3", cc.text("read both")),
            cc.microcompact("t1", "t-not-in-this-file"),
            cc.user("next"),
            cc.assistant("m4", cc.tool("t3", "Bash", command="ls")), cc.result("t3", "OUT-THREE"),
            cc.assistant("m5", cc.text("end")),
            cc.microcompact("t2", "t3"),
            cc.assistant("m6", cc.text("after the second"))]
    return load_session(write(tmp_path / "micro.jsonl", recs))


def _results(snapshot):
    return [e.text for e in snapshot.entries if e.kind == TOOL_RESULT]


def test_microcompactions_are_recorded_not_entries(micro_session):
    s = micro_session
    assert s.counts.n_microcompactions == 2 and s.counts.n_compactions == 0
    first, second = s.microcompactions
    assert (first.line, first.steps_before, first.tool_ids) == (7, 3, ("t1", "t-not-in-this-file"))
    assert (first.trigger, first.pre_tokens, first.tokens_saved) == ("auto", 60000, 20000)
    assert second.steps_before == 5 and second.tool_ids == ("t2", "t3")
    # the timeline is the record of what happened: every result is still in it
    assert len([e for e in s.entries if e.kind == TOOL_RESULT]) == 3


def test_snapshot_before_holds_the_results_after_leaves_them_out(micro_session):
    s = micro_session
    pre, post = snapshot_at(s, 3), snapshot_at(s, 4)
    assert _results(pre) == ["OUT-ONE " * 50, "OUT-TWO"] and pre.n_results_microcompacted == 0
    assert pre.n_microcompactions_before == 0
    assert _results(post) == ["OUT-TWO"] and post.n_results_microcompacted == 1
    assert post.n_microcompactions_before == 1
    last = snapshot_at(s, 6)
    assert _results(last) == [] and last.n_results_microcompacted == 3
    # the tool calls stay: only their results were dropped
    assert [e.call_id for e in last.entries if e.kind == "tool_call"] == ["t1", "t2", "t3"]
    prefix = render_prefix(post, window=None, redact=False)
    assert "OUT-ONE" not in "".join(m["content"] for m in prefix.messages)


def test_snapshot_can_ignore_microcompactions(micro_session):
    kept = snapshot_at(micro_session, 6, microcompactions=False)
    assert len(_results(kept)) == 3 and kept.n_results_microcompacted == 0
    assert not kept.microcompactions_applied and kept.n_microcompactions_before == 2


def test_results_after_a_boundary_are_not_dropped_by_it(tmp_path, cc, write):
    # A boundary drops results that came before it, never one that arrives later.
    recs = [cc.user("go"), cc.assistant("m1", cc.text("start")), cc.microcompact("t1"),
            cc.assistant("m2", cc.tool("t1")), cc.result("t1", "LATE"), cc.assistant("m3", cc.text("end"))]
    s = load_session(write(tmp_path / "late.jsonl", recs))
    assert _results(snapshot_at(s, 3)) == ["LATE"]


def test_microcompaction_positions(micro_session):
    got = [(p.step, p.label, p.scheme) for p in positions(micro_session, "microcompaction")]
    assert got == [(3, "m1_pre", "microcompaction"), (4, "m1_post", "microcompaction"),
                   (5, "m2_pre", "microcompaction"), (6, "m2_post", "microcompaction")]
    assert positions(micro_session, "compaction") == ()


def test_sidechain_microcompaction_is_counted_not_applied(tmp_path, cc, write):
    recs = [cc.user("go"), cc.assistant("m1", cc.tool("t1")), cc.result("t1", "OUT"),
            dict(cc.microcompact("t1"), isSidechain=True), cc.assistant("m2", cc.text("end"))]
    s = load_session(write(tmp_path / "side.jsonl", recs))
    assert s.counts.n_microcompactions == 1 and s.microcompactions == ()
    assert _results(snapshot_at(s, 2)) == ["OUT"]


def test_compaction_experiment_event_positions(micro_session):
    from contextecho.sessions.positions import around_events as event_positions
    labels = [p.label for p in event_positions(micro_session, 1, ("compaction", "microcompaction"))]
    assert labels == ["m1_pre", "m1_post"]
    assert [p.label for p in event_positions(micro_session, 0, ("microcompaction",))] == [
        "m1_pre", "m1_post", "m2_pre", "m2_post"]
    with pytest.raises(ValueError, match="unknown event type"):
        event_positions(micro_session, 0, ("microcompactions",))


def test_compaction_experiment_runs_microcompaction_events(micro_session, monkeypatch, tmp_path):
    from contextecho.echo.protocols import protocol
    from contextecho.experiments import compaction, spine
    chosen = {}

    def select(n, **kw):
        chosen.update(kw)
        return [micro_session]

    monkeypatch.setattr(spine, "select_sessions", select)
    params = compaction.Parameters(targets=("fake/echo",), judges=("fake/echo",), n_resamples=100,
                                   max_tokens=16, window=3000, n_sessions=1, max_compactions=0,
                                   probes=("C01",), event_types=("compaction", "microcompaction"),
                                   protocol="contextecho",  # the reference anchors on compactions only
                                   output_dir=str(tmp_path / "out"))
    result = compaction.run(params)
    assert chosen == {"events": ("compaction", "microcompaction"), "protocol": protocol("contextecho")}
    events = result.tables["Compaction events (gap before, after, change)"]
    assert list(events["event_type"]) == ["microcompaction", "microcompaction"]
    assert list(events["event"]) == ["m1", "m2"]
    assert result.variables["n_events"] == 2  # fake/echo gives no valid verdict: no complete event
