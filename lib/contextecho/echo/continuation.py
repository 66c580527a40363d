"""The tool-call continuation (F5): at cutpoints of a real session, the next tool call under four prefixes.

At each cutpoint (an assistant turn with exactly one tool call, chosen by the harness's rule,
:func:`contextecho.echo.reference.continuation.select_cutpoints`) the target is asked for
its next single tool call under four arms, each ending on the same final user turn (the
immediate context: the last user instruction, assistant reasoning and tool result, then
"Propose your next single tool call."):

==============  ==========================================================================
arm             prefix before the final user turn
==============  ==========================================================================
``scratch``     none: the final user turn alone
``recent3K``    the session's last 3,000 characters before the cut, rendered as
                ``--- USER ---`` / ``--- ASSISTANT ---`` blocks, then the acknowledgement
``filler3K``    the e07 filler template at the same length, then the acknowledgement
``gpt5_3K``     a GPT-flavoured real prefix from another task: the tail of a Codex CLI
                session rendered the same way (:func:`~contextecho.echo.reference.
                continuation.codex_records`; the harness's own GPT-5 session is synthetic
                and not released), then the acknowledgement
==============  ==========================================================================

The call is scored against the call the session really made: M1 = the tool name matches,
M2 = Jaccard similarity of the flattened arguments where it does
(:func:`~contextecho.echo.reference.continuation.score_call`).

Each protocol (the notebook's ``protocol``) asks it by its own :class:`ContinuationRules`
(:attr:`~contextecho.echo.protocol.Protocol.continuation`: :data:`REFERENCE`, :data:`CONTEXTECHO`):

* ``reference``: the harness as it ran. The prefix ends at the ground-truth call's own line,
  so it often holds the text block of the same API response that announces that call
  (Claude Code writes one line per content block; :attr:`Cut.announced` says where); the
  filler matches ``len(recent3K)`` on the Anthropic path and is 3,000 characters on the
  OpenAI-compatible path; the GPT prefix is the same 3,000-character text at every cut.
  Requests per provider path: Anthropic gets text blocks, the system prompt, the tools and
  ``max_tokens`` (no temperature, no ``tool_choice``); every other target (the embedded
  model and servers included) the OpenAI-compatible form with ``tool_choice`` ``any``
  (Mistral) or ``required`` and temperature 0. A call whose arguments are JSON but not an
  object loses its runner's cut, as the harness's runner raises there (scratch and recent3K
  share one runner).
* ``contextecho`` (ours): the prefix ends before the ground-truth call's API response (every
  line of the same ``message.id`` is left out), so no arm is shown the announcement of the
  call it is asked for; the filler and the GPT prefix match ``len(recent3K)`` at each cut
  for every target; the request is one form for every provider (plain strings, ``tool_choice``
  ``auto``: a model may answer in prose, which is attrition), at the run's temperature.
  Arguments that are not an object score M2 = 0 when the tool matches.

Strata: the harness has no task labels (the paper's same-task / cross-task strata came from
a script that is not released). Ours: the task kind of a text (:func:`task_kind`, keyword
rules in :data:`TASK_KINDS`) of the cut's last user instruction against that of the GPT
prefix's last user instruction; equal kinds are ``same_task``, others ``cross_task``.

Texts sent to a model that is not in-process are redacted with one redactor per session
(:mod:`contextecho.sessions.redaction`), the ground-truth arguments with the same one, so a
placeholder in a call can match the placeholder in the truth.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.model_request import ModelRequest
from ..engine.record import EMPTY_RESPONSE, NO_CONTENT, CallRecord
from ..sessions.redaction import Redactor
from .reference import continuation as e07
from .reference.filler import make_filler
from .reference.providers import ANTHROPIC, MISTRAL, harness_provider
from .reference.texts import ACKNOWLEDGEMENT

ARMS = ("scratch", "recent3K", "filler3K", "gpt5_3K")
#: The contrasts ``A − B`` of M2, the primary first (the paper's F5).
CONTRASTS = (("recent3K", "gpt5_3K"), ("recent3K", "filler3K"), ("recent3K", "scratch"))
#: The harness's runner of each arm: arms of one runner share its metrics file, so a cut one
#: of them raises at is lost for both.
RUNNER = {"scratch": "run_continuation", "recent3K": "run_continuation", "filler3K": "run_clean_control",
          "gpt5_3K": "run_gpt5_arm"}
SAME_TASK, CROSS_TASK = "same_task", "cross_task"
#: Error types of an answer without text or call: an answer, not a failure, here.
EMPTY_ANSWERS = (EMPTY_RESPONSE, NO_CONTENT)

#: Task kinds by keyword, first match wins (ours: the harness has no task labels).
TASK_KINDS: tuple[tuple[str, str], ...] = (
    ("debug", r"\b(fix|bug|error|fail\w*|broken|crash\w*|traceback|exception|debug\w*|issue)\b"),
    ("test", r"\b(tests?|pytest|spec|coverage|assert\w*)\b"),
    ("refactor", r"\b(refactor\w*|rename\w*|clean\s*up|simplif\w*|reorgani[sz]\w*|move)\b"),
    ("feature", r"\b(add|implement\w*|create|build|support|introduce|new)\b"),
    ("docs", r"\b(readme|docs?|documentation|comment\w*|changelog)\b"),
    ("ops", r"\b(commit|push|merge|deploy\w*|release|install\w*|ci|branch|rebase|pr)\b"),
    ("explore", r"\b(explain|what|how|why|where|look|review|investigate|understand|check)\b"),
)
OTHER_TASK = "other"


def task_kind(text: str) -> str:
    """The task kind of an instruction (:data:`TASK_KINDS`; ``other`` when none matches)."""
    low = (text or "").lower()
    for kind, pattern in TASK_KINDS:
        if re.search(pattern, low):
            return kind
    return OTHER_TASK


def last_instruction(context: str) -> str:
    """The ``[Most recent user instruction]`` section of an immediate context, or ''."""
    match = re.search(r"\[Most recent user instruction\]\n(.*?)(?:\n\n\[|\n\nPropose your next|\Z)", context, re.S)
    return match.group(1) if match else ""


def last_user_block(prefix: str) -> str:
    """The text of the last ``--- USER ---`` block of a rendered prefix that is not a tool
    result, or ''."""
    blocks = re.split(r"(?:^|\n\n)--- (USER|ASSISTANT) ---\n", prefix)
    users = [blocks[i + 1] for i in range(1, len(blocks) - 1, 2)
             if blocks[i] == "USER" and not blocks[i + 1].startswith("[tool_result")]
    return users[-1] if users else ""


@dataclass(frozen=True)
class GptSource:
    """The GPT-flavoured prefix source: a Codex CLI session, its harness-shaped records and its
    task kind."""

    session_id: str
    records: tuple[dict, ...]
    text: str  # its rendering at the harness's 3,000 characters

    @property
    def kind(self) -> str:
        return task_kind(last_user_block(self.text))

    def prefix(self, n_chars: int) -> str:
        return e07.gpt5_prefix(list(self.records), n_chars)


def gpt_source(session_id: str, rows: Sequence[Any]) -> GptSource:
    """A Codex CLI session's rows (one decoded line each) as the GPT-flavoured source."""
    records = tuple(e07.codex_records(rows, tool_result_as="blocks"))
    return GptSource(session_id, records, e07.gpt5_prefix(list(records), e07.TARGET_CHARS))


