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
reply is, how an item is scored, how a response is judged and how a verdict is read;
this module never asks which protocol it runs.
``protocol="reference"`` (cells from :mod:`.reference.cells`) judges with the harness's
prompt (read at run time; its sha256 in ``rubric_hash`` and the judge key) and parser:
a −1 or an escaping exception is an ``invalid`` row whose ``reference_score`` keeps the
harness's −1 (``None`` where it would have raised), so both treatments — drop and count,
or average the −1s in as the panel forest's loader does — can be computed. Stressors are
scored by the reference scorer (``score``) and by ours (``contextecho_score``), and an
empty answer is judged and scored as the harness does (``contextecho``: an error).

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
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.counts import Counts
from ..engine.token_distribution import (DISCRETE, PREFILL, VERDICT, distribution_columns, distribution_request,
                                         no_distribution, read_distribution, with_logprobs)
from ..engine.verdicts import DEFAULT_JUDGE_PARAMS, ERROR, INVALID, OK
from .cells import Cell
from .items import JUDGE
from .judge import SCORES
from ..sessions.outbound import JudgeInputs, shown_texts
from .protocol import Protocol
from .rubric import RUBRIC, Rubric

UNJUDGED = "unjudged"
#: The judge name that stands for each cell's own target (module doc).
SELF_JUDGE = "self"


def judge_model(judge: str, target: str) -> str:
    """The model string that judges a response of ``target`` as ``judge`` (``self``: the target)."""
    return target if judge == SELF_JUDGE else judge


def _target_columns(record, cached: bool, text: str | None) -> dict[str, Any]:
    return {"status": record.status if text is None else "ok", "response": text,
            "response_chars": len(text) if text is not None else math.nan,
            "finish_reason": record.finish_reason, "error_type": record.error_type,
            "error_message": record.error_message, "prompt_tokens": record.prompt_tokens,
            "completion_tokens": record.completion_tokens, "cached": cached}


def _empty_verdict() -> dict[str, Any]:
    return {"judge_model": None, "judge_key": None, "judge_response": None,
            "passed": pd.NA, "score": math.nan, "verdict_status": None, "verdict_reason": None}


