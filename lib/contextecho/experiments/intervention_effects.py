"""The interventions' effect (:mod:`.a_anchor`'s module doc), shared by its notebook and the audit:
the parameters, the cells, the effect on the probe and the contract surfaces against no
intervention with its interval, the forest, and the tables and variables they write."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..echo.cells import build_cells
from ..echo.interventions import INTERVENTIONS
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COUNT, MODEL, PERCENT, POINTS, POINTS_PP, TEXT, estimate, interval
from ..paper.sentences import CAPABLE_JUDGE, CAPABLE_TARGET, estimates, measures_nothing, reason_of
from ..paper.show import SavedFigure
from ..paper.tables import Column, Table
from ..paper.variables import Variable, by_target, reasons
from ..sessions.positions import Position
from ..stats.drift import drift_gap
from ..stats.errors import StatsInputError
from . import spine
from .item_ids import CONTRACT_IDS, PROBE_IDS
from .parameter_sets import JudgedParameters
from .parameters import NON_NEGATIVE, Includes, NonEmpty, OneOf, count
from .protocol_record import PROTOCOL
from .scores import SCORES, score_column
from .spine import CALIBRATION, Run


@dataclass(frozen=True)
class Parameters(JudgedParameters):
    n_sessions: int = 2
    interventions: tuple[str, ...] = ("none", "a_anchor", "v0_only", "v2_only", "placebo_anchor",
                                      "sandwich", "goal_reinjection")
    probes: tuple[str, ...] = ("C01", "C03")
    contracts: tuple[str, ...] = ("S2#01", "C1_csv")
    distances: tuple[int, ...] = (0, 8)
    # The interventions edit our chat-turn prefixes, so this experiment runs under our protocol
    # only; the reference harness's own anchors (after its one-blob prefix) are the anchor_family notebook's.
    protocol: str = "contextecho"
    # Our rubric asks for one line, "Score: <n>": a short greedy budget.
    judge_max_tokens: int = 8

    HELP = {**JudgedParameters.HELP,
            "protocol": "contextecho only: our anchor designs on our chat-turn prefixes (the harness's own anchors, "
                        "under reference, are the anchor_family notebook's)",
            "interventions": "none is the control and must be listed",
            "contracts": "S2, S2#01, hardened, C1_csv ... (scored, no judge)",
            "distances": "session messages between the A-anchor and the probe (decay)"}
    RANGES = {**JudgedParameters.RANGES, "n_sessions": count(zero="all"),
              "interventions": (NonEmpty(), Includes("none", "the control"),
                                OneOf(INTERVENTIONS.names, "intervention")),
              "probes": (NonEmpty(), PROBE_IDS), "contracts": (NonEmpty(), CONTRACT_IDS),
              "distances": NON_NEGATIVE, "protocol": OneOf(("contextecho",), "protocol for interventions")}


def effect_rows(frame: pd.DataFrame, control: str, p: Parameters, scale: float = 1.0,
                score: str = "score") -> pd.DataFrame:
    """Per target and intervention: mean ``score`` with − without (``control``), unit-paired."""
    rows = []
    for (target, iv), g in frame[frame["intervention"] != control].groupby(["target", "intervention"]):
        both = pd.concat([frame[(frame["target"] == target) & (frame["intervention"] == control)], g])
        unit = ["session", "position", "item"]
        valid = both[both[score].notna()].groupby(unit)["intervention"].nunique()
        keep = valid[valid == 2].index
        units = both.set_index(unit).index
        row = {"target": target, "intervention": iv,
               "units_dropped": int(both.groupby(unit).ngroups - len(keep))}
        both = both[units.isin(keep)]
        try:
            r = drift_gap(both, arm="intervention", filler_arm=iv, real_arm=control,
                          unit=tuple(unit), cluster="item", score=score,
                          n_resamples=p.n_resamples, seed=p.resample_seed, scale=scale)
            same = both[score].dropna().unique()
            row.update(estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                       with_mean=r.filler_mean, control_mean=r.real_mean, n_units=r.n_units,
                       note=f"no spread: every valid score with and without it is {same[0] * scale:g}"
                       if len(same) == 1 else "")
        except StatsInputError as exc:
            row.update(estimate=np.nan, ci_low=np.nan, ci_high=np.nan, with_mean=np.nan,
                       control_mean=np.nan, n_units=0, note=f"not estimable: {exc}")
        rows.append(row)
    return pd.DataFrame(rows)



#: The interventions whose contract compliance the manuscript names.
NAMED = ("none", "a_anchor")
_INTERVENTION = Column("Intervention", TEXT, "intervention", widest="goal_reinjection_c30")


def _effect_table(stem: str, title: str, kind, mean_kind) -> Table:
    return Table(stem, title, (
        Column("Target", MODEL, "target"), _INTERVENTION,
        Column("Effect [95% CI]", estimate(kind), ("estimate", "ci_low", "ci_high")),
        Column("With", mean_kind, "with_mean"), Column("Without", mean_kind, "control_mean")), index=2)


MANUSCRIPT = CALIBRATION + PROTOCOL + Declared(
    variables=(
        Variable("a_anchor_effect_{target}", POINTS), Variable("a_anchor_ci_{target}", interval(POINTS)),
        Variable("a_anchor_effect_{score}_{target}", POINTS, score=SCORES),
        Variable("a_anchor_ci_{score}_{target}", interval(POINTS), score=SCORES),
        Variable("a_anchor_contract_effect_{target}", POINTS_PP),
        Variable("a_anchor_contract_ci_{target}", interval(POINTS_PP)), Variable("a_anchor_finding", TEXT),
        Variable("a_anchor_probe_effects", TEXT),
        Variable("compliance_{intervention}_pct_{target}", PERCENT, intervention=NAMED),
        Variable("target", TEXT), Variable("targets", TEXT), Variable("n_sessions", COUNT),
        Variable("n_interventions", COUNT), Variable("n_probes", COUNT), Variable("n_contracts", COUNT),
        Variable("distances", TEXT), Variable("decay_placement", TEXT), Variable("n_cells", COUNT),
        Variable("n_failed", COUNT),
        Variable("n_cached", COUNT), Variable("n_verdicts_invalid", COUNT), Variable("window_chars", COUNT),
        Variable("score", TEXT)),
    tables=(
        _effect_table("effects", "Effect per intervention (probe surface)", POINTS, POINTS),
        _effect_table("contract_effects", "Effect per intervention (contract surface)", POINTS_PP, PERCENT),
        Table("effects_by_score", "Effect per intervention under both judge scores", (
            Column("Target", MODEL, "target"), _INTERVENTION, Column("Score", TEXT, "score", widest="expected"),
            Column("Effect [95% CI]", estimate(POINTS), ("estimate", "ci_low", "ci_high")),
            Column("Units", COUNT, "n_units")), index=3),
        Table("contracts", "Contract surface", (
            Column("Target", MODEL, "target"), _INTERVENTION, Column("Cells", COUNT, "cells"),
            Column("Compliance", PERCENT, "compliance_pct")), index=2),
        Table("decay", "Decay with distance", (
            Column("Target", MODEL, "target"), _INTERVENTION, Column("Distance (messages)", COUNT, "distance"),
            Column("Mean judge score", POINTS, "mean_score")), index=2),
    ))


def _a_anchor_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["intervention"] == "a_anchor"] if len(table) else table


def _a_anchor(table: pd.DataFrame, effect: str, ci: str) -> dict[str, dict[str, object]]:
    """Per target: the A-anchor's estimate (as template ``effect``) and CI (as ``ci``), where estimable."""
    return by_target(_a_anchor_rows(table), {effect: "estimate", ci: ("ci_low", "ci_high")})


