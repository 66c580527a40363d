"""The ``reference`` protocol: the authors' ContextEcho harness, reproduced case by case.

``shared/reference/contextecho/PROTOCOL.md`` states every rule; the modules follow it:
:mod:`.texts` (instrument strings), :mod:`.transcript` (turn index, compaction lookup,
prefix rendering and window), :mod:`.filler`, :mod:`.requests` (messages, system
prompts, max_tokens), :mod:`.judge` (prompt read at run time, parsers), :mod:`.scorers`
(S1-S4), :mod:`.consolidation` (which e02 runs the panel consolidation reads) and
:mod:`.conformance` (checks against fixtures produced by the harness). The harness's
statistics are the ``harness_`` functions of :mod:`contextecho.stats` and its :mod:`~contextecho.stats.consolidation`.

    from contextecho.echo.reference import session_prefix, probe_request, filler_for
    prefix = session_prefix("session.jsonl", target_turn=1300).text
    real, filler = probe_request(prefix, "C01"), probe_request(filler_for(prefix), "C01")
"""
from .filler import filler_for, make_filler
from .judge import JudgePrompt, ReferenceVerdict, load_prompt, parse_verdict
from .requests import TargetRequest, probe_request, stressor_request
from .scorers import REFERENCE_SCORERS
from .transcript import ReferencePrefix, session_prefix

__all__ = ["filler_for", "make_filler", "JudgePrompt", "ReferenceVerdict", "load_prompt",
           "parse_verdict", "TargetRequest", "probe_request", "stressor_request",
           "REFERENCE_SCORERS", "ReferencePrefix", "session_prefix"]
