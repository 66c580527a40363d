"""Errors raised by the session readers: each names the file and, where known, the line.

Nothing deep inside a reader raises a bare ``KeyError`` or ``json.JSONDecodeError``;
readers turn those into a :class:`SessionFormatError` (whole file unusable) or a counted
:class:`~contextecho.sessions.model.Skip` in the session's parse report (one line
unusable).
"""
from __future__ import annotations

from pathlib import Path
from ..engine.usage import UsageError


class SessionError(Exception):
    """Base class for everything this subpackage raises on purpose."""


class SessionFormatError(UsageError, SessionError, ValueError):
    """A transcript file cannot be read as a session.

    ``line`` is 1-based; 0 means the problem concerns the file as a whole.
    """

    def __init__(self, path: str | Path, line: int, reason: str):
        self.path = str(path)
        self.line = int(line)
        self.reason = reason
        where = f"{self.path}:{self.line}" if self.line else self.path
        super().__init__(f"{where}: {reason}")


class StepOutOfRange(SessionError, IndexError):
    """A requested agent step lies outside ``1..n_agent_steps`` of the session."""

    def __init__(self, path: str | Path, step: int, n_steps: int):
        self.path, self.step, self.n_steps = str(path), step, n_steps
        if n_steps == 0:
            msg = f"{self.path}: session has no agent steps (requested step {step})"
        else:
            msg = f"{self.path}: step {step} is outside 1..{n_steps} (the session has {n_steps} agent steps)"
        super().__init__(msg)


class RedactionLeak(SessionError):
    """The verification pass found an original sensitive string in redacted output.

    The message names the classes of the survivors, never the strings themselves.
    """

    def __init__(self, classes: list[str], where: str = ""):
        self.classes = list(classes)
        kinds = ", ".join(sorted(set(self.classes)))
        super().__init__(f"redaction verification failed: {len(self.classes)} original string(s) "
                         f"of class {kinds} survive in {where or 'the output'}")
