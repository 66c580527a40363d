"""The anchor notebook's Behavioural Axes section: real turns and forked turns judged on
role, boundaries, values and style (the rates, one per axis and judge and never a
composite, are the notebook's next stage).

Each judge is asked at its provider's budget rule (:func:`axes_judge_params`): the rule the
reference protocol applies to a target of that provider
(:func:`~contextecho.echo.reference.providers.target_params`), so a thinking judge (a Gemini
model: at least 16,384 tokens) has room to think before its verdict, while a judge without
such a rule (the embedded model, a self-hosted one) gets the budget as asked (:func:`axes_judge_params`).

The validation sample (:func:`validation_raters`, :func:`validate_axes`) re-asks a stratified
sample of the judged turns (:func:`contextecho.anchor.axes.validation.stratified_sample`) of three
raters, through the same jobs and requests: three judges (``validation_judges``), each at its own
parameters, so a validation judge that is also a judge of the run answers from the cache; or,
with none given, replicates of the primary judge: its own verdict (greedy, the run's request)
and two replicates sampled at ``sample_temperature`` (replicate indices 1 and 2), as the recall
validators fall back on sampled replicates of the target. Replicates are one judge three times,
not three judges: the tables and the text call them replicates."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from ..anchor.axes.report import AxisJob, axis_frame, axis_jobs, judge_requests
from ..anchor.axes.turns import JudgedTurn, fork_requests, forked_turns, real_turns
from ..anchor.persona import PersonaCard
from ..engine.cache import CallCache
from ..engine.calls import generate
from ..echo.reference.providers import target_params
from .spine import Run

#: Raters of the validation sample (ANCHOR: three judges, majority of three).
N_RATERS = 3


@dataclass(frozen=True)
class Rater:
    """One of the validation sample's three raters: a judge, or a replicate of the primary one."""

    label: str  # how the tables name it
    model: str
    params: Mapping[str, Any]
    replicate: int = 0

    @property
    def is_replicate(self) -> bool:
        return self.label.startswith("replicate")


def axes_judge_params(judge: str, max_tokens: int) -> dict:
    """A judge's sampling parameters: temperature 0 and ``max_tokens`` under its provider's
    rule (module doc)."""
    return {"temperature": 0, **target_params(judge, max_tokens)}


def validation_raters(judges: Sequence[str], validation_judges: Sequence[str], *, sample_temperature: float,
                      max_tokens: int) -> tuple[Rater, ...]:
    """The three raters (module doc): ``validation_judges`` when given (three), else the
    primary judge's own verdict and two replicates of it sampled at ``sample_temperature``."""
    if validation_judges:
        if len(validation_judges) != N_RATERS:
            raise ValueError(f"validation_judges names {len(validation_judges)} models; the majority of three "
                             f"needs {N_RATERS} (or none: replicates of the primary judge)")
        return tuple(Rater(j, j, axes_judge_params(j, max_tokens)) for j in validation_judges)
    primary = judges[0]
    greedy = axes_judge_params(primary, max_tokens)
    return (Rater("replicate 0 (greedy)", primary, greedy),
            *(Rater(f"replicate {r} (T={sample_temperature:g})", primary,
                    {**greedy, "temperature": sample_temperature}, r) for r in range(1, N_RATERS)))


def validate_axes(run: Run, cache: CallCache, card: PersonaCard, turns: Sequence[JudgedTurn],
                  raters: Sequence[Rater]) -> pd.DataFrame:
    """Every rater's verdict on every axis of ``turns``, one batch: the tidy frame of
    :func:`~contextecho.anchor.axes.report.axis_frame` with a ``rater`` column."""
    jobs = {r.label: axis_jobs(turns, r.model, card, params=r.params, replicate=r.replicate) for r in raters}
    judged = generate([q for js in jobs.values() for q in judge_requests(js)], cache=cache,
                      transport=run.transport, progress=True, name="anchor:axes validation")
    frame = pd.concat([axis_frame(js, judged.records).assign(rater=label) for label, js in jobs.items()],
                      ignore_index=True)
    run.batch("anchor:axes validation", judged.counts(invalid=int((frame["status"] == "invalid").sum())))
    return frame


def judge_jobs(turns: Sequence, judges: Sequence[str], card: PersonaCard, max_tokens: int) -> list[AxisJob]:
    """Every (turn, axis) for each judge in turn, each at its own :func:`axes_judge_params`."""
    return [job for judge in judges for job in axis_jobs(turns, judge, card, params=axes_judge_params(judge, max_tokens))]


def run_axes(run: Run, cache: CallCache, card: PersonaCard, *, targets: Sequence[str], judges: Sequence[str],
             checkpoints: int, window: int, fork_max_tokens: int, judge_max_tokens: int) -> pd.DataFrame:
    """Real and forked turns judged per axis: one row per (turn, judge, axis) verdict
    (:func:`~contextecho.anchor.axes.report.axis_frame`). Every target forks at the same
    points; the real turns are the same for all of them and judged once. The forks (of every
    target) and the judge calls are two batches."""
    transport, labels = run.transport, run.labels
    turns = axes_turns(run, cache, card, targets=targets, checkpoints=checkpoints, window=window,
                       fork_max_tokens=fork_max_tokens)
    jobs = judge_jobs(turns, judges, card, judge_max_tokens)
    judged = generate(judge_requests(jobs), cache=cache, transport=transport, progress=True,
                      name="anchor:axes")
    frame = axis_frame(jobs, judged.records)
    frame["session"] = frame["session"].map(lambda s: labels.get(s, s))
    invalid = frame.loc[frame["status"] == "invalid", "judge_key"].nunique()
    run.batch("anchor:axes judges", judged.counts(invalid=int(invalid)))
    return frame


def axes_turns(run: Run, cache: CallCache, card: PersonaCard, *, targets: Sequence[str], checkpoints: int,
               window: int, fork_max_tokens: int, count: bool = True) -> list[JudgedTurn]:
    """The real turns at the checkpoints of the run's sessions (once, whatever the targets) and
    every target's forks there, generated in one batch (``count``: counted in the run log; a
    later stage that reads them again from the cache does not count them twice)."""
    sessions = run.sessions
    turns = [t for s in sessions for t in real_turns(s, k=checkpoints)]
    forks = [f for target in targets for s in sessions
             for f in fork_requests(s, target, card, k=checkpoints, window=window,
                                    params={"temperature": 0, "max_tokens": fork_max_tokens})]
    generated = generate([f.request for f in forks], cache=cache, transport=run.transport, progress=count,
                         name="anchor:forks")
    if count:
        run.batch("anchor:axes forks", generated.counts())
    return turns + forked_turns(forks, generated.records)
