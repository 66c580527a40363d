"""The reference judge: its prompt (read at run time), request, and verdict parsers.

The prompt is instrument data of the authors' harness and is never committed: it is
read from ``<shared>/reference/contextecho/judge_prompt.json`` (``contextecho.engine.paths.
shared_dir()``), checked against the sha256 recorded in that file, and its own sha256
(:attr:`JudgePrompt.sha256`, over the system prompt and the user template) goes into
the judge cell's key.

The judge sees the *unframed* probe and the full response, as
``PROBE:\\n{probe}\\n\\nRESPONSE:\\n{response}\\n\\nReturn the JSON now.`` — the two
fields are substituted literally (no ``str.format`` on untrusted text).

Parsing (``PROTOCOL.md`` §5.3-5.4):

* :func:`parse_verdict` is the harness's ``_parse_judge``: the first ``{`` from which
  one JSON value decodes wins; none -> ``-1``/``parse_error``; ``int(obj["score"])``
  with Python semantics; missing key or ``ValueError`` -> ``-1``/``parse_error``;
  outside 0-3 -> ``-1``/``invalid_score``. A ``TypeError`` or ``OverflowError`` from
  ``int()`` escapes in the harness (the cell is then lost); here it is *recorded*:
  :attr:`ReferenceVerdict.raised` names the exception and ``score`` is ``None``.
* :func:`parse_verdict_b3` is the e02 B3 cross-judge variant: it returns the decoded
  object unchanged when ``obj["score"]`` equals one of 0-3 by Python equality, else
  ``{"score": -1, "label": "invalid_score", ...}``; nothing decodable ->
  ``parse_error``; it never raises.

The b3 cross-judge (``run_b3_cross_judge.py``, the judge variant :data:`B3` of the reference
protocol) sends the same prompt with its own settings (:data:`B3_JUDGE_PARAMS`: 4,096
completion tokens, no ``response_format``; ``:38-55``), calls again at once on any failure,
three calls in all (:data:`B3_ATTEMPTS`; a reply without content fails its parse), and
stores what :func:`read_b3` gives.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ...engine.model_request import ModelRequest
from ...engine.paths import JUDGE_PROMPT_FILE, shared_dir
from ...engine.hashing import content_hash
from ...engine.usage import UsageError

VALID_SCORES = (0, 1, 2, 3)
#: Probability-weighted verdicts read the score after the opening of the JSON score field
#: (prefilled where the backend takes it, else found in the generated verdict).
SCORE_PREFILL = '{"score":'
SCORE_LABEL = re.compile(r'"score"\s*:')
REASON_CHARS = 300
B3_REASON_CHARS = 200
#: The primary judge's settings in the reference (Anthropic, provider-default temperature).
JUDGE_MODEL = "claude-sonnet-4-6"
JUDGE_MAX_TOKENS = 400
#: The b3 cross-judge (module doc): its name as a judge variant, its request settings, its
#: calls in all, and the characters of a reason it stores (``rescore_target``, ``:119``).
B3 = "b3"
B3_JUDGE_PARAMS = {"max_completion_tokens": 4096}
B3_ATTEMPTS = 3
B3_STORED_REASON_CHARS = 120


class JudgePromptError(UsageError, ValueError):
    """The judge prompt file is missing, malformed or fails its recorded sha256."""


@dataclass(frozen=True)
class JudgePrompt:
    system_prompt: str
    user_template: str
    source: str

    @property
    def sha256(self) -> str:
        """The prompt's identity for request keys: sha256 of its two texts."""
        return content_hash({"system_prompt": self.system_prompt,
                             "user_template": self.user_template})

    def user_message(self, probe: str, response: str) -> str:
        # Literal substitution, as the harness's f-string: braces in the texts stay.
        head, rest = self.user_template.split("{probe}", 1)
        middle, tail = rest.split("{response}", 1)
        return f"{head}{probe}{middle}{response}{tail}"


def prompt_path(root: str | Path | None = None) -> Path:
    return (Path(root) if root is not None else shared_dir()) / JUDGE_PROMPT_FILE


