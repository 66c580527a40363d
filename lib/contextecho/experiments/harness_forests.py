"""The paper's per-target arm statistics on the judged probes, as its forest figures compute
them (the ``harness_`` functions of :mod:`contextecho.stats`): :func:`harness_table` (the
panel's Fig.-2 forest and its paired test), :func:`harness_mitigation` (the Fig.-5
mitigation forest, the A-anchor arm beside the two arms) and :func:`harness_curve` (the
onset figure's intervals, Fig. 15). Shared by the panel, the onset, the harness's anchor
family, the re-analysis of the released cells and the run-level conformance."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..echo.reference.positions import PANEL_POSITIONS
from ..stats.bootstrap import harness_clustered_bootstrap_mean, harness_onset_gap_cis
from ..stats.multiple import holm
from ..stats.permutation import harness_sign_flip_p
from .scores import failure_column

#: The Fig-2 forest's position order (``plotting/fig2_forest_panelwide.py:34-38``).
FOREST_POSITIONS = tuple(label for label, _ in PANEL_POSITIONS)


def harness_table(primary: pd.DataFrame, *, n_resamples: int, seed: int, failures: str = "out",
                  positions: Sequence[str] | None = None, beside: bool = False,
                  anchor: str | Sequence[str] | None = None) -> pd.DataFrame:
    """Per target: each arm's mean with the harness's two-stage bootstrap interval (positions
    in step order, scores in item/replicate order), the gap, the sign-flip p of the paired
    differences (valid pairs in that order) and Holm over the targets' p-values.

    ``failures``: ``out`` bootstraps the valid verdicts only (ours); ``in`` every score the
    harness stored, its −1s included, as the Fig-2 forest's loader reads them
    (``plotting/fig2_forest_panelwide.py:109-111``; a verdict whose parse raised lost its
    cell there and is left out here); the sign-flip test pairs valid verdicts either way
    (``consolidate_12model_perm.py`` drops failures). ``positions``: the position labels to read, in that
    order (the forest's ``FOREST_POSITIONS``; default every position, in step order).
    ``beside`` (a protocol that stores its failed verdicts' scores:
    :attr:`~contextecho.echo.protocol.Protocol.stored_score`) with ``failures="out"``: the gap
    with the −1s averaged in beside (``gap_failures_in``).

    ``anchor``: the intervention (or interventions) whose real-arm cells are a third series beside
    the two arms (the Fig.-5 mitigation forest's ``claude arm + A anchor``, ``plotting/
    fig_forest_mitigation.py:148-176``, whose folder two runners fill with two designs): its mean and interval by the same bootstrap (``anchor_mean/lo/hi``, ``n_anchor``,
    ``n_positions_anchor``) and ``recovered_gap`` = anchor − real. The two arms, their gap and
    the paired test then read the cells without an intervention only."""
    column = failure_column(failures)
    rows = []
    for target, g in primary.groupby("target", sort=True):
        g = g.sort_values(["session", "step", "item", "replicate"], kind="stable")
        plain = g["intervention"] == "none" if "intervention" in g else pd.Series(True, index=g.index)
        valid = g[g[column].notna()]
        series = {arm: valid[plain[valid.index] & (valid["arm"] == arm)] for arm in ("real", "filler")}
        if anchor is not None:
            anchors = [anchor] if isinstance(anchor, str) else list(anchor)
            series["anchor"] = valid[valid["intervention"].isin(anchors) & (valid["arm"] == "real")] \
                if "intervention" in valid else valid.iloc[:0]
        g = g[plain]
        arms, counts = {}, {}
        for arm, a in series.items():
            by_position = {f"{s}:{pos}": [float(v) for v in v_[column]] for (s, _, pos), v_
                           in a.groupby(["session", "step", "position"], sort=True)}
            if positions is not None:
                labels = {key: key.split(":", 1)[1] for key in by_position}
                by_position = {key: by_position[key] for label in positions for key in by_position
                               if labels[key] == label}
            arms[arm] = harness_clustered_bootstrap_mean(by_position, n_boot=n_resamples, seed=seed)
            counts[arm] = len(by_position)
        # The sign-flip test pairs valid verdicts only, as consolidate_12model_perm.py does.
        pairs = g[g["score"].notna()].pivot_table(index=["session", "step", "item", "replicate"], columns="arm",
                                                  values="score", aggfunc="first").dropna()
        deltas = list(pairs["filler"] - pairs["real"]) if {"real", "filler"} <= set(pairs.columns) else []
        _, p = harness_sign_flip_p(deltas, n_resamples=n_resamples, seed=seed)
        row = {"target": target,
               "real_mean": arms["real"].mean, "real_lo": arms["real"].lo, "real_hi": arms["real"].hi,
               "filler_mean": arms["filler"].mean, "filler_lo": arms["filler"].lo,
               "filler_hi": arms["filler"].hi, "gap": arms["filler"].mean - arms["real"].mean,
               "n_real": arms["real"].n, "n_filler": arms["filler"].n,
               "n_positions_real": counts["real"], "n_positions_filler": counts["filler"],
               "n_pairs": len(deltas), "perm_p": p}
        if anchor is not None:
            row.update(anchor_mean=arms["anchor"].mean, anchor_lo=arms["anchor"].lo, anchor_hi=arms["anchor"].hi,
                       n_anchor=arms["anchor"].n, n_positions_anchor=counts["anchor"],
                       recovered_gap=arms["anchor"].mean - arms["real"].mean)
        if beside and failures == "out":  # the forest loader's treatment beside
            stored = failure_column("in")
            scored = g[g[stored].map(lambda v: isinstance(v, (int, float)) and pd.notna(v))]
            means = scored.groupby("arm")[stored].mean()
            row["gap_failures_in"] = float(means.get("filler", np.nan) - means.get("real", np.nan))
            row["n_failed_verdicts"] = int((g["verdict_status"] == "invalid").sum())
        rows.append(row)
    table = pd.DataFrame(rows)
    if len(table):
        ok = table["perm_p"].notna()
        table["holm_p"] = np.nan
        if ok.any():
            table.loc[ok, "holm_p"] = holm(list(table.loc[ok, "perm_p"])).p_adjusted
    return table


def harness_mitigation(primary: pd.DataFrame, *, anchor: str | Sequence[str], n_resamples: int, seed: int,
                       positions: Sequence[str] | None = FOREST_POSITIONS,
                       targets: Sequence[tuple[str, str, str, bool]] | None = None) -> pd.DataFrame:
    """The Fig.-5 mitigation forest (``plotting/fig_forest_mitigation.py:148-178``): per target the
    real arm, the filler arm and the real arm with the ``anchor`` intervention, each with the
    harness's two-stage interval (:func:`harness_table`, every stored score, −1 included, as its
    ``read_score`` keeps any int), ``gap`` (the drift gap, filler − real) and ``recovered_gap``
    (anchor − real). A target has a row only where all three series have a score.
    ``targets``: the figure's list of (folder, label, org, reasoning)
    (:data:`~contextecho.echo.reference.plot_inputs.MITIGATION_PLOT_TARGETS`, folders as the frame's
    target names): only those targets, with their ``label``, ``org`` and ``reasoning`` tier, reasoning tier first, then by drift gap, largest first, ties in the
    list's order; default every target, by drift gap."""
    table = harness_table(primary, n_resamples=n_resamples, seed=seed, failures="in", positions=positions,
                          anchor=anchor)
    if not len(table):
        return table
    table = table[(table[["n_real", "n_filler", "n_anchor"]] > 0).all(axis=1)]
    listed = {folder: (label, org, reasoning) for folder, label, org, reasoning in targets} \
        if targets is not None else None
    rows = table.to_dict("records")
    if listed is not None:
        order = list(listed)
        rows = sorted((dict(r, **dict(zip(("label", "org", "reasoning"), listed[r["target"]])))
                       for r in rows if r["target"] in listed), key=lambda r: order.index(r["target"]))
    rows.sort(key=lambda r: (-int(r.get("reasoning", False)), -r["gap"]))
    return pd.DataFrame(rows, columns=list(table.columns) + (["label", "org", "reasoning"] if listed else []))


