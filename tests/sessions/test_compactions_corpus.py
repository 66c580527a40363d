"""The compaction-rich corpus (../shared/corpus/compactions): counts match its manifest,
microcompactions included; glued lines are recovered; the mixed-id file gets its owner's
id; a snapshot just after each microcompaction holds none of the results it dropped and
one just before holds every one of them the file has."""
from __future__ import annotations

import csv
import json

import pytest

from contextecho.__main__ import main
from contextecho.sessions import load_session, snapshot_at
from contextecho.sessions.model import TOOL_RESULT

COUNT_KEYS = ("n_user_msgs", "n_assistant_msgs", "n_tool_calls", "n_compactions", "n_microcompactions")

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def rows(compactions_dir):
    with open(compactions_dir / "MANIFEST.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def sessions(compactions_dir, rows):
    return {r["file"]: load_session(compactions_dir / r["file"], with_subagents=False) for r in rows}


def _glued(row) -> list[int]:
    return [int(x) for x in row["glued_lines"].split()]


def test_counts_match_manifest(rows, sessions):
    assert len(rows) == 45
    for r in rows:
        s = sessions[r["file"]]
        got = {"format": s.format, **{k: getattr(s.counts, k) for k in COUNT_KEYS},
               "first_timestamp": s.first_timestamp, "last_timestamp": s.last_timestamp,
               "glued_lines": list(s.report.glued_lines)}
        want = {"format": r["format"], **{k: int(r[k]) for k in COUNT_KEYS},
                "first_timestamp": r["first_timestamp"], "last_timestamp": r["last_timestamp"],
                "glued_lines": _glued(r)}
        assert got == want, r["file"]
        assert s.report.complete, (r["file"], s.report.skipped[:3])
        assert sum(s.counts.user_classes.values()) == s.counts.n_user_msgs
    assert sum(s.counts.n_microcompactions for s in sessions.values()) == 26
    assert sum(s.counts.n_compactions for s in sessions.values()) == 37
    assert sum(len(s.report.glued_lines) for s in sessions.values()) == 13


def test_corpus_json_matches_manifest(compactions_dir, rows, capsys):
    assert main(["corpus", str(compactions_dir), "--json"]) == 0
    out, err = capsys.readouterr()
    objs = {o["file"]: o for o in map(json.loads, out.splitlines())}
    assert set(objs) == {r["file"] for r in rows} and "0 path(s) not read" in err
    for r in rows:
        o = objs[r["file"]]
        assert {k: o[k] for k in COUNT_KEYS} == {k: int(r[k]) for k in COUNT_KEYS}, r["file"]
        assert o["glued_lines"] == _glued(r) and o["skipped_lines"] == []
        assert sum(o["user_msg_classes"].values()) == o["n_user_msgs"]
    mixed = [o for o in objs.values() if o["session_ids"]]
    assert [o["file"] for o in mixed] == [r["file"] for r in rows if "mixed" in r["selected_for"]]


def test_mixed_file_takes_the_owning_session(rows, sessions):
    (row,) = [r for r in rows if "mixed" in r["selected_for"]]
    s = sessions[row["file"]]
    owner, n = max(s.report.session_ids.items(), key=lambda kv: kv[1])
    assert s.session_id == owner and len(s.report.session_ids) == 2
    assert s.counts.user_classes["handoff"] == 1
    first_prompt = next(e for e in s.entries if e.role == "user" and e.kind == "text")
    assert first_prompt.user_class == "handoff"


def test_snapshots_around_every_microcompaction(sessions):
    n_events = n_listed = n_held_before = 0
    for name, s in sessions.items():
        for m in s.microcompactions:
            n_events += 1
            dropped = set(m.tool_ids)
            n_listed += len(dropped)
            post = snapshot_at(s, m.steps_before + 1)
            assert not {e.call_id for e in post.entries if e.kind == TOOL_RESULT} & dropped, (name, m.line)
            if m.steps_before < 1:
                continue
            pre = snapshot_at(s, m.steps_before)
            # every dropped result the file holds since the last compaction before the boundary
            since = max([c.entry_index for c in s.compactions if c.entry_index < m.entry_index], default=0)
            present = {e.call_id for e in s.entries[since:m.entry_index] if e.kind == TOOL_RESULT} & dropped
            held = {e.call_id for e in pre.entries if e.kind == TOOL_RESULT} & dropped
            assert held == present, (name, m.line)
            n_held_before += len(held)
    assert n_events == 26
    assert (n_listed, n_held_before) == (435, 379)
