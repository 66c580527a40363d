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

The notebook (:data:`STAGES`) runs three grids and reads four results from them:

* the **probe design** at ``n_positions`` of the plan's positions, evenly spread
  (:func:`plan_subset`), on the ``n_sessions`` longest sessions the protocol reads: the
  figure's trajectories (:func:`per_position`, one panel per session) and each session's gap;
* **per-session replication** (App. E): each session's drift gap with its interval over
  positions (:func:`~.scores.gap_row`, the same scores as the figure, so its estimate is the
  figure's gap), the pooled gap over sessions (clustered by session), and the share of the
  sessions with a gap whose sign is the pooled one's (:func:`replication`);
* the **s2 design** (e09) at ``s2_n_positions`` positions of the ``s2_positions`` scheme:
  e09's compliance audit per session (:func:`s2_audit`: compliance per arm, raw and
  conditional verbosity ratios), and pooled over the sessions;
* **Claude Code vs Codex**: the reference protocol reads Claude Code only (its reader is the
  harness's Claude Code reader), so the formats are compared under the registered protocol that
  reads every format (:func:`format_protocol`, ours): the ``n_format_sessions`` longest
  sessions of each format at ``format_positions`` uniform agent steps, the probes judged; per
  format the drift gap and the difference Codex − Claude Code (:func:`format_gaps`), or not
  estimable with the reason where the corpus has no session of a format.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..echo.cells import Cell
from ..echo.protocol import Positions, Protocol
from ..echo.protocols import PROTOCOLS, protocol_of
from ..echo.reference.role_rows import CROSSSESSION, CROSSSESSION_POSITIONS
from ..echo.reference.s2_requests import S2_REQUESTS
from ..engine.calls import Transport
from ..engine.counts import Counts
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COEFFICIENT, COUNT, FLAG, MODEL, PERCENT, POINTS, TEXT, interval
from ..paper.sentences import PAPER_SCALE_SET, joined, reason_of
from ..paper.show import Result, SavedFigure
from ..paper.tables import Column, Table
from ..paper.variables import Variable, by_target, reasons
from ..sessions.model import Session
from ..sessions.selection import FORMATS, corpus_rows, session_file
from ..stats.judge_free import StressorCell, harness_compliance_audit
from . import spine
from .item_ids import PROBE_IDS, STRESSOR_IDS
from .parameter_sets import REFERENCE_JUDGE, EMBEDDED_STRESSOR_MAX_TOKENS, JudgedParameters
from .parameters import POSITIVE, NonEmpty, OneOf, count
from .protocol_record import PROTOCOL, protocol_record, protocol_variables
from .scores import failure_column, first_judge_rows, gap_row, headline_ids
from .selection import build, select_sessions
from .spine import Run, Stage

NAME = "cross_session"
TITLE = "Cross-session drift: trajectories per session, replication of the gap's sign, e09's S2, Claude Code vs Codex"
#: The harness's settings (run_crosssession: its judge, 30,000 characters, 600 target tokens,
#: the judge's 400, all 25 probes at its 12 positions; e09: 1,024 S2 tokens, its request rules,
#: the ten S2 paraphrases before and after each compaction) and its target, on every Claude Code
#: session of the corpus (the harness's own two other sessions, ``session_chainassemble`` and
#: ``session_proeng``, are private). The format comparison (ours, no harness counterpart) at the
#: panel's five positions on every session of each format.
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5",), "judges": (REFERENCE_JUDGE,), "window": 30000,
               "max_tokens": 600, "stressor_max_tokens": 1024, "judge_max_tokens": 400, "probes": ("all",),
               "stressors": ("S2",), "protocol": "reference", "s2_requests": "e09", "n_sessions": 0,
               "n_positions": 0, "s2_positions": "compaction", "s2_n_positions": 0, "n_format_sessions": 0,
               "format_positions": 5, "n_resamples": 10_000, "resample_seed": 42}
