"""What a protocol is: the one interface every instrument set of ContextEcho implements.

A protocol fixes how a cell is built and read, and nothing outside it asks which protocol is
running (``DESIGN.md``, "Protocols"): the sessions it reads, where it snapshots them for what an
experiment asks (:class:`Positions`) and the cells it asks there (:class:`Grid`), the requests
those cells and their judges hold, what a target's or a judge's reply is to it, how it scores an
item and reads a :class:`Verdict` (with its own columns, and the failure treatment its tables
read beside ours), which stored rows hold a result, how it asks the tool-call continuation,
and what a run's settings shorten of its own. A run looks it up once and carries the object.

The implementations are :class:`contextecho.echo.instruments.ContextEchoProtocol` (ours)
and :class:`contextecho.echo.reference.protocol.ReferenceProtocol` (the authors' harness);
:mod:`.protocols` registers them by name. Each carries ``name``, ``version`` and
``sha256`` (the content hash of its texts); :meth:`Protocol.key` is what a request key
and a run manifest record.
"""
from __future__ import annotations

import dataclasses
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Mapping, Sequence

from ..engine.hashing import content_hash
from ..engine.model_request import ModelRequest
from ..engine.record import CallRecord
from ..sessions.loader import load_session
from ..sessions.model import Session
from ..sessions.positions import Position
from ..engine.registry import UnknownNameError
from ..engine.token_distribution import read_mode
from ..engine.verdicts import OK
from .cells import Cell
from .items import Item
from .rubric import Rubric

if TYPE_CHECKING:
    from .continuation import ContinuationRules
    from .fingerprint import FingerprintSet
    from .reference.judge import JudgePrompt

#: A setting's value, as a run's settings and a protocol's own are compared and recorded.
Setting = int | float | str | None


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on a probe's response or a scorer's on a stressor's or contract's:
    ``status`` ok, invalid or error (:mod:`contextecho.engine.verdicts`), ``score`` NaN unless
    ok, ``passed`` a scored item's; a protocol's own verdict adds its columns as fields."""

    status: str
    score: float
    reason: str
    passed: bool | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def columns(self) -> dict[str, object]:
        """The protocol's own columns of this verdict (its fields beyond these four)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)[4:]}


@dataclass(frozen=True)
class SamplingDefaults:
    """Target and judge request settings; ``None`` temperature = provider default."""

    probe_max_tokens: int
    stressor_max_tokens: int
    judge_max_tokens: int
    temperature: float | None
    window_chars: int | None = None


#: The arms of every drift gap (filler − real): what a grid asks unless told otherwise.
PAIRED_ARMS = ("real", "filler")

#: The position schemes an experiment can ask for (:class:`Positions`).
SCHEMES = ("panel", "deciles", "late", "onset", "compaction", "validation", "crosssession", "landmarks")


@dataclass(frozen=True)
class Positions:
    """Where an experiment snapshots each session, in words each protocol reads its own way
    (:meth:`Protocol.positions`): a scheme of :data:`SCHEMES` with its count ``n`` (of
    positions; of events for ``compaction``), the onset's ``steps`` and the ``events`` to
    anchor on, or the positions ``chosen`` for each session (by session id)."""

    scheme: str = "panel"
    n: int = 0
    steps: tuple[int, ...] = ()
    events: tuple[str, ...] = ("compaction",)
    chosen: Mapping[str, Sequence[Position]] | None = None


@dataclass(frozen=True)
class Grid:
    """What an experiment asks a protocol for: the items, the positions and the budgets."""

    items: tuple[str, ...]
    positions: Positions
    replicates: int = 1
    window: int = 30_000
    max_tokens: int = 600
    stressor_max_tokens: int | None = None
    temperature: float | None = 0.0
    #: Redact a session before a hosted target sees it (off only for the run-level
    #: conformance replay, which never leaves the process).
    redact: bool = True
    #: How probes are asked: ``framed`` (the framing line, then the probe) or ``bare``.
    framing: str = "framed"
    #: The arms asked at every position: the paired real and filler by default, and any of
    #: the protocol's other arms (:attr:`Protocol.arms`).
    arms: tuple[str, ...] = PAIRED_ARMS
    #: What is inserted between the prefix and every item, in the protocol's own names
    #: (``contextecho``: :data:`~contextecho.echo.interventions.INTERVENTIONS`; ``reference``:
    #: the harness's anchors, :mod:`~contextecho.echo.reference.anchors`); ``none``: nothing.
    intervention: str = "none"


