"""Judging turns on the four axes and reporting them: one row per (turn, axis, judge).

:func:`axis_jobs` pairs every turn with every axis and judge: a blind request
(:func:`.rubric.axis_request`), or — for a fork whose target call failed, or an empty
turn — no request and an ``error`` / ``invalid`` status decided here (an empty turn is
not applicable, never held). :func:`axis_frame` reads the judges' records (matched by
request key) into the tidy frame; each row carries its provenance: judge model and params,
rubric version and hash, persona card id and hash, turn source, session, step, target.

Summaries keep the axes apart (ANCHOR warns against one composite score):
:func:`axis_rates` — share ``held`` among valid verdicts per group and axis, with
invalid and error counts and optionally a bootstrap CI clustered by session;
:func:`all_axes_held` — per turn and judge, whether all four axes held (a count, not
a weighted score), and :func:`all_axes_rates`, ANCHOR's headline: the share of turns
holding all four per group, with its session-clustered interval; :func:`axis_agreement` — per judge pair and axis, the share agreeing
and Cohen's kappa, with degenerate cases noted instead of raised.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.record import CallRecord
from contextecho.engine.hashing import canonical_json
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.verdicts import DEFAULT_JUDGE_PARAMS, ERROR, INVALID
from contextecho.stats.errors import StatsInputError
from contextecho.stats.bootstrap import bootstrap_mean
from contextecho.stats.agreement import judge_agreement
from contextecho.sessions.outbound import JudgeInputs

from ..persona import CODING_ASSISTANT, PersonaCard
from .rubric import AXES, AXIS_RUBRIC, AxisRubric, axis_request
from .turns import JudgedTurn
from .verdicts import DEVIATED, HELD, parse_axis_verdict

DEFAULT_BY = ("judge_model", "source", "target")


@dataclass(frozen=True)
class AxisJob:
    turn: JudgedTurn
    axis: str
    judge: str
    request: ModelRequest | None  # None: decided without a judge (status and reason say why)
    provenance: Mapping[str, Any]
    status: str | None = None
    reason: str | None = None


def axis_jobs(turns: Sequence[JudgedTurn], judges: Sequence[str] | str,
              card: PersonaCard = CODING_ASSISTANT, *, axes: Sequence[str] = AXES,
              rubric: AxisRubric = AXIS_RUBRIC,
              params: Mapping[str, Any] = DEFAULT_JUDGE_PARAMS, replicate: int = 0) -> list[AxisJob]:
    """Every (turn, axis, judge), with its blind request where there is something to judge (a
    judge that is not in-process is shown the turn and its context redacted,
    :mod:`contextecho.sessions.outbound`); ``replicate``: the requests' replicate index (a
    sampled replicate of the judge; 0 for the run's own verdicts)."""
    judges = [judges] if isinstance(judges, str) else list(judges)
    jobs = []
    shown = JudgeInputs()  # session text for a judge that is not in-process, redacted
    for turn in turns:
        for axis in axes:
            for judge in judges:
                provenance = {"judge_params": canonical_json(dict(params)), "rubric_version": rubric.version,
                              "rubric_hash": rubric.hash, "card_id": card.id, "card_hash": card.sha256}
                if turn.text is None:
                    jobs.append(AxisJob(turn, axis, judge, None, provenance, ERROR,
                                        turn.error or "no turn text"))
                elif not turn.text.strip():
                    jobs.append(AxisJob(turn, axis, judge, None, provenance, INVALID,
                                        "empty turn: not applicable"))
                else:
                    context = shown.text(turn.context, judge, turn.session_id) if turn.context else turn.context
                    text = shown.text(turn.text, judge, turn.session_id, [turn.context or ""])
                    request = axis_request(judge, axis, card, context, text, rubric=rubric, params=params,
                                           replicate=replicate)
                    jobs.append(AxisJob(turn, axis, judge, request, provenance))
    return jobs


