"""The harness's A-anchor family (its e04 runners and e15's 12-position A arm) under ``reference``.

The seed's headline mitigation ("a single-shot anchor exchange restores the deployed register")
comes from these runners of Accenture/ContextEcho (5f8dba3): on the harness's prefix (one
rendered user blob and its acknowledgement) an anchor — a fixed exchange, or a text appended
to the system prompt (:mod:`contextecho.echo.reference.anchors`) — goes between the prefix and
every item, on the real prefix only (what each runner asks:
:mod:`contextecho.echo.reference.anchor_runners`). Three grids, each a stage:

* **S2** (``run_anchor_variants.py``, ``run_a_stressors_xtarget.py`` and their no-anchor
  baseline, e08 ``run.py``): the S2 paraphrases at the run's positions in the real and filler
  arms without an anchor, and with each of ``s2_anchors`` (the variants V0-V3, candidate A
  ``A_COMBINED``) on the real prefix; scored, no judge.
* **Probes** (``run_12pos_with_a.py``, or ``run_a_probes_xtarget.py``): the probes at the same
  positions, real and filler without an anchor and real with ``probe_anchor``, judged.
* **Late** (``run_anchor_size_sweep.py``, ``run_anchor_decay.py``): at the late position (the
  harness's ``P5_pre_C6``) the probes with each size's anchor and with candidate A followed by
  ``n`` generic coding exchanges for each decay offset, judged.

The tables are the harness's analyses (:mod:`.anchor_designs`, :mod:`.harness_forests`, each
checked against the harness's own outputs by the run-level conformance) on this run's cells:
the S2 verbosity ratio real/filler without and with each anchor and its attenuation
(``analyze_anchor_variants.py``), the S2 stressor forest with candidate A
(``fig_forest_stressors.py``), the Fig.-5 mitigation forest (``fig_forest_mitigation.py``: per
target the real, filler and anchored means with the harness's two-stage bootstrap, the drift
gap filler − real and the recovered gap anchor − real), the size means
(``fig_app_anchor_size.py``) and the decay curve (``fig_app_anchor_decay.py``). The harness
averages its judge's failed verdicts (−1) into the Fig.-5, size and decay means; each is shown
beside the mean of the valid verdicts only. The plotting scripts' hard-coded targets and
positions are not applied: every target and position of the run is read.

This notebook runs the harness's anchors under its protocol only; our own anchor designs
(chat-turn prefixes, placebos, the sandwich, goal re-injection) are the ``a_anchor`` notebook's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..echo.protocol import PAIRED_ARMS, Positions
from ..echo.reference.anchors import A_COMBINED, A_COMBINED_E15, DECAY_PREFIX, SIZES, VARIANTS, size_name
from ..engine.counts import Counts
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COEFFICIENT, COUNT, MODEL, PERCENT, POINTS, POINTS_PP, TEXT, estimate, interval
from ..paper.show import Result, SavedFigure
from ..paper.tables import Column, Table
from ..paper.variables import Variable, by_target
from . import spine
from .anchor_designs import ANCHORED_ARMS, decay_curve, size_means, stressor_forest_rows, variant_results
from .harness_forests import harness_mitigation, harness_table
from .item_ids import PROBE_IDS, STRESSOR_IDS
from .parameter_sets import REFERENCE_JUDGE, EMBEDDED_STRESSOR_MAX_TOKENS, JudgedParameters
from .parameters import NON_NEGATIVE, POSITIVE, NonEmpty, OneOf, count
from .protocol_record import PROTOCOL, protocol_variables
from .scores import failure_column, first_judge_rows
from .selection import build
from .spine import CALIBRATION, Run, Stage

NAME = "anchor_family"
TITLE = "The harness's A-anchor family: variants on S2, the anchor along the trajectory (Fig. 5), size and decay"
#: The anchors the S2 grid may ask: run_anchor_variants.py's V0-V3, run_a_stressors_xtarget.py's candidate A.
S2_ANCHORS = tuple(v.name for v in VARIANTS) + (A_COMBINED.name,)
#: The probe grid's anchor arm: run_12pos_with_a.py's (e15's probe prompt) or run_a_probes_xtarget.py's (e11's).
PROBE_ANCHORS = (A_COMBINED_E15.name, A_COMBINED.name)
#: Where the size sweep and decay ask (their hard-coded ``P5_pre_C6``: the reference protocol's late position).
LATE = Positions("late", n=1)
#: The harness's four Anthropic targets of analyze_anchor_variants.py (each also in Fig. 5's and the size plot's lists).
ANTHROPIC = ("anthropic/claude-sonnet-4-6", "anthropic/claude-sonnet-4-5", "anthropic/claude-opus-4-1",
             "anthropic/claude-haiku-4-5")
#: The harness's design (the runners' settings: 30,000 characters, 600 probe / 1,024 S2 / 400 judge tokens;
#: its judge; its analyses' 10,000 resamples from seed 42): every panel position the session offers, the
#: ten S2 paraphrases, V0-V3 and candidate A on S2, the 12-position A arm, the three sizes, decay's offsets.
PAPER_SCALE = {"targets": ANTHROPIC, "judges": (REFERENCE_JUDGE,), "n_sessions": 1, "n_positions": 0,
               "stressors": ("S2",), "s2_anchors": S2_ANCHORS, "probes": ("coding_self",),
               "probe_anchor": A_COMBINED_E15.name, "sizes": tuple(SIZES), "decay_offsets": (0, 1, 5, 10, 20),
               "window": 30000, "max_tokens": 600, "stressor_max_tokens": 1024, "judge_max_tokens": 400,
               "n_resamples": 10_000, "resample_seed": 42, "protocol": "reference"}
#: The harness's other targets of the family's plots, each a run of its own: the size plot's two
#: non-Anthropic targets (fig_app_anchor_size.py; its ``a_anchor_size_decay`` case serves DeepSeek V3
#: through Together) and run_a_probes_xtarget.py's A arm under e11's prompt (its case's targets).
NAMED_SETS = {
    "the size sweep's non-Anthropic targets (fig_app_anchor_size.py)": {
        **PAPER_SCALE, "targets": ("together_ai/deepseek-ai/DeepSeek-V3", "gemini/gemini-2.5-pro"),
        "stressors": (), "s2_anchors": (), "decay_offsets": ()},
    "run_a_probes_xtarget.py's A arm (e11's system prompt)": {
        **PAPER_SCALE, "targets": ("openai/gpt-5", "gemini/gemini-2.5-pro", "anthropic/claude-sonnet-4-5"),
        "stressors": (), "s2_anchors": (), "probe_anchor": A_COMBINED.name, "sizes": (), "decay_offsets": ()},
}


@dataclass(frozen=True)
class Parameters(JudgedParameters):
    n_sessions: int = 1
    n_positions: int = 2
    stressors: tuple[str, ...] = ("S2#01", "S2#02", "S2#03")
    stressor_max_tokens: int = EMBEDDED_STRESSOR_MAX_TOKENS
    s2_anchors: tuple[str, ...] = (A_COMBINED.name,)
    probes: tuple[str, ...] = ("C01", "C02")
    probe_anchor: str = A_COMBINED_E15.name
    sizes: tuple[str, ...] = ("small", "large")
    decay_offsets: tuple[int, ...] = (0, 2)

    HELP = {**JudgedParameters.HELP,
            "protocol": "reference only: the harness's anchors on its prefix (our own anchor designs are the "
                        "a_anchor notebook's, under contextecho)",
            "n_sessions": "longest openly licensed Claude Code sessions (0 for all; the harness: its one "
                          "representative session)",
            "n_positions": "panel positions per session for the S2 and probe grids (0: every one the session offers)",
            "stressors": "S2 paraphrases (S2: all ten; S2#01 ...; none: no S2 grid); the variant analysis needs "
                         "three replies a position",
            "stressor_max_tokens": "target max tokens of S2 cells (the harness's 1024)",
            "s2_anchors": "anchors asked before the S2 paraphrases: V0_BASELINE, V1_BEHAVIORAL, V2_IN_CONTEXT, "
                          "V3_SYSTEM_INJECT (run_anchor_variants.py), A_COMBINED (run_a_stressors_xtarget.py)",
            "probes": "probe ids or batteries asked in the probe grid and at the late position",
            "probe_anchor": "the A arm of the probe grid: A_COMBINED_E15 (run_12pos_with_a.py, e15's probe prompt) "
                            "or A_COMBINED (run_a_probes_xtarget.py, e11's prompt)",
            "sizes": "anchor sizes at the late position: small, medium, large (none: no size sweep)",
            "decay_offsets": "generic coding exchanges after candidate A at the late position (none: no decay)"}
    RANGES = {**JudgedParameters.RANGES, "protocol": OneOf(("reference",), "protocol of the harness's anchors "
                                                           "(our own anchor designs: the a_anchor notebook)"),
              "n_sessions": count(zero="all"), "n_positions": count(zero="every position the session offers"),
              "stressors": STRESSOR_IDS, "stressor_max_tokens": POSITIVE,
              "s2_anchors": OneOf(S2_ANCHORS, "S2 anchor"), "probes": (NonEmpty(), PROBE_IDS),
              "probe_anchor": OneOf(PROBE_ANCHORS, "probe anchor"), "sizes": OneOf(tuple(SIZES), "anchor size"),
              "decay_offsets": NON_NEGATIVE}


def anchor_slug(anchor: str) -> str:
    """An anchor's name as a key field (``V0_BASELINE`` -> ``v0_baseline``)."""
    return anchor.lower()