#: e09's targets (``experiments/e09_cross_session/run.py`` ``TARGETS``: the Anthropic family),
#: a run of its own.
NAMED_SETS = {"e09 S2 design, its four Anthropic targets": {
    **PAPER_SCALE, "targets": ("anthropic/claude-sonnet-4-6", "anthropic/claude-sonnet-4-5",
                               "anthropic/claude-opus-4-1", "anthropic/claude-haiku-4-5")}}
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
    n_sessions: int = 2
    n_positions: int = 2
    probes: tuple[str, ...] = ("C01",)
    stressors: tuple[str, ...] = ("S2#01",)
    stressor_max_tokens: int = EMBEDDED_STRESSOR_MAX_TOKENS
    headline: str = "coding_self"
    s2_requests: str = "e09"
    s2_positions: str = "panel"
    s2_n_positions: int = 1
    n_format_sessions: int = 1
    format_positions: int = 2

    HELP = {**JudgedParameters.HELP,
            "sessions": "the session files (Claude Code JSONL under reference; empty: the n_sessions longest)",
            "n_sessions": "longest openly licensed sessions the protocol reads, when sessions is empty (0 for all)",
            "n_positions": "positions of the probe design's 12 (run_crosssession's plan), evenly spread (0 for all 12)",
            "probes": "probe ids or batteries of the probe design (run_crosssession: all)",
            "stressors": "the s2 design's items (e09: S2, the ten paraphrases)",
            "stressor_max_tokens": "target max tokens of S2 cells (the harness's 1024)",
            "headline": "battery of the figure's trajectories (the harness's: coding_self, C01-C05)",
            "s2_requests": "the harness runner whose S2 requests are sent (e09's: e08's TargetClient rules)",
            "s2_positions": "position scheme of the s2 design (e09: before and after each compaction)",
            "s2_n_positions": "positions of the s2 design (compaction: events) per session (0 for all)",
            "n_format_sessions": "longest sessions of each format (Claude Code, Codex CLI) in the format "
                                 "comparison, under the protocol that reads both (0 for all)",
            "format_positions": "uniform agent steps per session of the format comparison"}
    IGNORED = {**JudgedParameters.IGNORED,
               "stressor_max_tokens": {"contextecho": "S2 cells take max_tokens, as every cell"},
               "s2_requests": {"contextecho": "S2 cells are asked as every other cell"}}
    RANGES = {**JudgedParameters.RANGES, "probes": (NonEmpty(), PROBE_IDS), "stressors": STRESSOR_IDS,
              "stressor_max_tokens": POSITIVE, "headline": PROBE_IDS,
              "s2_requests": OneOf(S2_REQUESTS.names, "S2 request rule set"),
              "n_sessions": count(zero="all"), "n_positions": count(zero="all"),
              "s2_positions": OneOf(("panel", "compaction", "late", "deciles"), "position scheme"),
              "s2_n_positions": count(zero="all"), "n_format_sessions": count(zero="all"),
              "format_positions": count()}


