"""The user's requests in a session, as typed events (:mod:`.events`).

A *request* is a prompt the person typed (a user message of class ``typed_prompt``: not a
tool result, not harness or compaction text, not a slash-command wrapper, interruption,
local-command or bash-mode echo, task notification or hand-off from another session —
see :mod:`contextecho.sessions.user_classes`) that asks for something: what harness
markup is left (a leading ``<tag>``, an interruption notice, hook feedback) is no request; IDE notices around a typed prompt
are stripped (Claude Code ``<ide_...>`` blocks, Codex's "My request for Codex:"
wrapper), and an expanded spec-kit command counts by its user-input block. What is left
must hold :data:`MIN_REQUEST_CHARS` characters: "ok", "C" or "yes" answer, they do not
ask. Its step is the first agent step after it, the agent's first act on it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from contextecho.sessions import Session
from contextecho.sessions.user_classes import TYPED_PROMPT

from .event_fields import display, next_step_after

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