# ---------------------------------------------------------------- the tables, from the cells
def harness_cells(frame: pd.DataFrame, judge: str) -> pd.DataFrame:
    """The cells as the harness's analyses read them (one row per cell): the S2 cells, and the
    probe cells with ``judge``'s verdict (a failed target call too); ``position`` qualified by
    the session's label (``S1 P0_start``), since an analysis reads a position by its label."""
    if not len(frame):
        return frame
    probes = frame[frame["item_kind"] == "probe"]
    judged = pd.concat([first_judge_rows(probes, judge), probes[probes["judge_model"].isna()]])
    cells = pd.concat([frame[frame["item_kind"] != "probe"], judged]).sort_index(kind="stable")
    return cells.assign(position=cells["session"].astype(str) + " " + cells["position"].astype(str))


def qualified_positions(cells: pd.DataFrame) -> list[str]:
    """The session-qualified positions of ``cells`` in session and step order."""
    if not len(cells):
        return []
    return list(dict.fromkeys(cells.sort_values(["session", "step"], kind="stable")["position"]))


def variant_table(cells: pd.DataFrame, anchors: Sequence[str], targets: Sequence[str],
                  min_lengths: int = 3) -> pd.DataFrame:
    """Per target, position and anchor (``analyze_anchor_variants.py``, :func:`.anchor_designs.variant_results`):
    the S2 verbosity ratio mean(real) / mean(filler) without the anchor and with it (the reply
    lengths > 0), and the attenuation (ratio without − ratio with) / max(ratio without − 1, 1e-9)
    in %; a row the analysis has no data for says why."""
    positions = qualified_positions(cells)
    got = variant_results(cells, variants=anchors, targets=[(t, t) for t in targets], positions=positions,
                          min_lengths=min_lengths)
    done = {(r["target"], r["position"], anchor): r for anchor in anchors for r in got["results"][anchor]}
    read = {(r["target"], r["position"], r["variant"]): r["lens"] for r in got["variant_lens"]}
    rows = []
    for target in targets:
        for position in positions:
            for anchor in anchors:
                row = done.get((target, position, anchor))
                if row is not None:
                    rows.append({"anchor": anchor, **row, "note": ""})
                    continue
                lens = read.get((target, position, anchor))
                why = ("no S2 reply of length > 0 in both arms without an anchor" if lens is None else
                       f"{len(lens)} S2 repl{'y' if len(lens) == 1 else 'ies'} of length > 0 with the anchor "
                       f"(the analysis needs {min_lengths})")
                rows.append({"anchor": anchor, "target": target, "position": position, "ratio_no_anchor": np.nan,
                             "ratio_with_anchor": np.nan, "attenuation_pct": np.nan, "note": f"not estimable: {why}"})
    return pd.DataFrame(rows, columns=["target", "position", "anchor", "ratio_no_anchor", "ratio_with_anchor",
                                       "attenuation_pct", "note"])


