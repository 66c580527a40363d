"""The sessions and positions of a run on a deployer's own transcripts (the audit's and the
release comparison's): which files can be read under the run's protocol (each one left out
named with why), the candidate positions of a session (its start, each decile, the last
step before and the first after each compaction) and those a size asks.

Sizes: ``quick`` asks the start and the first compaction's pre and post (without one: the
middle and the last decile), ``full`` every candidate (:data:`POSITIONS`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from ..echo.protocol import Positions, Protocol
from ..echo.protocols import protocol_of
from ..sessions.corpus import scan
from ..sessions.errors import SessionError
from ..sessions.loader import load_session
from ..sessions.model import Session
from ..sessions.positions import Position
from .item_ids import PROBE_IDS, STRESSOR_IDS
from .parameter_sets import JudgedParameters
from .parameters import Interval, OneOf, RangeError, count

SIZES = ("quick", "full")
#: Positions a session each size asks by default (0: every candidate).
POSITIONS = {"quick": 3, "full": 0}
#: The probes and S2 wordings each size asks by default.
SIZE_ITEMS = {"quick": {"probes": ("coding_self",), "stressors": ("S2#01",)},
              "full": {"probes": ("all",), "stressors": ("S2",)}}


@dataclass(frozen=True)
class SessionRunParameters(JudgedParameters):
    """What a run over a folder of the deployer's own sessions is asked (the audit's and the
    release comparison's): the sessions, how many, the size, the positions a session, the
    probes and S2 wordings (empty: the size's) and the drift gap's battery."""

    sessions: str = ""
    n_sessions: int = 0
    size: str = "quick"
    n_positions: int = 0
    probes: tuple[str, ...] = ()
    stressors: tuple[str, ...] = ()
    headline: str = "coding_self"

    HELP = {**JudgedParameters.HELP,
            "sessions": "a folder of Claude Code / Codex CLI transcripts, or one file",
            "n_sessions": "the longest sessions read (0: every one found)",
            "size": "quick (the intake check: 3 positions, the Coding-Self probes, one S2 wording) or full "
                    "(every probe, every position, the S2 stressor's ten wordings)",
            "n_positions": "positions per session (0: 3 when quick, every candidate when full)",
            "probes": "probe ids or batteries (empty: the size's)",
            "stressors": "S2 wordings (empty: the size's)",
            "headline": "battery of the drift gap (the paper's: coding_self)"}
    RANGES = {**JudgedParameters.RANGES, "n_sessions": count(zero="every session found"),
              "size": OneOf(SIZES, "size"), "n_positions": count(zero="the size's"), "probes": PROBE_IDS,
              "stressors": STRESSOR_IDS, "headline": PROBE_IDS}

    @property
    def items(self) -> tuple[str, ...]:
        """The items asked: the probes, then the S2 wordings (the size's where none is named)."""
        return (self.probes or SIZE_ITEMS[self.size]["probes"]) + (self.stressors or SIZE_ITEMS[self.size]["stressors"])


@dataclass(frozen=True)
class Sessions:
    """The sessions an audit reads under the run's ``protocol`` (looked up here, the run's first
    stage): each file, read the protocol's way (``read``) and ours (``ours``: the A-anchor's
    cells); the files it cannot audit, each with why."""

    protocol: Protocol
    files: tuple[Path, ...]
    read: tuple[Any, ...]
    ours: tuple[Session, ...]
    skipped: tuple[tuple[str, str], ...]
    root: Path

    def shown(self, path: Path) -> str:
        """A file as the report names it: relative to the folder given."""
        return path.relative_to(self.root).as_posix() if path != self.root else path.name


def choose_sessions(params: Any, who: str = "audit") -> Sessions:
    """Read the sessions of ``params`` (``sessions``: a folder's transcripts, longest first,
    or one file; ``n_sessions``: the longest, 0 every one; ``protocol``) for the experiment
    ``who``; a file that cannot be audited is listed with its reason; none left is an error
    saying why."""
    source = params.source
    if source.is_file():
        root, files, problems = source.parent, [source], []
    elif source.is_dir():
        root = source
        files, problems = scan(source)
        files = [f for f in files if "subagents" not in f.relative_to(source).parts]
    else:
        hint = " (run `python -m contextecho import-sessions`, or give a folder)" if not params.sessions else ""
        raise FileNotFoundError(f"{who}: sessions: {source} is neither a file nor a folder{hint}")
    proto = protocol_of(params)
    found, skipped = [], list(problems)
    for path in files:
        rel = path.relative_to(root).as_posix()
        try:
            ours = load_session(path)
        except (SessionError, OSError, ValueError) as exc:
            skipped.append((rel, f"not read: {exc}"))
            continue
        if ours.format not in proto.formats:
            skipped.append((rel, f"a {ours.format} session: the {proto.name} protocol reads "
                                 f"{', '.join(proto.formats)} only (--protocol contextecho reads both)"))
        elif ours.n_agent_steps == 0:
            skipped.append((rel, "no agent step to snapshot"))
        else:
            found.append((path, ours))
    found.sort(key=lambda f: (-f[1].n_agent_steps, f[0].as_posix()))
    if params.n_sessions > len(found) > 0:
        rule = Interval(1, len(found), zero="every session found", high_text=f"the sessions in {source} "
                        f"that can be audited under {proto.name}")
        raise RangeError(who, [f"parameter 'n_sessions': {params.n_sessions} is out of range; "
                                f"valid: {rule.valid(params.n_sessions, None)}"])
    chosen = found[:params.n_sessions] if params.n_sessions else found
    if not chosen:
        why = "; ".join(f"{f}: {w}" for f, w in skipped[:5]) or "no .jsonl transcript in it"
        raise ValueError(f"{who}: no session to audit in {source} ({why})")
    read = [proto.read_session(path, ours) for path, ours in chosen]
    return Sessions(proto, tuple(p for p, _ in chosen), tuple(read), tuple(o for _, o in chosen), tuple(skipped),
                    root)


# ------------------------------------------------------------------------------ positions
def candidates(session: Session, protocol: Protocol) -> list[tuple[str, int]]:
    """Every position an audit may snapshot, in order along the session: the start, each
    decile, the last step before and the first after each compaction, as ``(label, step)``,
    the protocol's landmarks (:class:`~contextecho.echo.protocol.Positions`; under
    ``reference`` the harness's turns and labels: its start is turn 100). Two at one step
    keep the first the protocol lists."""
    at: dict[int, str] = {}
    for position in protocol.positions(session, Positions("landmarks")):
        at.setdefault(position.step, position.label)
    return [(label, step) for step, label in sorted(at.items())]


def kind_of(label: str) -> str:
    """What a position label marks: start, compaction or decile."""
    if label in ("start", "P0_start"):
        return "start"
    return "compaction" if re.fullmatch(r"c\d+_(pre|post)", label) else "decile"


def choose_positions(listed: Sequence[tuple[str, int]], size: str, n: int) -> list[tuple[str, int]]:
    """The positions asked of one session's candidates ``listed``: ``quick`` the start and
    the first compaction's pre and post (else the middle and last decile), ``full`` every
    one; ``n`` (0: the size's) positions, the quick choice first, then evenly along the rest."""
    n = n or POSITIONS[size] or len(listed)
    if size == "quick":
        labels = [label for label, _ in listed]
        pair = ["c1_pre", "c1_post"] if "c1_pre" in labels or "c1_post" in labels else \
            [labels[i] for i in (len(labels) // 2, len(labels) - 1)]
        start = [label for label in labels if kind_of(label) == "start"][:1]
        first = [c for c in listed if c[0] in {*start, *pair}]
    else:
        first = []
    rest = [c for c in listed if c not in first]
    if len(first) < n and rest:
        k = min(n - len(first), len(rest))
        picks = sorted({round(i * (len(rest) - 1) / max(1, k - 1)) for i in range(k)}) if k > 1 else [len(rest) - 1]
        first += [rest[i] for i in picks]
    return sorted(first[:n], key=lambda c: c[1])



def asked_positions(positions: pd.DataFrame) -> Positions:
    """The positions asked of each session (``positions``: the rows of :func:`positions_frame`)."""
    asked = positions[positions["asked"]]
    return Positions(chosen={sid: tuple(Position(int(r.step), r.position, "audit") for r in g.itertuples())
                             for sid, g in asked.groupby("session_id", sort=False)})


def positions_frame(read: Sequence[Any], protocol: Protocol, labels: dict[str, str], size: str,
                    n_positions: int) -> pd.DataFrame:
    """One row per candidate position of each session read (``labels``: session id -> S1..),
    with ``asked`` true for those the ``size`` (and ``n_positions``) asks."""
    rows = []
    for session in read:
        listed = candidates(session, protocol)
        asked = choose_positions(listed, size, n_positions)
        for label, step in listed:
            rows.append({"session": labels[session.session_id], "session_id": session.session_id,
                         "position": label, "step": step, "kind": kind_of(label), "asked": (label, step) in asked})
    return pd.DataFrame(rows, columns=["session", "session_id", "position", "step", "kind", "asked"])
