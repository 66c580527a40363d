"""The harness's consolidation of a panel's contrasts (``analysis/consolidate_12model_perm.py``).

The paper's content-position table came from this procedure (``PROTOCOL.md`` §9), reproduced
call for call: :func:`consolidate_contrasts` takes the e02 content-position runs of a panel,
each condition against ``scratch`` per probe (:func:`content_position_contrast`: the run's own
paired result where it has one, else :func:`~.permutation.harness_sign_flip_p` of the per-probe
differences of valid scores), Holm (:func:`~.multiple.harness_holm`) within each target and
across the panel; the same generator, draws and arithmetic, so its p-values equal the harness's.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._inputs import DEFAULT_RESAMPLES, DEFAULT_SEED
from .agreement import RUBRIC_SCORES
from .multiple import harness_holm
from .paired import harness_paired_differences
from .permutation import harness_sign_flip_p

#: The consolidation's note on a target listed without a content-position run.
NO_RUN_NOTE = "no content-position run"
#: The sections of an e02 content-position run that hold per-condition results, in the
#: order they are tried.
RESULT_SECTIONS = ("full_results", "per_condition")


@dataclass(frozen=True)
class ConsolidatedContrast:
    """One (target, condition) row of the consolidation: ``delta`` (mean condition −
    baseline), ``p_raw`` (sign-flip p), ``n`` (pairs) and the two Holm adjustments;
    ``None`` where the harness has none (a target without a run, or a run's own paired
    result without a p-value), NaN where a contrast has no pairs; ``note`` on a target
    without a run."""

    target: str
    condition: str
    delta: Any
    p_raw: Any
    n: Any
    p_holm_within: Any = None
    p_holm_panel: Any = None
    note: str | None = None


@dataclass(frozen=True)
class Consolidation:
    """Every contrast of the panel, targets in the given order and conditions within
    each; ``n_contrasts`` counts those with a p-value (the panel's Holm family)."""

    contrasts: tuple[ConsolidatedContrast, ...]
    n_contrasts: int


def content_position_scores(run: Mapping[str, Any], condition: str) -> dict[str, Any]:
    """``probe_id -> score`` of one condition of an e02 content-position run: the first
    of :data:`RESULT_SECTIONS` that holds the condition with its ``results``; only scores
    equal to 0-3 by Python equality (``-1``, a missing score and ``"2"`` are dropped);
    a probe listed twice keeps its last score."""
    for section in RESULT_SECTIONS:
        if section in run:
            results = run[section].get(condition)
            if results and "results" in results:
                return {r["probe_id"]: r["score"] for r in results["results"]
                        if r.get("score", -1) in RUBRIC_SCORES}
    return {}


def content_position_contrast(run: Mapping[str, Any], condition: str, baseline: str = "scratch", *,
                              n_resamples: int = DEFAULT_RESAMPLES,
                              seed: int = DEFAULT_SEED) -> tuple[Any, Any, Any]:
    """``(delta, p, n)`` of ``condition`` against ``baseline`` in one run: the run's own
    ``paired_vs_scratch`` entry for the condition when it has one (``mean_diff_vs_scratch``,
    ``p_raw``, ``n_pairs`` defaulting to 25, as stored); else the per-probe differences
    condition − baseline over the probes valid in both (:func:`~.paired.harness_paired_differences`) and
    their :func:`~.permutation.harness_sign_flip_p` (NaN, NaN, 0 without pairs)."""
    stored = run.get("paired_vs_scratch")
    if stored and condition in stored:
        entry = stored[condition]
        return entry.get("mean_diff_vs_scratch"), entry.get("p_raw"), entry.get("n_pairs", 25)
    deltas = harness_paired_differences(content_position_scores(run, baseline), content_position_scores(run, condition))
    delta, p = harness_sign_flip_p(deltas, n_resamples=n_resamples, seed=seed)
    return delta, p, len(deltas)


def consolidate_contrasts(runs: Sequence[tuple[str, Mapping[str, Any] | None]], conditions: Sequence[str],
                          baseline: str = "scratch", *, n_resamples: int = DEFAULT_RESAMPLES,
                          seed: int = DEFAULT_SEED) -> Consolidation:
    """The consolidated panel of ``runs`` (target, its content-position run or ``None``
    for a target without one), each of ``conditions`` against ``baseline``
    (:func:`content_position_contrast`); the p-values Holm-adjusted
    (:func:`~.multiple.harness_holm`) within each target and across every contrast of the panel
    that has one. A target without a run gets one row per condition, ``n = 0`` and
    :data:`NO_RUN_NOTE`."""
    rows: list[dict[str, Any]] = []
    for target, run in runs:
        if run is None:
            rows += [{"target": target, "condition": c, "delta": None, "p_raw": None, "n": 0, "note": NO_RUN_NOTE}
                     for c in conditions]
            continue
        mine = []
        for condition in conditions:
            delta, p, n = content_position_contrast(run, condition, baseline, n_resamples=n_resamples, seed=seed)
            mine.append({"target": target, "condition": condition, "delta": delta, "p_raw": p, "n": n})
        within = harness_holm([(r["condition"], r["p_raw"]) for r in mine if r["p_raw"] is not None])
        rows += [{**r, "p_holm_within": within.get(r["condition"]) if r["p_raw"] is not None else None}
                 for r in mine]
    panel = harness_holm([(f"{r['target']}::{r['condition']}", r["p_raw"]) for r in rows if r["p_raw"] is not None])
    contrasts = tuple(ConsolidatedContrast(**r, p_holm_panel=panel.get(f"{r['target']}::{r['condition']}"))
                      for r in rows)
    return Consolidation(contrasts, sum(r["p_raw"] is not None for r in rows))