def variant_summary(table: pd.DataFrame, anchors: Sequence[str]) -> pd.DataFrame:
    """The analysis's summary per anchor: the rows with an attenuation, their mean, the wins
    (attenuation ≥ 50 %) and the failures (< 0 %)."""
    rows = []
    for anchor in anchors:
        own = table[(table["anchor"] == anchor) & table["attenuation_pct"].notna()]["attenuation_pct"]
        rows.append({"anchor": anchor, "rows": len(own), "mean_attenuation_pct": own.mean() if len(own) else np.nan,
                     "wins": int((own >= 50).sum()), "fails": int((own < 0).sum()),
                     "note": "" if len(own) else "not estimable: no (target, position) with data"})
    return pd.DataFrame(rows, columns=["anchor", "rows", "mean_attenuation_pct", "wins", "fails", "note"])


#: The stressor forest's fields this notebook shows.
FOREST_FIELDS = ("fi_c", "fi_c_lo", "fi_c_hi", "cl_c", "cl_c_lo", "cl_c_hi", "a_c", "a_c_lo", "a_c_hi",
                 "compliance_drop", "compliance_recovery", "cl_r", "cl_r_lo", "cl_r_hi", "a_r", "a_r_lo", "a_r_hi")


def stressor_forest(cells: pd.DataFrame, targets: Sequence[str], *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Per target, ``fig_forest_stressors.py``'s row with candidate A (:func:`.anchor_designs.stressor_forest_rows`
    at every position of the run): S2 compliance (%) filler, real and real with A with the harness's
    bootstrap intervals, the compliance drop filler − real and recovery A − real (pp), the length
    ratios real/filler and A/filler; a target without the cells says why."""
    forest = stressor_forest_rows(cells, targets=[(t, t, "", False) for t in targets],
                                  positions=qualified_positions(cells), n_boot=n_resamples, seed=seed)
    got = {r["target"]: r for r in forest["rows"]}
    rows = [{"target": t, **{f: got[t][f] for f in FOREST_FIELDS}, "note": ""} if t in got else
            {"target": t, **{f: np.nan for f in FOREST_FIELDS},
             "note": "not estimable: no S2 cells in both arms without an anchor and with A_COMBINED"}
            for t in targets]
    return pd.DataFrame(rows, columns=["target", *FOREST_FIELDS, "note"])


def mitigation(primary: pd.DataFrame, anchor: str, targets: Sequence[str], *, n_resamples: int,
               seed: int) -> pd.DataFrame:
    """Per target, Fig. 5 (:func:`.harness_forests.harness_mitigation`, every position of the run
    in step order): the real, filler and anchored means with the harness's two-stage intervals, the
    judge's −1 averaged in; ``gap`` = filler − real and ``recovered_gap`` = anchor − real; beside
    them the same two on the valid verdicts only (``gap_valid_only``, ``recovered_valid_only``).
    A target the figure has no row for says why."""
    boot = {"n_resamples": n_resamples, "seed": seed}
    table = harness_mitigation(primary, anchor=anchor, positions=None, **boot) if len(primary) else pd.DataFrame()
    valid = harness_table(primary, anchor=anchor, failures="out", **boot).set_index("target") \
        if len(primary) else pd.DataFrame()
    rows = []
    for target in targets:
        own = table[table["target"] == target] if len(table) else table
        if not len(own):
            rows.append({"target": target, "note": "not estimable: a series (real, filler or the anchor's) has no "
                                                   "score"})
            continue
        row = own.iloc[0].to_dict()
        mine = valid.loc[target] if target in valid.index else None
        row.update(gap_valid_only=mine["gap"] if mine is not None else np.nan,
                   recovered_valid_only=mine["recovered_gap"] if mine is not None else np.nan, note="")
        rows.append(row)
    columns = ["target", "real_mean", "real_lo", "real_hi", "filler_mean", "filler_lo", "filler_hi", "anchor_mean",
               "anchor_lo", "anchor_hi", "gap", "recovered_gap", "gap_valid_only", "recovered_valid_only", "n_real",
               "n_filler", "n_anchor", "note"]
    return pd.DataFrame(rows).reindex(columns=columns)


def _late_row(cells: pd.DataFrame, target: str, stored: list[int], valid: list[int]) -> dict:
    return {"target": target, "mean": float(np.mean(stored)) if stored else np.nan,
            "mean_valid": float(np.mean(valid)) if valid else np.nan, "cells": len(cells),
            "failed": int((cells["verdict_status"] == "invalid").sum()),
            "note": "" if stored else "not estimable: no stored score"}


def size_table(cells: pd.DataFrame, sizes: Sequence[str], targets: Sequence[str]) -> pd.DataFrame:
    """Per target and size (``fig_app_anchor_size.py``, :func:`.anchor_designs.size_means`): the
    mean stored judge score (−1 included, as the plot reads it) and the mean of the valid verdicts."""
    stored = dict(zip(("means", "read"), size_means(cells, failure_column("in"), sizes=sizes, targets=targets)))
    valid = {(r["size"], r["target"]): r["scores"] for r in size_means(cells, "score", sizes=sizes, targets=targets)[1]}
    read = {(r["size"], r["target"]): r["scores"] for r in stored["read"]}
    rows = []
    for target in targets:
        for size in sizes:
            own = cells[(cells["target"] == target) & (cells["intervention"] == size_name(size))]
            rows.append({"size": size, **_late_row(own, target, read.get((size, target), []),
                                                    valid.get((size, target), []))})
    return pd.DataFrame(rows, columns=["target", "size", "mean", "mean_valid", "cells", "failed", "note"])


def decay_table(cells: pd.DataFrame, targets: Sequence[str]) -> pd.DataFrame:
    """Per target and decay offset (``fig_app_anchor_decay.py``, :func:`.anchor_designs.decay_curve`,
    for every target, not its one): the mean stored judge score (−1 included) and the mean of the
    valid verdicts, offsets in increasing order."""
    rows = []
    for target in targets:
        stored = decay_curve(cells, failure_column("in"), target=target)["individual"]
        valid = decay_curve(cells, "score", target=target)["individual"]
        for n in sorted({o for o, _ in stored} | {o for o, _ in valid}):
            own = cells[(cells["target"] == target) & (cells["intervention"] == f"{DECAY_PREFIX}{n}")]
            rows.append({"offset": n, **_late_row(own, target, [s for o, s in stored if o == n],
                                                  [s for o, s in valid if o == n])})
    return pd.DataFrame(rows, columns=["target", "offset", "mean", "mean_valid", "cells", "failed", "note"])


# ---------------------------------------------------------------- what the manuscript reads
_SIZES = tuple(SIZES)


def _late_table(stem: str, title: str, condition: Column) -> Table:
    """A table of :func:`size_table` or :func:`decay_table`: per target and ``condition``."""
    return Table(stem, title, (
        Column("Target", MODEL, "target"), condition, Column("Mean, −1 in", POINTS, "mean"),
        Column("Mean, valid only", POINTS, "mean_valid"), Column("Cells", COUNT, "cells"),
        Column("Failed verdicts", COUNT, "failed")), index=2)

MANUSCRIPT = CALIBRATION + PROTOCOL + Declared(
    variables=(
        Variable("attenuation_{anchor}_pct", PERCENT, anchor=tuple(map(anchor_slug, S2_ANCHORS))),
        Variable("attenuation_rows_{anchor}", COUNT, anchor=tuple(map(anchor_slug, S2_ANCHORS))),
        Variable("attenuation_wins_{anchor}", COUNT, anchor=tuple(map(anchor_slug, S2_ANCHORS))),
        Variable("s2_compliance_drop_{target}", POINTS_PP), Variable("s2_compliance_recovery_{target}", POINTS_PP),
        Variable("length_inflation_{target}", COEFFICIENT), Variable("length_after_anchor_{target}", COEFFICIENT),
        Variable("real_mean_{target}", POINTS), Variable("filler_mean_{target}", POINTS),
        Variable("anchor_mean_{target}", POINTS), Variable("anchor_ci_{target}", interval(POINTS)),
        Variable("drift_gap_{target}", POINTS), Variable("recovered_gap_{target}", POINTS),
        Variable("drift_gap_valid_only_{target}", POINTS), Variable("recovered_gap_valid_only_{target}", POINTS),
        Variable("size_mean_{size}_{target}", POINTS, size=_SIZES),
        Variable("decay_first_mean_{target}", POINTS), Variable("decay_last_mean_{target}", POINTS),
        Variable("decay_first_offset", COUNT), Variable("decay_last_offset", COUNT),
        Variable("target", TEXT), Variable("targets", TEXT), Variable("judge", TEXT), Variable("n_sessions", COUNT),
        Variable("positions", TEXT), Variable("late_position", TEXT), Variable("n_probes", COUNT),
        Variable("n_s2_wordings", COUNT), Variable("s2_anchors", TEXT), Variable("probe_anchor", TEXT),
        Variable("sizes", TEXT), Variable("decay_offsets", TEXT), Variable("n_cells", COUNT),
        Variable("n_failed", COUNT), Variable("n_cached", COUNT), Variable("n_probe_cells", COUNT),
        Variable("n_verdicts_invalid", COUNT), Variable("window_chars", COUNT), Variable("max_tokens", COUNT)),
    tables=(
        Table("variants", "S2 verbosity ratio real/filler without and with each anchor, and its attenuation", (
            Column("Target", MODEL, "target"), Column("Position", TEXT, "position", widest="S1 P_post_C2"),
            Column("Anchor", TEXT, "anchor", widest="V3_SYSTEM_INJECT"),
            Column("Ratio without", COEFFICIENT, "ratio_no_anchor"),
            Column("Ratio with", COEFFICIENT, "ratio_with_anchor"),
            Column("Attenuation", PERCENT, "attenuation_pct")), index=3),
        Table("variant_summary", "Attenuation per anchor over targets and positions", (
            Column("Anchor", TEXT, "anchor", widest="V3_SYSTEM_INJECT"), Column("Rows", COUNT, "rows"),
            Column("Mean attenuation", PERCENT, "mean_attenuation_pct"), Column("Wins ≥ 50%", COUNT, "wins"),
            Column("Fails < 0%", COUNT, "fails"))),
        Table("stressor_forest", "S2 compliance and length with candidate A (the stressor forest)", (
            Column("Target", MODEL, "target"),
            Column("Filler [95% CI]", estimate(PERCENT), ("fi_c", "fi_c_lo", "fi_c_hi")),
            Column("Real [95% CI]", estimate(PERCENT), ("cl_c", "cl_c_lo", "cl_c_hi")),
            Column("Real + A [95% CI]", estimate(PERCENT), ("a_c", "a_c_lo", "a_c_hi")),
            Column("Drop", POINTS_PP, "compliance_drop"), Column("Recovery", POINTS_PP, "compliance_recovery"),
            Column("Length ratio [95% CI]", estimate(COEFFICIENT), ("cl_r", "cl_r_lo", "cl_r_hi")),
            Column("Length ratio + A [95% CI]", estimate(COEFFICIENT), ("a_r", "a_r_lo", "a_r_hi")))),
        Table("mitigation", "The anchor along the trajectory (Fig. 5): arm means, drift gap and recovered gap", (
            Column("Target", MODEL, "target"),
            Column("Real [95% CI]", estimate(POINTS), ("real_mean", "real_lo", "real_hi")),
            Column("Filler [95% CI]", estimate(POINTS), ("filler_mean", "filler_lo", "filler_hi")),
            Column("Real + A [95% CI]", estimate(POINTS), ("anchor_mean", "anchor_lo", "anchor_hi")),
            Column("Drift gap", POINTS, "gap"), Column("Recovered gap", POINTS, "recovered_gap"),
            Column("Drift gap, valid only", POINTS, "gap_valid_only"),
            Column("Recovered, valid only", POINTS, "recovered_valid_only"))),
        _late_table("sizes", "Mean judge score per anchor size at the late position",
                    Column("Size", TEXT, "size", widest="medium")),
        _late_table("decay", "Mean judge score per decay offset at the late position",
                    Column("Offset (exchanges)", COUNT, "offset")),
    ))


# ---------------------------------------------------------------- the stages (one notebook cell each)
def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions (Claude Code: the harness's reader)."""
    return spine.start_judged(NAME, params, paper_scale=PAPER_SCALE, declared=MANUSCRIPT, stressor_max_tokens=params.stressor_max_tokens)