def harness_curve(primary: pd.DataFrame, *, n_resamples: int, seed: int, failures: str = "out",
                  targets: Sequence[str] = ()) -> pd.DataFrame:
    """The harness's onset intervals (Fig. 15, :func:`~contextecho.stats.bootstrap.harness_onset_gap_cis`):
    per target, unclustered resampling of each step's filler and real scores (pooled over
    sessions and replicates, in session/item/replicate order), one generator across the
    steps in order and across the targets in turn, as the harness's figure shares its one.

    ``failures``: ``out`` reads the valid verdicts only (ours); ``in`` reads every score
    the harness stored, its −1s included (``plotting/fig_app_onset.py:42-44``; a verdict
    whose parse raised lost its cell there, and is left out here). ``targets``: the order
    the targets are drawn in (a listed target without data gives NaN rows and draws
    nothing; default: sorted by model string). ``harness_n`` is the smaller arm's count."""
    column = failure_column(failures)
    scored = primary[primary[column].notna()]
    order = list(targets) or sorted(scored["target"].unique())
    all_steps = sorted(primary["step"].unique())
    rows = []
    rng = np.random.default_rng(seed)
    for target in order:
        g = scored[scored["target"] == target].sort_values(["step", "session", "item", "replicate"], kind="stable")
        steps = sorted(g["step"].unique()) if len(g) else all_steps
        lists = {arm: {s: [float(v) for v in g[(g["arm"] == arm) & (g["step"] == s)][column]] for s in steps}
                 for arm in ("filler", "real")}
        cis = harness_onset_gap_cis(lists["filler"], lists["real"], steps, n_boot=n_resamples, rng=rng)
        rows += [{"target": target, "step": int(s), "harness_gap": gap, "harness_lo": lo, "harness_hi": hi,
                  "harness_n": min(len(lists["filler"][s]), len(lists["real"][s]))}
                 for s, (gap, lo, hi) in cis.items()]
    return pd.DataFrame(rows, columns=["target", "step", "harness_gap", "harness_lo", "harness_hi", "harness_n"])
