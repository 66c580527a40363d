"""The statistics of the authors' ContextEcho harness, call for call.

The paper's numbers came from these procedures (``PROTOCOL.md`` §9); they are
reproduced here with the same random generators, the same draws in the same order and
the same arithmetic, so intervals and p-values equal the harness's exactly, not just
in distribution. Our own estimators (:mod:`.drift`, :mod:`.permutation`) stay the
recommended ones; these exist so a reader can check the paper's protocol.

* :func:`clustered_bootstrap_mean` (panel forest, Fig. 3): per arm, ``numpy``
  ``default_rng(seed)``; point = unweighted mean of the per-position means; each of
  ``n_boot`` resamples draws positions with replacement (``integers(0, P, P)``), then
  for each drawn position its scores with replacement (``integers(0, n, n)``);
  statistic = mean of the resampled position means; interval = ``np.percentile``
  2.5 / 97.5 (linear). Both arms restart from the seed. The drift gap is
  ``mean(filler) − mean(real)`` of the two point estimates (:func:`drift_gap`).
* :func:`boot_gap_ci` (onset, Fig. 15): unclustered; ``rng.choice`` resamples the
  filler list then the real list (``n_boot`` rows each), interval = percentiles of
  the difference of the row means. One generator is reused across the positions of a
  target, in order, and across the targets in turn (:func:`onset_gap_cis` with ``rng``),
  as the harness's onset figure keeps one module generator.
* :func:`sign_flip_p` (``consolidate_12model_perm.paired_permutation``): CPython
  ``random.Random(seed)``; each resample flips every difference with
  ``random() < 0.5``; two-sided count of ``|mean| >= |observed|``; ``p = count / n``
  (``plus_one=True``: ``(count + 1) / (n + 1)``, the B7 ``perm_p`` variant).
* :func:`paired_bootstrap_ci` (B7): ``random.Random(seed).randrange(n)`` n times per
  resample; interval = sorted replicates at ``int(0.025 B)`` and ``int(0.975 B) − 1``.
* :func:`paired_differences`: the B7 pairing — keys present in both arms, sorted,
  difference ``b − a``.
* :func:`compliance_audit` (``analysis/audit_compliance_all_cells.py``) and
  :func:`stressor_forest_points` (``plotting/fig_forest_stressors.py``, point estimates
  only): the S2 compliance counts, length ratios and per-position rates of the harness's
  S2 analyses.
* Holm: :func:`contextecho.stats.multiple.holm` is the same step-down (sorted
  ascending with a stable sort, ``(m − i) p``, running maximum, capped at 1).
"""
from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._inputs import DEFAULT_RESAMPLES, DEFAULT_SEED

LOW, HIGH = 2.5, 97.5


@dataclass(frozen=True)
class HarnessInterval:
    """A point estimate with the harness's 95% interval; ``n`` counts the scores."""

    mean: float
    lo: float
    hi: float
    n: int


def clustered_bootstrap_mean(by_position: Mapping[str, Sequence[float]], *,
                             n_boot: int = DEFAULT_RESAMPLES,
                             seed: int = DEFAULT_SEED) -> HarnessInterval:
    """Two-stage (positions, then scores within each drawn position) bootstrap of the
    position-equal-weighted mean; positions in the mapping's order."""
    if not by_position:
        return HarnessInterval(math.nan, math.nan, math.nan, 0)
    rng = np.random.default_rng(seed)
    positions = list(by_position)
    arrays = [np.array(by_position[p], dtype=float) for p in positions]
    n_pos = len(positions)
    point = float(np.mean([a.mean() for a in arrays]))
    boots = np.empty(n_boot, dtype=float)
    for b in range(n_boot):
        means = []
        for j in rng.integers(0, n_pos, size=n_pos):
            values = arrays[j]
            means.append(values[rng.integers(0, len(values), size=len(values))].mean())
        boots[b] = float(np.mean(means))
    return HarnessInterval(point, float(np.percentile(boots, LOW)),
                           float(np.percentile(boots, HIGH)), sum(len(a) for a in arrays))


def drift_gap(filler: HarnessInterval, real: HarnessInterval) -> float:
    """The forest's drift gap: filler mean minus real-session mean (positive = drift)."""
    return filler.mean - real.mean


def boot_gap_ci(filler: Sequence[float], real: Sequence[float], rng: np.random.Generator,
                *, n_boot: int = DEFAULT_RESAMPLES) -> tuple[float, float, float]:
    """``(gap, lo, hi)`` of ``mean(filler) − mean(real)``, unclustered, drawing from ``rng``
    (NaNs and no draws when either list is empty)."""
    if len(filler) == 0 or len(real) == 0:
        return math.nan, math.nan, math.nan
    f = np.array(filler, dtype=float)
    c = np.array(real, dtype=float)
    gap = float(f.mean() - c.mean())
    f_means = rng.choice(f, size=(n_boot, len(f)), replace=True).mean(axis=1)
    c_means = rng.choice(c, size=(n_boot, len(c)), replace=True).mean(axis=1)
    lo, hi = np.percentile(f_means - c_means, [LOW, HIGH])
    return gap, float(lo), float(hi)