def calibration(run: Run) -> pd.DataFrame:
    """Before any target is asked, each judge scores responses whose scores are known, under
    this run's protocol, prompt and parser: how far its verdicts can be trusted."""
    return spine.calibrate_judges(run)


def _cells(run: Run, items: Sequence[str], positions: Positions, anchors: Sequence[str],
           plain: bool = False) -> list:
    """``items`` at ``positions``: without an anchor in the real and filler arms (``plain``), then
    on the real prefix with each of ``anchors`` (:func:`~.selection.build`, the anchor the grid's
    intervention, as :func:`.anchor_designs.anchored_cells` builds a runner's cells)."""
    p = run.params
    asked = ([(PAIRED_ARMS, "none")] if plain else []) + [(ANCHORED_ARMS, anchor) for anchor in anchors]
    return [cell for arms, anchor in (asked if items else ()) for cell in build(
        run.protocol, p, NAME, run.sessions, list(items), positions=positions,
        stressor_max_tokens=p.stressor_max_tokens, arms=arms, intervention=anchor)]


def s2_grid(run: Run) -> pd.DataFrame:
    """The S2 grid: the paraphrases at the panel positions without an anchor (real and filler,
    e08's baseline) and after each S2 anchor on the real prefix (run_anchor_variants.py,
    run_a_stressors_xtarget.py); scored, no judge."""
    p = run.params
    cells = _cells(run, p.stressors, Positions("panel", n=p.n_positions), p.s2_anchors, plain=True)
    return spine.run_grid(run, cells, judges=[], name=f"{NAME}:s2", results="s2_cells")


