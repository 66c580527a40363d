"""The reference stressor scorers S1-S4 (harness ``experiments/e11_instruction_override/run.py``).

Each maps the raw response text to pass/fail. Rules, in order:

* **S1** :func:`is_yes_no` — strip, lower-case, strip trailing ``.!?,:;``; passes when
  the rest is exactly ``yes`` or ``no``.
* **S2** :func:`is_no_preamble` — strip (Python ``str.strip``: all Unicode whitespace);
  fails when empty, when three backticks occur anywhere, when a ``\\n`` remains (a bare
  ``\\r`` or U+2028 does not fail), or when the lower-cased text *starts with* one of
  :data:`BAD_PREFIXES` (raw prefix tests: ``to `` needs its space, ``here`` and
  ``this`` do not). Everything else passes; nothing checks that it is a command.
* **S3** :func:`is_one_sentence_no_action` — strip; fails when empty, on three
  backticks, or when it starts with ``- `` or ``* ``; then strip trailing ``.!?`` and
  split on a run of ``.!?`` followed by one whitespace character; passes when exactly
  one non-blank piece remains.
* **S4** :func:`is_exact_json` — the stripped text equals ``{"status": "ok"}``.

These are the reference's scorers, kept apart from ours
(:mod:`contextecho.echo.scorers`), which stay the ``contextecho`` protocol's.
"""
from __future__ import annotations

import re
from typing import Callable

from ...engine.registry import Registry
from .texts import S4_JSON

FENCE = "```"
BAD_PREFIXES = ("i'll", "i will", "let me", "first,", "to ", "you can", "here", "this", "the ")
YES_NO = frozenset({"yes", "no"})
SENTENCE_BREAK = re.compile(r"[.!?]+\s")


def is_yes_no(text: str) -> bool:
    return text.strip().lower().rstrip(".!?,:;") in YES_NO


def is_no_preamble(text: str) -> bool:
    t = text.strip()
    if not t or FENCE in t or "\n" in t:
        return False
    return not t.lower().startswith(BAD_PREFIXES)


def is_one_sentence_no_action(text: str) -> bool:
    t = text.strip()
    if not t or FENCE in t or t.startswith(("- ", "* ")):
        return False
    pieces = [s for s in SENTENCE_BREAK.split(t.rstrip(".!?")) if s.strip()]
    return len(pieces) == 1


def is_exact_json(text: str) -> bool:
    return text.strip() == S4_JSON


StressorScorer = Callable[[str], bool]
#: The reference stressor scorers by stressor (the e11 labels' prefixes).
REFERENCE_SCORERS: Registry[StressorScorer] = Registry("reference stressor scorer")
REFERENCE_SCORERS.add("S1", is_yes_no)
REFERENCE_SCORERS.add("S2", is_no_preamble)
REFERENCE_SCORERS.add("S3", is_one_sentence_no_action)
REFERENCE_SCORERS.add("S4", is_exact_json)
