"""Fixtures of the ANCHOR tests: a hand-made session with known events, the real corpus
sessions, and an oracle that re-derives each item's correct options from scratch
(test modules cannot import conftest under importlib, so helpers come as fixtures)."""
from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from contextecho.anchor.events import commands, file_edits
from contextecho.anchor.items import RecallItem
from contextecho.sessions import load_session
from contextecho.sessions.model import TEXT, TOOL_CALL, TOOL_RESULT, Entry
from contextecho.sessions.timeline import assemble

COMMANDS = ["ls", "git status", "pytest -q", "make build", "cat README.md", "git diff", "npm test"]
FAILING = {"git diff"}
EDITS = ["src/a.py", "src/b.py", "src/c.py", "docs/d.md", "src/a.py", "tests/e.py"]


def build(session_id: str = "synthetic-1"):
    entries, line, n_calls = [], 0, 0

    def add(role, kind, text, tool=None, cid=None):
        nonlocal line
        line += 1
        entries.append(Entry(role, kind, text, line, tool_name=tool, call_id=cid, message_id=f"m{line}"))

    add("user", TEXT, "Please fix the build and tidy the docs.")
    for k, cmd in enumerate(COMMANDS):
        cid = f"c{k}"
        add("assistant", TOOL_CALL, json.dumps({"command": cmd}), "Bash", cid)
        out = f"[error] Exit code 1\n{cmd}: failed" if cmd in FAILING else f"ran {cmd}"
        add("user", TOOL_RESULT, out, "Bash", cid)
        n_calls += 1
        if k < len(EDITS):
            eid = f"e{k}"
            add("assistant", TOOL_CALL, json.dumps({"file_path": EDITS[k], "old_string": "x",
                                                    "new_string": "y"}), "Edit", eid)
            add("user", TOOL_RESULT, f"The file {EDITS[k]} has been updated successfully.", "Edit", eid)
            add("assistant", TEXT, f"Edited {EDITS[k]}; next I check the result.")
            n_calls += 1
    add("assistant", TEXT, "Done: the build passes.")
    return assemble(path=Path(f"{session_id}.jsonl"), fmt="claude_code", session_id=session_id,
                    entries=entries, compactions=[], n_user_msgs=1, n_assistant_msgs=line,
                    n_tool_calls=n_calls, n_compactions=0, n_lines=line, record_types=Counter(),
                    skipped=[])


def correct_options(session, item: RecallItem) -> list[int]:
    """Indices of the options that are true answers, recomputed from scratch."""
    horizon = session.step_index[item.decision_step - 1]
    cmds = [c for c in commands(session) if c.entry_index <= horizon]
    if item.family == "temporal_order":
        first = {}
        for c in cmds:
            first.setdefault(c.text, c.entry_index)
        earliest = min(first[o] for o in item.options)
        return [k for k, o in enumerate(item.options) if first[o] == earliest]
    if item.family == "last_edit":
        edits = [e for e in file_edits(session) if e.entry_index <= horizon]
        latest = max(e.entry_index for e in edits)
        paths = {e.path for e in edits if e.entry_index == latest}
        return [k for k, o in enumerate(item.options) if o in paths]
    if item.family == "failed_command":
        failed = {c.text for c in cmds if c.failed and c.result_index is not None
                  and c.result_index <= horizon}
        return [k for k, o in enumerate(item.options) if o in failed]
    raise AssertionError(f"no oracle for family {item.family}")


def from_session(session, item: RecallItem) -> bool:
    """Every option is something this session did, at or before the decision step."""
    horizon = session.step_index[item.decision_step - 1]
    if item.family == "last_edit":
        seen = {e.path for e in file_edits(session) if e.entry_index <= horizon}
    else:
        seen = {c.text for c in commands(session) if c.entry_index <= horizon}
    return set(item.options) <= seen


@pytest.fixture(scope="session")
def synthetic():
    return SimpleNamespace(build=build, COMMANDS=COMMANDS, FAILING=FAILING, EDITS=EDITS)


@pytest.fixture(scope="session")
def oracle():
    return SimpleNamespace(correct_options=correct_options, from_session=from_session)


@pytest.fixture(scope="session")
def corpus_sessions(corpus_dir):
    """Every parsed session of the real corpus (MANIFEST rows whose format is not other)."""
    with open(corpus_dir / "MANIFEST.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["format"] != "other"]
    return [load_session(corpus_dir / r["file"]) for r in rows]