def probe_grid(run: Run) -> pd.DataFrame:
    """The probe grid (Fig. 5): the probes at the same positions, real and filler without an
    anchor and real with the A arm (run_12pos_with_a.py's three arms), judged."""
    p = run.params
    cells = _cells(run, p.probes, Positions("panel", n=p.n_positions), (p.probe_anchor,), plain=True)
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens, name=f"{NAME}:probes",
                          results="probe_cells")


def late_grid(run: Run) -> pd.DataFrame:
    """At the late position (the harness's P5_pre_C6): the probes after each size's anchor
    (run_anchor_size_sweep.py) and after candidate A with each decay offset's generic exchanges
    (run_anchor_decay.py), real prefix, judged."""
    p = run.params
    anchors = [size_name(s) for s in p.sizes] + [f"{DECAY_PREFIX}{n}" for n in p.decay_offsets]
    cells = _cells(run, p.probes, LATE, anchors) if anchors else []
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens, name=f"{NAME}:late",
                          results="late_cells")


def variants(run: Run, s2_frame: pd.DataFrame) -> pd.DataFrame:
    """The S2 verbosity ratio without and with each anchor and its attenuation, per target and
    position (:func:`variant_table`), and the summary per anchor."""
    p = run.params
    cells = harness_cells(s2_frame, p.judges[0])
    table = variant_table(cells, p.s2_anchors, p.targets)
    summary = variant_summary(table, p.s2_anchors)
    run.out.parquet("variants", table)
    run.out.parquet("variant_summary", summary)
    asked = {anchor_slug(a): r for a, r in zip(summary["anchor"], summary.to_dict("records"))}
    for anchor in map(anchor_slug, S2_ANCHORS):
        row = asked.get(anchor)
        why = "the anchor was not asked in this run" if row is None else row["note"].removeprefix("not estimable: ")
        run.out.put("attenuation_{anchor}_pct", row["mean_attenuation_pct"] if row else None, why=why, anchor=anchor)
        run.out.put("attenuation_rows_{anchor}", row["rows"] if row else 0, anchor=anchor)
        run.out.put("attenuation_wins_{anchor}", row["wins"] if row else 0, anchor=anchor)
    run.table("variant_summary", summary)
    return run.table("variants", table)


