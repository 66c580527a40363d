"""Malformed files: the readers never crash and never hang; each bad record is skipped and
named (file, line, field, what was found); each bad file is refused with a reason; and
``corpus DIR`` over a folder of good and bad files reports every one of them."""
from __future__ import annotations

import copy
import gzip
import json
import os
import random
import socket
import tempfile
from pathlib import Path

import pytest

from contextecho.__main__ import main
from contextecho.sessions import SessionFormatError, load_session, positions, render_prefix, snapshot_at
from contextecho.sessions.corpus import summarize
from contextecho.sessions.jsonl import MAX_DEPTH, read_jsonl
from contextecho.sessions.model import Skip
from tests.sessions.conftest import CC, CX, write_jsonl

pytestmark = pytest.mark.timeout(60)  # a hang is a failure, not a stuck suite


def _cc(bad: dict) -> list[dict]:
    return [CC.user("go"), CC.assistant("a", CC.text("ok")), bad, CC.assistant("b", CC.text("still here"))]


def _with(rec: dict, path: str, value) -> dict:
    """``rec`` with the field at dotted ``path`` (``message.content.0.text``) set to ``value``."""
    rec = json.loads(json.dumps(rec))
    *parents, last = path.split(".")
    node = rec
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return rec


# (case id, bad record, expected reason) — one per field a Claude Code read site uses.
CLAUDE_CASES = [
    ("text-int", _with(CC.assistant("x", CC.text("t")), "message.content.0.text", 42),
     "assistant record: message.content[0].text is a number, expected a string"),
    ("user-text-list", CC.user([{"type": "text", "text": ["a", "b"]}]),
     "user record: message.content[0].text is a list, expected a string"),
    ("user-content-int", _with(CC.user("x"), "message.content", 5),
     "user record: message.content is a number, expected a string or a list"),
    ("message-id-list", _with(CC.assistant("x", CC.text("t")), "message.id", ["m"]),
     "assistant record: message.id is a list, expected a string"),
    ("message-id-dict", _with(CC.assistant("x", CC.text("t")), "message.id", {"a": 1}),
     "assistant record: message.id is an object, expected a string"),
    ("tool-use-id-list", CC.assistant("x", {"type": "tool_use", "id": ["t"], "name": "Bash", "input": {}}),
     "assistant record: message.content[0].id is a list, expected a string"),
    ("tool-use-id-dict", CC.assistant("x", {"type": "tool_use", "id": {"t": 1}, "name": "Bash", "input": {}}),
     "assistant record: message.content[0].id is an object, expected a string"),
    ("tool-use-no-id", CC.assistant("x", {"type": "tool_use", "name": "Bash", "input": {}}),
     "assistant record: message.content[0].id is missing"),
    ("tool-name-list", CC.assistant("x", {"type": "tool_use", "id": "t9", "name": ["B"], "input": {}}),
     "assistant record: message.content[0].name is a list, expected a string"),
    ("thinking-list", CC.assistant("x", {"type": "thinking", "thinking": [1], "signature": "s"}),
     "assistant record: message.content[0].thinking is a list, expected a string"),
    ("block-not-object", _with(CC.assistant("x", CC.text("t")), "message.content.0", 5),
     "assistant record: message.content[0] is a number, expected an object"),
    ("block-type-list", CC.user([{"type": ["text"], "text": "x"}]),
     "user record: message.content[0].type is a list, expected a string"),
    ("result-id-list", CC.user([{"type": "tool_result", "tool_use_id": ["t1"], "content": "x"}]),
     "user record: message.content[0].tool_use_id is a list, expected a string"),
    ("result-content-int", CC.user([{"type": "tool_result", "tool_use_id": "t1", "content": 7}]),
     "user record: message.content[0].content is a number, expected a string or a list"),
    ("result-item-int", CC.user([{"type": "tool_result", "tool_use_id": "t1", "content": [3]}]),
     "user record: message.content[0].content[0] is a number, expected an object"),
    ("result-is-error-str", CC.user([{"type": "tool_result", "tool_use_id": "t1", "content": "x",
                                      "is_error": "yes"}]),
     "user record: message.content[0].is_error is a string, expected true/false"),
    ("compact-metadata-str", _with(CC.boundary(), "compactMetadata", "auto"),
     "system record: compactMetadata is a string, expected an object"),
    ("pre-tokens-str", _with(CC.boundary(), "compactMetadata.preTokens", "150k"),
     "system record: compactMetadata.preTokens is a string, expected a number"),
    ("micro-metadata-str", CC.base("system", subtype="microcompact_boundary", microcompactMetadata="x"),
     "system record: microcompactMetadata is a string, expected an object"),
    ("micro-ids-str", CC.base("system", subtype="microcompact_boundary",
                              microcompactMetadata={"compactedToolIds": "t1"}),
     "system record: microcompactMetadata.compactedToolIds is a string, expected a list"),
    ("micro-id-int", CC.base("system", subtype="microcompact_boundary",
                             microcompactMetadata={"compactedToolIds": ["t1", 2]}),
     "system record: microcompactMetadata.compactedToolIds[1] is a number, expected a string"),
    ("subtype-list", CC.base("system", subtype=["compact_boundary"]),
     "system record: subtype is a list, expected a string"),
    ("timestamp-int", _with(CC.user("x"), "timestamp", 1700000000),
     "user record: timestamp is a number, expected a string"),
    ("sidechain-str", _with(CC.user("x"), "isSidechain", "false"),
     "user record: isSidechain is a string, expected true/false"),
    ("meta-int", _with(CC.user("x"), "isMeta", 1),
     "user record: isMeta is a number, expected true/false"),
    ("summary-flag-str", _with(CC.user("x"), "isCompactSummary", "true"),
     "user record: isCompactSummary is a string, expected true/false"),
    ("session-id-list", _with(CC.user("x"), "sessionId", ["s"]),
     "user record: sessionId is a list, expected a string"),
    ("version-int", _with(CC.user("x"), "version", 2),
     "user record: version is a number, expected a string"),
    ("message-list", CC.base("user", message=["hi"]),
     "user record: message is a list, expected an object"),
    ("type-list", dict(CC.user("x"), type=["user"]),
     "record whose 'type' is a list, not a string"),
    ("progress-data-str", CC.base("progress", data="agent_progress"),
     "progress record: data is a string, expected an object"),
    ("progress-message-list", CC.base("progress", data={"type": "agent_progress", "message": [1]}),
     "progress record: data.message is a list, expected an object"),
    ("progress-agent-dict", CC.base("progress", data={"type": "agent_progress", "agentId": {"a": 1},
                                                      "message": {"type": "user"}}),
     "progress record: data.agentId is an object, expected a string"),
]

