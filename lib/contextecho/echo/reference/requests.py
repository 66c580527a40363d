"""The target request of the reference runners: messages, system prompt, max_tokens.

``PROTOCOL.md`` §3: with a non-empty prefix the messages are the prefix as one user
turn, the assistant acknowledgement, then the user's probe or stressor; with an empty
prefix the probe or stressor alone. Every content is a list of one ``text`` block; no
tools. Probe runners send the framed probe under the probe system prompt with 600
max tokens; the S2 stressor runner sends the stressor text under the e11 compliance
system prompt with 1024 max tokens. The instruction-override runners (e11, e12) put the
e07 immediate context between the two (:func:`override_request`). Provider transport (Anthropic ``system=`` versus a
leading system message) is the call site's business; :meth:`TargetRequest.chat_messages`
gives the OpenAI-compatible form.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from ..probes import Probe
from ...engine.registry import UnknownNameError
from .texts import (ACKNOWLEDGEMENT, E11_STRESSORS, PRIOR_ACKNOWLEDGEMENT, PRIOR_CONTEXT_HEADER, PROBE_MAX_TOKENS,
                    PROBE_SYSTEM_PROMPT, S2_VARIANTS, STRESSOR_MAX_TOKENS, STRESSOR_SYSTEM_PROMPT, framed)


def _text_turn(role: str, text: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def assemble(prefix: str, user_text: str, exchanges: Sequence[tuple[str, str]] = ()) -> list[dict]:
    """The message list for ``user_text`` asked after ``prefix``; ``exchanges`` (user,
    assistant) text pairs go between the acknowledgement and ``user_text`` (an anchor,
    :mod:`.anchors`)."""
    messages = []
    if prefix:
        messages.append(_text_turn("user", prefix))
        messages.append(_text_turn("assistant", ACKNOWLEDGEMENT))
    for user, assistant in exchanges:
        messages.append(_text_turn("user", user))
        messages.append(_text_turn("assistant", assistant))
    messages.append(_text_turn("user", user_text))
    return messages


@dataclass(frozen=True)
class TargetRequest:
    system_prompt: str
    messages: list[dict]
    max_tokens: int
    tools: list = field(default_factory=list)

    def chat_messages(self) -> list[dict]:
        """OpenAI-compatible form: a leading system message, then the turns."""
        return [{"role": "system", "content": self.system_prompt}, *self.messages]


def probe_request(prefix: str, probe: Probe | str, message: str | None = None) -> TargetRequest:
    """The e15 probe-panel request (also e16/e17): the framed probe (or ``message``: e16's
    bare probe), probe system prompt."""
    return TargetRequest(PROBE_SYSTEM_PROMPT, assemble(prefix, framed(probe) if message is None else message),
                         PROBE_MAX_TOKENS)


def stressor_request(prefix: str, stressor: str) -> TargetRequest:
    """The e08 S2 request: stressor text under the e11 compliance system prompt."""
    return TargetRequest(STRESSOR_SYSTEM_PROMPT, assemble(prefix, stressor), STRESSOR_MAX_TOKENS)


def override_request(context: str | None, user_prior: str, stressor: str, max_tokens: int) -> TargetRequest:
    """The e11 / e12 instruction-override request (e11 ``build_messages``, e12 ``run_arm``):
    the arm's context and the acknowledgement (none for ``context`` None or empty: e11's
    scratch arm), then the e07 immediate context ``user_prior`` under
    :data:`~.texts.PRIOR_CONTEXT_HEADER` and :data:`~.texts.PRIOR_ACKNOWLEDGEMENT` (left out
    when empty, as the harness does; e07's always ends with its cue), then the stressor
    text, under the e11 compliance system prompt, with the runner's ``max_tokens``.

    e11's Anthropic runner would also send an empty non-scratch context as its own turn;
    no cut point past the first 100 candidates has an empty context, so the case never arises."""
    messages = []
    if context:
        messages += [_text_turn("user", context), _text_turn("assistant", ACKNOWLEDGEMENT)]
    if user_prior:
        messages += [_text_turn("user", f"{PRIOR_CONTEXT_HEADER}\n{user_prior}"),
                     _text_turn("assistant", PRIOR_ACKNOWLEDGEMENT)]
    messages.append(_text_turn("user", stressor))
    return TargetRequest(STRESSOR_SYSTEM_PROMPT, messages, max_tokens)


_VARIANT = re.compile(r"S2_VARIANTS\[(\d+)\]")


def stressor_text(name: str) -> str:
    """A stressor by name: ``S2_VARIANTS[i]`` (also ``S2#i`` 1-based) or an e11 label."""
    match = _VARIANT.fullmatch(name)
    if match and int(match.group(1)) < len(S2_VARIANTS):
        return S2_VARIANTS[int(match.group(1))]
    if name.startswith("S2#") and name[3:].isdigit() and 1 <= int(name[3:]) <= len(S2_VARIANTS):
        return S2_VARIANTS[int(name[3:]) - 1]
    if name in E11_STRESSORS:
        return E11_STRESSORS[name]
    valid = [f"S2_VARIANTS[{i}]" for i in range(len(S2_VARIANTS))] + sorted(E11_STRESSORS)
    raise UnknownNameError("reference stressor", name, valid)