def _answered(pending: Sequence[tuple[dict[str, Any], Any]], name: str, column: str, call: str,
              batch: Mapping[str, Any], reply: Callable[[Any, str], str | None] | None = None,
              ) -> tuple[list[tuple[dict[str, Any], Any, str]], Counts]:
    """Send the requests of ``pending`` (row, request) as one batch; a call without a reply
    (``reply(record, model)``: its text, or None; default the text of a successful call)
    marks its row's ``<column>_status`` as an error with the reason. The (row, record,
    text) triples answered, and the batch's counts."""
    if not pending:
        return [], Counts()
    result = generate([r for _, r in pending], name=name, **batch)
    answered = []
    for (row, request), record in zip(pending, result.records):
        text = reply(record, request.model) if reply else (record.response_text if record.ok else None)
        if text is not None:
            answered.append((row, record, text))
        else:
            row.update({f"{column}_status": ERROR,
                        f"{column}_reason": f"{call} call failed: {record.error_type}"})
    return answered, result.counts()


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
    modes: dict[str, str] = {}  # judge model -> how its score distribution is read
    own = cache is None
    cache = cache if cache is not None else CallCache()
    calling = {"stored_only": stored_only, "retry_errors": retry_errors}
    try:
        targets = generate([c.request for c in cells], cache=cache, transport=transport,
                           progress=progress, name=f"{name}:targets",
                           parameters={"n_cells": len(cells), "judges": judges}, **calling)
        rows: list[dict[str, Any]] = []
        shown = JudgeInputs(redact)  # what leaves for a hosted judge is redacted (sessions.outbound)
        pending: list[tuple[dict[str, Any], Any]] = []  # (row, judge request)
        readings: list[tuple[dict[str, Any], Any]] = []  # (row, distribution request)
        for cell, record, cached in zip(cells, targets.records, targets.cached):
            text = protocol.reply(record, cell)  # None: the target call failed
            base = {**cell.row(), **_target_columns(record, cached, text)}
            if cell.item.scorer != JUDGE:
                row = {**base, **_empty_verdict()}
                if text is not None:
                    v = protocol.score(cell.item, text)
                    row.update(passed=v.passed, score=v.score, verdict_status=v.status, verdict_reason=v.reason,
                               **v.columns())
                else:
                    row.update(verdict_status=ERROR, verdict_reason=f"target call failed: {record.error_type}")
                rows.append(row)
                continue
            if not judges:
                rows.append({**base, **_empty_verdict(), "verdict_status": UNJUDGED,
                             "verdict_reason": "no judge given"})
                continue
            for judge in (judge_model(j, cell.target) for j in judges):
                row = {**base, **_empty_verdict(), "judge_model": judge,
                       "rubric_version": setup.rubric_version, "rubric_hash": setup.rubric_hash}
                if distributions and judge not in modes:
                    modes[judge] = protocol.distribution_mode(judge)
                if distributions:
                    row.update(no_distribution("not read"), distribution_key=None,
                               distribution_status=None, score_source=None)
                if text is None:
                    row.update(verdict_status=ERROR, verdict_reason=f"target call failed: {record.error_type}")
                    if distributions:
                        row.update(distribution_status=ERROR)
                    rows.append(row)
                    continue
                answer = shown.text(text, judge, cell.session, shown_texts(cell.request.messages))
                request = protocol.judge_request(setup, judge, cell.item.probe_text, answer, judge_params, cell.key)
                if distributions and modes[judge] == VERDICT:
                    request = with_logprobs(request)  # the verdict's own call reads it
                    row["distribution_key"] = request.key
                row["judge_key"] = request.key
                rows.append(row)
                pending.append((row, request))
                if distributions:
                    reading = distribution_request(request, modes[judge], setup.prefill)
                    if reading is not None:
                        row["distribution_key"] = reading.key
                        readings.append((row, reading))
        batch = {"cache": cache, "transport": transport, "progress": progress, **calling,
                 "parameters": {"judges": judges, "rubric_version": setup.rubric_version}}
        verdicts, judged = _answered(pending, f"{name}:judges", "verdict", "judge", batch, protocol.judge_reply)
        for row, record, text in verdicts:
            v = protocol.read_verdict(text)
            row.update(judge_response=text, verdict_status=v.status, score=v.score, verdict_reason=v.reason,
                       **v.columns())
            if distributions and modes[row["judge_model"]] == VERDICT:
                d = read_distribution(record.logprobs, list(SCORES), label=setup.label, values=SCORES)
                row.update(distribution_columns(d), distribution_status=d.status, score_source="verdict")
        distributions_read, read = _answered(readings, f"{name}:distributions", "distribution",
                                             "distribution", batch)
        for row, record, _ in distributions_read:
            d = read_distribution(record.logprobs, list(SCORES), label=setup.label,
                                  prefill=setup.prefill if modes[row["judge_model"]] == PREFILL else "",
                                  values=SCORES)
            row.update(distribution_columns(d), distribution_status=d.status, score_source="distribution")
        for row in rows:
            if distributions and row.get("judge_model") and modes[row["judge_model"]] == VERDICT \
                    and row["distribution_status"] is None:
                row.update(distribution_status=ERROR)  # the target's or the judge's call failed
            if distributions and row.get("judge_model") and modes[row["judge_model"]] == DISCRETE \
                    and row["distribution_status"] != ERROR:
                # No token probabilities from this judge's provider: the parsed verdict, as such.
                row.update(distribution_status=DISCRETE, score_source=DISCRETE,
                           expected_score=row["score"],
                           distribution_reason="the judge's provider returns no token probabilities")
        frame = pd.DataFrame(rows)
        frame.attrs["batches"] = {
            f"{name}:targets": targets.counts(),
            f"{name}:judges": replace(judged, invalid=len({r["judge_key"] for r, _ in pending
                                                           if r["verdict_status"] == INVALID})),
            f"{name}:distributions": replace(read, invalid=len({r["distribution_key"] for r, _ in readings
                                                                if r["distribution_status"] == INVALID}))}
        return frame
    finally:
        if own:
            cache.close()


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
