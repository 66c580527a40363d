"""Fixtures for the sessions tests: synthetic transcript builders and the real corpus.

Synthetic records are written here, from scratch; no real transcript text is in the
repository. The real corpus is read at run time from ``shared_dir()/corpus/real``.
"""
from __future__ import annotations

import csv
import itertools
import json
import os
from pathlib import Path

import pytest


_ids = itertools.count(1)


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_ids):012d}"


class CC:
    """Claude Code record builders (v2.x shape unless stated)."""

    @staticmethod
    def base(type_: str, **kw) -> dict:
        rec = {"parentUuid": None, "isSidechain": False, "userType": "external",
               "cwd": "/work/project", "sessionId": "sess-1", "version": "2.1.0",
               "gitBranch": "main", "type": type_, "uuid": _uuid(),
               "timestamp": f"2026-01-01T00:{next(_ids) % 60:02d}:00.000Z"}
        rec.update(kw)
        return rec

    @staticmethod
    def user(content, **kw) -> dict:
        return CC.base("user", message={"role": "user", "content": content}, **kw)

    @staticmethod
    def result(tool_id: str, text, is_error: bool = False, **kw) -> dict:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
        if is_error:
            block["is_error"] = True
        return CC.user([block], **kw)

    @staticmethod
    def assistant(msg_id: str, *blocks, **kw) -> dict:
        return CC.base("assistant", message={"id": msg_id, "type": "message", "role": "assistant",
                                             "model": "claude-x", "content": list(blocks)}, **kw)

    @staticmethod
    def text(t: str) -> dict:
        return {"type": "text", "text": t}

    @staticmethod
    def tool(tool_id: str, name: str = "Bash", **inp) -> dict:
        return {"type": "tool_use", "id": tool_id, "name": name, "input": inp or {"command": "ls"}}

    @staticmethod
    def thinking(t: str) -> dict:
        return {"type": "thinking", "thinking": t, "signature": "sig"}

    @staticmethod
    def boundary(trigger: str = "auto", pre_tokens: int = 150000) -> dict:
        return CC.base("system", subtype="compact_boundary", content="Conversation compacted",
                       compactMetadata={"trigger": trigger, "preTokens": pre_tokens})

    @staticmethod
    def microcompact(*tool_ids: str, pre_tokens: int = 60000, saved: int = 20000) -> dict:
        return CC.base("system", subtype="microcompact_boundary", content="Context microcompacted",
                       microcompactMetadata={"trigger": "auto", "preTokens": pre_tokens,
                                             "tokensSaved": saved, "compactedToolIds": list(tool_ids),
                                             "clearedAttachmentUUIDs": []})

    @staticmethod
    def summary_record(text: str) -> dict:
        return CC.user(text, isCompactSummary=True, isVisibleInTranscriptOnly=True)


class CX:
    """Codex CLI rollout record builders."""

    @staticmethod
    def rec(type_: str, payload: dict) -> dict:
        return {"timestamp": f"2026-01-01T00:{next(_ids) % 60:02d}:00.000Z", "type": type_,
                "payload": payload}

    @staticmethod
    def meta() -> dict:
        return CX.rec("session_meta", {"id": "cx-1", "cwd": "/work/p", "cli_version": "0.99.0",
                                       "originator": "codex_cli_rs"})

    @staticmethod
    def msg(role: str, text: str) -> dict:
        kind = "output_text" if role == "assistant" else "input_text"
        return CX.rec("response_item", {"type": "message", "role": role,
                                        "content": [{"type": kind, "text": text}]})

    @staticmethod
    def event(type_: str, **kw) -> dict:
        return CX.rec("event_msg", {"type": type_, **kw})

    @staticmethod
    def call(call_id: str, name: str = "exec_command", args: str = '{"cmd":"ls"}') -> dict:
        return CX.rec("response_item", {"type": "function_call", "name": name, "arguments": args,
                                        "call_id": call_id})

    @staticmethod
    def output(call_id: str, text: str, type_: str = "function_call_output") -> dict:
        return CX.rec("response_item", {"type": type_, "call_id": call_id, "output": text})

    @staticmethod
    def turn(user: str, reply: str, call_id: str) -> list[dict]:
        return [CX.event("user_message", message=user), CX.msg("user", user),
                CX.rec("turn_context", {"cwd": "/work/p", "model": "gpt-x"}),
                CX.rec("response_item", {"type": "reasoning", "summary": [], "content": None,
                                         "encrypted_content": "gAAAA"}),
                CX.call(call_id), CX.output(call_id, "file.txt"),
                CX.event("agent_message", message=reply), CX.msg("assistant", reply),
                CX.event("token_count", info=None)]


