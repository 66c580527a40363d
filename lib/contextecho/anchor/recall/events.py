"""What happened in a session, as typed events: commands run, files edited, requests made.

Recall questions are built from these, never from free text, so that every option is
something the session really did. Extraction is pure and deterministic. Every event has
the agent step at which it is acted on (the first after its record: :func:`next_step_after`)
and the text it is shown by as an option (:func:`display`: whitespace collapsed, cut to
:data:`MAX_CHARS`).

- A *command* is a shell tool call (Claude Code ``Bash``; Codex ``shell``,
  ``shell_command``, ``exec_command``). Its display text is the command line. Its outcome
  comes from the paired tool result (same ``call_id``): ``failed`` when the result is
  marked ``[error]`` or reports a non-zero exit code, ``ok`` when it reports neither,
  ``None`` with no result.
- An *edit* is a file-writing tool call (``Edit``, ``Write``, ``MultiEdit``,
  ``NotebookEdit``; Codex ``apply_patch``, also when run through a shell call), one event
  per file it touched; an edit whose result failed edited nothing and is left out.
- A *request* is a prompt the person typed (a user message of class ``typed_prompt``: not
  a tool result, not harness or compaction text, not a slash-command wrapper,
  interruption, local-command or bash-mode echo, task notification or hand-off from
  another session — see :mod:`contextecho.sessions.user_classes`) that asks for
  something: what harness markup is left (a leading ``<tag>``, an interruption notice,
  hook feedback) is no request; IDE notices around a typed prompt are stripped (Claude
  Code ``<ide_...>`` blocks, Codex's "My request for Codex:" wrapper), and an expanded
  spec-kit command counts by its user-input block. What is left must hold
  :data:`MIN_REQUEST_CHARS` characters: "ok", "C" or "yes" answer, they do not ask. Its
  step is the first agent step after it, the agent's first act on it.
"""
from __future__ import annotations

import json
import re
import shlex
from bisect import bisect_right
from dataclasses import dataclass

from contextecho.sessions.model import Session, TOOL_CALL, TOOL_RESULT
from contextecho.sessions.user_classes import TYPED_PROMPT

MAX_CHARS = 160
SHELL_TOOLS = frozenset({"Bash", "shell", "shell_command", "exec_command"})
EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add) File: (.+?)\s*$", re.MULTILINE)
EXIT_CODE = re.compile(r"(?:^Exit code:|Process exited with code|\"exit_code\"\s*:)\s*(-?\d+)",
                       re.MULTILINE)


def next_step_after(session: Session, entry_index: int) -> int | None:
    """The first agent step whose entry comes after ``entry_index``; None if none does."""
    k = bisect_right(session.step_index, entry_index)
    return k + 1 if k < len(session.step_index) else None


def display(text: str) -> str:
    """``text`` as an option shows it: whitespace collapsed, cut to :data:`MAX_CHARS`."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


@dataclass(frozen=True)
class Command:
    step: int
    entry_index: int  # of the tool call
    text: str  # display text
    result_index: int | None  # entry index of the paired result
    failed: bool | None  # None: no result seen


@dataclass(frozen=True)
class FileEdit:
    step: int
    entry_index: int
    path: str
    tool: str


def _args(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _argv(args: dict | None) -> list[str] | str | None:
    if args is None:
        return None
    value = args.get("command", args.get("cmd"))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[0] in ("bash", "sh", "zsh") and value[1] in ("-lc", "-c"):
            return value[2]
        return value
    return value if isinstance(value, str) else None


def failed(result_text: str) -> bool:
    """True when a tool result says its call failed: ``[error]`` or a non-zero exit code."""
    if result_text.startswith("[error]"):
        return True
    m = EXIT_CODE.search(result_text[:2000])
    return bool(m) and int(m.group(1)) != 0


def _results(session: Session) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, e in enumerate(session.entries):
        if e.kind == TOOL_RESULT and e.call_id and e.call_id not in out:
            out[e.call_id] = i
    return out


def commands(session: Session) -> tuple[Command, ...]:
    """Every shell command of the main timeline, in order."""
    results = _results(session)
    out = []
    for i, e in enumerate(session.entries):
        if e.kind != TOOL_CALL or e.step is None or e.tool_name not in SHELL_TOOLS:
            continue
        argv = _argv(_args(e.text))
        if argv is None:
            continue
        line = argv if isinstance(argv, str) else shlex.join(argv)
        if line.lstrip().startswith("apply_patch"):
            continue  # an edit, not a command
        r = results.get(e.call_id) if e.call_id else None
        out.append(Command(e.step, i, display(line), r,
                           None if r is None else failed(session.entries[r].text)))
    return tuple(out)


def _edited_paths(tool: str, text: str) -> list[str]:
    if tool in EDIT_TOOLS:
        path = (_args(text) or {}).get(EDIT_TOOLS[tool])
        return [path] if isinstance(path, str) and path else []
    if tool == "apply_patch":
        return PATCH_FILE.findall(text)
    if tool in SHELL_TOOLS:
        argv = _argv(_args(text))
        line = argv if isinstance(argv, str) else shlex.join(argv) if argv else ""
        return PATCH_FILE.findall("\n".join(argv) if isinstance(argv, list) else line) \
            if line.lstrip().startswith("apply_patch") else []
    return []


def file_edits(session: Session) -> tuple[FileEdit, ...]:
    """Every successful file edit of the main timeline, one event per file, in order."""
    results = _results(session)
    out = []
    for i, e in enumerate(session.entries):
        if e.kind != TOOL_CALL or e.step is None or not e.tool_name:
            continue
        paths = _edited_paths(e.tool_name, e.text)
        r = results.get(e.call_id) if e.call_id else None
        if not paths or (r is not None and failed(session.entries[r].text)):
            continue
        seen = set()
        for p in paths:
            if p not in seen:
                seen.add(p)
                out.append(FileEdit(e.step, i, p, e.tool_name))
    return tuple(out)


MIN_REQUEST_CHARS = 20
HARNESS_OPENINGS = ("[Request interrupted", "Stop hook feedback", "Caveat: ")
HARNESS_TAG = re.compile(r"^<[a-z][\w-]*[ >]")  # <command-name>, <local-command-stdout>, ...
IDE_NOTICE = re.compile(r"<ide_\w+>.*?</ide_\w+>", re.DOTALL)
CODEX_IDE_REQUEST = "## My request for Codex:"
SPECKIT_INPUT = re.compile(r"^\s*## User Input\s*```text\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class UserRequest:
    step: int  # the first agent step after the request
    entry_index: int
    text: str  # display text


def request_text(typed: str) -> str | None:
    """What a user turn asks for, or None when it is harness text or too short to ask."""
    text = IDE_NOTICE.sub("", typed).strip()
    if CODEX_IDE_REQUEST in text:
        text = text.split(CODEX_IDE_REQUEST, 1)[1]
    speckit = SPECKIT_INPUT.match(text)
    if speckit:
        text = speckit.group(1)
    text = " ".join(text.split())
    if text.startswith(HARNESS_OPENINGS) or HARNESS_TAG.match(text) or len(text) < MIN_REQUEST_CHARS:
        return None
    return text


def user_requests(session: Session) -> tuple[UserRequest, ...]:
    """Every request of the main timeline that the agent acted on, in order."""
    out = []
    for i, e in enumerate(session.entries):
        if e.user_class != TYPED_PROMPT or e.meta:
            continue
        text, step = request_text(e.text), next_step_after(session, i)
        if text is not None and step is not None:
            out.append(UserRequest(step, i, display(text)))
    return tuple(out)
