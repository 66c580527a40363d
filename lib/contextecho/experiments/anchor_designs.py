"""The harness's e04 A-anchor family under the ``reference`` protocol: its cells and its tables.

The harness (Accenture/ContextEcho) tests anchors on its own prefix (one rendered user blob):
candidate A (``A_COMBINED``) before the S2 paraphrases and the coding probes, the variants
V0-V3 on S2, the placement ablation, the anchor's size and its decay
(:mod:`contextecho.echo.reference.anchors` holds the instruments,
:mod:`contextecho.echo.reference.anchor_runners` what each runner asks). Here:

* :func:`anchored_cells`: a runner's cells, built by :func:`.selection.build` with the
  anchor as the grid's intervention (the real prefix only), run by
  :func:`.spine.run_grid` like any grid;
* the tables its analysis and plotting scripts compute from the stored cells, from our
  frames: :func:`variant_results` (``analyze_anchor_variants.py``; the V2 trajectory of
  ``analyze_v2_full_trajectory.py`` is the same ratio), :func:`stressor_forest_rows`
  (``fig_forest_stressors.py``, with the anchor arm), :func:`size_means`
  (``fig_app_anchor_size.py``), :func:`decay_curve` (``fig_app_anchor_decay.py``).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..echo.protocol import Positions, Protocol
from ..echo.reference import plot_inputs
from ..echo.reference.anchor_runners import decay_offset
from ..echo.reference.anchors import A_COMBINED, DECAY_PREFIX, size_name
from ..stats.judge_free import StressorCell, harness_stressor_forest
from ..sessions.model import Session
from ..sessions.positions import Position
from .selection import build

#: The arm every anchored runner asks: the session's own prefix.
ANCHORED_ARMS = ("real",)


def anchored_cells(protocol: Protocol, p: Any, experiment: str, session: Session, positions: Sequence[Position],
                   items: Sequence[str], anchor: str, *, redact: bool = True,
                   arms: Sequence[str] = ANCHORED_ARMS) -> list:
    """The cells of one anchored run (``p``: the run's judged parameters): ``items`` at
    ``positions`` of ``session``, the real prefix (``arms``: the family's no-anchor baseline
    asks the filler too), ``anchor`` (in the protocol's names; ``none``) between the prefix
    and every item."""
    return build(protocol, p, experiment, [session], items, positions=Positions(chosen={session.session_id:
                                                                                          list(positions)}),
                 stressor_max_tokens=getattr(p, "stressor_max_tokens", None), redact=redact, arms=arms,
                 intervention=anchor)


# ---------------------------------------------------------------- the harness's tables
#: The columns the tables read from a frame of stored cells (one row per cell): ``target`` (the
#: harness's folder name), ``position``, ``arm`` (``real``/``filler``), ``intervention`` (the
#: anchor; ``none``), ``item``, ``response`` (None: the cell was lost), ``passed`` (an S2 cell's
#: compliance) and the protocol's stored score (a probe's, −1 included; NaN: lost).
REAL, FILLER, NONE = "real", "filler", "none"
WINS = "wins \u226550%"


def _stored(cells: pd.DataFrame) -> pd.DataFrame:
    return cells[cells["response"].map(lambda r: isinstance(r, str))]


def _lengths(cells: pd.DataFrame, target: str, position: str, arm: str, intervention: str,
             positive: bool = True) -> list[int]:
    """The reply lengths of the stored cells of one folder, in item order (the harness lists
    its ``vNN`` folders sorted); ``positive``: only lengths > 0, as the variant analyses read."""
    own = cells[(cells["target"] == target) & (cells["position"] == position) & (cells["arm"] == arm)
                & (cells["intervention"] == intervention)].sort_values("item", kind="stable")
    lengths = [len(r) for r in own["response"]]
    return [n for n in lengths if n > 0] if positive else lengths


def _attenuation(ratio_no: float, ratio_with: float) -> float:
    return float((ratio_no - ratio_with) / max(ratio_no - 1, 1e-9) * 100)


def variant_results(cells: pd.DataFrame, *, variants: Sequence[str] = plot_inputs.VARIANT_NAMES,
                    targets: Sequence[tuple[str, str]] = plot_inputs.VARIANT_TARGETS,
                    positions: Sequence[str] = plot_inputs.VARIANT_POSITIONS, min_lengths: int = 3) -> dict:
    """``analyze_anchor_variants.py``: per variant, for each (target, position) with no-anchor
    lengths in both arms and at least ``min_lengths`` of the variant's, the verbosity ratios
    mean(real) / mean(filler) without and with the anchor and the attenuation
    (ratio_no − ratio_with) / max(ratio_no − 1, 1e-9) in %; lengths > 0 only. Also the
    lengths read (``variant_lens``, ``no_anchor_lens``)."""
    cells = _stored(cells)
    results: dict[str, list] = {v: [] for v in variants}
    variant_lens, no_anchor_lens = [], []
    lines = [f"{'Target':<12} {'Position':<14} {'Variant':<18} {'len_anchor':>10} {'filler_len':>10} {'ratio':>8} "
             f"{'no-anchor':>10} {'attenuation':>11}", "-" * 105]
    for target, label in targets:
        for pos in positions:
            real, filler = (_lengths(cells, target, pos, arm, NONE) for arm in (REAL, FILLER))
            if not (real and filler):
                continue
            no_anchor_lens += [{"target": target, "position": pos, "arm": "claude", "lens": real},
                               {"target": target, "position": pos, "arm": "filler", "lens": filler}]
            ratio_no = np.mean(real) / max(np.mean(filler), 1e-9)
            for variant in variants:
                lens = _lengths(cells, target, pos, REAL, variant)
                variant_lens.append({"variant": variant, "target": target, "position": pos, "lens": lens})
                if len(lens) < min_lengths:
                    lines.append(f"{label:<12} {pos:<14} {variant:<18}  no data ({len(lens)})")
                    continue
                ratio_a = np.mean(lens) / max(np.mean(filler), 1e-9)
                atten = _attenuation(ratio_no, ratio_a)
                lines.append(f"{label:<12} {pos:<14} {variant:<18} {np.mean(lens):>10.0f} {np.mean(filler):>10.0f} "
                             f"{ratio_a:>7.2f}\u00d7 {ratio_no:>8.2f}\u00d7 {atten:>10.1f}%")
                results[variant].append({"target": label, "position": pos, "ratio_no_anchor": float(ratio_no),
                                         "ratio_with_anchor": float(ratio_a), "attenuation_pct": atten})
    lines += ["", "=" * 60, "VARIANT SUMMARY", "=" * 60,
              f"{'Variant':<20} {'mean atten':>12} {WINS:>10} {'fails <0%':>10}", "-" * 60]
    for variant in variants:
        rows = results[variant]
        if not rows:
            lines.append(f"{variant:<20}  no data")
            continue
        attns = [r["attenuation_pct"] for r in rows]
        wins, fails = sum(a >= 50 for a in attns), sum(a < 0 for a in attns)
        lines.append(f"{variant:<20} {np.mean(attns):>11.1f}% {wins:>5}/{len(rows):<5} {fails:>5}/{len(rows):<5}")
    return {"results": results, "variant_lens": variant_lens, "no_anchor_lens": no_anchor_lens, "printout": lines}


def trajectory_results(cells: pd.DataFrame, *, variant: str = plot_inputs.TRAJECTORY_VARIANT,
                       targets: Sequence[tuple[str, str]] = plot_inputs.VARIANT_TARGETS,
                       positions: Sequence[str] = plot_inputs.TRAJECTORY_POSITIONS,
                       min_lengths: int = 3) -> list[dict]:
    """``analyze_v2_full_trajectory.py``: :func:`variant_results`'s ratios for one variant at
    every position of the trajectory (``ratio_v2``)."""
    return trajectory_report(cells, variant=variant, targets=targets, positions=positions,
                             min_lengths=min_lengths)["rows"]


def trajectory_report(cells: pd.DataFrame, *, variant: str = plot_inputs.TRAJECTORY_VARIANT,
                      targets: Sequence[tuple[str, str]] = plot_inputs.VARIANT_TARGETS,
                      positions: Sequence[str] = plot_inputs.TRAJECTORY_POSITIONS, min_lengths: int = 3) -> dict:
    """:func:`trajectory_results` (``rows``) and the script's printed table and aggregate
    (``printout``: mean attenuation, wins >= 50 %, failures < 0 %)."""
    cells = _stored(cells)
    rows = []
    lines = [f"{'Target':<14} {'Position':<14} {'no-anchor':>10} {'V2 ratio':>10} {'attenuation':>11}", "-" * 65]
    for target, label in targets:
        for pos in positions:
            real, filler, lens = (_lengths(cells, target, pos, arm, iv)
                                  for arm, iv in ((REAL, NONE), (FILLER, NONE), (REAL, variant)))
            if not (real and filler and len(lens) >= min_lengths):
                lines.append(f"{label:<14} {pos:<14}  no data ({len(real)}/{len(filler)}/{len(lens)})")
                continue
            ratio_no = np.mean(real) / max(np.mean(filler), 1e-9)
            ratio_v = np.mean(lens) / max(np.mean(filler), 1e-9)
            atten = _attenuation(ratio_no, ratio_v)
            lines.append(f"{label:<14} {pos:<14} {ratio_no:>9.2f}\u00d7 {ratio_v:>9.2f}\u00d7 {atten:>10.1f}%")
            rows.append({"target": label, "position": pos, "ratio_no_anchor": float(ratio_no),
                         "ratio_v2": float(ratio_v), "attenuation_pct": atten})
    lines += ["", "=" * 60, "AGGREGATE", "=" * 60]
    if rows:
        attns = [r["attenuation_pct"] for r in rows]
        lines += [f"  cells: {len(rows)}", f"  mean attenuation: {np.mean(attns):.1f}%",
                  f"  wins (\u226550%): {sum(a >= 50 for a in attns)}/{len(rows)}",
                  f"  failures (<0%): {sum(a < 0 for a in attns)}/{len(rows)}"]
    return {"rows": rows, "printout": lines}


def _stressor_cells(cells: pd.DataFrame) -> list[StressorCell]:
    return [StressorCell(r["target"], "", r["position"], r["item"], r["arm"], bool(r["passed"]), len(r["response"]))
            for r in _stored(cells).to_dict("records")]


def stressor_forest_rows(cells: pd.DataFrame, *, anchor: str = A_COMBINED.name,
                         targets: Sequence[tuple[str, str, str, bool]] = plot_inputs.STRESSOR_PLOT_TARGETS,
                         positions: Sequence[str] = plot_inputs.STRESSOR_PLOT_POSITIONS,
                         n_boot: int = 10_000, seed: int = 42) -> dict:
    """``fig_forest_stressors.py`` ``main()``: per target with S2 cells in both no-anchor arms
    and with ``anchor`` at ``positions``, its row (:func:`~contextecho.stats.judge_free.harness_stressor_forest`
    with the anchored cells), sorted reasoning models first, then by compliance drop
    (descending) (``rows``); the targets skipped (label, positions with both no-anchor arms,
    with the anchor), the lengths read (``loader``) and its bootstrap calls in order."""
    plain_all = _stressor_cells(cells[cells["intervention"] == NONE])
    anchored_all = _stressor_cells(cells[(cells["intervention"] == anchor) & (cells["arm"] == REAL)])
    rows, skipped, calls, loader = [], [], [], {"no_anchor": [], "anchor": []}
    for target, label, org, reasoning in targets:
        plain = [c for c in plain_all if c.target == target and c.position in positions]
        anchored = [c for c in anchored_all if c.target == target and c.position in positions]
        both = {c.position for c in plain if c.arm == REAL} & {c.position for c in plain if c.arm == FILLER}
        if not both or not anchored:
            skipped.append((label, len(both), len({c.position for c in anchored})))
            continue
        forest = harness_stressor_forest(plain, positions, anchored=anchored, n_boot=n_boot, seed=seed)
        rows.append({"target": target, "label": label, "org": org, "reasoning": reasoning,
                     **{k: v for k, v in forest.items() if k not in ("per_position", "a_positions")},
                     "fi_r": 1.0, "fi_r_lo": 1.0, "fi_r_hi": 1.0})
        both_positions = list(forest["per_position"])
        calls += [_call("cluster_bootstrap_compliance", target, [both_positions], forest, "fi_c"),
                  _call("cluster_bootstrap_compliance", target, [both_positions], forest, "cl_c"),
                  _call("cluster_bootstrap_compliance", target, [forest["a_positions"]], forest, "a_c"),
                  _call("cluster_bootstrap_ratio", target, [both_positions, both_positions], forest, "cl_r"),
                  _call("cluster_bootstrap_anchor_ratio", target, [forest["a_positions"], both_positions], forest,
                        "a_r")]
        loader["no_anchor"].append({"target": target, "lens_by_position": {
            p: {"claude": [c.length for c in sorted(plain, key=lambda c: c.item) if c.position == p and c.arm == REAL],
                "filler": [c.length for c in sorted(plain, key=lambda c: c.item)
                           if c.position == p and c.arm == FILLER]} for p in both_positions}})
        loader["anchor"].append({"target": target, "lens_by_position": {
            p: [c.length for c in sorted(anchored, key=lambda c: c.item) if c.position == p]
            for p in forest["a_positions"]}})
    rows.sort(key=lambda r: (-int(r["reasoning"]), -r["compliance_drop"]))
    return {"rows": rows, "skipped": skipped, "loader": loader, "bootstrap_calls": calls}


def _call(function: str, target: str, positions: list, forest: dict, name: str) -> dict:
    return {"function": function, "target": target, "positions": positions,
            "result": [forest[name], forest[f"{name}_lo"], forest[f"{name}_hi"]]}


def stressor_forest_printout(forest: dict, figure: str) -> list[str]:
    """What ``fig_forest_stressors.py`` prints: the skipped targets, then (with rows) where the
    figure was saved and each row's compliance and length ratios; without rows it aborts."""
    lines = [f"skip {label}: no data ({a} / {b} positions)" for label, a, b in forest["skipped"]]
    if not forest["rows"]:
        return lines + ["no data; abort"]
    lines += ["", f"Saved {figure}", "", "Per-target stressor stats:"]
    for r in forest["rows"]:
        lines.append(f"  {r['label']:<12} | compliance: filler {r['fi_c']:.0f}%, claude {r['cl_c']:.0f}%, "
                     f"anchor {r['a_c']:.0f}% | length\u00d7: drift {r['cl_r']:.1f}\u00d7, anchor {r['a_r']:.1f}\u00d7")
    return lines


def _scores(cells: pd.DataFrame, score: str) -> list[int]:
    """The stored scores (−1 included) of ``cells`` in item order (the harness lists its files sorted)."""
    own = cells[cells[score].notna()].sort_values("item", kind="stable")
    return [int(v) for v in own[score]]


def size_means(cells: pd.DataFrame, score: str, *, sizes: Sequence[str] = plot_inputs.SIZE_PLOT_SIZES,
               targets: Sequence[str] = plot_inputs.SIZE_PLOT_TARGETS) -> tuple[dict[str, list[float]], list[dict]]:
    """``fig_app_anchor_size.py``: per size the mean stored judge score (every int score, −1
    included) of each target, NaN without one; and the scores read (size, target, scores)."""
    means, read = {}, []
    for size in sizes:
        own = cells[cells["intervention"] == size_name(size)]
        means[size] = []
        for target in targets:
            scores = _scores(own[own["target"] == target], score)
            if len(own[own["target"] == target]):
                read.append({"size": size, "target": target, "scores": scores})
            means[size].append(float(np.mean(scores)) if scores else math.nan)
    return means, read


def decay_curve(cells: pd.DataFrame, score: str, *, target: str = plot_inputs.DECAY_PLOT_TARGET) -> dict:
    """``fig_app_anchor_decay.py``: for ``target``, each decay offset with a stored score, in
    increasing order: the mean score (−1 included) and the (offset, score) points."""
    own = cells[cells["target"] == target]
    offsets, means, individual = [], [], []
    # map() over the column would make the offsets floats (NaN for another anchor): a plain loop keeps them ints
    for n in sorted({o for o in map(decay_offset, own["intervention"]) if o is not None}):
        scores = _scores(own[own["intervention"] == f"{DECAY_PREFIX}{n}"], score)
        if scores:
            offsets.append(n)
            means.append(float(np.mean(scores)))
            individual += [[n, s] for s in scores]
    return {"offsets": offsets, "means": means, "individual": individual}


def saved_lines(script: str, root: str) -> list[str]:
    """The "Saved <path>" lines a script prints for its outputs under the harness's ``root``."""
    return [f"Saved {root}/{path}" for path in plot_inputs.OUTPUTS[script]]


def decay_printout(curve: dict, root: str) -> list[str]:
    """What ``fig_app_anchor_decay.py`` prints after saving its figure: the mean per offset."""
    return saved_lines("anchor_decay", root) + ["", f"Mean per offset: {dict(zip(curve['offsets'], curve['means']))}"]