def start(params: Parameters, sessions: Sequence[Session] | None = None,
          transport: Transport | None = None) -> spine.Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and read the sessions the protocol's way (``params.sessions``, else the ``n_sessions``
    longest it reads; ``sessions``: already read)."""
    proto = protocol_of(params)

    def chosen() -> list[Session]:
        if sessions is not None:
            return list(sessions)
        if params.sessions:
            return [proto.read_session(Path(p)) for p in params.sessions]
        return select_sessions(params.n_sessions, protocol=proto)
    models = params.targets + params.judge_models()
    return spine.start(NAME, params, models=models, protocol=proto, declared=MANUSCRIPT, transport=transport,
                       record=protocol_record(proto, params, params.stressor_max_tokens, PAPER_SCALE),
                       sessions=chosen)


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


def plan_subset(n_plan: int, k: int) -> list[int]:
    """The indices of ``k`` of a plan's ``n_plan`` positions, evenly spread from the first to
    the last (``k`` 0 or at least ``n_plan``: every one)."""
    if k <= 0 or k >= n_plan:
        return list(range(n_plan))
    return sorted({int(round(i * (n_plan - 1) / (k - 1))) for i in range(k)}) if k > 1 else [n_plan - 1]


def subset_positions(protocol: Protocol, sessions: Sequence[Session], k: int, plan: Positions = PLAN) -> Positions:
    """``k`` of ``plan``'s positions of each session, evenly spread (:func:`plan_subset`), as
    the positions chosen per session (each keeps its scheme, so its prefix is rendered the
    plan's way)."""
    chosen = {}
    for s in sessions:
        offered = protocol.positions(s, plan)
        chosen[s.session_id] = [offered[i] for i in plan_subset(len(offered), k)]
    return Positions(CROSSSESSION, n=plan.n, chosen=chosen)


# ---------------------------------------------------------------- per-session replication (App. E)
REPLICATION_COLUMNS = ["target", "session", "n_positions", "real_mean", "filler_mean", "gap", "ci_low", "ci_high",
                       "same_sign", "note"]


def replication(frame: pd.DataFrame, *, column: str, n_resamples: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per target: each session's drift gap on ``column`` (units session × position, the
    interval a bootstrap over its positions, :func:`~.scores.gap_row`) and whether its sign is
    the pooled gap's (``same_sign``; NaN where either is missing or zero); and per target the
    pooled gap (units of every session, clustered by session), the sessions with a gap, those
    of the pooled sign and their share (``replicated_pct``), or a ``note`` why not estimable.
    ``frame``: the probe rows the figure reads (the headline's, the first judge's)."""
    options = {"score": column, "unit": ("session", "position"), "n_resamples": n_resamples, "seed": seed}
    rows, pooled_rows = [], []
    for target, own in frame.groupby("target", sort=False):
        pooled = gap_row(own, cluster="session", **options)
        sign = np.sign(pooled["estimate"]) if pd.notna(pooled["estimate"]) else np.nan
        per = []
        for session in sorted(own["session"].unique(), key=lambda s: (len(s), s)):
            g = gap_row(own[own["session"] == session], cluster="position", **options)
            same = (np.sign(g["estimate"]) == sign) if pd.notna(g["estimate"]) and sign in (-1.0, 1.0) else np.nan
            per.append({"target": target, "session": session,
                        "n_positions": int(own.loc[own["session"] == session, "position"].nunique()),
                        "real_mean": g["real_mean"], "filler_mean": g["filler_mean"],
                        "gap": g["estimate"] if pd.notna(g["estimate"]) else _point_gap(own[own["session"] == session], column),
                        "ci_low": g["ci_low"], "ci_high": g["ci_high"], "same_sign": same, "note": g["note"]})
        rows += per
        with_gap = [r for r in per if pd.notna(r["gap"])]
        agreeing = [r for r in with_gap if r["same_sign"] is True or r["same_sign"] == 1]
        note = pooled["note"] or ("" if sign in (-1.0, 1.0) else "not estimable: the pooled gap is zero, it has no sign")
        if not with_gap and not note:
            note = "not estimable: no session has a gap"
        pooled_rows.append({"target": target, "pooled_gap": pooled["estimate"], "pooled_ci_low": pooled["ci_low"],
                            "pooled_ci_high": pooled["ci_high"], "n_sessions": len(with_gap),
                            "n_replicated": len(agreeing) if not note else np.nan,
                            "replicated_pct": 100.0 * len(agreeing) / len(with_gap) if with_gap and not note else np.nan,
                            "note": note})
    return (pd.DataFrame(rows, columns=REPLICATION_COLUMNS),
            pd.DataFrame(pooled_rows, columns=["target", "pooled_gap", "pooled_ci_low", "pooled_ci_high",
                                                "n_sessions", "n_replicated", "replicated_pct", "note"]))


def _point_gap(frame: pd.DataFrame, column: str) -> float:
    """A session's gap where its interval cannot be drawn (one position): the figure's
    :func:`gap` of its trajectory on ``column``."""
    complete = frame[frame[column].notna()]
    arms = complete.groupby("position")["arm"].nunique()
    kept = complete[complete["position"].isin(arms[arms == 2].index)]
    if not len(kept):
        return float("nan")
    means = kept.groupby(["position", "arm"])[column].mean().unstack("arm")
    return float(means["filler"].mean() - means["real"].mean())


# ---------------------------------------------------------------- e09's S2 audit per session
AUDIT_COLUMNS = ["target", "session", "n_pairs", "real_compliant", "filler_compliant", "real_pct", "filler_pct",
                 "raw_ratio", "n_raw", "cond_ratio", "n_cond", "note"]
#: The session of the audit's pooled row.
ALL_SESSIONS = "all"


def stressor_cells(frame: pd.DataFrame) -> list[StressorCell]:
    """The stored S2 cells of a grid's frame (a failed target call stored nothing), under
    our session labels."""
    rows = frame[(frame["item_kind"] == "stressor") & frame["response"].map(lambda v: isinstance(v, str))]
    return [StressorCell(r["target"], r["session"], r["position"], r["item"], r["arm"], bool(r["passed"]),
                         len(r["response"])) for r in rows.to_dict("records")]


def audit_rows(cells: Sequence[StressorCell], targets: Sequence[str]) -> pd.DataFrame:
    """e09's compliance audit per target and session, then pooled over the sessions
    (:data:`ALL_SESSIONS`; :func:`~contextecho.stats.judge_free.harness_compliance_audit` over
    the cells relabelled to one session, each position kept apart by its session): compliance per arm over the pairs stored in both
    arms, the raw ratio Σ real / Σ filler length and the conditional ratio (pairs compliant in
    both arms) mean real / mean filler."""
    rows = []
    for target in targets:
        own = [c for c in cells if c.target == target]
        sessions = sorted({c.session for c in own}, key=lambda s: (len(s), s))
        pooled = [dataclasses.replace(c, session=ALL_SESSIONS, position=f"{c.session}/{c.position}") for c in own]
        for name, audit in [*((s, harness_compliance_audit(own)) for s in sessions),
                            (ALL_SESSIONS, harness_compliance_audit(pooled))]:
            real, filler = audit["per_session"].get(name, {"real": [0, 0], "filler": [0, 0]}).values()
            ratios = audit["ratios_by_session"].get(name, {})
            n = real[1]
            rows.append({"target": target, "session": name, "n_pairs": n, "real_compliant": real[0],
                         "filler_compliant": filler[0], "real_pct": 100.0 * real[0] / n if n else np.nan,
                         "filler_pct": 100.0 * filler[0] / n if n else np.nan,
                         "raw_ratio": ratios.get("raw_ratio", np.nan), "n_raw": ratios.get("n_raw", 0),
                         "cond_ratio": ratios.get("cond_ratio", np.nan), "n_cond": ratios.get("n_cond", 0),
                         "note": "not estimable: no S2 pair stored in both arms" if not n else
                         "" if ratios.get("n_cond", 0) else "conditional ratio not estimable: no pair complied in "
                                                             "both arms"})
    return pd.DataFrame(rows, columns=AUDIT_COLUMNS)


# ---------------------------------------------------------------- Claude Code vs Codex
FORMAT_COLUMNS = ["target", "format", "n_sessions", "n_positions", "real_mean", "filler_mean", "gap", "ci_low",
                  "ci_high", "note"]
#: The format whose gap is subtracted in the difference (Codex − Claude Code).
BASE_FORMAT, OTHER_FORMAT = FORMATS


def format_protocol(params: JudgedParameters) -> Protocol:
    """The registered protocol that reads every session format (:data:`FORMATS`), configured
    by ``params``: the formats are compared under one instrument set (the reference protocol
    reads Claude Code only)."""
    for name in PROTOCOLS.names():
        candidate = PROTOCOLS.get(name)
        if set(FORMATS) <= set(candidate.formats):
            return candidate.configured(params)
    raise LookupError(f"no protocol reads every format ({', '.join(FORMATS)})")


def format_sessions(protocol: Protocol, n: int) -> dict[str, list[Session]]:
    """Per format, its ``n`` longest openly licensed sessions (0: all), read the protocol's way."""
    out = {}
    for fmt in FORMATS:
        rows = corpus_rows(formats=(fmt,))
        out[fmt] = [protocol.read_session(session_file(r["file"])) for r in (rows if n <= 0 else rows[:n])]
    return out


def format_gaps(frame: pd.DataFrame, *, column: str, targets: Sequence[str], n_resamples: int, seed: int,
                missing: dict[str, str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per target and format: the drift gap on ``column`` over the format's sessions (units
    session × position, :func:`~.scores.gap_row`; its interval a bootstrap over the sessions,
    or over the positions of a format's one session);
    per target the difference Codex − Claude Code (``note`` where either gap is missing).
    ``missing``: format -> why it has no session."""
    missing = missing or {}
    rows, diffs = [], []
    for target in targets:
        gaps = {}
        for fmt in FORMATS:
            own = frame[(frame["target"] == target) & (frame["format"] == fmt)] if len(frame) else frame
            if fmt in missing or not len(own):
                g = {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "real_mean": np.nan,
                     "filler_mean": np.nan, "note": f"not estimable: {missing.get(fmt, 'no cell of this format')}"}
            else:
                g = gap_row(own, score=column, unit=("session", "position"),
                            cluster="session" if own["session"].nunique() > 1 else "position",
                            n_resamples=n_resamples, seed=seed)
            gaps[fmt] = g["estimate"]
            rows.append({"target": target, "format": fmt,
                         "n_sessions": int(own["session"].nunique()) if len(own) else 0,
                         "n_positions": int(own[["session", "position"]].drop_duplicates().shape[0]) if len(own) else 0,
                         "real_mean": g["real_mean"], "filler_mean": g["filler_mean"], "gap": g["estimate"],
                         "ci_low": g["ci_low"], "ci_high": g["ci_high"], "note": g["note"]})
        lacking = [f for f in FORMATS if pd.isna(gaps[f])]
        diffs.append({"target": target, "difference": gaps[OTHER_FORMAT] - gaps[BASE_FORMAT],
                      "note": f"not estimable: no {' or '.join(lacking)} gap" if lacking else ""})
    return pd.DataFrame(rows, columns=FORMAT_COLUMNS), pd.DataFrame(diffs, columns=["target", "difference", "note"])


# ---------------------------------------------------------------- what the manuscript reads
REPLICATED = {"pooled_gap_{target}": "pooled_gap", "pooled_gap_ci_{target}": ("pooled_ci_low", "pooled_ci_high"),
              "replicated_pct_{target}": "replicated_pct", "n_replicated_{target}": "n_replicated",
              "n_gap_sessions_{target}": "n_sessions"}
MANUSCRIPT = PROTOCOL + Declared(
    variables=(
        Variable("pooled_gap_{target}", POINTS), Variable("pooled_gap_ci_{target}", interval(POINTS)),
        Variable("replicated_pct_{target}", PERCENT), Variable("n_replicated_{target}", COUNT),
        Variable("n_gap_sessions_{target}", COUNT),
        Variable("format_gap_{format}_{target}", POINTS, format=FORMATS),
        Variable("format_difference_{target}", POINTS),
        Variable("s2_real_compliance_pct", PERCENT), Variable("s2_filler_compliance_pct", PERCENT),
        Variable("s2_raw_ratio", COEFFICIENT), Variable("s2_cond_ratio", COEFFICIENT), Variable("s2_pairs", COUNT),
        Variable("target", TEXT), Variable("judge", TEXT), Variable("format_protocol", TEXT),
        Variable("n_sessions", COUNT), Variable("n_positions", COUNT), Variable("n_plan_positions", COUNT),
        Variable("n_probes", COUNT), Variable("n_probe_cells", COUNT), Variable("n_s2_cells", COUNT),
        Variable("n_format_cells", COUNT), Variable("n_failed", COUNT), Variable("window_chars", COUNT),
        Variable("s2_ratios", TEXT), Variable("format_finding", TEXT), Variable("replication", TEXT)),
    tables=(
        Table("trajectories", "Cross-session trajectories: per position, mean score in each arm", (
            Column("Target", MODEL, "target"), Column("Session", TEXT, "session", widest="S12"),
            Column("Position", TEXT, "position", widest="P_pre_C12"), Column("Step", COUNT, "step"),
            Column("Real", POINTS, "real_mean"), Column("Filler", POINTS, "filler_mean")), index=3),
        Table("session_gaps", "Per-session drift gap (filler − real) and its sign against the pooled gap", (
            Column("Target", MODEL, "target"), Column("Session", TEXT, "session", widest="S12"),
            Column("Positions", COUNT, "n_positions"), Column("Gap", POINTS, "gap"),
            Column("95% CI", interval(POINTS), ("ci_low", "ci_high")),
            Column("Pooled sign", FLAG, "same_sign")), index=2),
        Table("s2_audit", "e09's S2 audit per session: compliance per arm (%), raw and conditional length ratios real / filler", (
            Column("Target", MODEL, "target"), Column("Session", TEXT, "session", widest="S12"),
            Column("Pairs", COUNT, "n_pairs"), Column("Real", PERCENT, "real_pct"),
            Column("Filler", PERCENT, "filler_pct"), Column("Raw", COEFFICIENT, "raw_ratio"),
            Column("n", COUNT, "n_raw"), Column("Cond.", COEFFICIENT, "cond_ratio"),
            Column("n cond.", COUNT, "n_cond")), index=2),
        Table("format_gaps", "Claude Code vs Codex CLI: drift gap per session format (our instruments)", (
            Column("Target", MODEL, "target"), Column("Format", TEXT, "format", widest="claude_code"),
            Column("Sessions", COUNT, "n_sessions"), Column("Positions", COUNT, "n_positions"),
            Column("Gap", POINTS, "gap"), Column("95% CI", interval(POINTS), ("ci_low", "ci_high"))), index=2)))


# ---------------------------------------------------------------- the stages
def _column(protocol: Protocol) -> str:
    """The score the figure and the gaps read: the protocol's stored score (the harness's,
    its −1 included), else the valid verdicts."""
    return failure_column("in" if protocol.stored_score else "out")


def _headline(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    rows = first_judge_rows(frame[frame["item_kind"] == "probe"], run.params.judges[0]) if len(frame) else frame
    return rows[rows["item"].isin(headline_ids(run.params.headline))] if len(rows) else rows


def probe_grid(run: Run) -> pd.DataFrame:
    """The probe design (run_crosssession): ``n_positions`` of its 12 positions of every
    session, evenly spread, real and filler arms, the probes, each answer judged by the first
    judge."""
    p: Parameters = run.params
    frame = judged(run, probe_cells(run, subset_positions(run.protocol, run.sessions, p.n_positions)))
    run.out.parquet("probe_cells", frame)
    return frame


def trajectories(run: Run, probes: pd.DataFrame) -> pd.DataFrame:
    """The figure's table: per target, session and position (label order), the mean score of
    the headline battery's probes in each arm (:func:`per_position`; under ``reference`` the
    harness's stored scores, −1 included)."""
    rows = _headline(run, probes)
    failures = "in" if run.protocol.stored_score else "out"
    parts = []
    for (target, session), own in rows.groupby(["target", "session"], sort=False) if len(rows) else ():
        steps = own.drop_duplicates("position").set_index("position")["step"]
        t = per_position(own, headline=run.params.headline, failures=failures)
        parts.append(t.assign(target=target, session=session, step=t["position"].map(steps))
                     .sort_values("step", kind="stable"))  # the session's order, never the labels' (module doc)
    table = pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame(columns=["target", "session", "position", "step", "real_mean", "filler_mean"])
    table = table[["target", "session", "position", "step", "real_mean", "filler_mean"]]
    run.out.parquet("trajectories", table)
    return run.table("trajectories", table)


def session_gaps(run: Run, probes: pd.DataFrame) -> pd.DataFrame:
    """Per-session replication (App. E): each session's gap (the figure's, with a bootstrap
    interval over its positions), the pooled gap over sessions, and the share of sessions
    whose gap has the pooled sign (:func:`replication`)."""
    p: Parameters = run.params
    per, pooled = replication(_headline(run, probes), column=_column(run.protocol), n_resamples=p.n_resamples,
                              seed=p.resample_seed)
    why = {t: "no probe cell of this target" for t in p.targets} | reasons(pooled)
    run.out.per_target(tuple(REPLICATED), by_target(pooled, REPLICATED), p.targets, why)
    run.out.set(replication=replication_sentence(run.out.variables))
    run.out.parquet("session_gaps", per)
    run.out.parquet("pooled_gap", pooled)
    return run.table("session_gaps", per)


def figure(run: Run, trajectories: pd.DataFrame) -> SavedFigure:
    """Per-position trajectories, one panel per session (``plotting/fig_app_crosssession.py``):
    the mean score in the real arm and the filler arm at each position."""
    long = trajectories.melt(id_vars=["target", "session", "position", "step"], value_vars=["real_mean", "filler_mean"],
                             var_name="arm", value_name="mean") if len(trajectories) else \
        pd.DataFrame(columns=["target", "session", "step", "arm", "mean"])
    long["arm"] = long["arm"].str.replace("_mean", "", regex=False)
    many = long["target"].nunique() > 1
    return run.figure("trajectories", figures.trajectory(
        long, x="step", y="mean", hue="arm", hue_order=("real", "filler"), style="target" if many else None,
        panel="session", xlabel=run.protocol.step_unit if run.protocol else "step", ylabel="mean judge score",
        reason="no position has a score in both arms"))


def s2_grid(run: Run) -> pd.DataFrame:
    """The s2 design (e09): the S2 paraphrases at ``s2_n_positions`` positions of the
    ``s2_positions`` scheme of every session, real and filler arms, sent by e09's request
    rules under ``reference``; scored, no judge."""
    p: Parameters = run.params
    cells = s2_cells(run, Positions(p.s2_positions, n=p.s2_n_positions))
    frame = scored(run, cells, name=f"{NAME}_s2")
    run.out.parquet("s2_cells", frame)
    return frame


def s2_audit(run: Run, s2: pd.DataFrame) -> pd.DataFrame:
    """e09's compliance audit per session and pooled (:func:`audit_rows`): S2 compliance per
    arm, the raw and the conditional verbosity ratio real / filler. The first target's pooled
    numbers are the manuscript's."""
    p: Parameters = run.params
    table = audit_rows(stressor_cells(s2) if len(s2) else [], p.targets)
    pooled = table[(table["target"] == p.targets[0]) & (table["session"] == ALL_SESSIONS)].iloc[0]
    why = "no S2 pair stored in both arms"
    run.out.put("s2_real_compliance_pct", pooled["real_pct"], why=why)
    run.out.put("s2_filler_compliance_pct", pooled["filler_pct"], why=why)
    run.out.put("s2_raw_ratio", pooled["raw_ratio"], why="no S2 pair has both lengths above zero")
    run.out.put("s2_cond_ratio", pooled["cond_ratio"], why="no S2 pair complied in both arms")
    run.out.set(s2_pairs=int(pooled["n_pairs"]))
    raw, cond = (run.out.variables[k] for k in ("s2_raw_ratio", "s2_cond_ratio"))
    run.out.set(s2_ratios="; ".join(
        [f"the {name} one is {value}" if reason_of(value) is None else f"the {name} one is not estimable: "
         f"{reason_of(value)}" for name, value in (("raw", raw), ("conditional", cond))]))
    run.out.parquet("s2_audit", table)
    return run.table("s2_audit", table)


def format_grid(run: Run) -> pd.DataFrame:
    """Claude Code vs Codex CLI, under the protocol that reads both (:func:`format_protocol`):
    the ``n_format_sessions`` longest sessions of each format at ``format_positions`` uniform
    agent steps, real and filler arms, the probes, judged by the first judge."""
    p: Parameters = run.params
    protocol = format_protocol(p)
    chosen = format_sessions(protocol, p.n_format_sessions)
    sessions = [s for fmt in FORMATS for s in chosen[fmt]]
    labels = {s.session_id: f"{fmt} {i}" for fmt in FORMATS for i, s in enumerate(chosen[fmt], start=1)}
    formats = {labels[s.session_id]: fmt for fmt in FORMATS for s in chosen[fmt]}
    compared = dataclasses.replace(run, protocol=protocol, sessions=sessions, labels=labels)
    cells = build(protocol, p, NAME, sessions, p.probes, positions=Positions("panel", n=p.format_positions))
    frame = spine.run_grid(compared, cells, judges=list(p.judges[:1]), judge_max_tokens=p.judge_max_tokens,
                           name=f"{NAME}_formats") if cells else pd.DataFrame()
    frame = frame.assign(format=frame["session"].map(formats)) if len(frame) else \
        pd.DataFrame(columns=["target", "session", "format", "position", "arm", "item", "item_kind"])
    frame.attrs["protocol"] = protocol.name
    frame.attrs["missing"] = {fmt: f"the corpus has no usable {fmt} session" for fmt in FORMATS if not chosen[fmt]}
    run.out.parquet("format_cells", frame)
    return frame


def format_comparison(run: Run, formats: pd.DataFrame) -> pd.DataFrame:
    """Per target and format, the drift gap on the headline probes (valid verdicts of the
    first judge), and the difference Codex − Claude Code (:func:`format_gaps`)."""
    p: Parameters = run.params
    protocol = format_protocol(p)
    rows = _headline(run, formats) if len(formats) else formats
    table, diff = format_gaps(rows, column=_column(protocol), targets=p.targets, n_resamples=p.n_resamples,
                              seed=p.resample_seed, missing=formats.attrs.get("missing"))
    for fmt in FORMATS:
        own = table[table["format"] == fmt]
        run.out.per_target(("format_gap_{format}_{target}",),
                           by_target(own, {"format_gap_{format}_{target}": "gap"}), p.targets, reasons(own)
                           or "no gap", format=fmt)
    run.out.per_target(("format_difference_{target}",), by_target(diff, {"format_difference_{target}": "difference"}),
                       p.targets, reasons(diff) or "no gap")
    run.out.set(format_protocol=protocol.name, format_finding=format_finding(run.out.variables, table, p.targets[0]))
    run.out.parquet("format_gaps", table)
    return run.table("format_gaps", table)


def replication_sentence(written: dict) -> str:
    """The pooled gap and the share of sessions of its sign, as the manuscript's values
    (``written``), a reason named once."""
    gap, ci, share = (written[k] for k in ("pooled_gap", "pooled_gap_ci", "replicated_pct"))
    if reason_of(gap) is not None:
        return f"the pooled gap over the sessions is not estimable: {reason_of(gap)}"
    said = f"the pooled gap over the sessions is {gap}" + (
        f" (95% interval {ci}, clustered by session)" if reason_of(ci) is None else
        f", without an interval: {reason_of(ci)}")
    if reason_of(share) is not None:
        return f"{said}; which sessions share its sign is not estimable: {reason_of(share)}"
    return (f"{said}, and {written['n_replicated']} of the {written['n_gap_sessions']} sessions with a gap share "
            f"its sign ({share})")


#: How the manuscript names each session format.
FORMAT_WORDS = {"claude_code": "Claude Code", "codex_cli": "Codex CLI"}


def format_finding(written: dict, table: pd.DataFrame, target: str) -> str:
    """The formats' comparison for ``target`` as the manuscript's values (``written``): each
    format's gap and their difference, a reason named once; with one session of a format, that
    the comparison is of sessions, not of formats."""
    gaps = {fmt: written[f"format_gap_{fmt}"] for fmt in FORMATS}
    names = {fmt: FORMAT_WORDS.get(fmt, fmt) for fmt in FORMATS}
    shown = [f"{v} on {names[f]}" for f, v in gaps.items() if reason_of(v) is None]
    missing: dict[str, list[str]] = {}
    for fmt, value in gaps.items():
        if reason_of(value) is not None:
            missing.setdefault(reason_of(value), []).append(names[fmt])
    said = [f"the drift gap is {joined(shown)}"] if shown else []
    said += [f"the drift gap on {' and on '.join(where)} is not estimable: {reason}" for reason, where in missing.items()]
    difference = written["format_difference"]
    said.append(f"their difference ({names[OTHER_FORMAT]} − {names[BASE_FORMAT]}) is {difference}"
                if reason_of(difference) is None else "so their difference is not estimable either" if missing else
                f"their difference is not estimable: {reason_of(difference)}")
    sentence = "; ".join(said) + "."
    own = table[table["target"] == target] if len(table) else table
    if len(own) and (own["n_sessions"] <= 1).all():
        sentence += (" With one session of each format this compares two sessions, not two formats; "
                     f"{PAPER_SCALE_SET} asks every session of both.")
    return sentence[0].upper() + sentence[1:]


def variables(run: Run, probes: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers, written with the run log."""
    p: Parameters = run.params
    batches = run.log.batches
    calls = {k: batches.get(f"{k}:targets", Counts()) for k in (NAME, f"{NAME}_s2", f"{NAME}_formats")}
    run.out.set(target=p.targets[0], judge=p.judges[0], n_sessions=len(run.sessions),
                n_positions=int(probes["position"].nunique()) if len(probes) else 0,
                n_plan_positions=CROSSSESSION_POSITIONS,
                n_probes=int(probes["item"].nunique()) if len(probes) else 0,
                n_probe_cells=calls[NAME].calls, n_s2_cells=calls[f"{NAME}_s2"].calls,
                n_format_cells=calls[f"{NAME}_formats"].calls, n_failed=sum(c.failed for c in calls.values()),
                window_chars=p.window, **protocol_variables(run.log.about["protocol"]))
    return spine.finish(run)


STAGES = (Stage("run", start), Stage("probes", probe_grid), Stage("trajectories", trajectories),
          Stage("gaps", session_gaps), Stage("figure", figure), Stage("s2", s2_grid), Stage("audit", s2_audit),
          Stage("formats", format_grid), Stage("comparison", format_comparison), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
