"""Claude Code reader: every record type, flags, split responses, compactions, subagents."""
from __future__ import annotations

from contextecho.sessions import load_session
from contextecho.sessions.model import (COMPACTION_SUMMARY, REASONING, TEXT, TOOL_CALL,
                                        TOOL_RESULT)


def test_basic_counts_and_steps(basic_claude):
    s = load_session(basic_claude)
    assert s.format == "claude_code"
    c = s.counts
    assert (c.n_user_msgs, c.n_assistant_msgs, c.n_tool_calls, c.n_compactions) == (2, 4, 3, 1)
    # steps: m1 text, t1, t2, m2 text, t3, m4 text
    assert c.n_agent_steps == 6
    kinds = [s.entry_of_step(k).kind for k in range(1, 7)]
    assert kinds == [TEXT, TOOL_CALL, TOOL_CALL, TEXT, TOOL_CALL, TEXT]
    assert s.n_user_turns == 2
    assert s.message_last_step == (3, 4, 5, 6)
    assert s.report.complete and s.report.n_skipped == 0


def test_split_response_shares_message_id(basic_claude):
    s = load_session(basic_claude)
    m1 = [e for e in s.entries if e.message_id == "m1"]
    assert [e.kind for e in m1] == [REASONING, TEXT, TOOL_CALL, TOOL_CALL]
    assert s.counts.n_assistant_msgs == 4  # m1..m4, not one per record


def test_tool_results_carry_tool_name(basic_claude):
    s = load_session(basic_claude)
    results = [e for e in s.entries if e.kind == TOOL_RESULT]
    assert [(e.tool_name, e.text) for e in results] == [("Bash", "a.py"), ("Read", "print(1)"),
                                                       ("Bash", "1 passed")]


def test_v2_compaction_boundary_plus_summary(basic_claude):
    s = load_session(basic_claude)
    (comp,) = s.compactions
    entry = s.entries[comp.entry_index]
    assert entry.kind == COMPACTION_SUMMARY and entry.text.startswith("SUMMARY:")
    assert comp.trigger == "auto" and comp.pre_tokens == 150000
    assert comp.steps_before == 4
    assert sum(e.kind == COMPACTION_SUMMARY for e in s.entries) == 1


def test_v1_compaction_summary_only(tmp_path, cc, write):
    recs = [cc.user("go", version="1.0.90"), cc.assistant("a", cc.text("ok")),
            cc.summary_record("This session is being continued ..."),
            cc.user("next"), cc.assistant("b", cc.text("fine"))]
    s = load_session(write(tmp_path / "v1.jsonl", recs))
    assert s.counts.n_compactions == 1 and len(s.compactions) == 1
    assert s.compactions[0].steps_before == 1 and s.compactions[0].trigger is None
    assert s.counts.n_user_msgs == 2  # the summary is not a user message


def test_summary_records_are_titles_not_compactions(tmp_path, cc, write):
    recs = [{"type": "summary", "summary": "Fix the build", "leafUuid": "x"},
            cc.user("go"), cc.assistant("a", cc.text("ok"))]
    s = load_session(write(tmp_path / "t.jsonl", recs))
    assert s.counts.n_compactions == 0 and not s.compactions
    assert s.report.record_types["summary"] == 1


def test_all_record_types_tallied_and_harmless(tmp_path, cc, write):
    recs = [
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}, "isSnapshotUpdate": False},
        {"type": "queue-operation", "operation": "enqueue", "content": "later"},
        cc.user("go"),
        cc.base("progress", data={"type": "bash_progress", "output": "..."}, toolUseID="t"),
        cc.base("progress", data={"type": "hook_progress"}),
        cc.assistant("a", cc.text("ok")),
        cc.base("system", subtype="turn_duration", durationMs=5),
        cc.base("system", subtype="stop_hook_summary"),
        cc.base("system", subtype="api_error", retryAttempt=1),
        cc.base("system", subtype="local_command", content="<command-name>/x</command-name>"),
        cc.base("system", subtype="informational", content="Session resumed"),
        cc.base("system", content="limit reached"),
        {"type": "pr-link", "prNumber": 1, "prUrl": "https://example.invalid/pr/1"},
        {"type": "some-future-type", "x": 1},
    ]
    s = load_session(write(tmp_path / "t.jsonl", recs))
    t = s.report.record_types
    for key in ("file-history-snapshot", "queue-operation", "progress/bash_progress",
                "progress/hook_progress", "system/turn_duration", "system/stop_hook_summary",
                "system/api_error", "system/local_command", "system/informational", "system",
                "pr-link", "some-future-type", "user", "assistant"):
        assert t.get(key) == 1, key
    assert s.counts.n_agent_steps == 1 and s.report.complete
    assert [e.text for e in s.entries] == ["go", "ok"]  # notices are not model context