@dataclass(frozen=True)
class Cut:
    """One cutpoint of one session with the texts of its arms (as sent: redacted for a model
    that is not in-process), the ground truth, whether each arm shows the text of the
    ground truth's own API response, and its stratum."""

    session: str
    number: int
    index: int
    boundary: int  # the prefix is built from the lines before this one
    tool: str
    args: Any
    user_msg: str
    prefixes: Mapping[str, str]  # arm -> prefix text ('' for scratch)
    announced: Mapping[str, bool]
    stratum: str
    kind: str
    redacted: bool = False


@dataclass(frozen=True)
class Outcome:
    """One arm's answer at one cut, read and scored: ``generated`` is false when the call
    failed (or, under ``reference``, its runner lost the cut); ``tool`` None when the answer
    holds no call (prose or nothing: attrition; a call may name no tool, ``""``)."""

    generated: bool
    tool: str | None = None
    args: Any = None
    match: bool = False
    similarity: float | None = None
    raised: tuple[str, str] | None = None  # (exception class, message) where scoring raised (reference)


def _response_lines(rows: Sequence[Any], cut_index: int) -> list[int]:
    """The lines before ``cut_index`` that belong to the same API response as the cut's
    line (same ``message.id``), contiguous back from the cut."""
    row = rows[cut_index] if 0 <= cut_index < len(rows) else None
    mid = ((row or {}).get("message") or {}).get("id") if isinstance(row, dict) else None
    lines: list[int] = []
    i = cut_index - 1
    while mid and i >= 0:
        r = rows[i]
        if not isinstance(r, dict):
            i -= 1
            continue
        if r.get("type") == "assistant" and ((r.get("message") or {}).get("id")) == mid:
            lines.append(i)
            i -= 1
            continue
        if r.get("type") in ("user", "assistant"):
            break
        i -= 1  # progress, system and other bookkeeping lines between blocks
    return sorted(lines)


