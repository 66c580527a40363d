"""How a harness runner sends its S2 requests: the named rule sets of the ``reference`` protocol.

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
form, its sampling parameters and how its reply is read differ. The panel's ``s2_requests``
parameter names the rule set (:attr:`contextecho.echo.protocol.Grid.s2_requests`); the
protocol reads it from its cells (:func:`rules_of`), never from the protocol's name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...engine.registry import Registry
from .providers import e10_target_params, plain_messages, provider_messages, target_params

#: The cell column (one of its ``versions``) that names the rule set an S2 request followed.
COLUMN = "s2_requests"


@dataclass(frozen=True)
class S2Requests:
    """One runner's S2 request rules: ``params(model, budget)`` gives the sampling
    parameters for the run's S2 budget, ``messages(model, request)`` the messages of a
    :class:`~.requests.TargetRequest`, :meth:`read` the text a reply is taken as."""

    name: str
    runner: str
    params: Callable[[str, int], dict[str, Any]]
    messages: Callable[[str, Any], list[dict]]
    strip_reply: bool = False

    def read(self, text: str) -> str:
        return text.strip() if self.strip_reply else text


S2_REQUESTS: Registry[S2Requests] = Registry("S2 request rule set", keep_order=True)
S2_REQUESTS.add("e08", S2Requests("e08", "experiments/e08_cross_compaction/run.py", target_params,
                                  provider_messages))
S2_REQUESTS.add("e09", S2Requests("e09", "experiments/e09_cross_session/run.py", target_params,
                                  provider_messages))
S2_REQUESTS.add("e10", S2Requests("e10", "experiments/e10_cross_org/run_xtarget_v2.py", e10_target_params,
                                  plain_messages, strip_reply=True))


def for_runner(runner: str) -> S2Requests | None:
    """The rule set of the harness runner ``runner`` (its path in the harness), if any."""
    return next((S2_REQUESTS.get(n) for n in S2_REQUESTS if S2_REQUESTS.get(n).runner == runner), None)


def rules_of(versions: Mapping[str, Any]) -> S2Requests | None:
    """The rule set a cell's S2 request followed (its ``versions``); None for other cells."""
    name = versions.get(COLUMN)
    return S2_REQUESTS.get(name) if name else None