def test_flags(tmp_path, cc, write):
    recs = [
        cc.user("<command-caveat>harness text</command-caveat>", isMeta=True),
        cc.user([cc.text("look at this"), {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]),
        cc.assistant("a", cc.text("API Error: 502"), isApiErrorMessage=True),
        cc.assistant("b", cc.text("real answer")),
        cc.user("only in transcript", isVisibleInTranscriptOnly=True),
        cc.user("side prompt", isSidechain=True),
        cc.assistant("c", cc.text("side answer"), isSidechain=True),
    ]
    s = load_session(write(tmp_path / "t.jsonl", recs))
    # MANIFEST rules count every user/assistant record, sidechains and API errors included
    assert s.counts.n_user_msgs == 3 and s.counts.n_assistant_msgs == 3
    texts = [(e.role, e.text, e.meta) for e in s.entries]
    assert texts == [("user", "<command-caveat>harness text</command-caveat>", True),
                     ("user", "look at this\n[image]", False),
                     ("assistant", "real answer", False)]
    assert s.counts.n_agent_steps == 1 and s.n_user_turns == 1
    assert any("sidechain" in n for n in s.report.notes)
    assert any("API-error" in n for n in s.report.notes)


def test_tool_result_error_and_mixed_user_content(tmp_path, cc, write):
    recs = [cc.user("go"), cc.assistant("a", cc.tool("t1")),
            cc.user([{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True},
                     cc.text("stop, do it differently")]),
            cc.assistant("b", cc.text("ok"))]
    s = load_session(write(tmp_path / "t.jsonl", recs))
    assert s.counts.n_user_msgs == 2  # a list that is not only tool results is a user message
    assert [(e.kind, e.text) for e in s.entries][2:4] == [(TOOL_RESULT, "[error] boom"),
                                                          (TEXT, "stop, do it differently")]


def test_replayed_records_are_deduplicated(tmp_path, cc, write):
    first = [cc.user("go", timestamp="2026-01-01T00:00:00Z"), cc.assistant("a", cc.text("hi")),
             cc.assistant("a", cc.tool("t1")), cc.result("t1", "x")]
    replay = [dict(r, uuid=r["uuid"] + "-copy") for r in first]
    s = load_session(write(tmp_path / "t.jsonl", first + replay))
    assert s.counts.n_tool_calls == 1 and s.counts.n_agent_steps == 2
    assert s.report.n_duplicates == 4


def test_subagent_files_and_embedded_progress(tmp_path, cc, write):
    main = [cc.user("go"), cc.assistant("a", cc.tool("task1", "Task", prompt="explore")),
            cc.base("progress", data={"type": "agent_progress", "agentId": "emb1", "prompt": "explore",
                                      "normalizedMessages": [],
                                      "message": {"type": "assistant", "uuid": "e1",
                                                  "message": {"id": "sm", "role": "assistant",
                                                              "content": [cc.text("found it")]}}},
                    parentToolUseID="task1"),
            cc.result("task1", "explored"), cc.assistant("b", cc.text("done"))]
    path = write(tmp_path / "s1.jsonl", main)
    sub = [cc.user("explore", isSidechain=True, agentId="f1"),
           cc.assistant("x", cc.text("looking"), isSidechain=True, agentId="f1"),
           cc.assistant("x", cc.tool("st1", "Grep", pattern="y"), isSidechain=True, agentId="f1")]
    write(tmp_path / "s1" / "subagents" / "agent-f1.jsonl", sub)
    s = load_session(path)
    assert s.counts.n_agent_steps == 2  # progress messages are not main-agent steps
    ids = sorted(x.session_id for x in s.subagents)
    assert ids == ["sess-1:emb1", "sess-1:f1"]
    by_id = {x.session_id: x for x in s.subagents}
    assert by_id["sess-1:f1"].counts.n_agent_steps == 2
    assert by_id["sess-1:f1"].n_user_turns == 1  # a subagent file keeps its sidechain records
    assert by_id["sess-1:emb1"].entries[0].text == "found it"
    assert load_session(path, with_subagents=False).subagents[0].session_id == "sess-1:emb1"


def test_empty_assistant_text_is_not_a_step(tmp_path, cc, write):
    recs = [cc.user("go"), cc.assistant("a", cc.text("   ")), cc.assistant("b", cc.text("ok"))]
    s = load_session(write(tmp_path / "t.jsonl", recs))
    assert s.counts.n_agent_steps == 1 and s.counts.n_assistant_msgs == 2


def test_tool_call_text_is_its_input_as_json(tmp_path, cc, write):
    block = {"type": "tool_use", "id": "t1", "name": "Edit",
             "input": {"file_path": "/w/é.py", "n": 2, "x": 1.5, "flags": [True, None], "o": {}}}
    s = load_session(write(tmp_path / "t.jsonl", [cc.user("go"), cc.assistant("a", block)]))
    assert s.entries[1].text == '{"file_path": "/w/é.py", "n": 2, "x": 1.5, "flags": [true, null], "o": {}}'
    assert (s.entries[1].kind, s.entries[1].tool_name, s.entries[1].step) == (TOOL_CALL, "Edit", 1)


def test_tool_calls_kept_out_of_the_timeline_are_still_counted(tmp_path, cc, write):
    recs = [cc.user("go"), cc.assistant("a", cc.tool("t1"), cc.text("first")),
            cc.assistant("s", cc.tool("t2"), isSidechain=True),
            cc.assistant("e", cc.tool("t3"), isApiErrorMessage=True),
            cc.assistant("a", cc.tool("t1"), cc.text("first"))]  # a replay: same ids, same text
    s = load_session(write(tmp_path / "t.jsonl", recs))
    assert s.counts.n_tool_calls == 3 and s.counts.n_assistant_msgs == 3
    assert [e.call_id for e in s.entries if e.kind == TOOL_CALL] == ["t1"]
    assert s.report.n_duplicates == 2 and s.counts.n_agent_steps == 2


def test_hand_offs_and_version_follow_the_owning_session_id(tmp_path, cc, write):
    recs = [cc.user("Implement the plan", sessionId="planner", version="1.0.0"),
            cc.assistant("a", cc.text("on it"), sessionId="worker", version=None),
            cc.user("go on", sessionId="worker", version="2.1.5"),
            cc.user("go on", sessionId="planner"),
            cc.assistant("b", cc.text("done"), sessionId="worker", version="2.1.6")]
    s = load_session(write(tmp_path / "t.jsonl", recs))
    assert (s.session_id, s.version) == ("worker", "2.1.5")
    assert [(e.text, e.user_class, e.user_turn) for e in s.entries if e.role == "user"] == [
        ("Implement the plan", "handoff", 1), ("go on", "typed_prompt", 2), ("go on", "handoff", 3)]
    assert s.counts.user_classes == {"typed_prompt": 1, "handoff": 2}


def test_a_subagent_file_marks_hand_offs_by_its_own_id(tmp_path, cc, write):
    recs = [cc.user("explore", isSidechain=True, agentId="f1", sessionId="other"),
            cc.user("look deeper", isSidechain=True, agentId="f1", sessionId="main"),
            cc.assistant("x", cc.text("looking"), isSidechain=True, agentId="f1", sessionId="main")]
    s = load_session(write(tmp_path / "agent-f1.jsonl", recs))
    assert s.session_id == "main:f1"
    assert [e.user_class for e in s.entries if e.role == "user"] == ["handoff", "typed_prompt"]
