"""``run_cells``: generate the targets, score or judge every response, return a tidy frame.

1. All target requests go through ``calls.generate`` (cached by content).
2. Stressor and contract cells are scored by their pure scorer (never cached).
3. Probe cells are judged: for every judge model, one blind request per response with
   an ok target call (``judge.judge_request``; a judge that is not in-process is shown the
   answer redacted, :mod:`contextecho.sessions.outbound`), all through ``generate`` as well — a
   judge call is cached under its own key, so changing the judge or the rubric re-judges
   without re-generating.

One row per (cell, judge) for probes — several judges score the same responses, for the
cross-judge audit — and one row per cell for scored items. A judge named ``self``
(:data:`SELF_JUDGE`) is each cell's own target: a target judges its own responses, as the
harness's Fig.-1 fill runners do (``run_fig1_sonnet45.py:81``); ``judge_model`` names the
model that judged. ``rubric_version`` / ``rubric_hash`` name the rubric the
judge applied (the instrument default unless ``rubric=`` is given). ``verdict_status`` is
``ok`` (a score), ``invalid`` (the judge's reply held no parseable 0–3 score), ``error``
(the target or the judge call failed), or ``unjudged`` (a probe cell with no judge
given). ``score`` is NaN unless ``verdict_status`` is ok; failures are rows, never
dropped, and :func:`verdict_counts` reports them. ``frame.attrs["batches"]`` holds the
:class:`~contextecho.engine.counts.Counts` of the run's three batches (``<name>:targets``,
``<name>:judges``, ``<name>:distributions``; an unreadable verdict or distribution is
``invalid``).

The run's protocol (:class:`~.protocol.Protocol`, the object the run carries) decides what a
reply is, how an item is scored, how a response is judged and how a verdict is read (and
which columns of its own a verdict adds); this module never asks which protocol it runs.

``stored_only=True`` sends nothing: every call is answered from the cache (a call it holds
no record of fails as ``NotStored``), so the frame is what an earlier run stored;
``retry_errors`` calls again the requests whose stored error is permanent
(:func:`contextecho.engine.calls.agenerate`).

With ``distributions=True`` each judge also gets its score distribution read
(:mod:`contextecho.engine.token_distribution`, in the mode the protocol chooses for the
judge: :meth:`~.protocol.Protocol.distribution_mode`), as a call of its own beside the
verdict's (whose key is unchanged), or from the verdict's own call (``verdict`` mode: its
request asks for the token probabilities): ``expected_score`` (Σ s·p(s) over 0–3), ``score_argmax``,
``score_entropy``, ``score_flat``, ``score_probs`` (JSON), ``distribution_key`` and
``distribution_status`` — ``ok``, ``invalid``, ``error`` (that call, or the target's,
failed: never a score) or ``discrete`` (the judge's provider returns no token
probabilities: ``expected_score`` is then the parsed verdict, ``score_source`` says so).

Each row is a :class:`Judged` record, never mutated: :func:`run_cells` reads top to bottom,
each step returning new records (``dataclasses.replace``), and the frame is built once from
them (:meth:`Judged.row`: the cell's columns, then the column groups below that apply to it,
then the protocol's own).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import pandas as pd

from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.counts import Counts
from ..engine.model_request import ModelRequest
from ..engine.record import CallRecord
from ..engine.token_distribution import (DISCRETE, PREFILL, VERDICT, Distribution, distribution_columns,
                                         distribution_request, read_distribution, with_logprobs)
from ..engine.verdicts import DEFAULT_JUDGE_PARAMS, ERROR, INVALID, OK
from .cells import COLUMNS as CELL_COLUMNS, Cell
from .items import JUDGE
from .judge import SCORES
from ..sessions.outbound import JudgeInputs, shown_texts
from .protocol import JudgeSetup, Protocol, Verdict
from .rubric import RUBRIC, Rubric

UNJUDGED = "unjudged"
#: The judge name that stands for each cell's own target (module doc).
SELF_JUDGE = "self"
#: The frame's columns after each cell's own (:meth:`~.cells.Cell.row`), by group, in order.
TARGET_COLUMNS = ("status", "response", "response_chars", "finish_reason", "error_type", "error_message",
                  "prompt_tokens", "completion_tokens", "cached")
VERDICT_COLUMNS = ("judge_model", "judge_key", "judge_response", "passed", "score", "verdict_status",
                   "verdict_reason")
RUBRIC_COLUMNS = ("rubric_version", "rubric_hash")
DISTRIBUTION_COLUMNS = ("expected_score", "score_argmax", "score_entropy", "score_flat", "score_probs",
                        "distribution_reason", "distribution_key", "distribution_status", "score_source")
NOT_READ = Distribution(INVALID, "not read")


def judge_model(judge: str, target: str) -> str:
    """The model string that judges a response of ``target`` as ``judge`` (``self``: the target)."""
    return target if judge == SELF_JUDGE else judge


@dataclass(frozen=True)
class TargetResult:
    """A cell's target call, whether the cache answered it, the text the protocol reads (``None``: failed)."""

    record: CallRecord
    cached: bool
    text: str | None

    @property
    def failure(self) -> str:
        return f"target call failed: {self.record.error_type}"

    def values(self) -> tuple:
        r, text = self.record, self.text
        return (r.status if text is None else OK, text, len(text) if text is not None else math.nan,
                r.finish_reason, r.error_type, r.error_message, r.prompt_tokens, r.completion_tokens, self.cached)