@dataclass(frozen=True)
class JudgeSetup:
    """How a run's judges judge under a protocol: the rubric's identity (its version and
    hash, as every judged row records them), where the score is written in a verdict (the
    prefill a backend may be given, and the pattern that finds it in a generated verdict),
    and the protocol's own judge texts (``prompt``: the harness's, read at run time)."""

    rubric_version: str
    rubric_hash: str
    prefill: str
    label: re.Pattern
    prompt: "Rubric | JudgePrompt | None" = field(default=None, compare=False)
    #: Which of the protocol's judge call sites this is (:attr:`Protocol.judge_variants`;
    #: ``""``: the protocol's judge).
    variant: str = ""
    #: How many calls in all a judge's reply that cannot be read is asked for, each sent at
    #: once after the last (1: one call, its transient errors retried by the transport).
    attempts: int = 1


class Protocol(ABC):
    """One instrument set of ContextEcho (module doc)."""

    name: str
    version: str
    description: str
    sampling: SamplingDefaults
    #: The session formats whose transcripts this protocol can render.
    formats: tuple[str, ...]
    #: The protocol's other judge call sites, by name (:meth:`judging`'s ``variant``).
    judge_variants: tuple[str, ...] = ()
    #: What a position's step counts in the protocol's cells (an axis label says it).
    step_unit: str = "agent step"
    #: The column of the score its harness stores for a judged cell, a failed verdict's −1
    #: included, for a table to average the failures in beside ours (``None``: none kept).
    stored_score: str | None = None
    #: The column of a second scorer's score beside the protocol's on a scored item.
    beside_score: str | None = None
    #: The result columns of the protocol's own (its verdicts' fields beyond :class:`Verdict`'s).
    result_columns: tuple[str, ...] = ()
    #: How the protocol asks the tool-call continuation (:mod:`.continuation`).
    continuation: "ContinuationRules"
    #: The judge-free fingerprint its responses are read with (:mod:`.fingerprint`).
    fingerprint: "FingerprintSet"
    #: The run parameters that are the protocol's own options (:meth:`configured`).
    options: ClassVar[tuple[str, ...]] = ()
    #: The arms its cells can be asked in (:attr:`Grid.arms`).
    arms: ClassVar[tuple[str, ...]] = PAIRED_ARMS
    #: Whether the authors' released cells answer its calls (a run with ``released``,
    #: :mod:`.reference.released_answers`): only the calls of the harness's own protocol.
    answered_by_release: ClassVar[bool] = False

    @abstractmethod
    def texts(self) -> Mapping[str, object]:
        """Every committed text of the protocol (what :attr:`sha256` hashes)."""

    @property
    def sha256(self) -> str:
        """Content hash of every committed text of the protocol."""
        return content_hash(self.texts())

    def key(self) -> dict[str, str]:
        """``{protocol, protocol_version, protocol_sha256}`` for request keys and manifests."""
        return {"protocol": self.name, "protocol_version": self.version,
                "protocol_sha256": self.sha256}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.version!r})"

    def configured(self, params: object) -> "Protocol":
        """This protocol with its :attr:`options` set from a run's parameters (those they name)."""
        given = {name: getattr(params, name) for name in self.options if hasattr(params, name)}
        return dataclasses.replace(self, **given) if given else self

    # -------------------------------------------------------------- cells
    @abstractmethod
    def positions(self, session: Session, asked: Positions) -> tuple[Position, ...]:
        """The positions of ``session`` for what an experiment ``asked`` (:class:`Positions`)."""

    @abstractmethod
    def offered(self, session: Session, asked: Positions) -> tuple[int, str] | None:
        """How many positions ``session`` offers for ``asked`` when its count ``n`` is the
        most asked for, and what they are (``(12, "agent steps")``); ``None``: the scheme
        takes no such count."""

    @abstractmethod
    def build_cells(self, experiment: str, targets: Sequence[str], sessions: Sequence[Session],
                    grid: Grid) -> list[Cell]:
        """Every cell of the grid (targets × sessions × positions × arms × items × replicates)."""

    def read_session(self, path: Path, parsed: Session | None = None) -> Session:
        """The session at ``path`` as this protocol's cells read it, read once (by default
        our parser, :func:`contextecho.sessions.loader.load_session`; ``parsed``: our
        parser's reading of the same file where the caller holds it)."""
        return parsed if parsed is not None else load_session(path)

    def check_events(self, event_types: Sequence[str]) -> None:
        """Raise ``ValueError`` when the protocol cannot anchor positions on these events."""

    # -------------------------------------------------------------- replies
    def reply(self, record: CallRecord, cell: Cell) -> str | None:
        """The text of ``cell``'s target reply this protocol judges or scores; ``None``: the
        cell failed (an error record: never a score)."""
        return record.response_text if record.ok else None

    def judge_reply(self, record: CallRecord, model: str) -> str | None:
        """The text of a judge's reply this protocol reads as a verdict; ``None``: the judge
        call failed (the row is an error)."""
        return record.response_text if record.ok else None

    # -------------------------------------------------------------- scoring and judging
    @abstractmethod
    def score(self, item: Item, response: str) -> Verdict:
        """The verdict of a scored (not judged) item's response, ``passed`` set."""

    @abstractmethod
    def judging(self, judges: Sequence[str], rubric: Rubric, variant: str = "") -> JudgeSetup:
        """The judges' rubric identity and score position for a run (module doc); ``variant``:
        one of :attr:`judge_variants` (``""``: the protocol's judge)."""

    def check_variant(self, variant: str) -> None:
        """Raise :class:`UnknownNameError` unless ``variant`` names one of the protocol's judges."""
        if variant and variant not in self.judge_variants:
            raise UnknownNameError(f"{self.name} judge variant", variant, list(self.judge_variants))

    @abstractmethod
    def judge_params(self, max_tokens: int) -> dict[str, object]:
        """A run's judge sampling parameters for a budget of ``max_tokens`` new tokens."""

    @abstractmethod
    def judge_request(self, setup: JudgeSetup, judge: str, probe: str, response: str,
                      params: Mapping[str, object], cell_key: str) -> ModelRequest:
        """The judge call for the ``response`` to ``probe`` (its bare text) of the cell keyed
        ``cell_key`` (or what stands for one: a labelled or stored response) under the run's
        judge ``params`` (:meth:`judge_params`; the protocol's provider rules may change them
        per judge)."""

    @abstractmethod
    def read_verdict(self, text: str | None, setup: JudgeSetup | None = None) -> Verdict:
        """The verdict of a judge's reply under ``setup`` (default: the protocol's judge).
        ``text`` None: the judge gave no reply to read (the protocol's own columns say what it
        keeps of such a verdict)."""

    def distribution_mode(self, judge: str) -> str:
        """How ``judge``'s score distribution is read beside its verdict
        (:mod:`contextecho.engine.token_distribution`: prefill, generated, verdict or
        discrete); by default as the judge's backend allows (:func:`read_mode`)."""
        return read_mode(judge)

    @abstractmethod
    def labelled_examples(self) -> list[dict[str, object]]:
        """The labelled examples of the protocol's judge prompt, as calibration items
        ``{id, probe_id, probe, response, score}`` (:mod:`.calibration`)."""

    def stored_value(self, row: Mapping[str, object]) -> int | None:
        """The score a harness stores for a judged row whose verdict was read (ok or invalid):
        the verdict, −1 for an invalid one; ``None``: the harness stores no cell."""
        return int(row["score"]) if row["verdict_status"] == OK else -1

    def holds_result(self, row: Mapping[str, object]) -> bool:
        """Whether a row of a run's frame holds its cell's result (by default: a valid
        verdict or score); a run resumed from the stored results neither asks nor judges
        such a cell again (:func:`contextecho.experiments.spine.run_grid`)."""
        return row.get("verdict_status") == OK

    # -------------------------------------------------------------- reporting
    def shortened(self, used: Mapping[str, Setting]) -> list[str]:
        """The settings of ``used`` a run set below the protocol's own (none by default:
        a protocol whose settings are the run's parameters shortens nothing)."""
        return []

    def settings(self) -> dict[str, Setting]:
        """The protocol's own window, token budgets and temperature, by setting name."""
        s = self.sampling
        return {"window_chars": s.window_chars, "probe_max_tokens": s.probe_max_tokens,
                "stressor_max_tokens": s.stressor_max_tokens, "judge_max_tokens": s.judge_max_tokens,
                "temperature": s.temperature if s.temperature is not None else "provider default"}