def probe_finding(scores: pd.Series, written: dict, target: str) -> str:
    """The sentence of the A-anchor's effect on the probe surface for the first target
    ``target`` (``scores``: its judged probe cells, every intervention and distance; ``written``:
    the manuscript's values): the plain sentence that the surface measures nothing where the judge
    gave no valid verdict, or one score only; else the effect with its interval."""
    valid = scores.dropna()
    what = "the interventions' effect on the judge score"
    if not len(valid):
        return measures_nothing(what, "the judge gave no valid verdict on any probe cell", CAPABLE_JUDGE)
    if valid.nunique() == 1:
        return measures_nothing(what, f"every one of the judge's {len(valid)} valid verdicts, with and without each "
                                f"intervention and at every distance, was {POINTS.text(valid.iloc[0])}, so every "
                                "effect is 0.00 with an interval of zero width and the decay figure is one flat line",
                                f"{CAPABLE_JUDGE} or {CAPABLE_TARGET}")
    effect, ci = written["a_anchor_effect"], written["a_anchor_ci"]
    if reason_of(effect) is not None:
        return f"For {target} the A-anchor's effect on the judge score is not estimable: {reason_of(effect)}."
    interval_text = f"95% CI {ci}" if reason_of(ci) is None else f"without an interval: {reason_of(ci)}"
    return f"For {target} the A-anchor changed the judge score by {effect} points ({interval_text})."


