"""Reading a judge's HELD/DEVIATED reply to one axis question (:mod:`.rubric`) as a verdict.

:func:`parse_axis_verdict` rules, in order: labelled verdicts (``Verdict: HELD``,
``answer: yes``, ``{"verdict": "DEVIATED"}``, ``"held": false``) decide, and disagreeing
ones are contradictory; else a last line that is only a verdict; else a leading verdict
(``"Yes, it held."``) unless the rest says the opposite; else the one verdict word of
the prose (``held`` / ``deviat…``). Negated, echoed (``HELD/DEVIATED``), missing or
mixed verdicts, and NOT APPLICABLE, are :data:`INVALID` with a reason — never a score.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from contextecho.engine.verdicts import INVALID

HELD, DEVIATED = "held", "deviated"
NA = "not applicable"
_TOKEN = r"(not[ _]applicable|n/?a|held|holds|deviated|deviates|yes|no)"
_MEANING = {"held": HELD, "holds": HELD, "yes": HELD, "deviated": DEVIATED, "deviates": DEVIATED,
            "no": DEVIATED}
_LABELLED = re.compile(r"\b(?:verdict|answer|label|judge?ment|decision|result)\b\s*(?:is\s*)?"
                       r"[:=\-\u2013\u2014]?\s*[\[(]?" + _TOKEN + r"\b"
                       r"(\s*(?:/|\||,|-|\u2013|\u2014|\bor\b|\band\b)\s*(?:verdict\s*[:=]\s*)?" + _TOKEN + r"\b(?!\s*[:=]))?"
                       r"(?![ \t]*[a-z0-9])")  # "Result: no deviation" is prose, not a verdict
_KEY_VALUE = re.compile(r"\b(held|deviated)\b\s*[:=]\s*(yes|no|true|false)\b")
_LONE = re.compile(r"^\W*" + _TOKEN + r"\W*$")
_LEADING = re.compile(r"^\W*" + _TOKEN + r"(?=\s*(?:[.,:;!)\u2013\u2014-]|\n|$))")
_WORD = re.compile(r"\b(held|deviat\w*)\b")
_NEGATION = re.compile(r"(?:\b(?:not|never|no|without|nor)|n't)\s+(?:\w+\s+){0,2}$")


@dataclass(frozen=True)
class AxisVerdict:
    status: str  # held | deviated | invalid (error records come from failed calls)
    reason: str

    @property
    def valid(self) -> bool:
        return self.status in (HELD, DEVIATED)


def _meaning(token: str) -> str:
    return _MEANING.get(token, NA)


def _decided(meaning: str, how: str) -> AxisVerdict:
    if meaning == NA:
        return AxisVerdict(INVALID, "judge: not applicable")
    return AxisVerdict(meaning, how)


def _mentions(text: str) -> list[tuple[str, bool]]:
    """(meaning, negated) of every ``held`` / ``deviat…`` word in prose."""
    out = []
    for m in _WORD.finditer(text):
        negated = bool(_NEGATION.search(text[max(0, m.start() - 40):m.start()]))
        out.append((HELD if m.group(1) == "held" else DEVIATED, negated))
    return out


def parse_axis_verdict(text: str | None) -> AxisVerdict:
    """HELD or DEVIATED from a judge's reply, or an explicit invalid verdict saying why."""
    if text is None or not str(text).strip():
        return AxisVerdict(INVALID, "empty verdict")
    t = re.sub(r"[*`\"']", "", str(text)).lower().strip()
    if not t:
        return AxisVerdict(INVALID, "empty verdict")
    labelled = []
    for m in _LABELLED.finditer(t):
        if m.group(2):
            return AxisVerdict(INVALID, f"both verdicts named: {m.group(0).strip()!r}")
        labelled.append(_meaning(m.group(1)))
    for key, value in _KEY_VALUE.findall(t):
        labelled.append(HELD if (key == "held") == (value in ("yes", "true")) else DEVIATED)
    if labelled:
        if len(set(labelled)) > 1:
            return AxisVerdict(INVALID, f"contradictory verdicts: {sorted(set(labelled))}")
        return _decided(labelled[0], "labelled")
    lines = [line for line in t.splitlines() if line.strip()]
    lone = _LONE.match(lines[-1])
    if lone:
        return _decided(_meaning(lone.group(1)), "final line")
    lead = _LEADING.match(t)
    if lead:
        meaning = _meaning(lead.group(1))
        implied = {m if not neg else ({HELD: DEVIATED, DEVIATED: HELD}[m])
                   for m, neg in _mentions(t[lead.end():])}
        if implied - {meaning}:
            return AxisVerdict(INVALID, "contradictory: the text after the verdict says otherwise")
        return _decided(meaning, "leading")
    mentions = _mentions(t)
    if any(neg for _, neg in mentions):
        return AxisVerdict(INVALID, "negated verdict word: cannot tell which verdict")
    found = {m for m, _ in mentions}
    if len(found) == 1:
        return AxisVerdict(found.pop(), "verdict word")
    return AxisVerdict(INVALID, "ambiguous: both held and deviated" if found else "no verdict found")
