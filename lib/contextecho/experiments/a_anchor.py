"""Anchor ablations: does one short exchange restore the assistant register?

On the real prefix at a late snapshot of each session, every intervention (A-anchor and
its ablations V0-only, V2-only, the 200-token anchor, placebos, the sandwich, goal
re-injection) is compared with no intervention: the effect is mean(score with the
intervention) − mean(score without) per (session, snapshot, probe), averaged, with a
bootstrap CI that resamples probes (the anchor forest); a pair without a valid verdict
under either condition is left out and counted. The same interventions are scored on the contract
surface (S2 wordings and the hardened contracts: compliance, judge-free). Decay: the
A-anchor inserted ``distance`` session messages before the probe, placed before a user
message inside the window: where none starts that far back it sits nearer, and the decay
table and figure show it where it sat (the text says where).

These interventions edit our chat-turn prefixes, so this notebook runs under our protocol.
The reference harness has an anchor family of its own (its e04 runners: candidate A
``A_COMBINED`` before the S2 paraphrases and the coding probes, the variants V0-V3, the
placement ablation, the size sweep and decay, inserted after its one-blob prefix); it is
reproduced under the ``reference`` protocol by :mod:`.anchor_designs` (cells and tables) with
the instruments of :mod:`contextecho.echo.reference.anchors`.
"""
from __future__ import annotations

import pandas as pd

from ..engine.counts import Counts
from ..paper import figures
from ..paper.sentences import joined
from ..paper.show import Result, SavedFigure
from ..paper.variables import by_target
from . import intervention_effects, spine
from .intervention_effects import MANUSCRIPT, NAMED, Parameters
from .parameter_sets import REFERENCE_JUDGE
from .protocol_record import protocol_variables
from .scores import score_column
from .spine import Run, Stage

TITLE = "Anchor ablations: A-anchor vs its parts, placebos, sandwich, goal re-injection; decay"
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-5", "openai/gpt-4o"),
               "judges": (REFERENCE_JUDGE,), "n_sessions": 3,
               "interventions": ("none", "a_anchor", "v0_only", "v2_only", "a_anchor_200", "placebo_anchor",
                                 "placebo_iso_notes", "placebo_iso_recipe", "sandwich", "goal_reinjection",
                                 "goal_reinjection_c30"),
               "probes": ("all",), "contracts": ("S2", "hardened"), "distances": (0, 10, 50, 200),
               "window": 30000, "max_tokens": 300}


# ---------------------------------------------------------------- the stages (one notebook cell each)
def start(params: Parameters) -> Run:
    """Open the outputs, check that every target and judge can be called (before any call),
    and pick the longest openly licensed sessions."""
    return spine.start_judged("a_anchor", params, paper_scale=PAPER_SCALE, declared=MANUSCRIPT)


def grid(run: Run) -> pd.DataFrame:
    """The grid: the real prefix at the last step of each session, every intervention
    before the probes and contracts; and the A-anchor moved ``distance`` session messages
    away from the probe (decay). Probes judged; the counts of its batches are logged."""
    return intervention_effects.grid(run)


