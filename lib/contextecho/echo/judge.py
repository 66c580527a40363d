"""The LLM judge: blind requests, robust verdict parsing, invalid verdicts as data.

A judge request holds only the rubric (:mod:`.rubric`), the bare probe text and the
response — never the arm, position, session, framing or target — so it is blind by
construction, and its request key (hence its cache entry) changes with the judge model,
the rubric text, the probe or the response, and the protocol's key it is tagged with (never
sent), and with nothing else. Any LiteLLM model
string can judge; several judges can score the same responses (cross-judge audit).
The embedded model (``local/smollm2-135m``) can be a judge for plumbing tests, but it
is a poor one: its verdicts carry no scientific weight.

:func:`parse_verdict` accepts ``Score: 2``, ``2``, ``**2**``, ``score=3/3``,
``{"score": 2}`` and a verdict after some reasoning. Rules: labelled
scores (``score``/``rating``/``verdict``/``grade`` followed by a digit) win, the last
one counts; otherwise the text must hold exactly one distinct standalone digit 0–3
(``2/3`` counts as 2). No digit, a labelled digit outside 0–3, or disagreeing bare
digits is an *invalid* verdict with a reason — never a score.

Probability-weighted verdicts (:mod:`contextecho.engine.token_distribution`) read the scores'
distribution after :data:`SCORE_PREFILL` (the rubric's ``Score: <n>`` line), the
position :data:`SCORE_LABEL` marks in a generated verdict.
"""
from __future__ import annotations

import math
import re
from typing import Any, Mapping

from ..engine.model_request import ModelRequest
from ..engine.verdicts import DEFAULT_JUDGE_PARAMS, INVALID, OK
from .protocol import Verdict
from .rubric import RUBRIC, Rubric

SCORES: dict[str, float] = {"0": 0.0, "1": 1.0, "2": 2.0, "3": 3.0}  # answer token -> score
SCORE_PREFILL = "Score:"
SCORE_LABEL = re.compile(r"\bscore\s*:", re.IGNORECASE)

LABELLED = re.compile(r"\b(?:score|rating|verdict|grade)\b[^0-9a-z\n\-]{0,12}(-?\d+(?:\.\d+)?)(?:\s*/\s*3)?",
                      re.IGNORECASE)
BARE = re.compile(r"(?<![\w.\-/])([0-3])(?:\s*/\s*3)?(?!\w|\.\d|/\d)")


def _invalid(reason: str) -> Verdict:
    return Verdict(INVALID, math.nan, reason)


def parse_verdict(text: str | None) -> Verdict:
    """The 0–3 score in a judge's reply, or an explicit invalid verdict saying why."""
    if text is None or not str(text).strip():
        return _invalid("empty verdict")
    t = str(text).replace("*", "").replace("`", "")
    labelled = LABELLED.findall(t)
    if labelled:
        value = float(labelled[-1])
        if value not in (0, 1, 2, 3):
            return _invalid(f"labelled score {labelled[-1]} is outside 0-3")
        return Verdict(OK, value, "labelled")
    bare = set(BARE.findall(t))
    if len(bare) == 1:
        return Verdict(OK, float(bare.pop()), "bare digit")
    if not bare:
        return _invalid("no score 0-3 found")
    return _invalid(f"ambiguous: several scores {sorted(bare)}")


def judge_request(judge: str, probe: str, response: str, *, rubric: Rubric = RUBRIC,
                  params: Mapping[str, Any] = DEFAULT_JUDGE_PARAMS, tag: Mapping[str, str] | None = None
                  ) -> ModelRequest:
    """The blind judge call for one response (probe = the bare probe text; ``tag``: the
    protocol's key, part of the request key)."""
    return ModelRequest(judge, rubric.messages(probe, response or ""), dict(params), tag=dict(tag or {}))
