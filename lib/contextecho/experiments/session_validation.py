"""Session validation: is one session usable for the drift measurement?

The harness's intake check for a donated session (``experiments/e18_session_validation/
run.py``; ``runs/README.md``, family ``session_validation``), run by our own cells and
runner: the protocol's cells at evenly spaced positions of the session (under ``reference``
e18's plan, ``round(i·(n−1)/(N−1))`` over e18's own ``[role] text`` rows of a Claude Code
or Codex CLI session, :mod:`contextecho.echo.reference.role_rows`; under ``contextecho``
our ``uniform`` positions), the real prefix against its length-matched filler, every probe
answered and judged by the first judge (:func:`~.spine.run_grid`), then the harness's
summary (:func:`contextecho.stats.session_validation.session_validation_summary`) per
target: valid cells, arm means, the per-position trajectory, what is missing, and whether
the session is acceptable.

``quick`` is e18's ``--quick``: 3 positions (unless ``n_positions`` is given) and the
Coding-Self probes C01-C05. The harness's own settings are :data:`HARNESS` (its target,
its judge, 30,000 characters, 600 / 400 tokens). A stored cell is one the harness would
have written: the target answered and the judge's verdict parsed (a −1 is stored and
counted invalid; a verdict whose parse raised, or a failed call, stores nothing). Beside
the summary each target gets e18's ``validation_manifest.json`` record
(:func:`manifests`; :func:`dry_run` gives them without a call).

    from contextecho.experiments import session_validation as sv
    result = sv.validate_session(sv.Parameters(session="rollout.jsonl", quick=True))
    result.summaries[target]["acceptable"]
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..echo.cells import Cell
from ..echo.reference.judge import JUDGE_MAX_TOKENS
from ..echo.reference.providers import harness_provider
from ..echo.reference.role_rows import QUICK_POSITIONS, VALIDATION, VALIDATION_POSITIONS, e18_rows
from ..echo.reference.texts import PROBE_MAX_TOKENS
from ..echo.reference.transcript import DEFAULT_WINDOW
from ..engine.calls import Transport
from ..engine.verdicts import INVALID, OK
from ..sessions.loader import load_session
from ..sessions.model import Session
from ..stats.session_validation import ValidationCell, session_validation_summary
from . import spine
from .parameter_sets import JudgedParameters, REFERENCE_JUDGE
from .item_ids import PROBE_IDS
from ..echo.protocol import Positions, Protocol
from ..echo.protocols import protocol_of
from .protocol_record import protocol_record
from .selection import build
from .parameters import count

NAME = "session_validation"
#: e18's probes: every probe, or with ``--quick`` the Coding-Self battery (C01-C05).
ALL_PROBES, QUICK_PROBES = ("all",), ("coding_self",)
#: The harness's settings for this check (e18's defaults: its target and judge, ``--max-chars``,
#: ``run_one_probe``'s 600 tokens, the judge's 400).
HARNESS = {"targets": ("anthropic/claude-sonnet-4-5",), "judges": (REFERENCE_JUDGE,),
           "window": DEFAULT_WINDOW, "max_tokens": PROBE_MAX_TOKENS, "judge_max_tokens": JUDGE_MAX_TOKENS,
           "protocol": "reference"}


@dataclass(frozen=True)
class Parameters(JudgedParameters):
    session: str = ""
    label: str = ""
    quick: bool = False
    n_positions: int = 0
    probes: tuple[str, ...] = ()

    HELP = {**JudgedParameters.HELP,
            "session": "the session file (Claude Code or Codex CLI JSONL)",
            "label": "a short name for the session in the outputs (default: the file's stem)",
            "quick": "the fast intake check: 3 positions and the Coding-Self probes C01-C05",
            "n_positions": "evenly spaced positions (0: 12, or 3 when quick)",
            "probes": "probe ids or batteries (empty: all, or coding_self when quick)"}
    # 1 is let through: the plan refuses it with e18's own error (fewer than two positions)
    RANGES = {**JudgedParameters.RANGES, "n_positions": count(zero="12, or 3 when quick"),
              "probes": PROBE_IDS}

    @property
    def positions(self) -> int:
        return self.n_positions or (QUICK_POSITIONS if self.quick else VALIDATION_POSITIONS)

    @property
    def items(self) -> tuple[str, ...]:
        return self.probes or (QUICK_PROBES if self.quick else ALL_PROBES)

    @property
    def name(self) -> str:
        return self.label or Path(self.session).stem


@dataclass(frozen=True)
class SessionValidation:
    """A validation run: its cells' frame, and per target e18's manifest record and the
    harness's summary."""

    frame: pd.DataFrame
    manifests: Mapping[str, dict]
    summaries: Mapping[str, dict]
    protocol: Protocol

    @property
    def complete(self) -> bool:
        """Whether every expected cell was stored (e18's exit status 0)."""
        return all(s["json_files"] == s["expected_cells"] for s in self.summaries.values())