def _response_texts(rows: Sequence[Any], lines: Sequence[int]) -> list[str]:
    texts = []
    for i in lines:
        for block in ((rows[i].get("message") or {}).get("content") or []):
            if isinstance(block, dict) and block.get("type") == "text" and str(block.get("text", "")).strip():
                texts.append(str(block["text"])[:200])
    return texts


@dataclass(frozen=True)
class ContinuationRules:
    """How a protocol builds the arms of a cut, asks for the call and scores it (module doc)."""

    leak_free: bool
    matched_lengths: bool
    tool_choice: str | None  # None: the harness's per-provider rule
    same_request_form: bool
    non_object_args_raise: bool
    max_tokens: int = 4096

    # ------------------------------------------------------------- the arms
    def cut(self, session: str, rows: Sequence[Any], cutpoint: e07.Cutpoint, number: int, gpt: GptSource, *,
            redactor: Redactor | None = None, gpt_redactor: Redactor | None = None) -> Cut:
        """The arms of one cutpoint. ``redactor``: redact the session's texts and the ground
        truth with it, and the GPT prefix with ``gpt_redactor`` (its own session's); the
        filler has nothing to redact. Lengths are matched before redaction."""
        own = _response_lines(rows, cutpoint.cut_index)
        boundary = own[0] if self.leak_free and own else cutpoint.cut_index
        recent = e07.recent_prefix(rows, boundary)
        user_msg = e07.immediate_context(rows, boundary)
        n = len(recent)
        filler = make_filler(n)
        gpt_text = gpt.prefix(n) if self.matched_lengths else gpt.text
        prefixes = {"scratch": "", "recent3K": recent, "filler3K": filler, "gpt5_3K": gpt_text}
        shown = _response_texts(rows, [i for i in own if i < boundary])
        announced = {arm: any(t in prefixes[arm] or t in user_msg for t in shown) for arm in ARMS}
        kind = task_kind(last_instruction(user_msg) or last_user_block(recent))
        stratum = SAME_TASK if kind == gpt.kind else CROSS_TASK
        args = cutpoint.args
        if redactor is not None:
            prefixes = {**prefixes, "recent3K": redactor.redact(recent) if recent else recent,
                        "gpt5_3K": (gpt_redactor or Redactor()).redact(gpt_text) if gpt_text else gpt_text}
            user_msg = redactor.redact(user_msg)
            args = _redact_values(args, redactor)
        return Cut(session, number, cutpoint.cut_index, boundary, cutpoint.tool, args, user_msg, prefixes,
                   announced, stratum, kind, redacted=redactor is not None)

    # ------------------------------------------------------------- the request
    def request(self, target: str, cut: Cut, arm: str, *, max_tokens: int | None = None,
                temperature: float | None = None) -> ModelRequest:
        """The request of one arm at one cut for ``target``."""
        provider = harness_provider(target)[0] if not self.same_request_form else None
        prefix = cut.prefixes[arm]
        if arm == "filler3K" and not self.matched_lengths and provider != ANTHROPIC:
            prefix = make_filler(e07.TARGET_CHARS)  # the cross-target runner's filler
        turns = [cut.user_msg] if arm == "scratch" else [prefix, ACKNOWLEDGEMENT, cut.user_msg]
        roles = ["user"] if arm == "scratch" else ["user", "assistant", "user"]
        params: dict[str, Any] = {"tools": e07.openai_tools(e07.TOOLS),
                                  "max_tokens": int(max_tokens or self.max_tokens)}
        if provider == ANTHROPIC:  # the harness's Anthropic call: text blocks, no temperature nor tool_choice
            messages = [{"role": "system", "content": e07.SYSTEM_PROMPT}] + [
                {"role": r, "content": [{"type": "text", "text": t}]} for r, t in zip(roles, turns)]
        else:
            messages = [{"role": "system", "content": e07.SYSTEM_PROMPT}] + [
                {"role": r, "content": t} for r, t in zip(roles, turns)]
            if self.same_request_form:
                params["tool_choice"] = self.tool_choice
                if temperature is not None:
                    params["temperature"] = float(temperature)
            else:
                params["tool_choice"] = "any" if provider == MISTRAL else "required"
                params["temperature"] = 0.0
        return ModelRequest(target, tuple(messages), params)

    # ------------------------------------------------------------- the score
    def outcome(self, record: CallRecord | None, cut: Cut, target: str) -> Outcome:
        """An arm's answer read and scored (only the first call counts). An empty answer (no
        text, no call) is an answer without a call, as the harness keeps it; a failed call is
        not generated. The arguments are read as the target's path reads them (module doc):
        under ``reference`` an Anthropic call's input as the harness's ``dict(input)``, any
        other's as the OpenAI-compatible path's :func:`~contextecho.echo.reference.
        continuation.parse_arguments`."""
        if record is None or (not record.ok and record.error_type not in EMPTY_ANSWERS):
            return Outcome(False)
        calls = record.calls if record.ok else []
        if not calls:
            return Outcome(True)
        first = calls[0]
        tool = first.get("name")  # "" is a call too (of no tool): M1 false, as the harness reads it
        try:
            if not self.same_request_form and harness_provider(target)[0] == ANTHROPIC:
                args = dict(json.loads(first.get("arguments") or "{}"))  # the harness: dict(tool_use.input)
            else:
                args = e07.parse_arguments(first.get("arguments"))
            match, similarity = e07.score_call(tool, args, cut.tool, cut.args)
        except (AttributeError, TypeError, ValueError) as exc:  # arguments that are not an object
            if self.non_object_args_raise:
                return Outcome(False, tool, None, raised=(type(exc).__name__, str(exc)))
            args = e07.parse_arguments(first.get("arguments"))
            match, similarity = tool == cut.tool, (0.0 if tool == cut.tool else None)
        return Outcome(True, tool, args, bool(match), similarity)


def _redact_values(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, dict):
        return {k: _redact_values(v, redactor) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_values(v, redactor) for v in value]
    return value


#: The rules of the ``reference`` protocol (the harness as it ran) and of ours (module doc).
REFERENCE = ContinuationRules(leak_free=False, matched_lengths=False, tool_choice=None, same_request_form=False,
                              non_object_args_raise=True)
CONTEXTECHO = ContinuationRules(leak_free=True, matched_lengths=True, tool_choice="auto", same_request_form=True,
                                non_object_args_raise=False)

