"""Per-model request options: what a model is asked with beside an experiment's own sampling
parameters (a reasoning model's switches), and the budget rule of a thinking model.

Written as one JSON object, model string (or pattern, ``*`` and ``?``) to LiteLLM
completion parameters (a notebook's ``model_options`` parameter, ``paper --set
model_options=...``)::

    {"hosted_vllm/Qwen/Qwen3-8B": {"extra_body": {"chat_template_kwargs": {"enable_thinking": false}}},
     "openai/o4-mini": {"reasoning_effort": "low", "reasoning_budget": 2048},
     "anthropic/claude-sonnet-4-5": {"thinking": {"type": "disabled"}}}

A model takes the options named exactly after it, else those of the first pattern that
matches it (as endpoints are matched). Its requests are sent with the options added to
their sampling parameters, and LiteLLM puts them in the request body: ``extra_body``'s
keys at the top level of an OpenAI-compatible body (vLLM's ``chat_template_kwargs``),
``reasoning_effort`` and Anthropic's ``thinking`` as each provider takes them. Options
change what a model answers, so they are part of the request's key; a model without
options keeps every key it had (nothing is added to its requests). An option that a
request sets itself (``temperature``, ``max_tokens``, ...) is refused: those are the
experiment's design (CAPE's temperature factor). Transport settings (``api_base``,
``timeout``, headers) are not options: they go in an endpoint.

The budget rule. ``reasoning_budget`` (never sent) is the tokens a model may spend
reasoning: it is added to each request's ``max_tokens``, so a thinking model still has the
experiment's answer budget (CAPE's 4 tokens, a verdict's 64) once it has thought. Anthropic's
``thinking`` ``budget_tokens`` is its default. Options that turn reasoning on
(``reasoning_effort`` other than ``none``, ``thinking`` enabled, ``enable_thinking`` true in
``chat_template_kwargs``) without a budget are refused before any call: the model would
spend the answer's budget thinking and answer nothing. A model that reasons unasked (Qwen3,
DeepSeek-R1 on a server) is given its switch off, or a ``reasoning_budget`` alone.
"""
from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .model_request import ModelRequest
from .usage import UsageError

BUDGET = "reasoning_budget"  # ours: tokens for reasoning, added to max_tokens, never sent
SYNTAX = '{"MODEL or PATTERN": {"OPTION": VALUE, ...}, ...} (JSON)'


class OptionsError(UsageError, ValueError):
    """Request options that cannot be used: says which model and which option."""


def reasoning_on(options: Mapping[str, Any]) -> bool:
    """Whether ``options`` (or a request's params, which hold them) turn a model's reasoning on
    (module doc)."""
    effort = options.get("reasoning_effort")
    thinking = options.get("thinking")
    template = (options.get("extra_body") or {}).get("chat_template_kwargs") or {}
    return (effort is not None and effort != "none") or \
        (isinstance(thinking, Mapping) and thinking.get("type") == "enabled") or \
        template.get("enable_thinking") is True or template.get("thinking") is True


@dataclass(frozen=True)
class ModelOptions:
    """The options of one model string or pattern: ``sent`` to the provider, and the tokens
    added to ``max_tokens`` for its reasoning (``budget``)."""

    model: str
    sent: Mapping[str, Any] = field(default_factory=dict)
    budget: int = 0

    @classmethod
    def of(cls, model: str, options: Mapping[str, Any]) -> "ModelOptions":
        if not isinstance(options, Mapping):
            raise OptionsError(f"model_options[{model!r}] is {type(options).__name__}; give an object of options")
        sent = {k: v for k, v in options.items() if k != BUDGET}
        thinking = sent.get("thinking")
        default = thinking.get("budget_tokens", 0) if isinstance(thinking, Mapping) else 0
        budget = options.get(BUDGET, default)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise OptionsError(f"model_options[{model!r}].{BUDGET} is {budget!r}; give a number of tokens >= 0")
        if not isinstance(sent.get("extra_body", {}), Mapping):
            raise OptionsError(f"model_options[{model!r}].extra_body must be an object")
        if reasoning_on(sent) and not budget:
            raise OptionsError(f"model_options[{model!r}] turn reasoning on without a {BUDGET}: the model would "
                               f"think on the experiment's answer budget and answer nothing; add "
                               f'"{BUDGET}": N (tokens for its reasoning), or turn its reasoning off')
        return cls(model, sent, budget)

    @property
    def is_pattern(self) -> bool:
        return any(c in self.model for c in "*?[")

    def apply(self, request: ModelRequest) -> ModelRequest:
        """``request`` as sent with these options: its params with the options added and ``max_tokens`` raised by the budget."""
        clash = sorted(set(self.sent) & set(request.params))
        if clash:
            raise OptionsError(f"model_options[{self.model!r}] set {', '.join(clash)}, which the experiment's "
                               f"requests to {request.model!r} set themselves; leave them to the experiment")
        params = {**request.params, **self.sent}
        if self.budget and params.get("max_tokens") is not None:
            params["max_tokens"] = int(params["max_tokens"]) + self.budget
        return replace(request, params=params)


@dataclass(frozen=True)
class RequestOptions:
    """Every model's options (module doc); empty: every request as the experiment built it."""

    models: tuple[ModelOptions, ...] = ()

    @classmethod
    def parse(cls, text: str | Mapping[str, Any]) -> "RequestOptions":
        """From the JSON object of the module doc (or that object); ``""``: none."""
        if isinstance(text, str):
            if not text.strip():
                return cls()
            try:
                text = json.loads(text)
            except ValueError as exc:
                raise OptionsError(f"model_options is not JSON ({exc}); expected {SYNTAX}") from None
        if not isinstance(text, Mapping):
            raise OptionsError(f"model_options is a JSON {type(text).__name__}; expected {SYNTAX}")
        return cls(tuple(ModelOptions.of(str(model), options) for model, options in text.items()))

    def of(self, model: str) -> ModelOptions | None:
        """The options named exactly after ``model``, else the first pattern's matching it."""
        exact = [o for o in self.models if not o.is_pattern and o.model == model]
        return exact[0] if exact else next(
            (o for o in self.models if o.is_pattern and fnmatch.fnmatchcase(model, o.model)), None)

    def apply(self, request: ModelRequest) -> ModelRequest:
        """``request`` as sent: with its model's options, or as it is when the model has none."""
        options = self.of(request.model) if self.models else None
        return request if options is None else options.apply(request)
