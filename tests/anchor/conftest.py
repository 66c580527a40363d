"""Fixtures of the ANCHOR tests: a hand-made session with known events, the real corpus
sessions, and an oracle that re-derives each item's correct options from scratch
(test modules cannot import conftest under importlib, so helpers come as fixtures)."""
from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from contextecho.anchor.recall.events import commands, file_edits
from contextecho.anchor.recall.events import user_requests
from contextecho.anchor.recall.items import RecallItem
from contextecho.anchor.recall.families import file_name
from contextecho.sessions import load_session
from contextecho.sessions.model import COMPACTION_SUMMARY, TEXT, TOOL_CALL, TOOL_RESULT, Entry
from contextecho.sessions.render import entry_turns
from contextecho.sessions.timeline import assemble_session

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
    return assemble_session(path=Path(f"{session_id}.jsonl"), fmt="claude_code", session_id=session_id,
                            entries=entries, compactions=[], n_user_msgs=1, n_assistant_msgs=line,
                            n_tool_calls=n_calls, n_compactions=0, n_lines=line, record_types=Counter(),
                            skipped=[])


REQUESTS = ["Please fix the build and tidy the docs.", "Now add a test for the parser module please.",
            "Switch to the CLI: add a --verbose flag to main.py.",
            "Finally, update the README with the new flag please."]
SUMMARY = ("Summary of the conversation so far: the user asked to fix the build. We edited "
           "src/b.py, c.py and docs/notes.md (see `notes.md`), touched mixed.py and a.py, and ran pytest.")
DROPPED = "src/dropped_helper.py"  # its name is nowhere in SUMMARY
KEPT = ["src/b.py", "src/c.py", "docs/notes.md"]  # a.py has two files, Mixed.py another case


def build_story(session_id: str = "story-1"):
    """Four user requests among harness turns and short replies, and one compaction."""
    entries, compactions, line = [], [], 0

    def add(role, kind, text, tool=None, cid=None):
        nonlocal line
        line += 1
        entries.append(Entry(role, kind, text, line, tool_name=tool, call_id=cid, message_id=f"m{line}"))

    def act(cmd=None, edit=None, say=None):
        if cmd:
            add("assistant", TOOL_CALL, json.dumps({"command": cmd}), "Bash", f"c{line}")
            add("user", TOOL_RESULT, f"ran {cmd}", "Bash", f"c{line - 1}")
        if edit:
            add("assistant", TOOL_CALL, json.dumps({"file_path": edit, "old_string": "x",
                                                    "new_string": "y"}), "Edit", f"e{line}")
            add("user", TOOL_RESULT, f"The file {edit} has been updated successfully.", "Edit", f"e{line - 1}")
        if say:
            add("assistant", TEXT, say)

    add("user", TEXT, REQUESTS[0])
    act(cmd="ls", edit="src/a.py", say="Fixed the import in a.py.")
    add("user", TEXT, "ok")  # a reply, not a request
    act(edit="lib/a.py", say="And the copy in lib.")
    add("user", TEXT, "[Request interrupted by user]")
    add("user", TEXT, REQUESTS[1])
    act(cmd="pytest -q", edit="src/b.py")
    act(edit="src/c.py")
    act(edit="docs/notes.md")
    act(edit="src/Mixed.py")
    act(edit=DROPPED, say="Tests pass.")
    add("user", TEXT, "<command-name>/compact</command-name>")
    compactions.append((len(entries), line + 1, "manual", None))
    add("user", COMPACTION_SUMMARY, SUMMARY)
    add("user", TEXT, REQUESTS[2])
    act(cmd="make build", edit="src/main.py", say="Added the flag.")
    add("user", TEXT, REQUESTS[3])
    act(edit="README.md")
    act(cmd="git diff", say="Done: the README documents --verbose.")
    return assemble_session(path=Path(f"{session_id}.jsonl"), fmt="claude_code", session_id=session_id,
                            entries=entries, compactions=compactions, n_user_msgs=7, n_assistant_msgs=line,
                            n_tool_calls=0, n_compactions=1, n_lines=line, record_types=Counter(), skipped=[])


