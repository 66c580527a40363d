"""Bad input: a clear error naming the file (and line), or a counted, reported skip."""
from __future__ import annotations

import json

import pytest

from contextecho.sessions import (SessionFormatError, StepOutOfRange, load_session, positions,
                                  snapshot_at)


def test_truncated_last_line_is_a_counted_skip(tmp_path, cc, write):
    path = write(tmp_path / "t.jsonl", [cc.user("go"), cc.assistant("a", cc.text("ok"))],
                 raw_lines=['{"type": "assistant", "message": {"id": "b", "cont'], trailing_newline=False)
    s = load_session(path)
    (skip,) = s.report.skipped
    assert skip.line == 3 and "truncated" in skip.reason
    assert not s.report.complete and s.counts.n_agent_steps == 1
    with pytest.raises(SessionFormatError, match=r"t\.jsonl:3: truncated last line"):
        load_session(path, strict=True)


def test_invalid_utf8_line(tmp_path, cc, write):
    path = write(tmp_path / "t.jsonl", [cc.user("go")])
    with open(path, "ab") as fh:
        fh.write(b'{"type": "user", "message": {"content": "caf\xe9"}}\n')
        fh.write((json.dumps(cc.assistant("a", cc.text("ok"))) + "\n").encode())
    s = load_session(path)
    assert [(k.line, k.reason) for k in s.report.skipped] == [(2, "invalid UTF-8 (byte 0xe9 at column 45)")]
    assert s.counts.n_agent_steps == 1


def test_comment_and_garbage_lines_are_counted(tmp_path, cc, write):
    path = write(tmp_path / "t.jsonl", [cc.user("go"), cc.assistant("a", cc.text("ok"))],
                 raw_lines=["// Source: somewhere", "not json at all", "[1, 2]", "", "42"])
    s = load_session(path)
    assert [(k.line, k.reason) for k in s.report.skipped] == [
        (3, "comment line, not JSON"), (4, "not valid JSON"), (5, "JSON list, not an object"),
        (7, "JSON int, not an object")]


def test_binary_file(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(SessionFormatError, match=r"b\.jsonl:3: binary file"):
        load_session(path)


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file(tmp_path, content):
    path = tmp_path / "e.jsonl"
    path.write_bytes(content)
    with pytest.raises(SessionFormatError, match=r"e\.jsonl: empty file"):
        load_session(path)


def test_file_of_another_format(tmp_path, write):
    path = write(tmp_path / "o.jsonl", [{"event": "click", "x": 1}, {"event": "scroll"}])
    with pytest.raises(SessionFormatError, match=r"o\.jsonl:1: not a Claude Code or Codex CLI transcript"):
        load_session(path)
    csv = tmp_path / "data.jsonl"
    csv.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(SessionFormatError, match=r"data\.jsonl:1: no JSON records"):
        load_session(csv)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(SessionFormatError, match="file not found"):
        load_session(tmp_path / "nope.jsonl")
    with pytest.raises(SessionFormatError, match="is a directory"):
        load_session(tmp_path)


def test_records_lacking_fields(tmp_path, cc, write):
    recs = [cc.user("go"), {"type": "user", "uuid": "x"},
            {"type": "assistant", "message": {"id": "a"}},
            {"uuid": "y", "message": {"content": "typeless"}},
            cc.assistant("b", cc.text("ok"))]
    s = load_session(write(tmp_path / "t.jsonl", recs))
    assert [(k.line, k.reason) for k in s.report.skipped] == [
        (2, "user record: no message object"),
        (3, "assistant record: message has no content list"),
        (4, "record without a 'type' field")]
    assert s.counts.n_agent_steps == 1
    with pytest.raises(SessionFormatError, match=r"t\.jsonl:2: user record: no message object"):
        load_session(write(tmp_path / "t.jsonl", recs), strict=True)


def test_codex_records_lacking_fields(tmp_path, cx, write):
    recs = [cx.meta(), {"type": "response_item"}, cx.rec("response_item", {"role": "user"}),
            cx.rec("response_item", {"type": "message", "role": "robot", "content": []}),
            cx.msg("assistant", "ok")]
    s = load_session(write(tmp_path / "rollout.jsonl", recs))
    assert [k.line for k in s.report.skipped] == [2, 3, 4]
    assert s.counts.n_agent_steps == 1


def test_zero_assistant_steps(tmp_path, cc, write):
    s = load_session(write(tmp_path / "t.jsonl", [cc.user("hello?"), cc.user("anyone?")]))
    assert s.counts.n_agent_steps == 0
    with pytest.raises(StepOutOfRange, match="has no agent steps"):
        snapshot_at(s, 1)
    with pytest.raises(StepOutOfRange, match="has no agent steps"):
        positions(s)


@pytest.mark.parametrize("step", [0, -1, 7, 10**6, 1.5, True])
def test_step_beyond_end(basic_claude, step):
    s = load_session(basic_claude)
    with pytest.raises(StepOutOfRange, match=r"basic\.jsonl: step .* outside 1\.\.6"):
        snapshot_at(s, step)
