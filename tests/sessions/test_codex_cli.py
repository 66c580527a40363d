"""Codex CLI reader: record types, injected context, tool kinds, compactions, legacy files."""
from __future__ import annotations

from contextecho.sessions import load_session
from contextecho.sessions.model import COMPACTION_SUMMARY, REASONING, TEXT, TOOL_CALL, TOOL_RESULT


def _session(tmp_path, write, recs, name="rollout-test.jsonl"):
    return load_session(write(tmp_path / name, recs))


def test_turns_counts_and_steps(tmp_path, cx, write):
    recs = [cx.meta(), cx.msg("developer", "<permissions instructions>sandbox</permissions instructions>"),
            cx.msg("user", "# AGENTS.md instructions for /work/p\n<INSTRUCTIONS>be nice</INSTRUCTIONS>"),
            cx.msg("user", "<environment_context><cwd>/work/p</cwd></environment_context>"),
            *cx.turn("fix the bug", "fixed", "c1"), *cx.turn("add a test", "added", "c2"),
            cx.event("task_started", turn_id="t"), cx.event("task_complete", turn_id="t"),
            cx.event("exec_command_end", call_id="c2", exit_code=0), cx.event("turn_aborted", reason="interrupted")]
    s = _session(tmp_path, write, recs)
    assert s.format == "codex_cli" and s.session_id == "cx-1" and s.version == "0.99.0"
    c = s.counts
    assert (c.n_user_msgs, c.n_assistant_msgs, c.n_tool_calls, c.n_compactions, c.n_agent_steps) == (2, 2, 2, 0, 4)
    assert s.n_user_turns == 2
    metas = [e for e in s.entries if e.meta]
    assert [e.role for e in metas] == ["system", "user", "user"]
    assert [e.kind for e in s.entries if not e.meta][:5] == [TEXT, REASONING, TOOL_CALL, TOOL_RESULT, TEXT]
    t = s.report.record_types
    for key in ("session_meta", "turn_context", "event_msg/user_message", "event_msg/agent_message",
                "event_msg/token_count", "event_msg/task_started", "event_msg/task_complete",
                "event_msg/exec_command_end", "event_msg/turn_aborted", "response_item/reasoning",
                "response_item/function_call", "response_item/function_call_output"):
        assert t.get(key), key


def test_user_count_falls_back_to_items_without_user_message_events(tmp_path, cx, write):
    recs = [cx.meta(), cx.msg("user", "<user_instructions>x</user_instructions>"),
            cx.msg("user", "hello"), cx.msg("assistant", "hi"), cx.msg("user", "bye")]
    s = _session(tmp_path, write, recs)
    assert s.counts.n_user_msgs == 2


def test_tool_kinds(tmp_path, cx, write):
    recs = [cx.meta(), cx.event("user_message", message="go"), cx.msg("user", "go"),
            cx.rec("response_item", {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch",
                                     "input": "*** Begin Patch\n*** End Patch\n", "status": "completed"}),
            cx.output("p1", '{"output":"Success"}', "custom_tool_call_output"),
            cx.rec("response_item", {"type": "local_shell_call", "call_id": "l1", "status": "completed",
                                     "action": {"type": "exec", "command": ["ls"]}}),
            cx.output("l1", "a b", "local_shell_call_output"),
            cx.rec("response_item", {"type": "web_search_call", "status": "completed",
                                     "action": {"type": "search", "query": "python json"}}),
            cx.rec("response_item", {"type": "function_call_output", "call_id": "old",
                                     "output": {"content": "legacy dict output", "success": True}}),
            cx.rec("response_item", {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
            cx.msg("assistant", "done")]
    s = _session(tmp_path, write, recs)
    calls = [(e.tool_name, e.text) for e in s.entries if e.kind == TOOL_CALL]
    assert calls == [("apply_patch", "*** Begin Patch\n*** End Patch\n"),
                     ("shell", '{"type": "exec", "command": ["ls"]}'),
                     ("web_search", '{"type": "search", "query": "python json"}')]
    assert s.counts.n_tool_calls == 3 and s.counts.n_agent_steps == 4
    results = [(e.tool_name, e.text) for e in s.entries if e.kind == TOOL_RESULT]
    assert results == [("apply_patch", '{"output":"Success"}'), ("shell", "a b"),
                       (None, "legacy dict output")]
    assert s.report.record_types["response_item/ghost_snapshot"] == 1


def test_compacted_record(tmp_path, cx, write):
    recs = [cx.meta(), *cx.turn("one", "r1", "c1"),
            cx.rec("compacted", {"message": "SUMMARY of turn one"}),
            cx.event("context_compacted"),
            *cx.turn("two", "r2", "c2")]
    s = _session(tmp_path, write, recs)
    assert s.counts.n_compactions == 1
    (comp,) = s.compactions
    assert s.entries[comp.entry_index].text == "SUMMARY of turn one" and comp.steps_before == 2


def test_compacted_with_replacement_history_only(tmp_path, cx, write):
    recs = [cx.meta(), *cx.turn("one", "r1", "c1"),
            cx.rec("compacted", {"message": "", "replacement_history": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one"}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "handoff summary"}]}]}),
            *cx.turn("two", "r2", "c2")]
    s = _session(tmp_path, write, recs)
    assert s.entries[s.compactions[0].entry_index].text == "one\n\nhandoff summary"


def test_context_compacted_event_without_record(tmp_path, cx, write):
    recs = [cx.meta(), *cx.turn("one", "r1", "c1"), cx.event("context_compacted"),
            *cx.turn("two", "r2", "c2")]
    s = _session(tmp_path, write, recs)
    assert s.counts.n_compactions == 1 and s.compactions[0].steps_before == 2
    assert s.entries[s.compactions[0].entry_index].kind == COMPACTION_SUMMARY


def test_legacy_bare_items(tmp_path, write):
    recs = [{"id": "legacy-1", "timestamp": "2025-05-01T00:00:00Z", "instructions": ""},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]}]
    s = _session(tmp_path, write, recs)
    assert s.format == "codex_cli" and s.session_id == "legacy-1"
    assert s.counts.n_agent_steps == 2 and s.counts.n_user_msgs == 1