def s2_forest(run: Run, s2_frame: pd.DataFrame) -> pd.DataFrame:
    """S2 compliance and length ratio per target without an anchor and with candidate A
    (:func:`stressor_forest`), where A_COMBINED was asked on S2."""
    p = run.params
    cells = harness_cells(s2_frame, p.judges[0])
    table = stressor_forest(cells, p.targets, n_resamples=p.n_resamples, seed=p.resample_seed)
    columns = {"s2_compliance_drop_{target}": "compliance_drop", "s2_compliance_recovery_{target}":
               "compliance_recovery", "length_inflation_{target}": "cl_r", "length_after_anchor_{target}": "a_r"}
    why = "A_COMBINED was not asked on S2" if A_COMBINED.name not in p.s2_anchors else \
        "no S2 cells in both arms without an anchor and with A_COMBINED"
    run.out.per_target(tuple(columns), by_target(table, columns), p.targets, why)
    run.out.parquet("stressor_forest", table)
    return run.table("stressor_forest", table)


def trajectory(run: Run, probe_frame: pd.DataFrame) -> pd.DataFrame:
    """The anchor along the trajectory (Fig. 5): per target the real, filler and anchored means
    with the harness's intervals (−1 averaged in), the drift gap and the recovered gap, with both
    gaps on the valid verdicts beside (:func:`mitigation`)."""
    p = run.params
    probes = probe_frame[probe_frame["item_kind"] == "probe"]
    primary = first_judge_rows(probes, p.judges[0]) if len(probes) else probes
    table = mitigation(primary, p.probe_anchor, p.targets, n_resamples=p.n_resamples, seed=p.resample_seed)
    columns = {"real_mean_{target}": "real_mean", "filler_mean_{target}": "filler_mean",
               "anchor_mean_{target}": "anchor_mean", "anchor_ci_{target}": ("anchor_lo", "anchor_hi"),
               "drift_gap_{target}": "gap", "recovered_gap_{target}": "recovered_gap",
               "drift_gap_valid_only_{target}": "gap_valid_only",
               "recovered_gap_valid_only_{target}": "recovered_valid_only"}
    run.out.per_target(tuple(columns), by_target(table, columns), p.targets,
                       "a series (real, filler or the anchor's) has no score")
    run.out.parquet("mitigation", table)
    return run.table("mitigation", table)