@dataclass(frozen=True)
class Reading:
    """A judge's score distribution read beside its verdict (module doc): how, by which request
    (``request``: one of its own), its status (``None``: not read yet) and the expected score's
    ``source``; ``expected``: the parsed verdict standing for it (discrete)."""

    mode: str
    key: str | None = None
    status: str | None = None
    source: str | None = None
    distribution: Distribution = NOT_READ
    expected: float | None = None
    request: ModelRequest | None = field(default=None, repr=False, compare=False)

    def values(self) -> tuple:
        columns = distribution_columns(self.distribution)
        if self.expected is not None:
            columns["expected_score"] = self.expected
        return (*columns.values(), self.key, self.status, self.source)


@dataclass(frozen=True)
class Judged:
    """One row of a run: a cell, its target's result, the verdict on it (a scorer's, or a judge's
    with its request, reply, rubric and :class:`Reading`; ``None`` until the judge answers)."""

    cell: Cell
    target: TargetResult
    verdict: Verdict | None = None
    judge: str | None = None
    request: ModelRequest | None = field(default=None, repr=False)
    response: str | None = None
    rubric: tuple[str, str] | None = None
    reading: Reading | None = None

    def row(self) -> dict[str, Any]:
        """The record as one row of the frame (module doc)."""
        v = self.verdict
        row = {**self.cell.row(), **dict(zip(TARGET_COLUMNS, self.target.values())),
               **dict(zip(VERDICT_COLUMNS, (self.judge, self.request.key if self.request else None, self.response,
                                            pd.NA if v.passed is None else v.passed, v.score, v.status, v.reason)))}
        if self.rubric is not None:
            row.update(zip(RUBRIC_COLUMNS, self.rubric))
        if self.reading is not None:
            row.update(zip(DISTRIBUTION_COLUMNS, self.reading.values()))
        return {**row, **v.columns()}


