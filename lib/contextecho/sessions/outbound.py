"""What a judge is shown leaves the machine redacted.

A target's prefix is redacted before it is sent to a model that is not in-process
(:mod:`contextecho.sessions.redaction`), but an in-process target (the embedded model, a
local server counted as local by the protocol) is given the session unredacted, and its
answer may quote it: a path, a name, a key. That answer is then shown to the judge. When the
judge is not in-process, :class:`JudgeInputs` redacts the answer first, with one redactor per
session that has first read (``discover``) the texts the target was shown, so a string it
quotes is replaced even where no rule would recognise it out of its context (a person's name
from a ``git log`` line), with the same placeholder the session's other texts get. An
in-process judge sees the answer as it is (nothing leaves the machine).

The judge's request key holds the text it was shown, so a hosted judge's verdicts are keyed
by the redacted answer; the stored answer (the row's ``response``) is unchanged.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable

from ..engine.llm import is_in_process
from .redaction import Redactor


class JudgeInputs:
    """Answers as each judge is shown them (module doc); one per batch of cells."""

    def __init__(self, redact: bool = True) -> None:
        self.redact = redact  # False: shown as it is (a replay that never leaves the process)
        self._redactors: dict[str, Redactor] = {}
        self._read: set[tuple[str, str]] = set()

    def text(self, response: str, judge: str, session: str = "", context: Iterable[str] = ()) -> str:
        """``response`` as ``judge`` is shown it: unchanged for an in-process judge; else
        redacted by ``session``'s redactor after it has read ``context`` (the texts the target
        was shown; each distinct one read once)."""
        if not self.redact or is_in_process(judge) or not response:
            return response
        redactor = self._redactors.setdefault(session, Redactor())
        for text in context:
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            if text and (session, digest) not in self._read:
                self._read.add((session, digest))
                redactor.discover(text)
        return redactor.redact(response)


def shown_texts(messages: Iterable[dict]) -> list[str]:
    """The text of each message (string content, or the text parts of a list)."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return out