def onset_gap_cis(filler_by_position: Mapping[str, Sequence[float]],
                  real_by_position: Mapping[str, Sequence[float]], positions: Sequence[str],
                  *, n_boot: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  rng: np.random.Generator | None = None) -> dict[str, tuple[float, float, float]]:
    """:func:`boot_gap_ci` per position of one target, one generator across them in order.

    ``rng``: the generator to draw from (the harness's onset figure keeps one
    ``default_rng(42)`` for every target in turn, ``plotting/fig_app_onset.py:25``);
    default a new one from ``seed``."""
    rng = rng if rng is not None else np.random.default_rng(seed)
    return {p: boot_gap_ci(filler_by_position.get(p, ()), real_by_position.get(p, ()), rng,
                           n_boot=n_boot) for p in positions}


def sign_flip_p(deltas: Sequence[float], *, n_resamples: int = DEFAULT_RESAMPLES,
                seed: int = DEFAULT_SEED, plus_one: bool = False) -> tuple[float, float]:
    """``(observed mean, two-sided p)`` of the sign-flip test on paired differences."""
    if len(deltas) == 0:
        return math.nan, math.nan
    rng = random.Random(seed)
    n = len(deltas)
    observed = sum(deltas) / n
    count = 0
    for _ in range(n_resamples):
        flipped = sum(d if rng.random() < 0.5 else -d for d in deltas) / n
        if abs(flipped) >= abs(observed):
            count += 1
    if plus_one:
        return observed, (count + 1) / (n_resamples + 1)
    return observed, count / n_resamples


def paired_differences(a: Mapping[str, float], b: Mapping[str, float]) -> list[float]:
    """``b[k] − a[k]`` for the keys in both mappings, in sorted key order."""
    return [b[k] - a[k] for k in sorted(set(a) & set(b))]


def paired_bootstrap_ci(deltas: Sequence[float], *, n_boot: int = DEFAULT_RESAMPLES,
                        seed: int = DEFAULT_SEED) -> tuple[float, float]:
    """B7's percentile interval of the mean paired difference (order statistics)."""
    if len(deltas) == 0:
        return math.nan, math.nan
    rng = random.Random(seed)
    n = len(deltas)
    boots = sorted(sum(deltas[rng.randrange(n)] for _ in range(n)) / n for _ in range(n_boot))
    return boots[int(0.025 * n_boot)], boots[int(0.975 * n_boot) - 1]


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


def stressor_forest_points(cells: Sequence[StressorCell], positions: Sequence[str]) -> dict:
    """The point estimates of ``plotting/fig_forest_stressors.py`` for one target's S2
    cells at ``positions`` (every stored cell of an arm, a lost one simply absent): per
    position each arm's compliance (%), mean length and count; ``fi_c`` / ``cl_c`` = the
    mean over positions of the filler / real compliance (%), ``compliance_drop`` = their
    difference, ``cl_r`` = the mean over positions of real mean length / filler mean
    length (``length_inflation``). Its bootstrap bounds (``:156-204``) are not here: the
    fixtures give their results, not their procedure."""
    per_position = {}
    for pos in positions:
        arm = {a: [c for c in cells if c.position == pos and c.arm == a] for a in ARMS}
        if not arm["real"] or not arm["filler"]:
            continue
        per_position[pos] = {
            "claude_compliance_pct": 100 * float(np.mean([c.compliant for c in arm["real"]])),
            "filler_compliance_pct": 100 * float(np.mean([c.compliant for c in arm["filler"]])),
            "claude_mean_len": float(np.mean([c.length for c in arm["real"]])),
            "filler_mean_len": float(np.mean([c.length for c in arm["filler"]])),
            "n_claude": len(arm["real"]), "n_filler": len(arm["filler"])}
    if not per_position:
        return {"per_position": {}, "fi_c": math.nan, "cl_c": math.nan, "compliance_drop": math.nan,
                "cl_r": math.nan, "length_inflation": math.nan}
    fi_c = float(np.mean([v["filler_compliance_pct"] for v in per_position.values()]))
    cl_c = float(np.mean([v["claude_compliance_pct"] for v in per_position.values()]))
    ratios = [v["claude_mean_len"] / v["filler_mean_len"] for v in per_position.values() if v["filler_mean_len"]]
    cl_r = float(np.mean(ratios)) if ratios else math.nan
    return {"per_position": per_position, "fi_c": fi_c, "cl_c": cl_c, "compliance_drop": fi_c - cl_c,
            "cl_r": cl_r, "length_inflation": cl_r}
