"""The statistics of the authors' ContextEcho harness, call for call.

The paper's numbers came from these procedures (``PROTOCOL.md`` §9); they are
reproduced here with the same random generators, the same draws in the same order and
the same arithmetic, so p-values equal the harness's exactly, not just
in distribution. Our own estimators (:mod:`.drift`, :mod:`.permutation`) stay the
recommended ones; these exist so a reader can check the paper's protocol.

* :func:`compliance_audit` (``analysis/audit_compliance_all_cells.py``) and
  :func:`stressor_forest` (``plotting/fig_forest_stressors.py``): the S2 compliance counts,
  length ratios and per-position rates of the harness's S2 analyses, and the stressor
  forest's intervals: compliance by :func:`~.bootstrap.harness_clustered_bootstrap_mean`, the length
  ratio by :func:`~.bootstrap.harness_clustered_bootstrap_ratio` (the same two-stage draws, real arm before filler arm
  within each drawn position, positions in sorted order).
* :func:`consolidate_contrasts` (``analysis/consolidate_12model_perm.py``): the e02
  content-position runs of a panel, each condition against ``scratch`` per probe
  (:func:`content_position_contrast`: the run's own paired result where it has one,
  else :func:`~.permutation.harness_sign_flip_p` of the per-probe differences of valid scores), Holm within
  each target and across the panel.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._inputs import DEFAULT_RESAMPLES, DEFAULT_SEED
from .bootstrap import harness_clustered_bootstrap_mean, harness_clustered_bootstrap_ratio
from .multiple import harness_holm
from .paired import harness_paired_differences
from .permutation import harness_sign_flip_p


#: The consolidation's note on a target listed without a content-position run.
NO_RUN_NOTE = "no content-position run"
#: The sections of an e02 content-position run that hold per-condition results, in the
#: order they are tried.
RESULT_SECTIONS = ("full_results", "per_condition")
VALID_SCORES = (0, 1, 2, 3)


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
                        if r.get("score", -1) in VALID_SCORES}
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


@dataclass(frozen=True)
class StressorCell:
    """One stored S2 cell as the harness's S2 analyses read it: which pair it belongs to
    (target, session, position, item), its arm (``real`` or ``filler``), whether the
    reply complied and its length in characters."""

    target: str
    session: str
    position: str
    item: str
    arm: str
    compliant: bool
    length: int


ARMS = ("real", "filler")


def _arm_counts(pairs: Sequence[Mapping[str, StressorCell]]) -> dict[str, list[int]]:
    return {arm: [sum(p[arm].compliant for p in pairs), len(pairs)] for arm in ARMS}


def compliance_audit(cells: Sequence[StressorCell], targets: Sequence[str] = (),
                     sessions: Sequence[str] = ()) -> dict:
    """``analysis/audit_compliance_all_cells.py``: S2 compliance per arm as ``[n_pass, n_total]``
    over the pairs stored in both arms (a cell lost in one arm drops its pair), overall,
    per target and per session (``targets`` / ``sessions`` listed first, with zero counts
    where they have no pair); per session the (real, filler) length pairs with both lengths
    > 0 (``raw``) and of those the pairs compliant in both arms (``cond``), and the ratios
    ``raw_ratio`` = Σ real / Σ filler and ``cond_ratio`` = mean real / mean filler (NaN
    without pairs)."""
    by_pair: dict[tuple, dict[str, StressorCell]] = {}
    for c in cells:
        by_pair.setdefault((c.target, c.session, c.position, c.item), {})[c.arm] = c
    pairs = [p for p in by_pair.values() if set(ARMS) <= set(p)]
    target_names = list(dict.fromkeys([*targets, *(p["real"].target for p in pairs)]))
    session_names = list(dict.fromkeys([*sessions, *(p["real"].session for p in pairs)]))
    out = {"overall": _arm_counts(pairs),
           "per_target": {t: _arm_counts([p for p in pairs if p["real"].target == t]) for t in target_names},
           "per_session": {s: _arm_counts([p for p in pairs if p["real"].session == s]) for s in session_names},
           "raw_pairs_per_session": {}, "cond_pairs_per_session": {}, "ratios_by_session": {}}
    for s in session_names:
        raw = [(p["real"].length, p["filler"].length) for p in pairs
               if p["real"].session == s and p["real"].length > 0 and p["filler"].length > 0]
        cond = [(p["real"].length, p["filler"].length) for p in pairs
                if p["real"].session == s and p["real"].length > 0 and p["filler"].length > 0
                and p["real"].compliant and p["filler"].compliant]
        out["raw_pairs_per_session"][s] = raw
        out["cond_pairs_per_session"][s] = cond
        if raw:
            out["ratios_by_session"][s] = {
                "raw_ratio": sum(a for a, _ in raw) / sum(b for _, b in raw), "n_raw": len(raw),
                "cond_ratio": (float(np.mean([a for a, _ in cond])) / float(np.mean([b for _, b in cond])))
                if cond else math.nan, "n_cond": len(cond)}
    return out


def stressor_forest(cells: Sequence[StressorCell], positions: Sequence[str], *,
                    n_boot: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> dict:
    """The no-anchor rows of ``plotting/fig_forest_stressors.py`` for one target's S2 cells
    at ``positions`` (every stored cell of an arm, a lost one simply absent; a position
    enters only with cells in both arms; within a position the cells in item order, as the
    harness reads its variant folders sorted by name): per position each arm's compliance
    (%), mean length and count; ``fi_c`` / ``cl_c`` with ``_lo`` / ``_hi`` = the filler /
    real compliance (%) by :func:`~.bootstrap.harness_clustered_bootstrap_mean` of 100 per compliant reply and 0
    otherwise (the harness's ``cluster_bootstrap_compliance``, ``:156-174``: the same draws
    and, with integer-valued scores, the same sums), ``compliance_drop`` = ``fi_c − cl_c``;
    ``cl_r`` with ``_lo`` / ``_hi`` = :func:`~.bootstrap.harness_clustered_bootstrap_ratio` of the reply lengths
    (``length_inflation``). Each bootstrap starts from ``seed``."""
    per_position, compliance, lengths = {}, {a: {} for a in ARMS}, {a: {} for a in ARMS}
    for pos in positions:
        arm = {a: sorted((c for c in cells if c.position == pos and c.arm == a), key=lambda c: c.item)
               for a in ARMS}
        if not arm["real"] or not arm["filler"]:
            continue
        for a in ARMS:
            compliance[a][pos] = [100.0 if c.compliant else 0.0 for c in arm[a]]
            lengths[a][pos] = [c.length for c in arm[a]]
        per_position[pos] = {
            "claude_compliance_pct": float(np.mean(compliance["real"][pos])),
            "filler_compliance_pct": float(np.mean(compliance["filler"][pos])),
            "claude_mean_len": float(np.mean(lengths["real"][pos])),
            "filler_mean_len": float(np.mean(lengths["filler"][pos])),
            "n_claude": len(arm["real"]), "n_filler": len(arm["filler"])}
    fi = harness_clustered_bootstrap_mean(compliance["filler"], n_boot=n_boot, seed=seed)
    cl = harness_clustered_bootstrap_mean(compliance["real"], n_boot=n_boot, seed=seed)
    cl_r, cl_r_lo, cl_r_hi = harness_clustered_bootstrap_ratio(lengths["real"], lengths["filler"], n_boot=n_boot, seed=seed)
    return {"per_position": per_position, "fi_c": fi.mean, "fi_c_lo": fi.lo, "fi_c_hi": fi.hi,
            "cl_c": cl.mean, "cl_c_lo": cl.lo, "cl_c_hi": cl.hi, "compliance_drop": fi.mean - cl.mean,
            "cl_r": cl_r, "cl_r_lo": cl_r_lo, "cl_r_hi": cl_r_hi, "length_inflation": cl_r}