def start(params: Parameters) -> spine.Run:
    """Open the run: outputs folder, run log, every model's route checked, the session loaded."""
    if not params.session:
        raise ValueError("session validation needs a session file (parameter session)")
    session = load_session(Path(params.session))
    proto = protocol_of(params)
    return spine.start(NAME, params, models=params.targets + params.judges[:1], protocol=proto,
                       record=protocol_record(proto, params), sessions=lambda: [session])


def build_cells(protocol: Protocol, params: Parameters, sessions: Sequence[Session],
                redact: bool = True) -> list[Cell]:
    """The protocol's cells of the check: every target × position × arm × probe
    (``redact=False``: the prefix as the harness sends it, for a dry run or the run-level
    conformance replay, neither of which leaves the process)."""
    return build(protocol, params, NAME, sessions, params.items, positions=Positions(VALIDATION, n=params.positions),
                 redact=redact)


def grid(run: spine.Run, redact: bool = True) -> list[Cell]:
    """The run's cells (:func:`build_cells`)."""
    return build_cells(run.protocol, run.params, run.sessions, redact)


def judged(run: spine.Run, cells: Sequence[Cell], redact: bool = True) -> pd.DataFrame:
    """Ask every cell and judge every answer with the first judge (``redact=False``: cells
    built unredacted, for a replay that never leaves the process; the judge is shown the
    answers as they are too)."""
    p: Parameters = run.params
    return spine.run_grid(run, cells, judges=list(p.judges[:1]), judge_max_tokens=p.judge_max_tokens,
                          redact=redact)


def stored_cells(frame: pd.DataFrame, protocol: Protocol) -> list[ValidationCell]:
    """The cells the harness would have stored (module doc), with the score it stores
    (:meth:`~contextecho.echo.protocol.Protocol.stored_value`: none where its parse raised)."""
    out = []
    for row in frame.to_dict("records"):
        if row["verdict_status"] not in (OK, INVALID):
            continue
        score = protocol.stored_value(row)
        if score is not None:
            out.append(ValidationCell(row["position"], row["arm"], row["item"], score))
    return out


def manifests(params: Parameters, cells: Sequence[Cell], created: float | None = None) -> dict[str, dict]:
    """Per target, e18's ``validation_manifest.json`` record (``run.py:147-170``) of the cells
    asked: the harness's provider and model ids, e18's count of usable rows, the positions."""
    n_rows = len(e18_rows(params.session))
    out = {}
    for target in params.targets:
        own = [c for c in cells if c.target == target]
        positions = list(dict.fromkeys((c.position, c.step) for c in own))
        n_probes = len({c.item.id for c in own})
        provider, model_id = harness_provider(target)
        out[target] = {
            "label": params.name, "session_path": str(Path(params.session).expanduser()), "target": model_id,
            "provider": provider, "judge": harness_provider(params.judges[0])[1], "n_turns": n_rows,
            "n_positions": len(positions), "n_probes": n_probes, "quick": bool(params.quick),
            "max_chars": params.window, "positions": [{"label": label, "turn_index": step} for label, step in positions],
            "cells_expected": len(positions) * n_probes * 2,
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))}
    return out


def dry_run(params: Parameters) -> dict[str, dict]:
    """e18's ``--dry-run``: the manifests of the cells the check would ask, no call made
    (a session too short for the positions raises ``ShortSession``, a ``ValueError``)."""
    return manifests(params, build_cells(protocol_of(params), params, [load_session(Path(params.session))],
                                         redact=False))


def summarise(run: spine.Run, cells: Sequence[Cell], frame: pd.DataFrame) -> SessionValidation:
    """Per target: e18's manifest and the harness's summary of the stored cells, written as
    ``results/validation_manifest.json`` and ``results/summary.json`` (keyed by target)."""
    p: Parameters = run.params
    planned = manifests(p, cells)
    summaries = {}
    for target, manifest in planned.items():
        own = frame[frame["target"] == target] if len(frame) else frame
        summaries[target] = session_validation_summary(
            stored_cells(own, run.protocol), root=str(run.out.directory), expected_positions=manifest["n_positions"],
            probes=manifest["n_probes"])
    results = run.out.directory / "results"
    for stem, value in (("validation_manifest", planned), ("summary", summaries)):
        (results / f"{stem}.json").write_text(json.dumps(value, indent=2, default=str) + "\n")
    return SessionValidation(frame, planned, summaries, run.protocol)


def validate_session(params: Parameters, *, transport: Transport | None = None,
                     redact: bool = True) -> SessionValidation:
    """The whole check (module doc): start, cells, judged answers, summary."""
    run = start(params)
    if transport is not None:
        run.transport = transport
    cells = grid(run, redact=redact)
    result = summarise(run, cells, judged(run, cells, redact))
    spine.finish(run)
    return result