def run_cells(cells: Sequence[Cell], judges: Sequence[str] | str = (), *, protocol: Protocol,
              cache: CallCache | None = None, transport: Transport = Transport(),
              progress: bool = True, judge_params: Mapping[str, Any] = DEFAULT_JUDGE_PARAMS,
              rubric: Rubric = RUBRIC, name: str = "cells", distributions: bool = False,
              stored_only: bool = False, retry_errors: bool | None = None, redact: bool = True) -> pd.DataFrame:
    """Run ``cells`` (from :func:`build_cells`) and return the tidy frame (module doc).
    ``redact=False`` (run-level conformance only, whose replay never leaves the process, with
    cells built unredacted): a judge that is not in-process is shown the answer as it is."""
    judges = [judges] if isinstance(judges, str) else list(judges)
    setup = protocol.judging(judges, rubric)
    modes = {m: protocol.distribution_mode(m) for m in {judge_model(j, c.target) for c in cells for j in judges}} \
        if distributions else {}  # judge model -> how its score distribution is read
    own = cache is None
    cache = cache if cache is not None else CallCache()
    batch = {"cache": cache, "transport": transport, "progress": progress, "stored_only": stored_only,
             "retry_errors": retry_errors}
    try:
        targets = generate([c.request for c in cells], name=f"{name}:targets",
                           parameters={"n_cells": len(cells), "judges": judges}, **batch)
        shown = JudgeInputs(redact)  # what leaves for a hosted judge is redacted (sessions.outbound)
        records = [judged for cell, record, cached in zip(cells, targets.records, targets.cached)
                   for judged in _asked(cell, TargetResult(record, cached, protocol.reply(record, cell)), protocol,
                                        setup, judges, judge_params, modes, shown)]
        batch = {**batch, "parameters": {"judges": judges, "rubric_version": setup.rubric_version}}
        records, judged = _judged(records, protocol, setup, f"{name}:judges", batch)
        records, read = _read(records, setup, f"{name}:distributions", batch)
        # a grid of no cell has the columns every grid has (its analyses select on them)
        frame = pd.DataFrame([_settled(r).row() for r in records]) if records else \
            pd.DataFrame(columns=[*CELL_COLUMNS, *TARGET_COLUMNS, *VERDICT_COLUMNS])
        frame.attrs["batches"] = {f"{name}:targets": targets.counts(), f"{name}:judges": judged,
                                  f"{name}:distributions": read}
        return frame
    finally:
        if own:
            cache.close()


def _asked(cell: Cell, target: TargetResult, protocol: Protocol, setup: JudgeSetup, judges: Sequence[str],
           judge_params: Mapping[str, Any], modes: Mapping[str, str], shown: JudgeInputs) -> list[Judged]:
    """A cell's records before any judge answers: a scored item's, an unjudged probe's, or one
    per judge with the request it is asked (and the distribution's), none where the target failed."""
    base = Judged(cell, target)
    if cell.item.scorer != JUDGE:
        verdict = protocol.score(cell.item, target.text) if target.text is not None else \
            Verdict(ERROR, math.nan, target.failure)
        return [replace(base, verdict=verdict)]
    if not judges:
        return [replace(base, verdict=Verdict(UNJUDGED, math.nan, "no judge given"))]
    out = []
    for judge in (judge_model(j, cell.target) for j in judges):
        reading = Reading(modes[judge]) if modes else None
        judged = replace(base, judge=judge, rubric=(setup.rubric_version, setup.rubric_hash), reading=reading)
        if target.text is None:
            out.append(replace(judged, verdict=Verdict(ERROR, math.nan, target.failure),
                               reading=replace(reading, status=ERROR) if reading else None))
            continue
        answer = shown.text(target.text, judge, cell.session, shown_texts(cell.request.messages))
        request = protocol.judge_request(setup, judge, cell.item.probe_text, answer, judge_params, cell.key)
        if reading is not None and reading.mode == VERDICT:
            request = with_logprobs(request)  # the verdict's own call reads it
            reading = replace(reading, key=request.key)
        own = distribution_request(request, reading.mode, setup.prefill) if reading is not None else None
        if own is not None:
            reading = replace(reading, key=own.key, request=own)
        out.append(replace(judged, request=request, reading=reading))
    return out