def grid(run: Run) -> pd.DataFrame:
    """The run's cells (module doc), asked and judged."""
    p = run.params
    late = {s.session_id: (Position(s.n_agent_steps, "last", "steps"),) for s in run.sessions}
    params = {"temperature": p.temperature, "max_tokens": p.max_tokens}
    cells = build_cells("a_anchor", list(p.targets), run.sessions, positions=late, arms=["real"],
                        interventions=list(p.interventions), items=list(p.probes) + list(p.contracts),
                        window=p.window, params=params, tag=run.protocol.key())
    for d in p.distances:
        if d > 0:
            cells += build_cells("anchor_decay", list(p.targets), run.sessions, positions=late, arms=["real"],
                                 interventions=["a_anchor"], items=list(p.probes), window=p.window,
                                 params=params, distance=d, tag=run.protocol.key())
    return spine.run_grid(run, cells, judges=p.judges, judge_max_tokens=p.judge_max_tokens)


def effects(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The effect on the probe surface (judge points), under both judge scores too."""
    p = run.params
    main = frame[frame["experiment"] == "a_anchor"]
    probes = main[(main["item_kind"] == "probe") & (main["judge_model"] == p.judges[0])]
    table = effect_rows(probes, "none", p, score=score_column(p.score))
    by_score = pd.concat([effect_rows(probes, "none", p, score=column).assign(score=name)
                          for name, column in SCORES.items()], ignore_index=True)
    run.out.parquet("effects", table)
    run.out.parquet("effects_by_score", by_score)
    if len(by_score):
        run.table("effects_by_score", by_score)
    why = reasons(_a_anchor_rows(by_score))
    run.out.per_target(("a_anchor_effect_{target}", "a_anchor_ci_{target}"),
                       _a_anchor(table, "a_anchor_effect_{target}", "a_anchor_ci_{target}"), p.targets, why)
    judged = frame[(frame["item_kind"] == "probe") & (frame["judge_model"] == p.judges[0])
                   & (frame["target"] == p.targets[0])]
    run.out.set(a_anchor_finding=probe_finding(judged[score_column(p.score)], run.out.variables, p.targets[0]))
    for name in SCORES:
        own = by_score[by_score["score"] == name] if len(by_score) else by_score
        run.out.per_target(("a_anchor_effect_{score}_{target}", "a_anchor_ci_{score}_{target}"),
                           _a_anchor(own, "a_anchor_effect_{score}_{target}", "a_anchor_ci_{score}_{target}"),
                           p.targets, why, score=name)
    written = run.out.variables
    run.out.set(a_anchor_probe_effects=estimates(
        [(SCORE_LABELS[name], written[f"a_anchor_effect_{name}"], written[f"a_anchor_ci_{name}"]) for name in SCORES]))
    return run.table("effects", table)


#: How the probe-surface sentence names each score.
SCORE_LABELS = {"discrete": "the discrete verdicts", "expected": "expected scores"}


def contract_effects(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The effect on the contract surface (compliance, in points of %)."""
    p = run.params
    main = frame[frame["experiment"] == "a_anchor"]
    table = effect_rows(main[main["item_kind"] != "probe"], "none", p, scale=100.0)
    run.out.parquet("contract_effects", table)
    keys = ("a_anchor_contract_effect_{target}", "a_anchor_contract_ci_{target}")
    run.out.per_target(keys, _a_anchor(table, *keys), p.targets, reasons(_a_anchor_rows(table)))
    return run.table("contract_effects", table)


def forest(run: Run, effects: pd.DataFrame, contract_effects: pd.DataFrame) -> SavedFigure:
    """The forest of both effects."""
    surfaces = {"probe surface: judge score with − without (0–3)": effects,
                "contract surface: compliance with − without (pp)": contract_effects}
    shown = [frame.assign(surface=surface) for surface, frame in surfaces.items() if len(frame)]
    both = pd.concat(shown, ignore_index=True) if shown else pd.DataFrame()
    several = len(both) and both["target"].nunique() > 1
    return run.figure("anchor_forest", figures.forest(
        both, label="intervention", hue="target" if several else None, panel="surface", panels=tuple(surfaces),
        xlabel="", reason="no intervention was asked beside cells without one"))
