"""Fixtures for the instruments tests: small synthetic sessions and the real corpus.

Synthetic Claude Code transcripts are written from scratch here; the real corpus is read
at run time from ``shared_dir()/corpus/real`` (skipped when absent, failed under CI=true).
"""
from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest

from contextecho.engine.paths import shared_dir

_ids = itertools.count(1)


def _rec(type_: str, session_id: str, **kw) -> dict:
    n = next(_ids)
    rec = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work/project",
           "sessionId": session_id, "version": "2.1.0", "gitBranch": "main", "type": type_,
           "uuid": f"00000000-0000-4000-8000-{n:012d}",
           "timestamp": f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"}
    rec.update(kw)
    return rec


def claude_session(path: Path, session_id: str, goal: str, n_rounds: int, seed_text: str) -> Path:
    """A transcript: the goal prompt, then rounds of text + tool call + result + reply."""
    recs = [_rec("user", session_id, message={"role": "user", "content": goal})]
    for i in range(n_rounds):
        mid = f"m{session_id}{i}"
        tool = f"t{session_id}{i}"
        recs += [
            _rec("assistant", session_id, message={
                "id": mid, "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "text", "text": f"Step {i}: I will inspect {seed_text} module {i}."}]}),
            _rec("assistant", session_id, message={
                "id": mid, "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "tool_use", "id": tool, "name": "Bash",
                             "input": {"command": f"grep -n {seed_text}_{i} src/*.py"}}]}),
            _rec("user", session_id, message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool,
                 "content": f"src/{seed_text}.py:{i}: def {seed_text}_{i}(): pass  # " + "x" * (40 + 17 * i)}]}),
            _rec("assistant", session_id, message={
                "id": mid + "b", "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "text", "text": f"Found it; {seed_text}_{i} needs a fix. " * (1 + i % 3)}]}),
        ]
        if i % 2 == 1:
            recs.append(_rec("user", session_id, message={"role": "user",
                                                           "content": f"Good, continue with part {i + 1}."}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def sessions(tmp_path_factory):
    """Three small synthetic sessions (different content and lengths)."""
    from contextecho.sessions import load_session

    root = tmp_path_factory.mktemp("sessions")
    specs = [("alpha", "Add a --verbose flag to the CLI in cli.py.", 12, "parser"),
             ("beta", "Fix the flaky test in tests/test_io.py.", 9, "reader"),
             ("gamma", "Write a migration that adds an index on users.email.", 15, "schema")]
    return [load_session(claude_session(root / f"{sid}.jsonl", sid, goal, n, word))
            for sid, goal, n, word in specs]


@pytest.fixture(scope="session")
def session(sessions):
    return sessions[0]


@pytest.fixture(scope="session")
def corpus_sessions(corpus_dir):
    """Every transcript of the real corpus, parsed once: {relative file: Session}."""
    from contextecho.sessions import load_session

    path = corpus_dir
    with open(path / "MANIFEST.csv", newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["format"] != "other"]
    return {r["file"]: load_session(path / r["file"], with_subagents=False) for r in rows}


@pytest.fixture(scope="session")
def seed_text(missing_shared_data):
    """The ContextEcho method text (the specification the pinned texts are checked against)."""
    path = shared_dir() / "seeds" / "000_1aca32d8f65c103e.txt"
    if not path.is_file():  # reference material beside the checkout, not part of it
        missing_shared_data(f"seed text not found at {path}")
    return path.read_text(encoding="utf-8")