def _judged(records: list[Judged], protocol: Protocol, setup: JudgeSetup, name: str,
            batch: Mapping[str, Any]) -> tuple[list[Judged], Counts]:
    """The records with their judges' verdicts (and a distribution read from a verdict's own
    call), the judge batch's counts: one request per record asked."""
    asked = [i for i, r in enumerate(records) if r.request is not None]
    if not asked:
        return records, Counts()
    result = generate([records[i].request for i in asked], name=name, **batch)
    out = list(records)
    for i, record in zip(asked, result.records):
        r = records[i]
        text = protocol.judge_reply(record, r.request.model)
        if text is None:
            out[i] = replace(r, verdict=Verdict(ERROR, math.nan, f"judge call failed: {record.error_type}"))
            continue
        r = replace(r, response=text, verdict=protocol.read_verdict(text))
        if r.reading is not None and r.reading.mode == VERDICT:
            d = read_distribution(record.logprobs, list(SCORES), label=setup.label, values=SCORES)
            r = replace(r, reading=replace(r.reading, distribution=d, status=d.status, source="verdict"))
        out[i] = r
    invalid = len({records[i].request.key for i in asked if out[i].verdict.status == INVALID})
    return out, replace(result.counts(), invalid=invalid)


def _read(records: list[Judged], setup: JudgeSetup, name: str,
          batch: Mapping[str, Any]) -> tuple[list[Judged], Counts]:
    """The records with the distributions read by requests of their own, the batch's counts."""
    asked = [i for i, r in enumerate(records) if r.reading is not None and r.reading.request is not None]
    if not asked:
        return records, Counts()
    result = generate([records[i].reading.request for i in asked], name=name, **batch)
    out = list(records)
    for i, record in zip(asked, result.records):
        reading = records[i].reading
        if record.ok and record.response_text is not None:
            d = read_distribution(record.logprobs, list(SCORES), label=setup.label,
                                  prefill=setup.prefill if reading.mode == PREFILL else "", values=SCORES)
            reading = replace(reading, distribution=d, status=d.status, source="distribution")
        else:
            reading = replace(reading, status=ERROR,
                              distribution=Distribution(INVALID, f"distribution call failed: {record.error_type}"))
        out[i] = replace(records[i], reading=reading)
    invalid = len({out[i].reading.key for i in asked if out[i].reading.status == INVALID})
    return out, replace(result.counts(), invalid=invalid)


def _settled(r: Judged) -> Judged:
    """A record whose distribution was not read, settled: an error where the verdict's own call
    (or the target's) failed; the parsed verdict, as such, where the judge's provider returns
    no token probabilities."""
    reading = r.reading
    if reading is not None and reading.mode == VERDICT and reading.status is None:
        return replace(r, reading=replace(reading, status=ERROR))
    if reading is not None and reading.mode == DISCRETE and reading.status != ERROR:
        return replace(r, reading=replace(reading, status=DISCRETE, source=DISCRETE, expected=r.verdict.score,
                                          distribution=Distribution(INVALID, "the judge's provider returns no "
                                                                             "token probabilities")))
    return r


def verdict_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts of ok / invalid / error / unjudged verdicts per judge (scorers as "scorer")."""
    who = frame["judge_model"].fillna("scorer")
    table = pd.crosstab(who, frame["verdict_status"])
    for status in (OK, INVALID, ERROR):
        if status not in table.columns:
            table[status] = 0
    return table


def distribution_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per judge, for a frame read with ``distributions=True``: counts by
    ``distribution_status``, flat distributions, and how often the distribution's
    arg-max equals the parsed verdict (over cells where both exist)."""
    judged = frame[frame["judge_model"].notna()]
    rows = []
    for judge, group in judged.groupby("judge_model", sort=True):
        status = group["distribution_status"].value_counts()
        both = group[(group["distribution_status"] == OK) & (group["verdict_status"] == OK)]
        agree = (both["score_argmax"].astype(float) == both["score"]).sum()
        rows.append({"judge_model": judge,
                     **{f"n_{s}": int(status.get(s, 0)) for s in (OK, INVALID, ERROR, DISCRETE)},
                     "n_flat": int(group["score_flat"].fillna(False).astype(bool).sum()),
                     "n_compared": len(both), "argmax_agree": int(agree),
                     "argmax_agree_pct": round(100 * agree / len(both), 1) if len(both) else math.nan,
                     "mean_entropy": float(group["score_entropy"].mean())})
    return pd.DataFrame(rows)