CODEX_CASES = [
    ("codex-text-int", CX.rec("response_item", {"type": "message", "role": "assistant",
                                                "content": [{"type": "output_text", "text": 5}]}),
     "response_item record: payload.content[0].text is a number, expected a string"),
    ("codex-call-id-list", CX.rec("response_item", {"type": "function_call", "name": "x", "arguments": "{}",
                                                    "call_id": ["c"]}),
     "response_item record: payload.call_id is a list, expected a string"),
    ("codex-output-call-id-dict", CX.rec("response_item", {"type": "function_call_output",
                                                           "call_id": {"c": 1}, "output": "x"}),
     "response_item record: payload.call_id is an object, expected a string"),
    ("codex-compaction-message-int", CX.rec("compacted", {"message": 7}),
     "compacted record: payload.message is a number, expected a string"),
    ("codex-history-str", CX.rec("compacted", {"message": "", "replacement_history": "x"}),
     "compacted record: payload.replacement_history is a string, expected a list"),
    ("codex-history-item-int", CX.rec("compacted", {"message": "", "replacement_history": [1]}),
     "compacted record: payload.replacement_history[0] is a number, expected an object"),
    ("codex-role-list", CX.rec("response_item", {"type": "message", "role": ["user"], "content": []}),
     "response_item record: payload.role is a list, expected a string"),
    ("codex-content-int", CX.rec("response_item", {"type": "message", "role": "user", "content": 3}),
     "response_item record: payload.content is a number, expected a string or a list"),
    ("codex-output-int", CX.rec("response_item", {"type": "function_call_output", "call_id": "c",
                                                  "output": 4}),
     "response_item record: payload.output is a number, expected a string or a list"),
    ("codex-input-list", CX.rec("response_item", {"type": "custom_tool_call", "call_id": "p",
                                                  "name": "apply_patch", "input": ["x"]}),
     "response_item record: payload.input is a list, expected a string"),
    ("codex-meta-id-list", CX.rec("session_meta", {"id": ["x"]}),
     "session_meta record: payload.id is a list, expected a string"),
    ("codex-user-event-list", CX.event("user_message", message=["hi"]),
     "event_msg record: payload.message is a list, expected a string"),
    ("codex-payload-list", {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": [1]},
     "response_item record: payload is a list, expected an object"),
    ("codex-payload-type-int", CX.rec("response_item", {"type": 3}),
     "response_item record: payload.type is a number, expected a string"),
    ("codex-timestamp-int", {"timestamp": 5, "type": "event_msg", "payload": {"type": "token_count"}},
     "event_msg record: timestamp is a number, expected a string"),
]


@pytest.mark.parametrize("case, bad, reason", CLAUDE_CASES, ids=[c[0] for c in CLAUDE_CASES])
def test_claude_code_wrong_field_type_skips_the_record(tmp_path, case, bad, reason):
    s = load_session(write_jsonl(tmp_path / f"{case}.jsonl", _cc(bad)))
    assert [(k.line, k.reason) for k in s.report.skipped] == [(3, reason)]
    assert [e.text for e in s.entries if e.role == "assistant"] == ["ok", "still here"]
    assert s.counts.n_user_msgs == 1 and s.counts.n_assistant_msgs == 2  # nothing of it counted
    with pytest.raises(SessionFormatError, match=rf"{case}\.jsonl:3: "):
        load_session(tmp_path / f"{case}.jsonl", strict=True)


@pytest.mark.parametrize("case, bad, reason", CODEX_CASES, ids=[c[0] for c in CODEX_CASES])
def test_codex_wrong_field_type_skips_the_record(tmp_path, case, bad, reason):
    recs = [CX.meta(), *CX.turn("fix", "fixed", "c1"), bad, CX.msg("assistant", "still here")]
    s = load_session(write_jsonl(tmp_path / f"rollout-{case}.jsonl", recs))
    assert [(k.line, k.reason) for k in s.report.skipped] == [(len(recs) - 1, reason)]
    assert s.counts.n_user_msgs == 1 and s.counts.n_assistant_msgs == 2
    assert s.counts.n_compactions == 0 and s.entries[-1].text == "still here"


def test_a_bad_record_leaves_nothing_behind(tmp_path):
    # The second block is bad: the tool call of the first block must not be counted either.
    bad = CC.assistant("x", CC.tool("t7", "Bash"), {"type": "text", "text": 1})
    s = load_session(write_jsonl(tmp_path / "t.jsonl", _cc(bad)))
    assert s.counts.n_tool_calls == 0 and s.counts.n_assistant_msgs == 2
    assert not any(e.call_id == "t7" for e in s.entries)


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def test_100k_deep_nesting_is_refused_not_a_recursion_error(tmp_path):
    only = tmp_path / "deep.jsonl"
    only.write_text(_deep(100_000) + "\n")
    with pytest.raises(SessionFormatError, match=rf"deep\.jsonl:1: .*nested deeper than {MAX_DEPTH} levels"):
        load_session(only)
    inside = tmp_path / "inside.jsonl"
    lines = [json.dumps(CC.user("go")),
             '{"type": "user", "message": {"content": ' + _deep(100_000) + "}}",
             '{"type": "assistant", "message": {"id": "m", "content": ' + _deep(MAX_DEPTH + 5) + "}}",
             json.dumps(CC.assistant("a", CC.text("ok")))]
    inside.write_text("\n".join(lines) + "\n")
    s = load_session(inside)
    assert [k.line for k in s.report.skipped] == [2, 3]
    assert all("nested deeper" in k.reason for k in s.report.skipped)
    assert s.counts.n_agent_steps == 1


def test_fifo_is_refused_before_opening(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SessionFormatError, match=r"pipe\.jsonl: is a FIFO \(named pipe\), not a regular file"):
        load_session(fifo)


def test_socket_is_refused(tmp_path):
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # AF_UNIX paths are short
    path = folder / "s.jsonl"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        with pytest.raises(SessionFormatError, match="is a socket, not a regular file"):
            load_session(path)
    finally:
        sock.close()
        path.unlink()
        folder.rmdir()


def test_device_is_refused():
    with pytest.raises(SessionFormatError, match="is a character device"):
        load_session("/dev/null")


def test_links(tmp_path):
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    with pytest.raises(SessionFormatError, match=r"loop\.jsonl: symlink loop"):
        load_session(loop)
    dangling = tmp_path / "gone.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    with pytest.raises(SessionFormatError, match=r"gone\.jsonl: dangling symlink \(points to .*nowhere\.jsonl"):
        load_session(dangling)


def test_unreadable_file_is_named(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "locked.jsonl", _cc(CC.user("more")))
    real = Path.open

    def open_(self, *args, **kwargs):
        if self.name == "locked.jsonl":  # chmod 000 does not stop root: refuse it here
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    with pytest.raises(SessionFormatError, match=r"locked\.jsonl: cannot read: Permission denied"):
        load_session(path)


@pytest.mark.parametrize("encoding, bom, note", [
    ("utf-16", b"", "UTF-16-LE text (byte-order mark)"),
    ("utf-16-be", b"\xfe\xff", "UTF-16-BE text (byte-order mark)"),
    ("utf-16-le", b"", "UTF-16-LE text (no byte-order mark; recognised by its NUL bytes)"),
    ("utf-16-be", b"", "UTF-16-BE text (no byte-order mark; recognised by its NUL bytes)"),
    ("utf-32", b"", "UTF-32-LE text (byte-order mark)"),
    ("utf-32-be", b"\x00\x00\xfe\xff", "UTF-32-BE text (byte-order mark)"),
    ("utf-32-le", b"", "UTF-32-LE text (no byte-order mark; recognised by its NUL bytes)"),
    ("utf-32-be", b"", "UTF-32-BE text (no byte-order mark; recognised by its NUL bytes)")])
def test_utf16_and_utf32_are_decoded(tmp_path, encoding, bom, note):
    """A wide encoding is read like UTF-8: the same records, line numbers and skips."""
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in
                     _cc(CC.user("naïve café ☕ 😀 über"))) + "\n// a comment\n"
    utf8 = tmp_path / "utf8.jsonl"
    utf8.write_bytes(text.encode("utf-8"))
    wide = tmp_path / "wide.jsonl"
    wide.write_bytes(bom + text.encode(encoding))
    a, b = read_jsonl(utf8), read_jsonl(wide)
    assert b.records == a.records and b.skipped == a.skipped == [Skip(5, "comment line, not JSON")]
    assert b.n_lines == 5 and b.notes == (f"{note}, decoded to UTF-8",)
    assert "naïve café ☕ 😀 über" in json.dumps(b.records, ensure_ascii=False)
    s = load_session(wide)
    assert s.counts.n_user_msgs == 2 and s.counts.n_agent_steps == 2


def test_utf8_bom_is_read(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(json.dumps(r) for r in _cc(CC.user("more"))).encode() + b"\n")
    s = load_session(path)
    assert s.report.complete and s.counts.n_user_msgs == 2 and s.counts.n_agent_steps == 2


def test_latin1_file_is_named(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes('{"type": "user", "message": {"content": "café"}}\n'.encode("latin-1"))
    with pytest.raises(SessionFormatError, match=r"latin\.jsonl:1: not UTF-8 text.*Latin-1"):
        load_session(path)


def test_json_document_and_gemini_cli_session(tmp_path):
    gemini = {"sessionId": "g-1", "projectHash": "ab12", "startTime": "2026-01-01T00:00:00Z",
              "lastUpdated": "2026-01-01T00:05:00Z",
              "messages": [{"id": "1", "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": "hi"},
                           {"id": "2", "timestamp": "2026-01-01T00:00:05Z", "type": "gemini", "content": "hello",
                            "toolCalls": [], "thoughts": []}]}
    pretty = tmp_path / "session-1.jsonl"
    pretty.write_text(json.dumps(gemini, indent=2))
    with pytest.raises(SessionFormatError, match=r"session-1\.jsonl: a Gemini CLI session \(one JSON document\)"):
        load_session(pretty)
    one_line = tmp_path / "session-2.jsonl"
    one_line.write_text(json.dumps(gemini) + "\n")
    with pytest.raises(SessionFormatError, match=r"session-2\.jsonl:1: a Gemini CLI session"):
        load_session(one_line)
    other = tmp_path / "doc.jsonl"
    other.write_text(json.dumps({"records": [{"a": 1}], "version": 2}, indent=2))
    with pytest.raises(SessionFormatError, match=r"doc\.jsonl: one JSON document \(a JSON object with "
                                                 r"keys records, version\), not JSONL"):
        load_session(other)
    array = tmp_path / "array.jsonl"
    array.write_text(json.dumps([CC.user("go"), CC.assistant("a", CC.text("ok"))], indent=1))
    with pytest.raises(SessionFormatError, match=r"one JSON document \(a JSON list\)"):
        load_session(array)


def test_glued_lines_yield_every_record(tmp_path):
    recs = [CC.user("go"), CC.assistant("a", CC.text("one")), CC.assistant("b", CC.text("two")),
            {"type": "summary", "summary": "title", "leafUuid": "x"}, CC.assistant("c", CC.text("three"))]
    lines = [json.dumps(recs[0]), json.dumps(recs[1]) + json.dumps(recs[2]) + " " + json.dumps(recs[3]),
             json.dumps(recs[4]), json.dumps(recs[4]) + "[1, 2]"]
    path = tmp_path / "glued.jsonl"
    path.write_text("\n".join(lines) + "\n")
    s = load_session(path)
    assert [e.text for e in s.entries if e.role == "assistant"] == ["one", "two", "three"]
    assert s.report.glued_lines == (2,) and s.report.record_types["summary"] == 1
    assert [(k.line, k.reason) for k in s.report.skipped] == [
        (4, "glued line (several JSON values on one line): value 2 is JSON a list, not an object")]
    assert any("1 glued line" in n for n in s.report.notes)


def test_mixed_session_ids_take_the_owner_and_mark_the_handoff(tmp_path):
    recs = [CC.user("Implement the following plan: ...", sessionId="planner"),
            CC.assistant("a", CC.text("on it"), sessionId="worker"),
            CC.assistant("a", CC.tool("t1"), sessionId="worker"), CC.result("t1", "x", sessionId="worker"),
            CC.user("[Request interrupted by user]", sessionId="worker"),
            CC.user("now add tests", sessionId="worker"), CC.assistant("b", CC.text("done"), sessionId="worker")]
    s = load_session(write_jsonl(tmp_path / "mixed.jsonl", recs))
    assert s.session_id == "worker"
    assert s.report.session_ids == {"planner": 1, "worker": 6}
    assert s.counts.user_classes == {"typed_prompt": 1, "interruption": 1, "handoff": 1}
    assert [e.user_class for e in s.entries if e.kind == "text" and e.role == "user"] == [
        "handoff", "interruption", "typed_prompt"]
    assert any("2 session ids" in n for n in s.report.notes)


def _good_and_bad_folder(root: Path) -> dict[str, str]:
    """A folder with two good transcripts and one bad file of each kind: {file: reason part}."""
    write_jsonl(root / "good" / "claude.jsonl", _cc(CC.user("more")))
    write_jsonl(root / "good" / "rollout.jsonl", [CX.meta(), *CX.turn("fix", "fixed", "c1")])
    # a good file with bad records is read, its bad records listed
    write_jsonl(root / "good" / "some-bad-records.jsonl", _cc(CLAUDE_CASES[0][1]))
    # a UTF-16 file is decoded and read like its UTF-8 twin
    (root / "good" / "utf16.jsonl").write_bytes("".join(json.dumps(r) + "\n" for r in _cc(CC.user("x"))).encode("utf-16"))
    bad = {}
    (root / "bad").mkdir()
    (root / "bad" / "deep.jsonl").write_text(_deep(100_000) + "\n")
    bad["bad/deep.jsonl"] = "nested deeper than"
    os.mkfifo(root / "bad" / "fifo.jsonl")
    bad["bad/fifo.jsonl"] = "FIFO"
    (root / "bad" / "loop.jsonl").symlink_to(root / "bad" / "loop.jsonl")
    bad["bad/loop.jsonl"] = "symlink loop"
    (root / "bad" / "dangling.jsonl").symlink_to(root / "bad" / "missing.jsonl")
    bad["bad/dangling.jsonl"] = "dangling symlink"
    (root / "bad" / "folder-loop").symlink_to(root)
    bad["bad/folder-loop"] = "symlink loop"
    (root / "bad" / "packed.jsonl").write_bytes(gzip.compress(json.dumps(CC.user("x")).encode()))
    bad["bad/packed.jsonl"] = "gzip-compressed: decompress it first"
    (root / "bad" / "padded.jsonl").write_bytes(json.dumps(CC.user("x")).encode() + b"\n" + b"\x00" * 9000)
    bad["bad/padded.jsonl"] = "line 2: binary file (NUL-padded"
    (root / "bad" / "empty.jsonl").write_bytes(b"")
    bad["bad/empty.jsonl"] = "empty file"
    (root / "bad" / "gemini.jsonl").write_text(json.dumps(
        {"sessionId": "g", "projectHash": "h", "messages": [{"type": "user", "content": "hi"}]}, indent=2))
    bad["bad/gemini.jsonl"] = "Gemini CLI session"
    write_jsonl(root / "bad" / "only-bad-records.jsonl",
                [_with(CC.user("x"), "message.content", 5), _with(CC.boundary(), "compactMetadata", "x")])
    bad["bad/only-bad-records.jsonl"] = "user record: message.content is a number"
    (root / "bad" / "unlisted").mkdir()
    bad["bad/unlisted"] = "cannot list folder: Permission denied"
    return bad


@pytest.fixture
def refuse_listing(monkeypatch):
    """Make a folder unreadable even for root (chmod 000 does not stop root)."""
    real = os.scandir

    def scandir(path="."):
        if Path(path).name == "unlisted":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_corpus_reports_every_good_and_bad_file(tmp_path, refuse_listing, capsys):
    root = tmp_path / "mixed"
    bad = _good_and_bad_folder(root)
    summaries, skipped = summarize(root)
    assert sorted(s.file for s in summaries) == ["good/claude.jsonl", "good/rollout.jsonl",
                                                 "good/some-bad-records.jsonl", "good/utf16.jsonl"]
    reasons = dict(skipped)
    assert set(reasons) == set(bad)
    for name, part in bad.items():
        assert part in reasons[name], (name, reasons[name])
    assert main(["corpus", str(root), "--json"]) == 0
    out, err = capsys.readouterr()
    objs = {o["file"]: o for o in map(json.loads, out.splitlines())}
    assert set(objs) == set(bad) | {s.file for s in summaries}
    assert all(part in objs[name]["error"] and f"not read {name}: " in err for name, part in bad.items())
    assert objs["good/some-bad-records.jsonl"]["skipped_lines"] == [[3, CLAUDE_CASES[0][2]]]
    assert main(["corpus", str(root)]) == 0  # the table too


def test_corpus_exits_nonzero_only_when_nothing_was_read(tmp_path, refuse_listing, capsys):
    root = tmp_path / "mixed"
    _good_and_bad_folder(root)
    for good in (root / "good").iterdir():
        good.unlink()
    assert main(["corpus", str(root), "--json"]) == 1
    assert "0 transcript(s) read" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["corpus", str(empty)]) == 1


_ANY = [42, -1, 3.5, True, False, None, "", "x", [], ["a"], [1, [2]], {}, {"a": 1}, {"type": "text"}]


def _paths(obj, prefix=()):
    yield prefix
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        yield from _paths(v, prefix + (k,))


def _fuzzed(records: list[dict], rng: random.Random) -> list[dict]:
    """``records`` with one to four fields (anywhere, any depth) replaced by any JSON value."""
    recs = copy.deepcopy(records)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(recs))
        path = rng.choice(list(_paths(recs[i])))
        value = copy.deepcopy(rng.choice(_ANY))
        if not path:
            recs[i] = value
            continue
        node = recs[i]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return recs