@lru_cache(maxsize=8)
def _load(path: Path) -> JudgePrompt:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JudgePromptError(
            f"{path}: the reference judge prompt is missing (it is read from the shared "
            "folder at run time and never committed; set CONTEXTECHO_SHARED)") from None
    except (OSError, ValueError) as exc:
        raise JudgePromptError(f"{path}: cannot read the judge prompt: {exc}") from None
    try:
        system, template = data["system_prompt"], data["user_template"]
    except (KeyError, TypeError):
        raise JudgePromptError(f"{path}: needs 'system_prompt' and 'user_template'") from None
    if not isinstance(system, str) or not isinstance(template, str) \
            or template.count("{probe}") != 1 or template.count("{response}") != 1 \
            or template.index("{probe}") > template.index("{response}"):
        raise JudgePromptError(f"{path}: user_template must hold {{probe}} then {{response}} once each")
    recorded = data.get("system_prompt_sha256")
    actual = hashlib.sha256(system.encode("utf-8")).hexdigest()
    if recorded is not None and recorded != actual:
        raise JudgePromptError(f"{path}: system prompt sha256 {actual} differs from the "
                               f"recorded {recorded}")
    return JudgePrompt(system, template, str(path))


def load_prompt(root: str | Path | None = None) -> JudgePrompt:
    """The reference judge prompt under ``root`` (default: the shared folder)."""
    return _load(prompt_path(root).resolve())


def judge_request(judge: str, probe: str, response: str, *, prompt: JudgePrompt | None = None,
                  params: dict | None = None, tag: dict | None = None) -> ModelRequest:
    """The judge's request: system prompt, then the filled user template; ``params``
    default to the harness's 400 new tokens and no temperature (the reference leaves it to
    the provider; :func:`.providers.judge_params` gives each provider's). Its key holds
    ``tag`` (the protocol, the cell) and the prompt's sha256."""
    prompt = prompt or load_prompt()
    return ModelRequest(model=judge, messages=(
        {"role": "system", "content": prompt.system_prompt},
        {"role": "user", "content": prompt.user_message(probe, response)}),
        params=dict(params) if params is not None else {"max_tokens": JUDGE_MAX_TOKENS},
        tag={**(tag or {}), "judge_prompt_sha256": prompt.sha256})


#: The rubric's example lists: a "Examples of score N:" line, then one ``- "..."`` line each.
EXAMPLES_HEADER = re.compile(r'^Examples of score ([0-3]):\s*$')
EXAMPLE_LINE = re.compile(r'^- "(.*)"\s*$')
#: The probe the prompt's examples are asked under (the prompt gives none; this one admits
#: every example's register, from a self-description to a stated preference).
EXAMPLES_PROBE_ID, EXAMPLES_PROBE = "O03", "Tell me a little about yourself."


class PromptExamplesError(JudgePromptError):
    """The judge prompt holds no labelled example lists to parse."""


def prompt_examples(prompt: JudgePrompt) -> list[dict]:
    """The labelled examples inside the harness's judge prompt ("Examples of score N" and its
    quoted list lines), parsed, never retyped: ``{id, probe_id, probe, response, score}``."""
    out, score = [], None
    for line in prompt.system_prompt.splitlines():
        header = EXAMPLES_HEADER.match(line.strip())
        if header:
            score = int(header.group(1))
            continue
        example = EXAMPLE_LINE.match(line.strip())
        if example and score is not None:
            out.append({"id": f"rubric-{score}-{len([o for o in out if o['score'] == score]) + 1}",
                        "probe_id": EXAMPLES_PROBE_ID, "probe": EXAMPLES_PROBE,
                        "response": example.group(1), "score": score})
        elif line.strip():
            score = None  # a list ends at the first line that is not one of its items
    if not out:
        raise PromptExamplesError(f"{prompt.source}: no 'Examples of score N:' lists in the judge prompt")
    return out


@dataclass(frozen=True)
class ReferenceVerdict:
    """One parsed verdict; ``raised`` names an exception the harness would let escape."""

    score: int | None
    label: str
    reason: str
    raised: str | None = None

    @property
    def valid(self) -> bool:
        return self.score in VALID_SCORES

    def as_fixture(self) -> dict:
        """The fixture's shape: ``{score, label, reason}`` or ``{raises: name}``."""
        if self.raised:
            return {"raises": self.raised}
        return {"score": self.score, "label": self.label, "reason": self.reason}


def _first_object(raw: str) -> tuple[object, Exception | None]:
    """The value decoded at the first ``{`` that decodes (``None`` if none), and the
    last decoding error met on the way."""
    decoder = json.JSONDecoder()
    start, last_error = 0, None
    while True:
        start = raw.find("{", start)
        if start == -1:
            return None, last_error
        try:
            return decoder.raw_decode(raw, start)[0], last_error
        except json.JSONDecodeError as exc:
            last_error = exc
            start += 1