def judge_requests(jobs: Sequence[AxisJob]) -> list[ModelRequest]:
    """The requests to send (jobs decided without a judge have none)."""
    return [j.request for j in jobs if j.request is not None]


def _row(job: AxisJob, record: CallRecord | None) -> dict[str, Any]:
    t = job.turn
    text = t.text or ""
    row = {"source": t.source, "session": t.session_id, "step": t.step, "checkpoint": t.checkpoint,
           "target": t.target, "replicate": t.replicate, "turn_id": t.id, "axis": job.axis,
           "judge_model": job.judge, "status": job.status, "reason": job.reason,
           "judge_response": None, "judge_key": job.request.key if job.request else None,
           "turn_chars": len(text), "turn_sha256": hashlib.sha256(text.encode()).hexdigest(),
           "source_key": t.source_key, **job.provenance}
    if record is not None and not record.ok:
        row.update(status=ERROR, reason=f"judge call failed: {record.error_type}")
    elif record is not None:
        verdict = parse_axis_verdict(record.response_text)
        row.update(status=verdict.status, reason=verdict.reason, judge_response=record.response_text)
    row["held"] = {HELD: 1.0, DEVIATED: 0.0}.get(row["status"], np.nan)
    return row


def axis_frame(jobs: Sequence[AxisJob], records: Sequence[CallRecord]) -> pd.DataFrame:
    """The tidy frame: one row per job, its verdict read from the judge record with its key."""
    by_key = {r.key: r for r in records}
    missing = [j for j in jobs if j.request is not None and j.request.key not in by_key]
    if missing:
        raise ValueError(f"{len(missing)} judge requests have no record (first: {missing[0].axis} "
                         f"of turn {missing[0].turn.id} by {missing[0].judge})")
    return pd.DataFrame([_row(j, by_key[j.request.key] if j.request else None) for j in jobs])


def judge_axes(turns: Sequence[JudgedTurn], judges: Sequence[str] | str,
               card: PersonaCard = CODING_ASSISTANT, *, cache: CallCache | None = None,
               transport: Transport = Transport(), progress: bool = True, name: str = "axes",
               **job_options: Any) -> pd.DataFrame:
    """:func:`axis_jobs`, their requests through ``generate`` (cached), :func:`axis_frame`."""
    jobs = axis_jobs(turns, judges, card, **job_options)
    result = generate(judge_requests(jobs), cache=cache, transport=transport, progress=progress,
                      name=name)
    return axis_frame(jobs, result.records)


def axis_rates(frame: pd.DataFrame, by: Sequence[str] = DEFAULT_BY, *, ci: bool = False,
               n_resamples: int = 2000, seed: int = 20240601) -> pd.DataFrame:
    """Per group and axis: counts by status and the held rate among valid verdicts."""
    rows = []
    for key, group in frame.groupby([*by, "axis"], dropna=False, sort=True):
        counts = group["status"].value_counts()
        n_valid = int(counts.get(HELD, 0) + counts.get(DEVIATED, 0))
        row = dict(zip([*by, "axis"], key))
        row.update(n=len(group), n_valid=n_valid, n_held=int(counts.get(HELD, 0)),
                   n_deviated=int(counts.get(DEVIATED, 0)), n_invalid=int(counts.get(INVALID, 0)),
                   n_error=int(counts.get(ERROR, 0)),
                   held_rate=counts.get(HELD, 0) / n_valid if n_valid else np.nan)
        if ci:
            row.update(_clustered_ci(group, n_resamples, seed))
        rows.append(row)
    return pd.DataFrame(rows)


def _clustered_ci(group: pd.DataFrame, n_resamples: int, seed: int) -> dict[str, Any]:
    valid = group[group["held"].notna()]
    try:
        est = bootstrap_mean(valid["held"].to_numpy(), valid["session"].to_numpy(),
                             n_resamples=n_resamples, seed=seed)
    except StatsInputError as exc:  # one session, or no valid verdict: say so, keep the row
        return {"ci_low": np.nan, "ci_high": np.nan, "n_sessions": valid["session"].nunique(),
                "ci_note": str(exc)}
    return {"ci_low": est.ci_low, "ci_high": est.ci_high, "n_sessions": est.n_clusters,
            "ci_note": "degenerate: every resample equal" if est.degenerate else ""}