def write_jsonl(path: Path, records, *, raw_lines=(), trailing_newline: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records] + list(raw_lines)
    path.write_text("\n".join(lines) + ("\n" if trailing_newline else ""), encoding="utf-8")
    return path


@pytest.fixture
def cc():
    return CC


@pytest.fixture
def cx():
    return CX


@pytest.fixture
def write():
    return write_jsonl


@pytest.fixture
def basic_claude(tmp_path, cc):
    """Two user turns, a split response (text + two tool calls), a compaction, more work."""
    recs = [
        cc.user("first prompt"),
        cc.assistant("m1", cc.thinking("hmm")),
        cc.assistant("m1", cc.text("I'll look.")),
        cc.assistant("m1", cc.tool("t1", "Bash", command="ls")),
        cc.assistant("m1", cc.tool("t2", "Read", file_path="a.py")),
        cc.result("t1", "a.py"),
        cc.result("t2", [{"type": "text", "text": "print(1)"}]),
        cc.assistant("m2", cc.text("Done with part one.")),
        cc.boundary(),
        cc.summary_record("SUMMARY: the user asked for part one; it is done."),
        cc.user("second prompt"),
        cc.assistant("m3", cc.tool("t3", "Bash", command="pytest")),
        cc.result("t3", "1 passed"),
        cc.assistant("m4", cc.text("All green.")),
    ]
    return write_jsonl(tmp_path / "basic.jsonl", recs)


@pytest.fixture(scope="session")
def compactions_dir() -> Path:
    """The compaction-rich corpus (``shared/corpus/compactions``: microcompactions, glued
    lines, a mixed-id session) with its MANIFEST.csv."""
    from contextecho.engine.paths import shared_dir
    path = shared_dir() / "corpus" / "compactions"
    if not (path / "MANIFEST.csv").is_file():
        pytest.skip(f"compaction corpus not found at {path}")
    return path


@pytest.fixture(scope="session")
def manifest_rows(corpus_dir) -> list[dict]:
    with open(corpus_dir / "MANIFEST.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="session")
def corpus_sessions(corpus_dir, manifest_rows):
    """Every transcript of the corpus parsed once: {relative file: Session}."""
    from contextecho.sessions import load_session
    return {r["file"]: load_session(corpus_dir / r["file"], with_subagents=False)
            for r in manifest_rows if r["format"] != "other"}


def import_tree(claude: Path, dest: Path, capsys, files: dict[str, bytes]) -> tuple[int, Path, str, str]:
    """Lay ``files`` (paths relative to ``claude``) out as a Claude Code projects folder and run
    ``import-sessions`` on it into ``dest`` (no Codex folder): (exit status, dest, stdout, stderr)."""
    from contextecho.__main__ import main

    for rel, data in files.items():
        (claude / rel).parent.mkdir(parents=True, exist_ok=True)
        (claude / rel).write_bytes(data)
    rc = main(["import-sessions", "--claude-dir", str(claude), "--codex-dir", str(claude.parent / "no-codex"),
               "--dest", str(dest)])
    printed = capsys.readouterr()
    return rc, dest, printed.out, printed.err


def every_file(root: Path) -> list[str]:
    """Every file under ``root``, as sorted relative paths."""
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
