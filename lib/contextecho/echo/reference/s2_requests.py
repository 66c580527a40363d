"""How a harness runner sends its stressor requests: the named rule sets of the ``reference`` protocol.

The harness has three S2 runners, and for the same cell (session, turn, arm, paraphrase) they
send different requests and read the reply differently:

* ``e08`` (``experiments/e08_cross_compaction/run.py:239-273``; the panel's S2 cells too) asks
  through the harness's ``TargetClient``: text-block messages to Anthropic, strings elsewhere
  (:func:`.providers.provider_messages`), the runner's 1,024 tokens after the provider token
  rules (:func:`.providers.target_params`), no temperature but Gemini's 0; the reply as it
  came. Its client retries transient errors (``harness/retry.py``).
* ``e09`` (``experiments/e09_cross_session/run.py:106-139``, the S2 design on two other
  sessions) sends e08's requests: the same ``TargetClient.step``, message structure, e11
  system prompt and 1,024 tokens; only the runner (and so its cells' folders) differs.
* ``e10`` (``experiments/e10_cross_org/run_xtarget_v2.py:66-145``) asks through its own
  OpenAI-compatible call and ``call_gemini``: plain strings with the system prompt first for
  every provider (:func:`.providers.plain_messages`), ``max_tokens`` as asked at temperature
  0, gpt-5 models ``max_completion_tokens`` 8,192 and no temperature, Gemini 4,096 tokens at
  temperature 0 (:func:`.providers.e10_target_params`); every reply stripped (``:90``). Its
  timeout (180 s) and its retries (none) are transport: ours are the run's
  (:class:`contextecho.engine.calls.Transport`), outside the request, as
  ``data/conformance/declared_divergences.json`` declares.

The prefix, filler, system prompt and paraphrases are the same in both; only the request's
form, its sampling parameters and how its reply is read differ.

The instruction-override runners (:mod:`.override`: the e11 S1-S4 stressors at e07 cut
points, e12's prefix lengths) are rule sets of the same kind, each with the token budget its
runner passes (:attr:`S2Requests.max_tokens`):

* ``e11`` (``experiments/e11_instruction_override/run.py``): ``TargetClient`` as e08, 512 tokens;
* ``e11_xtarget`` (``run_xtarget.py``, ``call_no_tools``): plain strings with the system
  prompt first, ``max_tokens`` 512 as passed (no provider cap) and ``temperature`` 0 for
  every provider (:func:`.providers.no_tools_params`); no tools. A list content is flattened
  to its ``text`` blocks, ``thinking``/``reasoning`` dropped: on our transport LiteLLM's
  adapter has already made the content text (Mistral's: the text block, the thinking apart
  as ``reasoning_content``); the reply is stripped and an empty one (``content`` None
  included) is the reply ``""``. Its timeout (120 s) and its retries (none) are transport,
  as e10's;
* ``e12`` (``experiments/e12_session_length_scaling/run.py`` and
  ``run_anthropic_family.py``): ``TargetClient`` as e08, 1,024 tokens.

An empty answer is the reply ``""`` (it fails every scorer) where the runner's client gives
it so (:attr:`S2Requests.keeps_empty`): always on ``call_no_tools``; through
``TargetClient`` except from Gemini, whose client raises (:func:`.providers.judges_empty_reply`). The panel's ``s2_requests``
parameter names the rule set (:attr:`contextecho.echo.protocol.Grid.s2_requests`); the
protocol reads it from its cells (:func:`rules_of`), never from the protocol's name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...engine.registry import Registry
from .override import E11_MAX_TOKENS, E12_MAX_TOKENS
from .providers import (ANTHROPIC, e10_target_params, harness_provider, judges_empty_reply, no_tools_params, plain_messages, provider_messages,
                        target_params)

#: The cell column (one of its ``versions``) that names the rule set an S2 request followed.
COLUMN = "s2_requests"


def _always(model: str) -> bool:
    return True


@dataclass(frozen=True)
class S2Requests:
    """One runner's stressor request rules: ``params(model, budget)`` gives the sampling
    parameters for a token budget (the runner's :attr:`max_tokens`, else the run's S2
    budget), ``messages(model, request)`` the messages of a :class:`~.requests.TargetRequest`,
    :meth:`read` the text a reply is taken as, ``keeps_empty(model)`` whether an empty answer
    is that reply ``""`` (else the cell is lost). ``runners``: the harness's runners (paths)
    that send these requests."""

    name: str
    runners: tuple[str, ...]
    params: Callable[[str, int], dict[str, Any]]
    messages: Callable[[str, Any], list[dict]]
    strip_reply: bool = False
    max_tokens: int | None = None
    keeps_empty: Callable[[str], bool] = judges_empty_reply

    @property
    def runner(self) -> str:
        return self.runners[0]

    def read(self, text: str) -> str:
        return text.strip() if self.strip_reply else text


E11_RUNNER = "experiments/e11_instruction_override/run.py"
E11_XTARGET_RUNNER = "experiments/e11_instruction_override/run_xtarget.py"
E12_RUNNERS = ("experiments/e12_session_length_scaling/run.py",
               "experiments/e12_session_length_scaling/run_anthropic_family.py")
S2_REQUESTS: Registry[S2Requests] = Registry("S2 request rule set", keep_order=True)
S2_REQUESTS.add("e08", S2Requests("e08", ("experiments/e08_cross_compaction/run.py",), target_params,
                                        provider_messages))
S2_REQUESTS.add("e09", S2Requests("e09", ("experiments/e09_cross_session/run.py",), target_params,
                                        provider_messages))
S2_REQUESTS.add("e10", S2Requests("e10", ("experiments/e10_cross_org/run_xtarget_v2.py",), e10_target_params,
                                        plain_messages, strip_reply=True))
S2_REQUESTS.add("e11", S2Requests("e11", (E11_RUNNER,), target_params, provider_messages,
                                        max_tokens=E11_MAX_TOKENS))
S2_REQUESTS.add("e11_xtarget", S2Requests("e11_xtarget", (E11_XTARGET_RUNNER,), no_tools_params,
                                                plain_messages, strip_reply=True, max_tokens=E11_MAX_TOKENS,
                                                keeps_empty=_always))
S2_REQUESTS.add("e12", S2Requests("e12", E12_RUNNERS, target_params, provider_messages,
                                        max_tokens=E12_MAX_TOKENS))


def for_runner(runner: str) -> S2Requests | None:
    """The rule set of the harness runner ``runner`` (its path in the harness), if any."""
    return next((S2_REQUESTS.get(n) for n in S2_REQUESTS if runner in S2_REQUESTS.get(n).runners), None)


def override_rules(target: str) -> S2Requests:
    """e11's rule set for ``target`` as the harness asked it: its Anthropic runner
    (``run.py``) for an Anthropic model, its cross-target runner (``run_xtarget.py``) for
    any other."""
    return S2_REQUESTS.get("e11" if harness_provider(target)[0] == ANTHROPIC else "e11_xtarget")


def rules_of(versions: Mapping[str, Any]) -> S2Requests | None:
    """The rule set a cell's S2 request followed (its ``versions``); None for other cells."""
    name = versions.get(COLUMN)
    return S2_REQUESTS.get(name) if name else None
