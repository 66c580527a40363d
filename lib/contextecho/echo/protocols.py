"""Protocols: named, versioned instrument sets an experiment runs under.

A protocol fixes how a cell is built and scored: prefix rendering and window, filler,
message frame and system prompt, probe and stressor texts, judge prompt and verdict
parser, stressor scorers, sampling defaults and the statistics the paper reports.

* ``contextecho`` — this project's own instruments (multi-message chat prefixes from
  :mod:`contextecho.sessions`, structure-matched lorem filler, our rubric and parser,
  our scorers). Its version and data hash are those of :func:`.versions.instrument_versions`.
* ``reference`` — the authors' harness as ``shared/reference/contextecho/PROTOCOL.md``
  describes it (:mod:`.reference`): one rendered user blob + acknowledgement, the
  446-character filler template, the harness judge prompt (read at run time) and
  parser, the e11 scorers, the harness statistics (:mod:`contextecho.stats.harness`).

Each entry carries ``name``, ``version`` and ``sha256`` (the content hash of its
committed texts); :meth:`Protocol.key` is what a request key and a run manifest record.
An unknown name raises :class:`~.registry.UnknownNameError` listing the valid ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..engine.registry import Registry
from ..engine.hashing import content_hash


@dataclass(frozen=True)
class SamplingDefaults:
    """Target and judge request settings; ``None`` temperature = provider default."""

    probe_max_tokens: int
    stressor_max_tokens: int
    judge_max_tokens: int
    temperature: float | None
    window_chars: int | None = None


@dataclass(frozen=True)
class Protocol:
    name: str
    version: str
    description: str
    sampling: SamplingDefaults
    texts: Callable[[], Any] = field(repr=False, compare=False)

    @property
    def sha256(self) -> str:
        """Content hash of every committed text of the protocol."""
        return content_hash(self.texts())

    def key(self) -> dict[str, str]:
        """``{protocol, protocol_version, protocol_sha256}`` for request keys and manifests."""
        return {"protocol": self.name, "protocol_version": self.version,
                "protocol_sha256": self.sha256}


def _contextecho_texts() -> dict:
    from .versions import instrument_versions
    return instrument_versions()


def _reference_texts() -> dict:
    from .reference.texts import texts
    return texts()


def _contextecho_version() -> str:
    # One version string for the whole set: the sets' own versions, joined.
    from . import contracts, filler, interventions, probes, rubric, stressors
    return "+".join(m.VERSION for m in (probes, rubric, stressors, contracts, interventions, filler))


PROTOCOLS: Registry[Protocol] = Registry("protocol")
PROTOCOLS.add("contextecho", Protocol(
    "contextecho", _contextecho_version(),
    "this project's instruments: chat-turn prefixes, structure-matched filler, our rubric, "
    "parser and scorers",
    SamplingDefaults(probe_max_tokens=300, stressor_max_tokens=300, judge_max_tokens=64,
                     temperature=0.0, window_chars=30_000),
    _contextecho_texts))


def _reference_protocol() -> Protocol:
    from .reference.judge import JUDGE_MAX_TOKENS
    from .reference.texts import PROBE_MAX_TOKENS, STRESSOR_MAX_TOKENS, VERSION
    from .reference.transcript import DEFAULT_MAX_CHARS
    return Protocol(
        "reference", VERSION,
        "the authors' ContextEcho harness (Accenture/ContextEcho 5f8dba3): one rendered user "
        "blob + acknowledgement, template filler, harness judge and parser, e11 scorers",
        SamplingDefaults(probe_max_tokens=PROBE_MAX_TOKENS, stressor_max_tokens=STRESSOR_MAX_TOKENS,
                         judge_max_tokens=JUDGE_MAX_TOKENS, temperature=None,
                         window_chars=DEFAULT_MAX_CHARS),
        _reference_texts)


PROTOCOLS.add("reference", _reference_protocol())


def protocol(name: str) -> Protocol:
    """The protocol called ``name`` (unknown names list the valid ones)."""
    return PROTOCOLS.get(name)
