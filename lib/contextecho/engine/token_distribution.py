"""Distributions over a closed set of answers, read from a model's token probabilities.

A judge's verdict or a questionnaire answer is one draw from a distribution the model
already computes. Where the backend exposes token log-probabilities, the distribution
over the allowed answers (the scores 0-3, the option letters A-E) is read at the
position where the answer is written:

* **How the call is made** (:func:`read_mode`):

  - ``prefill`` — the backend continues a prefilled assistant turn (the embedded model,
    vLLM and other OpenAI-compatible servers that honour ``continue_final_message``):
    the request is the original one plus an assistant message holding the text that
    precedes the answer (``Score:``, ``{"score":``), greedy, a few tokens, with
    ``logprobs``/``top_logprobs``. The answer's position is forced.
  - ``generated`` — the provider returns log-probabilities but takes no prefill: the
    original request is sent again with ``logprobs``/``top_logprobs``, and the answer's
    position is found in the generated text (after its label).
  - ``verdict`` — the answer's own call returns the log-probabilities: the request
    carries ``logprobs``/``top_logprobs`` (:func:`with_logprobs`) and the answer's
    position is found in the generated text, as in ``generated``, with no second request.
    For a backend whose log-probabilities are a free side channel of the call (the
    embedded model, vLLM-style servers) where the answer is generated whole anyway (a
    JSON verdict: the score is read at its position in a verdict that is valid JSON).
  - ``discrete`` — the provider returns no log-probabilities: no request is made and the
    parsed verdict is used, recorded as such (``score_source = "discrete"``).

  ``prefill`` and ``generated`` are each a request of their own, so its request key
  differs from the discrete verdict's (whose key is unchanged) and from each other's; a
  ``verdict`` request's key is the answer's own (with the reading parameters in it).

* **Where the answer is written** (:func:`read_distribution`): the first generated token
  that is not whitespace and is preceded by the label (``Score:`` then optional
  whitespace; in ``prefill`` mode the prefill ends with the label). Whitespace tokens
  before it (``Score:`` then `` `` then ``2`` in SmolLM2's tokenizer) are taken greedily.
* **Which tokens count**: a top-k token whose text, stripped of whitespace, is one of
  the allowed answers (`` 2`` and ``2`` both count for 2; their probabilities add up).
  The probabilities are renormalised over the allowed answers; a position whose top-k
  holds none of them is *invalid* (with a reason), never a guess.

From the renormalised distribution: the expected value Σ v·p(v) (where answers carry
values), the arg-max, and the entropy in nats. A distribution is **flat** when its
entropy exceeds :data:`FLAT_ENTROPY` of the maximum ``ln K`` (K allowed answers): the
model is unsure; such answers are counted and reported, not hidden.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from . import llm
from .model_request import ModelRequest

PREFILL, GENERATED, VERDICT, DISCRETE = "prefill", "generated", "verdict", "discrete"
READ_MODES = (PREFILL, GENERATED, VERDICT, DISCRETE)
OK, INVALID = "ok", "invalid"

TOP_LOGPROBS = 20  # the most OpenAI-compatible servers return per position
PREFILL_MAX_TOKENS = 4  # whitespace, the answer, and a token or two of slack
#: Normalised entropy H / ln K above which a distribution counts as flat (an unsure model):
#: 0.9 of the uniform distribution's entropy, e.g. p = (0.4, 0.3, 0.2, 0.1) is 0.92 of ln 4.
FLAT_ENTROPY = 0.9
# Providers that continue a prefilled assistant turn when asked (continue_final_message).
PREFILL_PROVIDERS = frozenset({llm.LOCAL_PROVIDER, "hosted_vllm"})


class DistributionError(ValueError):
    """Stored log-probabilities that cannot be read (malformed JSON or entries)."""


def read_mode(model: str) -> str:
    """How ``model``'s answer distributions are read: prefill, generated or discrete."""
    provider = llm.provider_of(model)
    if provider in PREFILL_PROVIDERS:
        return PREFILL
    if llm.is_in_process(model) or provider in llm.registered_providers():
        return DISCRETE  # fake/* and other in-process stand-ins: no token probabilities
    litellm = llm.ensure_providers()
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        supported = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider) or []
    except Exception:
        return DISCRETE
    return GENERATED if {"logprobs", "top_logprobs"} <= set(supported) else DISCRETE


def with_logprobs(request: ModelRequest) -> ModelRequest:
    """``request`` asking for the generated tokens' log-probabilities and the
    :data:`TOP_LOGPROBS` most probable tokens at each position (otherwise unchanged)."""
    return ModelRequest(request.model, request.messages,
                        {**request.params, "logprobs": True, "top_logprobs": TOP_LOGPROBS},
                        request.replicate, tag=request.tag)