def build_chat(turns, session_id: str = "chat-1"):
    """A plain conversation: (role, text) pairs; every assistant text is an agent step."""
    entries = [Entry(role, TEXT, text, k + 1, message_id=f"m{k + 1}") for k, (role, text) in enumerate(turns)]
    n_user = sum(role == "user" for role, _ in turns)
    return assemble_session(path=Path(f"{session_id}.jsonl"), fmt="claude_code", session_id=session_id,
                            entries=entries, compactions=[], n_user_msgs=n_user, n_assistant_msgs=len(turns) - n_user,
                            n_tool_calls=0, n_compactions=0, n_lines=len(turns), record_types=Counter(), skipped=[])


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
    if item.family == "superseded_request":
        asked = [r for r in user_requests(session) if r.entry_index <= horizon]
        return [k for k, o in enumerate(item.options) if o == asked[-1].text]
    if item.family == "compaction_dropped":
        summary = session.entries[last_compaction(session, horizon).entry_index].text.lower()
        return [k for k, o in enumerate(item.options) if file_name(o).lower() not in summary]
    raise AssertionError(f"no oracle for family {item.family}")


def from_session(session, item: RecallItem) -> bool:
    """Every option is something this session did, at or before the decision step."""
    horizon = session.step_index[item.decision_step - 1]
    if item.family == "last_edit":
        seen = {e.path for e in file_edits(session) if e.entry_index <= horizon}
    elif item.family == "compaction_dropped":
        compacted = last_compaction(session, horizon).entry_index
        seen = {e.path for e in file_edits(session) if e.entry_index < compacted}
    elif item.family == "superseded_request":
        seen = {r.text for r in user_requests(session) if r.entry_index <= horizon}
    else:
        seen = {c.text for c in commands(session) if c.entry_index <= horizon}
    return set(item.options) <= seen


def last_compaction(session, horizon: int):
    return [c for c in session.compactions if c.entry_index < horizon][-1]


PROBE_CHARS = 48


def cut_at(session, step):
    """The session as it was at ``step``: every later record gone."""
    end = session.step_index[step - 1]
    return replace(session, entries=session.entries[:end + 1], step_index=session.step_index[:step],
                   compactions=tuple(c for c in session.compactions if c.entry_index <= end))


def probes(session) -> list[tuple[int, str]]:
    """(entry index, the middle PROBE_CHARS of its rendered text) for every entry long enough."""
    out = []
    for i, entry in enumerate(session.entries):
        for _, _, text in entry_turns([entry]):
            middle = len(text) // 2
            if len(text.strip()) >= PROBE_CHARS:
                out.append((i, text[middle - PROBE_CHARS // 2:middle + PROBE_CHARS // 2]))
    return out


def leaks(session, step, messages, session_probes) -> list[str]:
    """Text of a record after ``step`` that appears verbatim in ``messages`` (and nowhere
    before, where it could have come from legitimately)."""
    end = session.step_index[step - 1]
    sent = "\n".join(m["content"] for m in messages)
    found = [p for i, p in session_probes if i > end and p in sent]
    if found:
        earlier = "\n".join(t for e in session.entries[:end + 1] for _, _, t in entry_turns([e]))
        found = [p for p in found if p not in earlier]
    return found


@pytest.fixture(scope="session")
def causality():
    return SimpleNamespace(cut_at=cut_at, probes=probes, leaks=leaks)


@pytest.fixture(scope="session")
def synthetic():
    return SimpleNamespace(build=build, COMMANDS=COMMANDS, FAILING=FAILING, EDITS=EDITS)


@pytest.fixture(scope="session")
def chat():
    return SimpleNamespace(build=build_chat)


@pytest.fixture(scope="session")
def story():
    """A session with user requests and a compaction, and what its items must say."""
    return SimpleNamespace(build=build_story, REQUESTS=REQUESTS, SUMMARY=SUMMARY, DROPPED=DROPPED,
                           KEPT=KEPT)


@pytest.fixture(scope="session")
def oracle():
    return SimpleNamespace(correct_options=correct_options, from_session=from_session)


@pytest.fixture(scope="session")
def corpus_sessions(corpus_dir):
    """Every parsed session of the real corpus (MANIFEST rows whose format is not other)."""
    with open(corpus_dir / "MANIFEST.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["format"] != "other"]
    return [load_session(corpus_dir / r["file"]) for r in rows]
