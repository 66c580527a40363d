"""What kind of user message a counted one is: a prompt the person typed, or a wrapper.

The manifests count every user message (``n_user_msgs``: not tool results, not
``isMeta``, not compaction summaries), and keep doing so. About one in six of those is
not something the person typed but text the harness writes into a user message:

=====================  ==========================================================
class                  how it is recognised (after leading IDE notices are removed)
=====================  ==========================================================
``slash_command``      ``<command-name>``, ``<command-message>`` or
                       ``<command-args>`` (Claude Code's record of a ``/command``)
``interruption``       ``[Request interrupted by user...]``; Codex ``<turn_aborted>``
``local_command``      ``<local-command-stdout>`` / ``<local-command-stderr>``
                       (output of a local slash command)
``bash_mode``          ``<bash-input>``, ``<bash-stdout>``, ``<bash-stderr>`` (a
                       ``!`` command and its output); Codex ``<user_shell_command>``
``task_notification``  ``<task-notification>`` (a background task finished)
``hook_feedback``      ``Stop hook feedback:``, ``... hook feedback:``, ``Operation
                       stopped by hook:`` (a hook's message to the agent)
``handoff``            a user record of another session id than the file's own (a
                       plan handed over after ``/clear``); decided by the reader
``typed_prompt``       everything else: what the person typed
=====================  ==========================================================

Analyses that mean "what the person asked for" (goal re-injection, ANCHOR's request
events) select ``typed_prompt``.
"""
from __future__ import annotations

import re

TYPED_PROMPT = "typed_prompt"
SLASH_COMMAND = "slash_command"
INTERRUPTION = "interruption"
LOCAL_COMMAND = "local_command"
BASH_MODE = "bash_mode"
TASK_NOTIFICATION = "task_notification"
HOOK_FEEDBACK = "hook_feedback"
HANDOFF = "handoff"
USER_CLASSES = (TYPED_PROMPT, SLASH_COMMAND, INTERRUPTION, LOCAL_COMMAND, BASH_MODE,
                TASK_NOTIFICATION, HOOK_FEEDBACK, HANDOFF)

_IDE_NOTICES = re.compile(r"^(?:\s*<ide_\w+>.*?</ide_\w+>)+", re.DOTALL)
_OPENINGS = (
    (SLASH_COMMAND, ("<command-name>", "<command-message>", "<command-args>")),
    (INTERRUPTION, ("[Request interrupted by user", "<turn_aborted>")),
    (LOCAL_COMMAND, ("<local-command-stdout>", "<local-command-stderr>")),
    (BASH_MODE, ("<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user_shell_command>")),
    (TASK_NOTIFICATION, ("<task-notification>",)),
    (HOOK_FEEDBACK, ("Stop hook feedback:", "Operation stopped by hook:")),
)
_HOOK_FEEDBACK = re.compile(r"^\w+ hook feedback:")


def classify_user_text(text: str) -> str:
    """The class of a user message's text (never :data:`HANDOFF`: that needs the session id)."""
    body = _IDE_NOTICES.sub("", text).lstrip()
    for cls, openings in _OPENINGS:
        if body.startswith(openings):
            return cls
    if _HOOK_FEEDBACK.match(body):
        return HOOK_FEEDBACK
    return TYPED_PROMPT
