"""Judge-free drift measures: compliance-rate gaps and verbosity ratios.

* :func:`compliance_gap` — the drift gap (same estimator and clustering as
  :func:`~contextecho.stats.drift.drift_gap`) of a 0/1 compliance column, in
  percentage points: filler rate − real rate (positive: the real prefix breaks the
  output contract more often).
* :func:`log_verbosity_ratios` — per pair (same session, position, probe/stressor and
  paraphrase/replicate under both arms) ``log(real length / filler length)``.
* :func:`verbosity_ratio` — the median per-pair ratio (``summary="median"``) or the
  geometric mean ratio ``exp(mean log ratio)`` (``summary="geometric"``), with a
  bootstrap CI over pairs, clustered by ``cluster`` (pairs in drawn clusters are
  pooled; the median of a replicate is the median of the expanded resample).

The ``harness_`` functions are the authors' harness's own S2 analyses (``PROTOCOL.md`` §9), call
for call, on :class:`StressorCell` records: its compliance audit (over the sessions it labels
its own way, :func:`harness_audit_session`) and its stressor forest.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._inputs import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, as_columns,
                      as_generator, codes, require_columns)
from .bootstrap import (harness_clustered_bootstrap_mean, harness_clustered_bootstrap_ratio, ratio_of_sums,
                        run_bootstrap)
from .resampling import Resampling
from .drift import drift_gap
from .errors import DegenerateDataError, EmptyArmError, StatsInputError
from .records import DriftGap, RatioEstimate

PAIR = ("session", "position", "probe", "replicate")


def compliance_gap(cells: pd.DataFrame, *, compliant: str = "compliant",
                   **options) -> DriftGap:
    """Compliance-rate gap in percentage points (filler − real); options as
    :func:`drift_gap`. Values must be 0/1 (or bool); NaN follows ``invalid``."""
    require_columns(cells, [compliant], "compliance_gap")
    values = pd.to_numeric(cells[compliant].astype("float"), errors="raise")
    if not values.dropna().isin([0.0, 1.0]).all():
        raise StatsInputError(f"{compliant!r} must hold 0/1 (or bool) compliance values")
    return drift_gap(cells.assign(**{compliant: values}), score=compliant, scale=100.0,
                     units="pp", **options)


def log_verbosity_ratios(cells: pd.DataFrame, *, length: str = "length", arm: str = "arm",
                         filler_arm: str = "filler", real_arm: str = "real",
                         pair: Sequence[str] = PAIR) -> pd.DataFrame:
    """Per-pair lengths and ``log_ratio = log(real / filler)``.

    Pairs with a missing or NaN length in either arm are dropped; their number is in
    ``result.attrs["n_unpaired"]``. A zero or negative length raises
    :class:`DegenerateDataError` (mark empty outputs as NaN upstream).
    """
    keys = list(as_columns(pair))
    require_columns(cells, [length, arm, *keys], "log_verbosity_ratios")
    frame = cells.loc[cells[arm].isin([filler_arm, real_arm]), [*keys, arm, length]]
    if frame.duplicated([*keys, arm]).any():
        raise StatsInputError(f"more than one cell per pair {keys} and arm; add the "
                              "distinguishing column to `pair`")
    wide = frame.pivot(index=keys, columns=arm, values=length)
    for name in (filler_arm, real_arm):
        if name not in wide.columns:
            raise EmptyArmError(f"arm {name!r} has no cells")
    wide = wide[[filler_arm, real_arm]].astype(float)
    complete = wide.notna().all(axis=1)
    wide = wide.loc[complete]
    if (wide <= 0).any().any():
        raise DegenerateDataError(
            f"{int((wide <= 0).any(axis=1).sum())} pair(s) have a zero or negative length; "
            "the log ratio is undefined (mark empty outputs as NaN to drop them)")
    out = wide.rename(columns={filler_arm: "filler_length", real_arm: "real_length"})
    out = out.reset_index()
    out.columns.name = None
    out["log_ratio"] = np.log(out["real_length"]) - np.log(out["filler_length"])
    out.attrs["n_unpaired"] = int((~complete).sum())
    return out


def weighted_median(sorted_values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Row-wise median of the sample that repeats ``sorted_values[j]`` ``weights[:, j]``
    times (even totals average the two middle values, as ``np.median``)."""
    cum = np.cumsum(weights, axis=1)
    total = cum[:, -1:]
    lower = (cum < np.floor((total + 1) / 2)).sum(axis=1)
    upper = (cum < np.floor(total / 2) + 1).sum(axis=1)
    return (sorted_values[lower] + sorted_values[upper]) / 2