def distribution_request(request: ModelRequest, mode: str, prefill: str) -> ModelRequest | None:
    """The request that reads the distribution for ``request`` (``None`` in discrete mode,
    and in verdict mode, where ``request`` itself reads it: :func:`with_logprobs`).

    ``prefill``: the text of the assistant turn up to the answer (``Score:``)."""
    if mode in (DISCRETE, VERDICT):
        return None
    reading = {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
    if mode == GENERATED:
        return with_logprobs(request)
    if mode != PREFILL:
        raise ValueError(f"unknown read mode {mode!r}; expected one of {READ_MODES}")
    params = {**reading, "temperature": 0, "max_tokens": PREFILL_MAX_TOKENS,
              "continue_final_message": True}
    messages = (*request.messages, {"role": "assistant", "content": prefill})
    return ModelRequest(request.model, messages, params, request.replicate, tag=request.tag)


@dataclass(frozen=True)
class Distribution:
    """One read distribution over the allowed answers (empty unless status is ok)."""

    status: str  # ok | invalid
    reason: str
    probs: Mapping[str, float] = field(default_factory=dict)  # answer -> renormalised p
    values: Mapping[str, float] = field(default_factory=dict)  # answer -> its value, if any

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def expected(self) -> float:
        """Σ v·p(v) over the allowed answers (NaN unless ok and every answer has a value)."""
        if not self.ok or not self.values:
            return math.nan
        return float(sum(self.values[a] * p for a, p in self.probs.items()))

    @property
    def argmax(self) -> str | None:
        """The most probable answer (ties: the first allowed one)."""
        return max(self.probs, key=self.probs.__getitem__) if self.ok else None

    @property
    def entropy(self) -> float:
        """Shannon entropy in nats (NaN unless ok)."""
        if not self.ok:
            return math.nan
        return float(-sum(p * math.log(p) for p in self.probs.values() if p > 0))

    @property
    def flat(self) -> bool:
        """Entropy above :data:`FLAT_ENTROPY` of ``ln K``: the model is unsure."""
        return self.ok and len(self.probs) > 1 and self.entropy > FLAT_ENTROPY * math.log(len(self.probs))

    def probs_json(self) -> str | None:
        return json.dumps(dict(self.probs), sort_keys=True) if self.ok else None


def distribution_of(masses: Mapping[str, float], values: Mapping[str, float] | None = None) -> Distribution:
    """Renormalise unnormalised probability ``masses`` over the allowed answers."""
    total = sum(masses.values())
    if not total > 0:
        return Distribution(INVALID, "no probability on any allowed answer")
    return Distribution(OK, "read", {a: m / total for a, m in masses.items()}, dict(values or {}))


def _entries(logprobs_json: str) -> list[tuple[str, float, list[tuple[str, float]]]]:
    try:
        data = json.loads(logprobs_json)
        return [(str(token), float(lp), [(str(t), float(p)) for t, p in top]) for token, lp, top in data]
    except (TypeError, ValueError) as exc:
        raise DistributionError(f"stored logprobs are not [token, logprob, [[token, logprob], ...]] "
                                f"entries: {exc}") from None


def read_distribution(logprobs_json: str | None, allowed: Sequence[str], *, label: str | re.Pattern,
                      prefill: str = "", values: Mapping[str, float] | None = None) -> Distribution:
    """The distribution over ``allowed`` at the answer's position (module doc).

    ``label``: a regular expression the text before the answer ends with (``Score\\s*:``);
    ``prefill``: the text the generated tokens continue (prefill mode)."""
    if not logprobs_json:
        return Distribution(INVALID, "the call returned no token probabilities")
    pattern = re.compile(label) if isinstance(label, str) else label
    ending = re.compile(f"(?:{pattern.pattern})\\s*$", pattern.flags)
    text = prefill
    for token, _, top in _entries(logprobs_json):
        if token.strip() and ending.search(text):
            masses = {a: 0.0 for a in allowed}
            for candidate, logprob in top:
                if candidate.strip() in masses:
                    masses[candidate.strip()] += math.exp(logprob)
            read = distribution_of(masses, values)
            if not read.ok:
                return Distribution(INVALID, f"none of {list(allowed)} among the top "
                                             f"{len(top)} tokens at the answer's position")
            return read
        text += token
    return Distribution(INVALID, "the answer's label was not followed by an answer in the "
                                 "generated tokens")


def no_distribution(reason: str) -> dict[str, Any]:
    """The distribution columns of a row with none read (a failed call, discrete mode)."""
    return {"expected_score": math.nan, "score_argmax": None, "score_entropy": math.nan,
            "score_flat": False, "score_probs": None, "distribution_reason": reason}


def distribution_columns(read: Distribution) -> dict[str, Any]:
    """The distribution columns of a row (expected value, arg-max, entropy, flat, probs)."""
    if not read.ok:
        return no_distribution(read.reason)
    return {"expected_score": read.expected, "score_argmax": read.argmax,
            "score_entropy": read.entropy, "score_flat": read.flat,
            "score_probs": read.probs_json(), "distribution_reason": read.reason}
