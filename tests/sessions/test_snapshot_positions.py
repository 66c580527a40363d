"""Snapshot semantics (around compactions) and position schemes."""
from __future__ import annotations

import pytest

from contextecho.sessions import Position, load_session, positions, snapshot_at
from contextecho.sessions.model import COMPACTION_SUMMARY


def test_snapshot_before_compaction_holds_full_history(basic_claude):
    s = load_session(basic_claude)
    snap = snapshot_at(s, 4)  # m2 "Done with part one." — the last step before the compaction
    texts = [e.text for e in snap.entries]
    assert texts[0] == "first prompt" and texts[-1] == "Done with part one."
    assert not snap.after_compaction and snap.n_compactions_before == 0
    assert all(e.kind != COMPACTION_SUMMARY for e in snap.entries)


def test_snapshot_after_compaction_starts_at_summary(basic_claude):
    s = load_session(basic_claude)
    snap = snapshot_at(s, 5)  # first step after the compaction
    assert snap.after_compaction and snap.n_compactions_before == 1
    assert [e.text for e in snap.entries] == [
        "SUMMARY: the user asked for part one; it is done.", "second prompt", '{"command": "pytest"}']
    assert all("first prompt" not in e.text for e in snap.entries)  # discarded history
    last = snapshot_at(s, 6)
    assert [e.text for e in last.entries][-2:] == ["1 passed", "All green."]


def test_snapshot_ends_at_the_step(basic_claude):
    s = load_session(basic_claude)
    snap = snapshot_at(s, 2)  # tool call t1; its result is not yet in context
    assert snap.entries[-1].step == 2 and snap.entries[-1].call_id == "t1"
    assert snap.step == 2 and snap.n_steps_total == 6


def _long_session(tmp_path, cc, write, n_msgs=40, compact_after=(10, 25)):
    recs = [cc.user("start")]
    for i in range(1, n_msgs + 1):
        recs.append(cc.assistant(f"m{i}", cc.text(f"message {i}")))
        recs.append(cc.assistant(f"m{i}", cc.tool(f"t{i}")))
        recs.append(cc.result(f"t{i}", "ok"))
        if i in compact_after:
            recs += [cc.boundary(), cc.summary_record(f"summary after {i}")]
    return load_session(write(tmp_path / "long.jsonl", recs))


def test_uniform_positions(tmp_path, cc, write):
    s = _long_session(tmp_path, cc, write)
    assert s.n_agent_steps == 80
    ps = positions(s)
    assert len(ps) == 12 and ps[0] == Position(1, "u01", "uniform") and ps[-1].step == 80
    assert [p.step for p in ps] == sorted({p.step for p in ps})
    assert [p.step for p in positions(s, k=3)] == [1, 41, 80]
    with pytest.raises(ValueError):
        positions(s, k=0)


def test_uniform_on_short_session_dedups(basic_claude):
    s = load_session(basic_claude)
    assert [p.step for p in positions(s, "uniform", k=12)] == [1, 2, 3, 4, 5, 6]


def test_decile_positions(tmp_path, cc, write):
    s = _long_session(tmp_path, cc, write)
    ps = positions(s, "deciles")
    assert [p.label for p in ps] == [f"d{q:02d}" for q in range(1, 11)]
    assert [p.step for p in ps] == [8 * q for q in range(1, 11)]  # end of message 4q


def test_compaction_positions(tmp_path, cc, write):
    s = _long_session(tmp_path, cc, write)
    ps = positions(s, "compaction")
    assert [(p.label, p.step) for p in ps] == [("c1_pre", 20), ("c1_post", 21),
                                               ("c2_pre", 50), ("c2_post", 51)]
    pre, post = (snapshot_at(s, p.step) for p in ps[:2])
    assert not pre.after_compaction and pre.n_compactions_before == 0
    assert post.after_compaction and post.entries[0].text == "summary after 10"
    assert snapshot_at(s, 51).entries[0].text == "summary after 25"


def test_early_positions(tmp_path, cc, write):
    s = _long_session(tmp_path, cc, write)
    assert [p.label for p in positions(s, "early")] == ["s1", "s5", "s25"]
    assert [p.step for p in positions(s, "early", steps=[3, 1, 3, 500])] == [1, 3]


def test_unknown_scheme(basic_claude):
    with pytest.raises(ValueError, match="unknown position scheme"):
        positions(load_session(basic_claude), "random")
