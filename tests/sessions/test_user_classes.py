"""User message classes: typed prompts vs the wrappers the harness writes as user messages;
they partition n_user_msgs, which keeps the manifest's counting rule."""
from __future__ import annotations

import pytest

from contextecho.sessions import load_session
from contextecho.sessions.user_classes import USER_CLASSES, classify_user_text


@pytest.mark.parametrize("text, cls", [
    ("fix the failing test in cli.py", "typed_prompt"),
    ("<command-name>/clear</command-name>\n<command-message>clear</command-message>", "slash_command"),
    ("<command-message>review</command-message>\n<command-name>/review</command-name>", "slash_command"),
    ("[Request interrupted by user]", "interruption"),
    ("[Request interrupted by user for tool use]", "interruption"),
    ("<turn_aborted>interrupted</turn_aborted>", "interruption"),
    ("<local-command-stdout>See ya!</local-command-stdout>", "local_command"),
    ("<local-command-stderr>oops</local-command-stderr>", "local_command"),
    ("<bash-input>git pull</bash-input>", "bash_mode"),
    ("<bash-stdout>Already up to date.</bash-stdout><bash-stderr></bash-stderr>", "bash_mode"),
    ("<user_shell_command>ls</user_shell_command>", "bash_mode"),
    ("<task-notification>\n<task-id>b1</task-id>", "task_notification"),
    ("Stop hook feedback:\n[~/hook.sh]: untracked files", "hook_feedback"),
    ("PreToolUse:Bash hook feedback: no", "typed_prompt"),  # not a leading "<Word> hook feedback:"
    ("Operation stopped by hook: another session is active", "hook_feedback"),
    ("<ide_opened_file>The user opened a.py</ide_opened_file>\nwhy does this fail?", "typed_prompt"),
    ("<ide_selection>x</ide_selection><command-name>/x</command-name>", "slash_command"),
])
def test_classify(text, cls):
    assert classify_user_text(text) == cls


def test_classes_partition_the_user_count(tmp_path, cc, cx, write):
    recs = [cc.user("<command-name>/init</command-name>"), cc.user("write the parser"),
            cc.assistant("a", cc.tool("t1")), cc.result("t1", "x"),
            cc.user("[Request interrupted by user for tool use]"),
            cc.user("<bash-input>ls</bash-input>"), cc.user("<bash-stdout>a</bash-stdout>"),
            cc.user("harness", isMeta=True), cc.user("side", isSidechain=True),
            cc.assistant("b", cc.text("ok"))]
    s = load_session(write(tmp_path / "c.jsonl", recs))
    assert s.counts.n_user_msgs == 6  # the manifest rule: wrappers count, meta does not
    assert s.counts.user_classes == {"typed_prompt": 2, "slash_command": 1, "interruption": 1,
                                     "bash_mode": 2}
    assert list(s.counts.user_classes) == [c for c in USER_CLASSES if c in s.counts.user_classes]
    timeline = [(e.text[:12], e.user_class) for e in s.entries if e.role == "user" and e.kind == "text"]
    assert timeline == [("<command-nam", "slash_command"), ("write the pa", "typed_prompt"),
                        ("[Request int", "interruption"), ("<bash-input>", "bash_mode"),
                        ("<bash-stdout", "bash_mode"), ("harness", None)]
    codex = load_session(write(tmp_path / "rollout.jsonl",
                               [cx.meta(), *cx.turn("fix", "fixed", "c1"),
                                cx.event("user_message", message="<user_shell_command>ls</user_shell_command>")]))
    assert codex.counts.user_classes == {"typed_prompt": 1, "bash_mode": 1}


def test_goal_and_requests_use_typed_prompts(tmp_path, cc, write):
    from contextecho.anchor.recall.events import user_requests
    from contextecho.echo.interventions import opening_goal
    recs = [cc.user("Implement the following plan: refactor the whole parser module", sessionId="other"),
            cc.user("<command-name>/model</command-name>"),
            cc.user("<local-command-stdout>Set model to opus</local-command-stdout>"),
            cc.assistant("a", cc.text("ready")),
            cc.user("please add a --json flag to the corpus command"),
            cc.assistant("b", cc.tool("t1")), cc.result("t1", "x"),
            cc.user("and make the table show typed prompts"), cc.assistant("c", cc.text("done")),
            cc.assistant("c", cc.text("done")), cc.user("more"), cc.assistant("d", cc.text("ok"))]
    s = load_session(write(tmp_path / "g.jsonl", recs))
    assert s.session_id == "sess-1"
    assert opening_goal(s) == "please add a --json flag to the corpus command"
    assert [r.text for r in user_requests(s)] == ["please add a --json flag to the corpus command",
                                                  "and make the table show typed prompts"]
