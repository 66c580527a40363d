"""Cross-session drift (App. Fig. cross-session): does the drift of one session recur on others?

The protocol's real/filler cells (:func:`~.selection.build`) on several sessions, run by
:func:`~.spine.run_grid`, in two designs:

* **probes** (:func:`probe_cells`; the harness's ``e15_probes_at_crosscompaction/
  run_crosssession.py``): each session at 12 evenly spaced positions (``crosssession``: under
  ``reference`` run_crosssession's plan, rows ``min(n−1, i·(n//12))`` of its own ``[role] text``
  rows, each prefix rendered its way, :mod:`contextecho.echo.reference.role_rows`; under
  ``contextecho`` 12 uniform agent steps), or at the positions given per session (the figure's
  first session is the probe panel's, at its named positions); every probe asked in both arms
  and judged by the first judge (:func:`judged`).
* **s2** (:func:`s2_cells`; the harness's ``e09_cross_session/run.py``): the S2 paraphrases at
  the positions given per session, in both arms, scored, no judge (:func:`scored`); under
  ``reference`` sent by e09's request rules (``s2_requests``,
  :mod:`contextecho.echo.reference.s2_requests`). Its table is the harness's S2 compliance
  audit (:func:`contextecho.stats.judge_free.harness_compliance_audit`), each session under
  the audit's label for it (:func:`contextecho.stats.judge_free.harness_audit_session`).

The figure's table (``plotting/fig_app_crosssession.py``): per session (and target) the
trajectory :func:`per_position` — per position, in label order (the harness sorts its position
folders by name, so e08's ``P_pre_C2`` comes after ``P5_pre_C6``), the mean stored score of the
headline battery's probes (C01-C05) in each arm, −1 included, a position kept only when both
arms have a score — and the session's :func:`gap`, the mean of the filler position means minus
the mean of the real ones. :data:`FIGURE_TITLES` are the harness's panel titles.

    from contextecho.experiments import cross_session as xs
    run = xs.start(xs.Parameters(**xs.PAPER_SCALE, sessions=("s2.jsonl", "s3.jsonl")))
    frame = xs.judged(run, xs.probe_cells(run))
    table = xs.per_position(frame[frame["session"] == "S1"])
    xs.gap(table)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..echo.cells import Cell
from ..echo.protocol import Positions
from ..echo.protocols import protocol_of
from ..echo.reference.role_rows import CROSSSESSION, CROSSSESSION_POSITIONS
from ..echo.reference.s2_requests import S2_REQUESTS
from ..engine.calls import Transport
from ..sessions.model import Session
from . import spine
from .item_ids import PROBE_IDS, STRESSOR_IDS
from .parameter_sets import REFERENCE_JUDGE, JudgedParameters
from .parameters import POSITIVE, NonEmpty, OneOf
from .protocol_record import protocol_record
from .scores import failure_column, headline_ids
from .selection import build

NAME = "cross_session"
#: The harness's settings (run_crosssession: its judge, 30,000 characters, 600 target tokens,
#: the judge's 400; e09: 1,024 S2 tokens, its request rules) and its target.
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5",), "judges": (REFERENCE_JUDGE,), "window": 30000,
               "max_tokens": 600, "stressor_max_tokens": 1024, "judge_max_tokens": 400, "probes": ("all",),
               "protocol": "reference", "s2_requests": "e09"}
#: The probe design's positions: run_crosssession's 12 (``crosssession``).
PLAN = Positions(CROSSSESSION, n=CROSSSESSION_POSITIONS)
#: The harness figure's panel titles, in its order (``plotting/fig_app_crosssession.py:27-34``,
#: Accenture/ContextEcho 5f8dba3, Apache-2.0): its own three sessions, the panel's first.
FIGURE_TITLES = ("Session 1 (agentic coding, 9,643 agent steps)",
                 "Session 2 (manuscript writing, 3,746 agent steps)",
                 "Session 3 (document work, 4,918 agent steps)")


@dataclass(frozen=True)
class Parameters(JudgedParameters):
    sessions: tuple[str, ...] = ()
    probes: tuple[str, ...] = ("all",)
    stressors: tuple[str, ...] = ("S2",)
    stressor_max_tokens: int = 32
    headline: str = "coding_self"
    s2_requests: str = "e09"

    HELP = {**JudgedParameters.HELP,
            "sessions": "the session files (Claude Code JSONL under reference)",
            "probes": "probe ids or batteries of the probe design (run_crosssession: all)",
            "stressors": "the s2 design's items (e09: S2, the ten paraphrases)",
            "stressor_max_tokens": "target max tokens of S2 cells (the harness's 1024)",
            "headline": "battery of the figure's trajectories (the harness's: coding_self, C01-C05)",
            "s2_requests": "the harness runner whose S2 requests are sent (e09's: e08's TargetClient rules)"}
    IGNORED = {**JudgedParameters.IGNORED,
               "stressor_max_tokens": {"contextecho": "S2 cells take max_tokens, as every cell"},
               "s2_requests": {"contextecho": "S2 cells are asked as every other cell"}}
    RANGES = {**JudgedParameters.RANGES, "probes": (NonEmpty(), PROBE_IDS), "stressors": STRESSOR_IDS,
              "stressor_max_tokens": POSITIVE, "headline": PROBE_IDS,
              "s2_requests": OneOf(S2_REQUESTS.names, "S2 request rule set")}


def start(params: Parameters, sessions: Sequence[Session] | None = None,
          transport: Transport | None = None) -> spine.Run:
    """Open the run: outputs folder, run log, every model's route checked, the sessions read
    the protocol's way (``params.sessions``, or ``sessions`` already read)."""
    proto = protocol_of(params)
    chosen = list(sessions) if sessions is not None else [proto.read_session(Path(p)) for p in params.sessions]
    if not chosen:
        raise ValueError("the cross-session experiment needs sessions (parameter sessions)")
    models = params.targets + params.judge_models()
    return spine.start(NAME, params, models=models, protocol=proto, record=protocol_record(proto, params),
                       sessions=lambda: chosen, transport=transport)