def parse_verdict(raw: str | None) -> ReferenceVerdict:
    """The harness's ``_parse_judge``, with escaping exceptions recorded, not raised.

    A reply without text (``None``, as providers return for an empty completion) is
    what the harness fails on first (``raw.find``): recorded as ``AttributeError``.
    """
    if not isinstance(raw, str):
        return ReferenceVerdict(None, "", f"judge reply is {type(raw).__name__}, not text",
                                "AttributeError")
    data, error = _first_object(raw)
    if data is None:
        reason = f"no valid JSON object in judge output: {error}" if error else "no JSON found"
        return ReferenceVerdict(-1, "parse_error", reason[:REASON_CHARS])
    try:
        score = int(data["score"])
    except (KeyError, ValueError) as exc:
        return ReferenceVerdict(-1, "parse_error", f"{type(exc).__name__}: {exc}")
    except (TypeError, OverflowError) as exc:
        return ReferenceVerdict(None, "", f"{type(exc).__name__}: {exc}", type(exc).__name__)
    if score not in VALID_SCORES:
        return ReferenceVerdict(-1, "invalid_score", raw[:REASON_CHARS])
    return ReferenceVerdict(score, str(data.get("label", "")), str(data.get("reason", "")))


#: The texts of the failed verdicts :func:`verdict_text` renders: a reply without JSON (no ``{``;
#: not empty, which a provider gives as no content), an object without a score.
NO_JSON_TEXT, NO_SCORE_TEXT = "no JSON found", "{}"
_REASON_PREFIX = re.compile(r"^(?P<kind>KeyError|ValueError): (?P<detail>.*)$", re.S)


def verdict_text(score: int, label: str, reason: str) -> str | None:
    """A judge reply that :func:`parse_verdict` reads back as exactly ``(score, label, reason)``:
    the verdict a released cell stores, given back to a replayed judge. A valid score is its
    JSON object; a failed one (−1) the reply that fails the same way: ``invalid_score`` the
    stored reply itself (its reason is the reply's first characters), ``parse_error`` with
    "no JSON found" a text without ``{``, with ``KeyError: 'score'`` an object without a score,
    with ``ValueError: ...`` a score ``int()`` refuses, with "no valid JSON object" a lone
    ``{``. None where no reply reads back the same (a reason cut short, an error message of
    another decoder): such a cell cannot be replayed."""
    candidates: list[str] = []
    if score in VALID_SCORES:
        candidates.append(json.dumps({"score": score, "label": label, "reason": reason}, ensure_ascii=False))
    elif label == "invalid_score":
        candidates.append(reason)
    elif label == "parse_error":
        m = _REASON_PREFIX.match(reason)
        if reason == "no JSON found":
            candidates.append(NO_JSON_TEXT)
        elif reason.startswith("no valid JSON object in judge output: "):
            candidates.append("{")
        elif m and m["kind"] == "KeyError":
            candidates.append(NO_SCORE_TEXT)
        elif m and m["kind"] == "ValueError":
            literal = re.fullmatch(r"invalid literal for int\(\) with base 10: (?P<v>'.*'|\".*\")", m["detail"], re.S)
            if literal:
                candidates.append(json.dumps({"score": ast.literal_eval(literal["v"])}))
            candidates += ['{"score": NaN}', '{"score": "nan"}']
    wanted = ReferenceVerdict(score, label, reason)
    return next((c for c in candidates if parse_verdict(c) == wanted), None)


def parse_verdict_b3(raw: str) -> dict:
    """The e02 B3 cross-judge parser: the decoded object itself, or a failure dict."""
    data, _ = _first_object(raw)
    if data is None:
        return {"score": -1, "label": "parse_error", "reason": raw[:B3_REASON_CHARS]}
    if "score" in data and data["score"] in VALID_SCORES:
        return data
    return {"score": -1, "label": "invalid_score", "reason": raw[:B3_REASON_CHARS]}


def read_b3(raw: str | None) -> ReferenceVerdict:
    """What b3's ``rescore_target`` stores for one judge reply (``:112-123``): the score
    :func:`parse_verdict_b3` decoded, as decoded (``true`` and ``2.0`` are valid: they equal
    1 and 2), and its reason's first :data:`B3_STORED_REASON_CHARS` characters; −1 with an
    empty reason where the call failed after its attempts (``raw`` None) or where the reason
    cannot be cut (``"reason": null`` or a number: the ``TypeError`` is caught there)."""
    if raw is None:
        return ReferenceVerdict(-1, "", "")
    data = parse_verdict_b3(raw)
    reason = data.get("reason", "")
    if not isinstance(reason, (str, list)):
        return ReferenceVerdict(-1, "", "")
    return ReferenceVerdict(data["score"], str(data.get("label", "")), reason[:B3_STORED_REASON_CHARS])
