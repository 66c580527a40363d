"""The reference prefix: turn counting, resolution, compaction lookup, rendering, window.

Expected strings are written by hand from the rules in PROTOCOL.md §1-2.
"""
from __future__ import annotations

import json

import pytest

from contextecho.echo.reference.transcript import (SUMMARY_HEADER, is_turn, read_rows,
                                                          render_prefix, resolve_turn,
                                                          session_prefix, turn_index)
from contextecho.echo.protocols import protocol
from contextecho.sessions.errors import SessionFormatError


def user(content, **kw):
    return {"type": "user", "message": {"role": "user", "content": content}, **kw}


def assistant(content):
    return {"type": "assistant", "message": {"role": "assistant", "content": content}}


def write(path, records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("row, counts", [
    (assistant([{"type": "tool_use", "name": "Bash", "input": {}}]), True),   # tool-use only
    (assistant([{"type": "thinking", "thinking": "hm"}]), True),             # thinking only
    (user("  hi "), True),
    (user("   "), False),
    (user([{"type": "text", "text": "look"}]), True),
    (user([{"type": "text", "text": " "}]), False),
    (user([{"type": "text", "text": "x"}, {"type": "tool_result", "content": "r"}]), False),
    (user([{"type": "tool_result", "content": "r"}]), False),
    ({"type": "system", "subtype": "compact_boundary"}, False),
    ({"type": "summary", "summary": "s"}, False),
    (None, False),
    ({}, False),
])
def test_turn_counting(row, counts):
    assert is_turn(row) is counts


def test_index_resolution_and_placeholders(tmp_path):
    path = write(tmp_path / "s.jsonl", [
        {"type": "file-history-snapshot"},            # line 0
        user("first"),                                # 1 -> turn 1
        "{not json",                                  # 2 placeholder
        assistant([{"type": "text", "text": "ok"}]),  # 3 -> turn 2
        user([{"type": "tool_result", "content": "out"}]),  # 4 not a turn
        assistant([{"type": "text", "text": "done"}]),      # 5 -> turn 3
    ])
    rows = read_rows(path)
    assert rows[2] is None and len(rows) == 6
    index = turn_index(rows)
    assert index == {0: 0, 1: 1, 2: 3, 3: 5}
    assert resolve_turn(index, 99) == 3 and resolve_turn(index, 0) == 0
    assert resolve_turn(index, -1) is None
    assert render_prefix(rows, index, -5).text == ""
    # Turn 0 resolves to line 0, which renders nothing here.
    assert render_prefix(rows, index, 0).text == ""
    full = render_prefix(rows, index, 3)
    assert full.text == ("--- USER ---\nfirst\n\n--- ASSISTANT ---\nok\n\n"
                         "--- USER ---\n[tool_result: out]\n\n--- ASSISTANT ---\ndone")
    assert full.end_line == 5 and full.n_turns == 3
    assert render_prefix(rows, index, 2).text == "--- USER ---\nfirst\n\n--- ASSISTANT ---\nok"


def test_block_rendering_cuts_and_escapes(tmp_path):
    big = {"path": "é" * 150, "n": 1}
    path = write(tmp_path / "s.jsonl", [
        user("go"),
        assistant([{"type": "thinking", "thinking": "hidden"},
                   {"type": "text", "text": "A"},
                   {"type": "tool_use", "name": "Write", "input": big},
                   "not a block"]),
        user([{"type": "tool_result", "content": [{"type": "text", "text": "ab"},
                                                  {"type": "image", "source": {}},
                                                  {"type": "text", "text": "cd"}]},
              {"type": "tool_result", "content": "z" * 250}]),
        assistant([{"type": "thinking", "thinking": "only thinking"}]),   # blank -> dropped
    ])
    text = session_prefix(path, 99).text
    payload = json.dumps(big)[:200]
    assert payload.startswith('{"path": "\\u00e9') and len(payload) == 200
    assert text == ("--- USER ---\ngo\n\n--- ASSISTANT ---\nA\n[tool_use Write: " + payload + "]\n\n"
                    "--- USER ---\n[tool_result: abcd]\n[tool_result: " + "z" * 200 + "]")


def test_compaction_boundary_summary_and_window(tmp_path):
    path = write(tmp_path / "s.jsonl", [
        user("old work"),                                               # 0  turn 1
        assistant([{"type": "text", "text": "old reply"}]),             # 1  turn 2
        {"type": "system", "subtype": "compact_boundary"},              # 2
        user("This session is being continued. Summary: did X.", isCompactSummary=True),  # 3 turn 3
        user("after"),                                                  # 4  turn 4
        assistant([{"type": "text", "text": "new reply"}]),             # 5  turn 5
    ])
    rows = read_rows(path)
    index = turn_index(rows)
    prefix = render_prefix(rows, index, 5)
    summary = "This session is being continued. Summary: did X."
    assert prefix.text == (f"{SUMMARY_HEADER}\n{summary}\n\n--- USER ---\nafter\n\n"
                           "--- ASSISTANT ---\nnew reply")
    assert prefix.compaction.boundary_line == 2 and prefix.compaction.summary_line == 3
    # Before the boundary: no compaction applies.
    assert render_prefix(rows, index, 2).text == "--- USER ---\nold work\n\n--- ASSISTANT ---\nold reply"
    # The window keeps the last window characters, cutting into the header.
    assert render_prefix(rows, index, 5, window=30).text == prefix.text[-30:]
    assert len(render_prefix(rows, index, 5, window=30).text) == 30


def test_summary_rules(tmp_path):
    """Only rows b+1..b+4 of type user with *string* content containing 'summary' count;
    content always restarts at b+2; without a boundary a summary is an ordinary turn."""
    far = write(tmp_path / "far.jsonl", [
        {"type": "system", "subtype": "compact_boundary"},   # 0
        user("x1"), user("x2"), user("x3"), user("x4"),       # 1-4
        user("Summary too late"),                             # 5
    ])
    assert session_prefix(far, 99).text == ("--- USER ---\nx2\n\n--- USER ---\nx3\n\n--- USER ---\nx4\n\n"
                                            "--- USER ---\nSummary too late")
    listed = write(tmp_path / "list.jsonl", [
        {"type": "system", "subtype": "compact_boundary"},
        user([{"type": "text", "text": "summary as a list"}]),
        user("next"),
    ])
    assert session_prefix(listed, 99).text == "--- USER ---\nnext"
    legacy = write(tmp_path / "legacy.jsonl", [
        user("This is a SUMMARY of earlier work", isCompactSummary=True),
        assistant([{"type": "text", "text": "ok"}]),
    ])
    assert session_prefix(legacy, 99).text == ("--- USER ---\nThis is a SUMMARY of earlier work\n\n"
                                               "--- ASSISTANT ---\nok")


def test_nearest_boundary_only(tmp_path):
    path = write(tmp_path / "s.jsonl", [
        {"type": "system", "subtype": "compact_boundary"},
        user("first summary"),
        user("a"),
        {"type": "system", "subtype": "compact_boundary"},
        user("second summary"),
        user("b"),
    ])
    assert session_prefix(path, 99).text == f"{SUMMARY_HEADER}\nsecond summary\n\n--- USER ---\nb"


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(SessionFormatError, match="not found"):
        read_rows(tmp_path / "absent.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"type": "user"}\n\xff\xfe\n')
    with pytest.raises(SessionFormatError, match="UTF-8"):
        read_rows(bad)


def test_compaction_turns(tmp_path):
    from contextecho.echo.reference.positions import compaction_turns
    path = write(tmp_path / "s.jsonl", [
        user("a"),                                              # turn 1
        assistant([{"type": "text", "text": "b"}]),             # turn 2
        {"type": "system", "subtype": "compact_boundary"},      # line 2
        user("Summary: a and b"),                               # turn 3
        {"type": "system", "subtype": "compact_boundary"},      # line 4, nothing after
    ])
    rows = read_rows(path)
    [first, last] = compaction_turns(rows, turn_index(rows))
    assert (first.boundary_line, first.last_turn_before, first.first_turn_after) == (2, 2, 3)
    assert (last.boundary_line, last.last_turn_before, last.first_turn_after) == (4, 3, None)


@pytest.mark.corpus
def test_compaction_turns_match_the_fixture_positions(corpus_dir, missing_shared_data):
    """The fixture chose its turns around compactions; our landmarks give the same turns."""
    from contextecho.echo.reference.positions import compaction_turns
    from contextecho.engine.paths import shared_dir
    fixture = shared_dir() / "reference" / "contextecho" / "fixtures" / "prefix_cases.jsonl"
    if not fixture.is_file():
        missing_shared_data(f"no prefix fixtures at {fixture}")
    offsets = {"pre_compaction": ("last_turn_before", 0), "at_compaction_summary": ("first_turn_after", 0),
               "post_compaction": ("first_turn_after", 5)}
    checked, landmarks_of = 0, {}
    for line in fixture.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        kind, meta = case["meta"]["position_kind"], case["meta"]
        if kind not in offsets:
            continue
        session = case["inputs"]["session"]
        if session not in landmarks_of:
            rows = read_rows(corpus_dir / session)
            landmarks_of[session] = {c.boundary_line: c for c in compaction_turns(rows, turn_index(rows))}
        landmarks = landmarks_of[session]
        attr, plus = offsets[kind]
        assert getattr(landmarks[meta["compaction_boundary_line"]], attr) + plus == case["inputs"]["target_turn"]
        assert len(landmarks) == meta["n_compact_boundaries_seen"]
        checked += 1
    assert checked >= 30


def test_a_session_is_read_once_the_harness_way(tmp_path):
    """read_session: the harness's rows (undecodable lines kept as None), the format told
    as our reader tells it, and the session's own id; a file with no record is an error."""
    from contextecho.echo.reference.transcript import HarnessSession, read_session

    lines = [{"type": "user", "sessionId": "s-1", "message": {"content": "Fix the bug."}}, "not json",
             {"type": "assistant", "sessionId": "s-1", "message": {"content": [{"type": "text", "text": "Done."}]}}]
    path = tmp_path / "claude.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    session = read_session(path)
    assert isinstance(session, HarnessSession)
    assert (session.format, session.session_id, len(session.rows), session.rows[1]) == ("claude_code", "s-1", 3, None)
    assert list(session.rows) == read_rows(path)
    codex = tmp_path / "rollout.jsonl"
    codex.write_text(json.dumps({"type": "session_meta", "payload": {"id": "c-9", "cwd": "/w"}}) + "\n"
                     + json.dumps({"type": "response_item", "payload": {"type": "message", "role": "user",
                                                                        "content": [{"type": "input_text", "text": "hi"}]}})
                     + "\n")
    assert (read_session(codex).format, read_session(codex).session_id) == ("codex_cli", "c-9")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("nothing\n")
    with pytest.raises(SessionFormatError, match="no JSON record"):
        read_session(empty)


@pytest.mark.corpus
def test_a_reference_run_never_runs_our_parser(corpus_dir, monkeypatch):
    """Under reference the sessions of a run are read once, by the harness's reader: our
    parser is never called, and the id is the one our parser would give."""
    from contextecho.experiments import selection
    from contextecho.sessions import loader

    def parsed(*args, **kwargs):
        raise AssertionError("our parser read a session of a reference run")

    with monkeypatch.context() as patch:
        patch.setattr(loader, "_load", parsed)
        theirs = selection.select_sessions(2, protocol=protocol("reference"))
    assert all(len(s.rows) > 0 and s.format == "claude_code" for s in theirs)
    assert [s.session_id for s in theirs] == [loader.load_session(s.path).session_id for s in theirs]