def verbosity_ratio(cells: pd.DataFrame, *, summary: str = "median",
                    cluster: str | tuple[str, ...] | None = "session",
                    length: str = "length", arm: str = "arm", filler_arm: str = "filler",
                    real_arm: str = "real", pair: Sequence[str] = PAIR,
                    ci_method: str = "percentile", n_resamples: int = DEFAULT_RESAMPLES,
                    confidence: float = DEFAULT_CONFIDENCE,
                    seed: int | np.random.Generator = DEFAULT_SEED) -> RatioEstimate:
    """Verbosity ratio real/filler over pairs (see module docstring)."""
    if summary not in ("median", "geometric"):
        raise ValueError(f"summary must be 'median' or 'geometric', not {summary!r}")
    pairs = log_verbosity_ratios(cells, length=length, arm=arm, filler_arm=filler_arm,
                                 real_arm=real_arm, pair=pair)
    if pairs.empty:
        raise EmptyArmError("no complete (filler, real) pairs")
    rng, recorded = as_generator(seed)
    levels = as_columns(cluster)
    outside = [c for c in levels if c not in as_columns(pair)]
    if outside:
        raise StatsInputError(f"cluster column(s) {outside} must be among the pair keys")
    if not levels:
        scheme, leaf = Resampling.clusters(len(pairs), "pair"), np.arange(len(pairs))
    elif len(levels) == 1:
        leaf, keys = codes(pairs, levels)
        scheme = Resampling.clusters(len(keys), levels[0])
    elif len(levels) == 2:
        leaf, keys = codes(pairs, levels)
        scheme = Resampling.nested(codes(keys, levels[:1])[0], ">".join(levels))
    else:
        raise ValueError(f"cluster must be None, a column, or (outer, inner); got {cluster!r}")
    log_ratio = pairs["log_ratio"].to_numpy()
    if summary == "geometric":
        mean_log = ratio_of_sums(np.bincount(leaf, weights=log_ratio, minlength=scheme.n_leaves),
                                 np.bincount(leaf, minlength=scheme.n_leaves))
        statistic = lambda counts: np.exp(mean_log(counts))  # noqa: E731
        method = "exp(mean over pairs of log(real/filler))"
    else:
        order = np.argsort(log_ratio, kind="stable")
        ratios, leaf_sorted = np.exp(log_ratio[order]), leaf[order]
        statistic = lambda counts: weighted_median(ratios, counts[:, leaf_sorted])  # noqa: E731
        method = "median over pairs of real/filler"
    out = run_bootstrap(scheme, statistic, rng=rng, n_resamples=n_resamples,
                        confidence=confidence, ci_method=ci_method)
    return RatioEstimate(
        estimate=out.estimate, ci_low=out.ci_low, ci_high=out.ci_high, n=len(pairs),
        n_clusters=scheme.n_top, cluster=scheme.label, method=method, ci_method=ci_method,
        confidence=confidence, n_resamples=out.n_resamples, seed=recorded,
        standard_error=out.standard_error, degenerate=out.degenerate,
        summary=summary, n_unpaired=int(pairs.attrs["n_unpaired"]))


@dataclass(frozen=True)
class StressorCell:
    """One stored S2 cell as the harness's S2 analyses read it: which pair it belongs to
    (target, session, position, item), its arm (the real-session or the filler arm), whether
    the reply complied and its length in characters."""

    target: str
    session: str
    position: str
    item: str
    arm: str
    compliant: bool
    length: int


#: The sessions of the harness's S2 audit (``analysis/audit_compliance_all_cells.py`` ``ROOTS``,
#: ``:26-30``), by the runner's name for the session whose cells it reads there: the
#: cross-compaction runners' one session (e08 and e10 name none: ``None``) is "Session 1", e09's
#: ``chainassemble`` and ``proeng`` are "Session 2" and "Session 3". The audit reads no other.
HARNESS_AUDIT_SESSIONS: Mapping[str | None, str] = {None: "Session 1", "chainassemble": "Session 2",
                                                    "proeng": "Session 3"}


