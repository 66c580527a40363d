"""What a run asks: its sessions and the cells of its grid, under the run's protocol.

Counts are never capped silently: asking for more sessions than the corpus has
(``n_sessions``) or more positions than any chosen session offers (``n_positions``) is a
:class:`~contextecho.experiments.parameters.RangeError` naming the parameter and its valid
range. These ranges depend on the data, so they are checked where the run reads it: the
sessions when they are selected (at the run's start), the positions when the cells are
built, before any target is asked (a judge's calibration, which reads no session, may
come first). A session with fewer positions than asked gives all it has.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..echo.protocol import PAIRED_ARMS, Grid, Positions, Protocol
from ..sessions.loader import load_session
from ..sessions.model import Session
from ..sessions.selection import FORMATS, corpus_rows, session_file
from .parameters import Interval, RangeError


def select_sessions(n: int, *, protocol: Protocol | None = None, min_compactions: int = 0,
                    events: Sequence[str] = (), corpus: Path | None = None) -> list[Session]:
    """The ``n`` longest openly licensed sessions (0 = all), of the formats the run's protocol
    reads (``reference``: Claude Code), each read once the protocol's way
    (:meth:`~contextecho.echo.protocol.Protocol.read_session`; a design without a protocol:
    every format, by our parser; ``events``: see
    :func:`~contextecho.sessions.selection.corpus_rows`)."""
    rows = corpus_rows(min_compactions=min_compactions, events=events,
                       formats=protocol.formats if protocol else FORMATS)
    if n > len(rows) > 0:
        said = [f"protocol {protocol.name}"] if protocol else []
        said += [f"events {', '.join(events)}"] if events else []
        said += [f"at least {min_compactions} compaction(s)"] if min_compactions else []
        rule = Interval(1, len(rows), zero="all", high_text="the usable sessions of the corpus for this "
                        f"selection ({', '.join(said) or 'every format'})")
        raise RangeError("the session selection", [f"parameter 'n_sessions': {n} is out of range; "
                                                    f"valid: {rule.valid(n, None)}"])
    rows = rows if n <= 0 else rows[:n]
    if not rows:
        raise RuntimeError("no usable session in the corpus manifest")
    read = protocol.read_session if protocol else load_session
    return [read(session_file(r["file"], corpus)) for r in rows]


def build(protocol: Protocol, p: Any, experiment: str, sessions: Sequence[Session], items: Sequence[str], *,
          positions: Positions, replicates: int = 1, stressor_max_tokens: int | None = None,
          redact: bool = True, framing: str = "framed", arms: Sequence[str] = PAIRED_ARMS,
          intervention: str = "none") -> list:
    """The experiment's cells in ``arms`` (real and filler unless told) under the run's ``protocol`` (``p``: the run's
    :class:`~contextecho.experiments.parameter_sets.JudgedParameters`; its
    :meth:`~contextecho.echo.protocol.Protocol.build_cells` over one
    :class:`~contextecho.echo.protocol.Grid`) at the ``positions`` asked, which the protocol
    reads its own way; an arm the protocol cannot build is a :class:`ValueError` naming those it
    can (:attr:`~contextecho.echo.protocol.Protocol.arms`). ``intervention``: what goes between
    the prefix and every item, in the protocol's names (:attr:`~contextecho.echo.protocol.Grid.intervention`).
    ``redact=False`` (run-level conformance only, whose replay never leaves
    the process) sends a hosted target the session unredacted, as the harness does."""
    asked = getattr(p, "n_positions", 0)  # the parameter, when it is what asks the positions
    if asked > 0 and positions.n == asked:
        offered = {s.session_id: protocol.offered(s, positions) for s in sessions}
        if offered and None not in offered.values():
            what = next(iter(offered.values()))[1]
            _check_positions(experiment, asked, {sid: n for sid, (n, _) in offered.items()}, what)
    unknown = [arm for arm in arms if arm not in protocol.arms]
    if unknown:
        raise ValueError(f"{experiment}: the {protocol.name} protocol has no arm {', '.join(unknown)} "
                         f"(its arms: {', '.join(protocol.arms)})")
    grid = Grid(tuple(items), positions, replicates=replicates, window=p.window, max_tokens=p.max_tokens,
                stressor_max_tokens=stressor_max_tokens, temperature=p.temperature, redact=redact, framing=framing,
                arms=tuple(arms), intervention=intervention)
    return protocol.build_cells(experiment, list(p.targets), sessions, grid)


def _check_positions(experiment: str, asked: int, offered: Mapping[str, int], what: str) -> None:
    """``n_positions`` is at most what the chosen session offering most offers (``offered``:
    session id -> how many); more is a :class:`RangeError` naming the parameter and range."""
    most = max(offered.values(), default=0)
    if asked <= most:
        return
    each = ", ".join(f"S{i} {n}" for i, n in enumerate(offered.values(), start=1))
    rule = Interval(1, most, high_text=f"the most {what} a chosen session offers ({each})")
    raise RangeError(experiment, [f"parameter 'n_positions': {asked} is out of range; "
                                  f"valid: {rule.valid(asked, None)}"])



def cell_identity(cell, filed: Callable[[str], str] | None = None) -> tuple:
    """A cell as a results folder names it: target, session, position, arm, intervention (as
    ``filed`` names its folder: two designs may share one, as the harness's two ``A_COMBINED``
    runners do, ``runs/README.md`` behaviour 11), item and replicate, whatever request asks it."""
    intervention = filed(cell.intervention) if filed else cell.intervention
    return (cell.target, cell.session, cell.position, cell.arm, intervention, cell.item.id, cell.replicate)


def stored_identities(protocol: Protocol, cells: Sequence, frame: pd.DataFrame,
                      filed: Callable[[str], str] | None = None) -> set[tuple]:
    """The identities (:func:`cell_identity`) of ``cells`` whose row in an earlier run's ``frame``
    holds a result (:meth:`~contextecho.echo.protocol.Protocol.holds_result`)."""
    held = set(frame[frame.apply(protocol.holds_result, axis=1).astype(bool)]["key"]) if len(frame) else set()
    return {cell_identity(c, filed) for c in cells if c.key in held}


def unstored(cells: Sequence, stored: set[tuple], filed: Callable[[str], str] | None = None) -> list:
    """``cells`` but those an earlier run stored under the same identity (``stored``, from
    :func:`stored_identities`): a resumed run skips a cell on disk whatever request wrote it, and
    asks a cell lost earlier again, with its own request (the harness's runners skip the files on
    disk: an A-anchor cell one runner lost, the other redoes under its own system prompt)."""
    return [c for c in cells if cell_identity(c, filed) not in stored]
