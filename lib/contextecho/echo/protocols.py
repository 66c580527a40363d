"""The protocols an experiment can run under, by name (the notebook parameter ``protocol``):
``contextecho`` (ours, :mod:`.instruments`) and ``reference`` (the authors' harness,
:mod:`.reference.protocol`). A run looks its protocol up once, here; an unknown name raises
:class:`~contextecho.engine.registry.UnknownNameError` listing the valid ones.
"""
from __future__ import annotations

from ..engine.registry import Registry
from .instruments import ContextEchoProtocol
from .protocol import Protocol
from .reference.protocol import ReferenceProtocol

PROTOCOLS: Registry[Protocol] = Registry("protocol")
for _protocol in (ContextEchoProtocol(), ReferenceProtocol()):
    PROTOCOLS.add(_protocol.name, _protocol)


def protocol(name: str) -> Protocol:
    """The protocol called ``name``."""
    return PROTOCOLS.get(name)


def protocol_of(params: object) -> Protocol:
    """The protocol a run's parameters name (``params.protocol``), its options set from them
    (:meth:`~.protocol.Protocol.configured`): looked up once, when the run starts; the run
    carries the object."""
    return protocol(params.protocol).configured(params)