def harness_audit_session(session: str | None = None) -> str | None:
    """The harness's S2 audit's label for the cells of the runner's session ``session``
    (:data:`HARNESS_AUDIT_SESSIONS`); None where the audit does not read them."""
    return HARNESS_AUDIT_SESSIONS.get(session)


def harness_compliance_audit(cells: Sequence[StressorCell], targets: Sequence[str] = (),
                             sessions: Sequence[str] = (), *, filler_arm: str = "filler",
                             real_arm: str = "real") -> dict:
    """The harness's S2 audit (``analysis/audit_compliance_all_cells.py``): S2 compliance per
    arm as ``[n_pass, n_total]`` over the pairs stored in both arms (a cell lost in one arm
    drops its pair), overall, per target and per session (``targets`` / ``sessions`` listed
    first, with zero counts where they have no pair); per session the (real, filler) length
    pairs with both lengths > 0 (``raw``) and of those the pairs compliant in both arms
    (``cond``), and the ratios ``raw_ratio`` = Σ real / Σ filler and ``cond_ratio`` = mean real
    / mean filler (NaN without pairs)."""
    by_pair: dict[tuple, dict[str, StressorCell]] = {}
    for c in cells:
        by_pair.setdefault((c.target, c.session, c.position, c.item), {})[c.arm] = c
    arms = (real_arm, filler_arm)
    pairs = [p for p in by_pair.values() if set(arms) <= set(p)]

    def counts(chosen: Sequence[Mapping[str, StressorCell]]) -> dict[str, list[int]]:
        return {arm: [sum(p[arm].compliant for p in chosen), len(chosen)] for arm in arms}
    target_names = list(dict.fromkeys([*targets, *(p[real_arm].target for p in pairs)]))
    session_names = list(dict.fromkeys([*sessions, *(p[real_arm].session for p in pairs)]))
    out = {"overall": counts(pairs),
           "per_target": {t: counts([p for p in pairs if p[real_arm].target == t]) for t in target_names},
           "per_session": {s: counts([p for p in pairs if p[real_arm].session == s]) for s in session_names},
           "raw_pairs_per_session": {}, "cond_pairs_per_session": {}, "ratios_by_session": {}}
    for s in session_names:
        raw = [(p[real_arm].length, p[filler_arm].length) for p in pairs
               if p[real_arm].session == s and p[real_arm].length > 0 and p[filler_arm].length > 0]
        cond = [(p[real_arm].length, p[filler_arm].length) for p in pairs
                if p[real_arm].session == s and p[real_arm].length > 0 and p[filler_arm].length > 0
                and p[real_arm].compliant and p[filler_arm].compliant]
        out["raw_pairs_per_session"][s] = raw
        out["cond_pairs_per_session"][s] = cond
        if raw:
            out["ratios_by_session"][s] = {
                "raw_ratio": sum(a for a, _ in raw) / sum(b for _, b in raw), "n_raw": len(raw),
                "cond_ratio": (float(np.mean([a for a, _ in cond])) / float(np.mean([b for _, b in cond])))
                if cond else math.nan, "n_cond": len(cond)}
    return out