def effects(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The probe surface: per target and intervention, mean judge score with − without,
    paired by (session, snapshot, probe), resampling probes; under both judge scores too."""
    return intervention_effects.effects(run, frame)


def contract_effects(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The same contrast on the judge-free contract surface (0/1 compliance, in points of %)."""
    return intervention_effects.contract_effects(run, frame)


def forest(run: Run, effects: pd.DataFrame, contract_effects: pd.DataFrame) -> SavedFigure:
    """Each intervention's effect on both surfaces, with 95% intervals (one without an
    estimate says why)."""
    return intervention_effects.forest(run, effects, contract_effects)


def compliance(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """Contract compliance (%) per target and intervention."""
    p = run.params
    main = frame[frame["experiment"] == "a_anchor"]
    contracts = main[main["item_kind"] != "probe"]
    table = (contracts.groupby(["target", "intervention"])["score"].agg(["mean", "count"])
             .rename(columns={"mean": "compliance", "count": "cells"}).reset_index())
    table["compliance_pct"] = 100 * table.pop("compliance")
    run.out.parquet("contracts", table)
    for intervention in NAMED:
        own = table[table["intervention"] == intervention]
        run.out.per_target(("compliance_{intervention}_pct_{target}",),
                           by_target(own, {"compliance_{intervention}_pct_{target}": "compliance_pct"}), p.targets,
                           f"no contract cell of this target was asked with intervention {intervention}",
                           intervention=intervention)
    return run.table("contracts", table)


def decay(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The mean judge score with the A-anchor at each distance from the probe, and without:
    each anchor at the distance it really sat at, fewer messages than asked where the
    session's window holds fewer (:func:`placement_sentence`)."""
    p = run.params
    cells = frame[(frame["item_kind"] == "probe") & (frame["judge_model"] == p.judges[0])
                  & (frame["intervention"].isin(["none", "a_anchor"]))]
    cells = cells.assign(distance=cells["placed_distance"].fillna(cells["distance"]).astype(int))
    table = (cells.groupby(["target", "intervention", "distance"])[score_column(p.score)].mean()
             .rename("mean_score").reset_index())
    run.out.parquet("decay", table)
    return run.table("decay", table)


def decay_figure(run: Run, decay: pd.DataFrame) -> SavedFigure:
    """The mean judge score against the anchor's distance; dashed: no intervention."""
    anchored = decay[decay["intervention"] == "a_anchor"] if len(decay) else decay
    without = decay[decay["intervention"] == "none"].groupby("target", as_index=False)["mean_score"].mean() \
        if len(decay) else None
    return run.figure("decay", figures.trajectory(
        anchored, x="distance", y="mean_score", hue="target", baseline=without, baseline_label="no intervention",
        xlabel="session messages between the A-anchor and the probe", ylabel="mean judge score with the A-anchor (0–3)",
        ylim=(-0.1, 3.1), reason="no probe with the A-anchor has a valid verdict"))


def placement_sentence(frame: pd.DataFrame) -> str:
    """Whether every A-anchor sat as far from the probe as asked; where one did not (the
    block goes before a user message, within the window), how far it sat, per session."""
    anchored = frame[(frame["intervention"] == "a_anchor") & frame["placed_distance"].notna()]
    moved = (anchored[anchored["placed_distance"] != anchored["distance"]][["session", "distance", "placed_distance"]]
             .drop_duplicates().sort_values(["session", "distance"]))
    if moved.empty:
        return "Each anchor sat as far from the probe as asked."
    where = joined([f"{int(r.placed_distance)} messages instead of {int(r.distance)} in session {r.session}"
                    for r in moved.itertuples()])
    return ("An anchor goes before a user message inside the session's window, so it sat nearer the probe than "
            f"asked where none starts that far back: {where}; the table and the figure place each anchor where it "
            "sat.")


def variables(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers (per-target ones keyed ``<key>_<target>``, the first
    target's also unsuffixed), written with the run log."""
    p = run.params
    main = frame[frame["experiment"] == "a_anchor"]
    targets = run.log.batches.get("a_anchor:targets", Counts())
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), **protocol_variables(run.log.about["protocol"]),
                n_sessions=len(run.sessions), n_interventions=len(p.interventions) - 1, n_probes=len(p.probes),
                n_contracts=int(main[main["item_kind"] != "probe"]["item"].nunique()),
                distances=", ".join(map(str, p.distances)), decay_placement=placement_sentence(frame),
                n_cells=targets.calls, n_failed=targets.failed,
                n_cached=targets.cached, n_verdicts_invalid=int((frame["verdict_status"] == "invalid").sum()),
                window_chars=p.window, score=p.score)
    return spine.finish(run)


def calibration(run: Run) -> pd.DataFrame:
    """Before any target is asked, each judge scores responses whose scores are known, under
    this run's protocol, prompt and parser: how far its verdicts can be trusted."""
    return spine.calibrate_judges(run)


STAGES = (Stage("run", start), Stage("calibration", calibration), Stage("frame", grid), Stage("effects", effects),
          Stage("contract_effects", contract_effects), Stage("forest", forest), Stage("compliance", compliance),
          Stage("decay", decay), Stage("decay_plot", decay_figure), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