def probe_cells(run: spine.Run, positions: Positions = PLAN, *, sessions: Sequence[Session] | None = None,
                redact: bool = True) -> list[Cell]:
    """The probe design's cells: every target × session × position × arm × probe
    (``positions``: run_crosssession's plan, or those given per session; ``redact=False`` only
    for a replay that never leaves the process)."""
    p: Parameters = run.params
    return build(run.protocol, p, NAME, list(sessions or run.sessions), p.probes, positions=positions,
                 redact=redact)


def s2_cells(run: spine.Run, positions: Positions, *, sessions: Sequence[Session] | None = None,
             redact: bool = True) -> list[Cell]:
    """The s2 design's cells: every target × session × position (given per session) × S2
    paraphrase × arm."""
    p: Parameters = run.params
    return build(run.protocol, p, NAME, list(sessions or run.sessions), p.stressors, positions=positions,
                 stressor_max_tokens=p.stressor_max_tokens, redact=redact)


def judged(run: spine.Run, cells: Sequence[Cell], *, redact: bool = True, name: str | None = None) -> pd.DataFrame:
    """Ask every probe cell and judge every answer with the first judge."""
    p: Parameters = run.params
    return spine.run_grid(run, cells, judges=list(p.judges[:1]), judge_max_tokens=p.judge_max_tokens,
                          redact=redact, name=name)


def scored(run: spine.Run, cells: Sequence[Cell], *, redact: bool = True, name: str | None = None) -> pd.DataFrame:
    """Ask every S2 cell; its reply is scored by the protocol's scorer, no judge."""
    return spine.run_grid(run, cells, judges=[], redact=redact, name=name)


TRAJECTORY_COLUMNS = ["position", "real_mean", "filler_mean"]


def per_position(frame: pd.DataFrame, *, headline: str = "coding_self", failures: str = "in") -> pd.DataFrame:
    """The figure's trajectory of one session and target (module doc): its rows in position
    label order (``failures="in"``: the scores the harness stored, −1 included; ``"out"``:
    valid verdicts only)."""
    column = failure_column(failures)
    if not len(frame):
        return pd.DataFrame(columns=TRAJECTORY_COLUMNS)
    scored_ = frame[(frame["item_kind"] == "probe") & frame["item"].isin(headline_ids(headline))
                    & frame[column].notna()]
    rows = []
    for label in sorted(scored_["position"].unique()):
        at = scored_[scored_["position"] == label]
        real, filler = (at.loc[at["arm"] == arm, column].to_numpy(dtype=float) for arm in ("real", "filler"))
        if len(real) and len(filler):
            rows.append({"position": label, "real_mean": float(np.mean(real)), "filler_mean": float(np.mean(filler))})
    return pd.DataFrame(rows, columns=TRAJECTORY_COLUMNS)


def gap(trajectory: pd.DataFrame) -> float:
    """A session's gap in the figure: the mean of its filler position means minus the mean of
    its real ones (NaN without a position)."""
    if not len(trajectory):
        return float("nan")
    return float(np.mean(trajectory["filler_mean"].to_numpy(dtype=float))) - \
        float(np.mean(trajectory["real_mean"].to_numpy(dtype=float)))