def test_no_field_of_any_type_crashes_a_reader(tmp_path):
    """Property: whatever value any field holds, reading, positions, snapshots and
    rendering either work or raise SessionFormatError (seeded, so a failure reproduces)."""
    claude = [CC.user("go"), CC.assistant("m1", CC.thinking("h"), CC.text("t"), CC.tool("t1")),
              CC.result("t1", [{"type": "text", "text": "r"}]), CC.boundary(), CC.summary_record("S"),
              CC.microcompact("t1"), CC.user("more"),
              CC.base("progress", data={"type": "agent_progress", "agentId": "a", "message": {
                  "type": "assistant", "message": {"id": "x", "content": [CC.text("sub")]}}}),
              CC.assistant("m2", CC.text("end"))]
    codex = [CX.meta(), *CX.turn("fix", "fixed", "c1"),
             CX.rec("compacted", {"message": "", "replacement_history": [
                 {"type": "message", "content": [{"type": "input_text", "text": "x"}]}]}),
             CX.rec("response_item", {"type": "custom_tool_call", "call_id": "p", "name": "a", "input": "x"}),
             CX.rec("response_item", {"type": "local_shell_call", "call_id": "l", "action": {"command": ["ls"]}}),
             CX.event("context_compacted"), *CX.turn("two", "done", "c2")]
    rng = random.Random(14)
    for i in range(300):
        path = write_jsonl(tmp_path / f"f{i}.jsonl", _fuzzed(claude if i % 2 else codex, rng))
        try:
            s = load_session(path)
        except SessionFormatError:
            continue
        for scheme in ("uniform", "compaction", "microcompaction") if s.n_agent_steps else ():
            for p in positions(s, scheme, k=3):
                render_prefix(snapshot_at(s, p.step), window=2000, redact=False)
