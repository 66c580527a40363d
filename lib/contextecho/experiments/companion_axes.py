"""The companion notebook's Behavioural Axes section: real turns and forked turns judged on
role, boundaries, values and style, one rate per axis and judge (never a composite)."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..anchor.axes.report import all_axes_held, axis_agreement, axis_frame, axis_jobs, axis_rates, judge_requests
from ..anchor.axes.turns import fork_requests, forked_turns, real_turns
from ..anchor.persona import PersonaCard
from ..engine.cache import CellCache
from ..engine.calls import Transport, generate
from ..paper.outputs import Outputs
from ..sessions import Session
from . import common


def run_axes(out: Outputs, cache: CellCache, card: PersonaCard, sessions: Sequence[Session], labels: dict, *,
             target: str, judges: Sequence[str], checkpoints: int, window: int, fork_max_tokens: int,
             judge_max_tokens: int, n_resamples: int, seed: int,
             transport: Transport = Transport(concurrency=1)) -> dict[str, pd.DataFrame]:
    turns = [t for s in sessions for t in real_turns(s, k=checkpoints)]
    forks = [f for s in sessions for f in fork_requests(s, target, card, k=checkpoints, window=window,
                                                         params={"temperature": 0, "max_tokens": fork_max_tokens})]
    generated = generate([f.request for f in forks], cache=cache, transport=transport, progress=True,
                         name="companion:forks")
    turns += forked_turns(forks, generated.records)
    out.count("axes forks", cells=len(forks), cached=generated.n_hits,
              failed=sum(not r.ok for r in generated.records))
    jobs = axis_jobs(turns, list(judges), card, params={"temperature": 0, "max_tokens": judge_max_tokens})
    judged = generate(judge_requests(jobs), cache=cache, transport=transport, progress=True,
                      name="companion:axes")
    frame = axis_frame(jobs, judged.records)
    frame["session"] = frame["session"].map(lambda s: labels.get(s, s))
    counts = out.count("axes judge", verdicts=len(frame), calls=len(judged.records), cached=judged.n_hits,
                       failed=int((frame["status"] == "error").sum()),
                       invalid=int((frame["status"] == "invalid").sum()))
    common.print_counts("companion axes", counts)
    return {"frame": frame,
            "rates": axis_rates(frame, ci=len(set(frame["session"])) > 1, n_resamples=n_resamples, seed=seed),
            "per_turn": all_axes_held(frame), "agreement": axis_agreement(frame) if len(judges) > 1 else None}