def all_axes_held(frame: pd.DataFrame) -> pd.DataFrame:
    """Per turn and judge: held / deviated / unjudged axis counts and ``all_held``
    (True: every axis held; False: any deviated; NA: none deviated but some unjudged)."""
    keys = ["turn_id", "judge_model", "source", "session", "step", "target"]
    out = frame.groupby(keys, sort=True).agg(
        n_axes=("axis", "nunique"), n_held=("status", lambda s: int((s == HELD).sum())),
        n_deviated=("status", lambda s: int((s == DEVIATED).sum()))).reset_index()
    out["n_unjudged"] = out["n_axes"] - out["n_held"] - out["n_deviated"]
    out["all_held"] = pd.array([False if d else (True if u == 0 else pd.NA)
                                for d, u in zip(out["n_deviated"], out["n_unjudged"])], dtype="boolean")
    return out


def all_axes_rates(frame: pd.DataFrame, by: Sequence[str] = DEFAULT_BY, *, ci: bool = False,
                   n_resamples: int = 2000, seed: int = 20240601) -> pd.DataFrame:
    """Per group (of :func:`all_axes_held`'s turns): ``n_turns``; ``n_all_held`` (every axis
    held), ``n_deviated`` (some axis deviated), ``n_undecided`` (none deviated, some axis
    without a valid verdict: neither held nor not); the share holding all four among the
    decided turns (``all_held_rate``, NaN where none is decided), optionally with a bootstrap
    CI clustered by session, a turn one observation (``ci_low``, ``ci_high``, ``n_sessions``,
    ``ci_note``)."""
    turns = all_axes_held(frame)
    turns["held"] = turns["all_held"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    rows = []
    for key, group in turns.groupby(list(by), dropna=False, sort=True):
        n_all, n_deviated = int((group["held"] == 1).sum()), int((group["held"] == 0).sum())
        row = dict(zip(by, key))
        row.update(n_turns=len(group), n_all_held=n_all, n_deviated=n_deviated,
                   n_undecided=len(group) - n_all - n_deviated,
                   all_held_rate=n_all / (n_all + n_deviated) if n_all + n_deviated else np.nan)
        if ci:
            row.update(_clustered_ci(group, n_resamples, seed))
        rows.append(row)
    return pd.DataFrame(rows)


def axis_agreement(frame: pd.DataFrame, judges: Sequence[str] | None = None) -> pd.DataFrame:
    """Per judge pair and axis, on the turns both judged validly: share agreeing, kappa."""
    judges = list(judges) if judges is not None else list(dict.fromkeys(frame["judge_model"]))
    rows = []
    for a, b in combinations(judges, 2):
        for axis in [x for x in AXES if x in set(frame["axis"])]:
            part = frame[frame["axis"] == axis].groupby(["turn_id", "judge_model"])["held"].first().unstack()
            x = part[a].to_numpy(float) if a in part else np.full(len(part), np.nan)
            y = part[b].to_numpy(float) if b in part else np.full(len(part), np.nan)
            both = ~(np.isnan(x) | np.isnan(y))
            row = {"judge_a": a, "judge_b": b, "axis": axis, "n_turns": len(part),
                   "n_both_valid": int(both.sum()), "n_dropped": int((~both).sum()),
                   "share_agree": float(np.mean(x[both] == y[both])) if both.any() else np.nan,
                   "kappa": np.nan, "note": ""}
            try:
                row["kappa"] = judge_agreement(x, y, categories=(0, 1)).kappa
            except StatsInputError as exc:  # no shared valid turn, or one category only
                row["note"] = str(exc)
            rows.append(row)
    return pd.DataFrame(rows)
