"""Rendering a snapshot as a chat prefix: format, alternation, window, structure."""
from __future__ import annotations

import pytest

from contextecho.sessions import load_session, render_prefix, snapshot_at
from contextecho.sessions.render import JOINER


def test_format_and_merging(basic_claude):
    s = load_session(basic_claude)
    p = render_prefix(snapshot_at(s, 4), redact=False)
    assert p.messages == (
        {"role": "user", "content": "first prompt"},
        {"role": "assistant", "content": "I'll look.\n\n[tool_call Bash] {\"command\": \"ls\"}\n\n"
                                         "[tool_call Read] {\"file_path\": \"a.py\"}"},
        {"role": "user", "content": "[tool_result Bash] a.py\n\n[tool_result Read] print(1)"},
        {"role": "assistant", "content": "Done with part one."},
    )
    assert [(t.role, t.kind, t.message) for t in p.turns] == [
        ("user", "text", 0), ("assistant", "text", 1), ("assistant", "tool_call", 1),
        ("assistant", "tool_call", 1), ("user", "tool_result", 2), ("user", "tool_result", 2),
        ("assistant", "text", 3)]
    assert p.n_chars == sum(len(m["content"]) for m in p.messages)
    assert p.n_chars == sum(t.n_chars for t in p.turns) + len(JOINER) * (len(p.turns) - len(p.messages))
    assert not p.truncated and p.step == 4 and p.session_id == "sess-1"
    assert "hmm" not in str(p.messages)  # thinking is never rendered


def test_unmerged_one_message_per_turn(basic_claude):
    p = render_prefix(snapshot_at(load_session(basic_claude), 4), redact=False, merge=False)
    assert len(p.messages) == len(p.turns) == 7
    assert [t.message for t in p.turns] == list(range(7))


def test_compaction_summary_rendered_as_user_turn(basic_claude):
    p = render_prefix(snapshot_at(load_session(basic_claude), 6), redact=False)
    assert p.turns[0].kind == "compaction_summary" and p.messages[0]["role"] == "user"
    assert p.messages[0]["content"].startswith("SUMMARY:")
    assert p.messages[-1] == {"role": "assistant", "content": "All green."}


def test_preamble_and_harness(tmp_path, cc, write):
    recs = [cc.user("<caveat>injected</caveat>", isMeta=True), cc.user("go"),
            cc.assistant("a", cc.text("ok"))]
    s = load_session(write(tmp_path / "t.jsonl", recs))
    p = render_prefix(snapshot_at(s, 1), redact=False, preamble="You are a coding agent.")
    assert p.messages[0] == {"role": "system", "content": "You are a coding agent."}
    assert p.body == ({"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"})
    assert p.n_chars == len("go") + len("ok")  # the preamble is not session content
    h = render_prefix(snapshot_at(s, 1), redact=False, include_harness=True)
    assert h.messages[0]["content"] == "<caveat>injected</caveat>" + JOINER + "go"


def _chatty(tmp_path, cc, write, n=30, size=1000):
    recs = []
    for i in range(n):
        recs.append(cc.user(f"u{i} " + "x" * size))
        recs.append(cc.assistant(f"m{i}", cc.text(f"a{i} " + "y" * size)))
    return load_session(write(tmp_path / "chat.jsonl", recs))


def test_window_trims_on_turn_boundary(tmp_path, cc, write):
    s = _chatty(tmp_path, cc, write)
    full = render_prefix(snapshot_at(s, 30), redact=False, window=None)
    assert not full.truncated and len(full.messages) == 60
    p = render_prefix(snapshot_at(s, 30), redact=False, window=10_000)
    assert p.truncated and p.n_chars <= 10_000 and p.n_chars_full == full.n_chars
    assert p.messages[0]["role"] == "user" and p.messages[-1]["role"] == "assistant"
    assert p.messages == full.messages[-len(p.messages):]  # whole messages, the most recent
    assert p.window == 10_000
    default = render_prefix(snapshot_at(s, 30), redact=False)
    assert default.window == 30_000 and default.truncated and default.n_chars <= 30_000


def test_window_smaller_than_last_message(tmp_path, cc, write):
    s = _chatty(tmp_path, cc, write, n=2, size=5000)
    p = render_prefix(snapshot_at(s, 2), redact=False, window=100)
    assert p.truncated and p.n_chars == 100 and len(p.messages) == 1
    assert p.messages[0]["content"] == "y" * 100


def test_alternation_with_redaction(tmp_path, cc, write):
    s = _chatty(tmp_path, cc, write)
    p = render_prefix(snapshot_at(s, 30), window=10_000)
    roles = [m["role"] for m in p.messages]
    assert all(a != b for a, b in zip(roles, roles[1:]))
    assert p.redacted and p.redaction is not None


def test_invalid_window(basic_claude):
    with pytest.raises(ValueError):
        render_prefix(snapshot_at(load_session(basic_claude), 1), window=0)
