"""Several servers behind one model: LiteLLM's Router over an endpoint's API bases.

An endpoint may list several API bases (``MODEL=URL1|URL2``, :mod:`.endpoints`): the same
model served by several OpenAI-compatible servers (vLLM replicas, llama.cpp servers on
several machines). A call of such a model goes through a ``litellm.Router`` with one
deployment per API base, all under the model's own name, and the Router picks the server
of each attempt by its routing strategy (``Transport.routing``, :data:`ROUTING_STRATEGIES`):

- ``least-busy`` (the default): the server with the fewest calls in flight. Under the
  engine's bounded concurrency (``Transport.concurrency``, which counts the calls in flight
  across all the servers) this spreads the calls evenly over equal servers and gives a
  faster server more; a random pick can send two calls to one server while another idles.
- ``simple-shuffle``: a server at random, each call on its own.

The engine's retry loop stays the only one (:mod:`.calls`): the Router retries nothing and
falls back to nothing (``num_retries`` 0, ``max_fallbacks`` 0), so an attempt is one request
to one server. A server that fails an attempt (connection refused or reset, a timeout, a
5xx, a 429, a refused key) is left out of the Router's picks for ``Transport.cooldown_s``
seconds from its first failure (``allowed_fails`` 0), so the engine's next attempt goes to
another server; a request's own fault (a 400: too long, a bad parameter) leaves the server
in. When every server of the model is left out, the attempt fails without a request as a
``ServiceUnavailableError`` that asks to wait ``cooldown_s`` (Retry-After): a transient
fault, retried after that wait, within ``Transport.max_delay_s``.

Which server each attempt went to and how it ended is kept in the call record
(:attr:`contextecho.engine.record.CallRecord.servers`); servers are transport, never part
of a request key, so a call answered by one server is a cache hit whichever serves next.

One Router per model, set of servers, key and routing settings in a process: built on the
first call (:func:`servers_for`) and reused by every later call and round, so what it has
learned (calls in flight, servers left out) holds across rounds.

Requests sharing a prefix run back to back (:func:`contextecho.engine.calls.agenerate`),
but on several servers they are spread over all of them, so a server reuses a shared
prefix only for the requests it gets.
"""
from __future__ import annotations

import json
import threading
from typing import Any, Mapping, Sequence

import httpx

from . import llm

#: How the Router picks the server of each attempt (module doc).
ROUTING_STRATEGIES = ("least-busy", "simple-shuffle")
#: What :attr:`~contextecho.engine.record.CallRecord.servers` says of an attempt that was answered.
ANSWERED = "ok"


class Servers:
    """The servers of one model (an endpoint's API bases) behind one ``litellm.Router``;
    each deployment's id is its API base."""

    def __init__(self, model: str, api_bases: Sequence[str], api_key: str | None, routing: str,
                 cooldown_s: float) -> None:
        self.model = model
        self.api_bases = tuple(api_bases)
        self.cooldown_s = cooldown_s
        # The key is the deployments' own: a key passed with a call makes the Router treat
        # the call as a deployment of its own, with its own cooldowns.
        key = {"api_key": api_key} if api_key else {}
        self.router = llm.litellm.Router(
            model_list=[{"model_name": model, "litellm_params": {"model": model, "api_base": base, **key},
                         "model_info": {"id": base}} for base in self.api_bases],
            routing_strategy=routing, num_retries=0, max_fallbacks=0, allowed_fails=0,
            cooldown_time=cooldown_s)

    async def acompletion(self, call: Mapping[str, Any]) -> Any:
        """One attempt of ``call`` (``litellm.acompletion``'s keyword arguments; an
        ``api_base`` or ``api_key`` in it is left to the deployments) on the server the
        Router picks; raises what that server's call raised, which names the server
        (:meth:`server_of`)."""
        from litellm.types.router import RouterRateLimitError

        sent = {k: v for k, v in call.items() if k not in ("api_base", "api_key")}
        try:
            return await self.router.acompletion(**sent)
        except RouterRateLimitError:
            pass  # raised below, outside the handler: the fault is no server, not the Router's error
        wait = f"{self.cooldown_s:g}"
        raise llm.litellm.ServiceUnavailableError(
            message=f"no server of {self.model} is available: all {len(self.api_bases)} failed an attempt "
                    f"within the last {wait} s and are left out until then ({', '.join(self.api_bases)})",
            llm_provider=llm.provider_of(self.model), model=self.model,
            response=httpx.Response(503, headers={"retry-after": wait},
                                    request=httpx.Request("POST", self.api_bases[0])))

    def server_of(self, outcome: Any) -> str | None:
        """The API base that answered ``outcome`` (a response) or raised it (an exception
        from :meth:`acompletion`); None when no server was reached or it is not known."""
        if isinstance(outcome, BaseException):
            server = getattr(outcome, "failed_deployment_id", None)
        else:
            server = (getattr(outcome, "_hidden_params", None) or {}).get("model_id")
        return server if server in self.api_bases else None


_BUILT: dict[tuple, Servers] = {}
_BUILDING = threading.Lock()  # rounds of a notebook kernel run in worker threads


def servers_for(model: str, api_bases: Sequence[str], api_key: str | None, *, routing: str,
                cooldown_s: float) -> Servers:
    """The :class:`Servers` of ``model`` on ``api_bases``: built on the first call, the same
    object afterwards (the key is held in memory only, as LiteLLM holds it)."""
    key = (model, tuple(api_bases), api_key, routing, cooldown_s)
    with _BUILDING:
        if key not in _BUILT:
            _BUILT[key] = Servers(model, api_bases, api_key, routing, cooldown_s)
        return _BUILT[key]


def servers_json(attempts: Sequence[tuple[str | None, str]]) -> str:
    """What :attr:`~contextecho.engine.record.CallRecord.servers` stores: one ``[server,
    outcome]`` pair per attempt, in order; the outcome is :data:`ANSWERED` or the error type."""
    return json.dumps([[server, outcome] for server, outcome in attempts])