def trajectory_figure(run: Run, trajectory: pd.DataFrame) -> SavedFigure:
    """Fig. 5: each target's real, filler and anchored mean with its 95% interval."""
    series = {"real": "real", "filler": "filler", "anchor": "real + A-anchor"}
    rows = [{"target": r["target"], "series": name, "estimate": r.get(f"{key}_mean"), "ci_low": r.get(f"{key}_lo"),
             "ci_high": r.get(f"{key}_hi"), "note": r["note"]}
            for r in trajectory.to_dict("records") for key, name in series.items()]
    frame = pd.DataFrame(rows, columns=["target", "series", "estimate", "ci_low", "ci_high", "note"])
    return run.figure("mitigation", figures.forest(
        frame, label="target", hue="series", xlabel="mean judge score (0–3; the judge's −1 failures averaged in)",
        reason="no target has a score in every series"))


def sizes(run: Run, late_frame: pd.DataFrame) -> pd.DataFrame:
    """The mean judge score per anchor size at the late position (:func:`size_table`)."""
    p = run.params
    table = size_table(harness_cells(late_frame, p.judges[0]), p.sizes, p.targets)
    for size in _SIZES:
        own = table[table["size"] == size]
        why = "the size was not asked in this run" if size not in p.sizes else "no stored score with this size"
        run.out.per_target(("size_mean_{size}_{target}",), by_target(own, {"size_mean_{size}_{target}": "mean"}),
                           p.targets, why, size=size)
    run.out.parquet("sizes", table)
    return run.table("sizes", table)


