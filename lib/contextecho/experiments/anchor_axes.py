"""The anchor notebook's Behavioural Axes section: real turns and forked turns judged on
role, boundaries, values and style (the rates, one per axis and judge and never a
composite, are the notebook's next stage).

Each judge is asked at its provider's budget rule (:func:`axes_judge_params`): the rule the
reference protocol applies to a target of that provider
(:func:`~contextecho.echo.reference.providers.target_params`), so a thinking judge (a Gemini
model: at least 16,384 tokens) has room to think before its verdict, while a judge without
such a rule (the embedded model, a self-hosted one) gets the budget as asked."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..anchor.axes.report import AxisJob, axis_frame, axis_jobs, judge_requests
from ..anchor.axes.turns import fork_requests, forked_turns, real_turns
from ..anchor.persona import PersonaCard
from ..engine.cache import CallCache
from ..engine.calls import generate
from ..echo.reference.providers import target_params
from .spine import Run


def axes_judge_params(judge: str, max_tokens: int) -> dict:
    """A judge's sampling parameters: temperature 0 and ``max_tokens`` under its provider's
    rule (module doc)."""
    return {"temperature": 0, **target_params(judge, max_tokens)}


def judge_jobs(turns: Sequence, judges: Sequence[str], card: PersonaCard, max_tokens: int) -> list[AxisJob]:
    """Every (turn, axis) for each judge in turn, each at its own :func:`axes_judge_params`."""
    return [job for judge in judges for job in axis_jobs(turns, judge, card, params=axes_judge_params(judge, max_tokens))]


def run_axes(run: Run, cache: CallCache, card: PersonaCard, *, targets: Sequence[str], judges: Sequence[str],
             checkpoints: int, window: int, fork_max_tokens: int, judge_max_tokens: int) -> pd.DataFrame:
    """Real and forked turns judged per axis: one row per (turn, judge, axis) verdict
    (:func:`~contextecho.anchor.axes.report.axis_frame`). Every target forks at the same
    points; the real turns are the same for all of them and judged once. The forks (of every
    target) and the judge calls are two batches."""
    transport, sessions, labels = run.transport, run.sessions, run.labels
    turns = [t for s in sessions for t in real_turns(s, k=checkpoints)]
    forks = [f for target in targets for s in sessions
             for f in fork_requests(s, target, card, k=checkpoints, window=window,
                                    params={"temperature": 0, "max_tokens": fork_max_tokens})]
    generated = generate([f.request for f in forks], cache=cache, transport=transport, progress=True,
                         name="anchor:forks")
    turns += forked_turns(forks, generated.records)
    run.batch("anchor:axes forks", generated.counts())
    jobs = judge_jobs(turns, judges, card, judge_max_tokens)
    judged = generate(judge_requests(jobs), cache=cache, transport=transport, progress=True,
                      name="anchor:axes")
    frame = axis_frame(jobs, judged.records)
    frame["session"] = frame["session"].map(lambda s: labels.get(s, s))
    invalid = frame.loc[frame["status"] == "invalid", "judge_key"].nunique()
    run.batch("anchor:axes judges", judged.counts(invalid=int(invalid)))
    return frame