def harness_stressor_forest(cells: Sequence[StressorCell], positions: Sequence[str], *,
                            n_boot: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                            filler_arm: str = "filler", real_arm: str = "real",
                            anchored: Sequence[StressorCell] | None = None) -> dict:
    """The harness's stressor forest: the no-anchor rows of ``plotting/fig_forest_stressors.py``
    for one target's S2 cells at ``positions`` (every stored cell of an arm, a lost one simply
    absent; a position enters only with cells in both arms; within a position the cells in item
    order, as the harness reads its variant folders sorted by name): per position each arm's
    compliance (%), mean length and count; ``fi_c`` / ``cl_c`` with ``_lo`` / ``_hi`` = the
    filler / real compliance (%) by :func:`~.bootstrap.harness_clustered_bootstrap_mean` of 100
    per compliant reply and 0 otherwise (the harness's ``cluster_bootstrap_compliance``,
    ``:156-174``: the same draws and, with integer-valued scores, the same sums),
    ``compliance_drop`` = ``fi_c − cl_c``; ``cl_r`` with ``_lo`` / ``_hi`` =
    :func:`~.bootstrap.harness_clustered_bootstrap_ratio` of the reply lengths
    (``length_inflation``). Each bootstrap starts from ``seed``.

    ``anchored``: the target's S2 cells with the A-anchor (the harness's
    ``CAND_A_COMBINED/stressors`` folder), read at every one of ``positions`` that has any:
    adds the position counts ``n_pos_cl`` / ``n_pos_fi`` / ``n_pos_a`` (``a_positions``: those
    positions), ``a_c`` (+``_lo``/``_hi``,
    ``cluster_bootstrap_compliance`` of those positions, drawn after the filler and real arms'),
    ``a_r`` (+``_lo``/``_hi``: ``cluster_bootstrap_anchor_ratio``, the same resampling as
    ``cl_r`` with the anchored lengths), ``compliance_recovery`` = ``a_c − cl_c`` and
    ``length_after_anchor`` = ``a_r``."""
    arms = (real_arm, filler_arm)
    per_position, compliance, lengths = {}, {a: {} for a in arms}, {a: {} for a in arms}
    for pos in positions:
        arm = {a: sorted((c for c in cells if c.position == pos and c.arm == a), key=lambda c: c.item)
               for a in arms}
        if not arm[real_arm] or not arm[filler_arm]:
            continue
        for a in arms:
            compliance[a][pos] = [100.0 if c.compliant else 0.0 for c in arm[a]]
            lengths[a][pos] = [c.length for c in arm[a]]
        per_position[pos] = {
            "claude_compliance_pct": float(np.mean(compliance[real_arm][pos])),
            "filler_compliance_pct": float(np.mean(compliance[filler_arm][pos])),
            "claude_mean_len": float(np.mean(lengths[real_arm][pos])),
            "filler_mean_len": float(np.mean(lengths[filler_arm][pos])),
            "n_claude": len(arm[real_arm]), "n_filler": len(arm[filler_arm])}
    fi = harness_clustered_bootstrap_mean(compliance[filler_arm], n_boot=n_boot, seed=seed)
    cl = harness_clustered_bootstrap_mean(compliance[real_arm], n_boot=n_boot, seed=seed)
    cl_r, cl_r_lo, cl_r_hi = harness_clustered_bootstrap_ratio(lengths[real_arm], lengths[filler_arm],
                                                               n_boot=n_boot, seed=seed)
    out = {"per_position": per_position, "fi_c": fi.mean, "fi_c_lo": fi.lo, "fi_c_hi": fi.hi,
           "cl_c": cl.mean, "cl_c_lo": cl.lo, "cl_c_hi": cl.hi, "compliance_drop": fi.mean - cl.mean,
           "cl_r": cl_r, "cl_r_lo": cl_r_lo, "cl_r_hi": cl_r_hi, "length_inflation": cl_r}
    if anchored is None:
        return out
    a_compliance, a_lengths = {}, {}
    for pos in positions:
        own = sorted((c for c in anchored if c.position == pos), key=lambda c: c.item)
        if own:
            a_compliance[pos] = [100.0 if c.compliant else 0.0 for c in own]
            a_lengths[pos] = [c.length for c in own]
    a = harness_clustered_bootstrap_mean(a_compliance, n_boot=n_boot, seed=seed)
    a_r, a_r_lo, a_r_hi = harness_clustered_bootstrap_ratio(a_lengths, lengths[filler_arm], n_boot=n_boot, seed=seed)
    return {**out, "n_pos_cl": len(compliance[real_arm]), "n_pos_fi": len(compliance[filler_arm]),
            "n_pos_a": len(a_compliance), "a_positions": list(a_compliance), "a_c": a.mean, "a_c_lo": a.lo, "a_c_hi": a.hi,
            "a_r": a_r, "a_r_lo": a_r_lo, "a_r_hi": a_r_hi, "compliance_recovery": a.mean - cl.mean,
            "length_after_anchor": a_r}