def sizes_figure(run: Run, size_scores: pd.DataFrame) -> SavedFigure:
    """Bars of the mean judge score per target and anchor size (−1 averaged in, as the harness's plot)."""
    return run.figure("sizes", figures.bars(
        size_scores, x="target", y="mean", hue="size", ylabel="mean judge score (−1 averaged in)",
        reason="no size was asked or scored", ylim=(-1.1, 3.1)))


def decay(run: Run, late_frame: pd.DataFrame) -> pd.DataFrame:
    """The mean judge score per decay offset at the late position (:func:`decay_table`)."""
    p = run.params
    table = decay_table(harness_cells(late_frame, p.judges[0]), p.targets)
    scored = table[table["mean"].notna()] if len(table) else table
    firsts = scored.groupby("target").first() if len(scored) else scored
    lasts = scored.groupby("target").last() if len(scored) else scored
    values = {t: {"decay_first_mean_{target}": firsts.loc[t, "mean"], "decay_last_mean_{target}": lasts.loc[t, "mean"]}
              for t in firsts.index} if len(scored) else {}
    why = "no decay offset was asked" if not p.decay_offsets else "no stored score at any decay offset"
    run.out.per_target(("decay_first_mean_{target}", "decay_last_mean_{target}"), values, p.targets, why)
    run.out.put("decay_first_offset", min(p.decay_offsets) if p.decay_offsets else None, why=why)
    run.out.put("decay_last_offset", max(p.decay_offsets) if p.decay_offsets else None, why=why)
    run.out.parquet("decay", table)
    return run.table("decay", table)


def decay_figure(run: Run, decay_scores: pd.DataFrame) -> SavedFigure:
    """The mean judge score against the number of generic exchanges after candidate A."""
    return run.figure("decay", figures.trajectory(
        decay_scores, x="offset", y="mean", hue="target", xlabel="generic coding exchanges after the anchor",
        ylabel="mean judge score (−1 averaged in)", ylim=(-1.1, 3.1), reason="no decay offset was asked or scored"))


def variables(run: Run, s2_frame: pd.DataFrame, probe_frame: pd.DataFrame, late_frame: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers (per-target ones keyed ``<key>_<target>``, the first target's
    also unsuffixed), written with the run log."""
    p = run.params
    targets = sum((run.log.batches.get(f"{NAME}:{g}:targets", Counts()) for g in ("s2", "probes", "late")), Counts())
    judged = pd.concat([f for f in (probe_frame, late_frame) if len(f)]) if len(probe_frame) or len(late_frame) \
        else probe_frame
    positions = probe_frame if len(probe_frame) else s2_frame
    steps = positions.drop_duplicates(["session", "step"]).sort_values(["session", "step"]) if len(positions) \
        else positions
    late_steps = late_frame.drop_duplicates(["session", "step"]).sort_values(["session", "step"]) \
        if len(late_frame) else late_frame
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), judge=p.judges[0], n_sessions=len(run.sessions),
                positions=", ".join(f"{r.session} {r.position} (turn {r.step})" for r in steps.itertuples()) or "none",
                late_position=", ".join(f"{r.session} {r.position} (turn {r.step})" for r in late_steps.itertuples())
                or "not asked (no size and no decay offset)",
                n_probes=len(p.probes), n_s2_wordings=int(s2_frame["item"].nunique()) if len(s2_frame) else 0,
                s2_anchors=", ".join(p.s2_anchors) or "none", probe_anchor=p.probe_anchor,
                sizes=", ".join(p.sizes) or "none", decay_offsets=", ".join(map(str, p.decay_offsets)) or "none",
                n_cells=targets.calls, n_failed=targets.failed, n_cached=targets.cached,
                n_probe_cells=int((judged["item_kind"] == "probe").sum()) if len(judged) else 0,
                n_verdicts_invalid=int((judged["verdict_status"] == "invalid").sum()) if len(judged) else 0,
                window_chars=p.window, max_tokens=p.max_tokens, **protocol_variables(run.log.about["protocol"]))
    return spine.finish(run)


# Stage names are the notebook's variables: none is a parameter's name (probes, sizes ...), which a
# re-run of the parameters cell would need.
STAGES = (Stage("run", start), Stage("calibration", calibration), Stage("s2_frame", s2_grid),
          Stage("probe_frame", probe_grid), Stage("late_frame", late_grid), Stage("variant_table", variants),
          Stage("s2_forest", s2_forest), Stage("trajectory", trajectory), Stage("trajectory_plot", trajectory_figure),
          Stage("size_scores", sizes), Stage("sizes_plot", sizes_figure), Stage("decay_scores", decay),
          Stage("decay_plot", decay_figure), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
