"""The harness's A-anchor family notebook (:mod:`contextecho.experiments.anchor_family`): its
tables on hand-computed cells, the whole run on fake models, the refusal of our protocol, and
the embedded defaults' plan within the notebook budget."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from contextecho.engine.paths import shared_dir
from contextecho.engine.plan import Planner, planning
from contextecho.experiments import anchor_family as af
from contextecho.experiments import panel
from contextecho.experiments.harness_forests import harness_mitigation
from contextecho.experiments.parameters import ParameterError, coerce

T = "fake/echo"


def cell(position, arm, intervention, item, response, passed=True, score=math.nan, status="ok", **extra):
    stored = score if not math.isnan(score) else (-1 if status == "invalid" else math.nan)
    return {"target": T, "session": "S1", "step": 0, "position": position, "arm": arm, "intervention": intervention, "item": item, "response": response,
            "passed": passed, "score": score if status == "ok" else math.nan, "reference_score": stored,
            "verdict_status": status, "replicate": 0, **extra}


# ---------------------------------------------------------------- the tables on hand-computed cells
def test_the_variant_table_is_the_attenuation_of_the_verbosity_ratio_by_hand():
    rows = [cell("S1 P0_start", "real", "none", f"S2#{i:02d}", "x" * 30) for i in (1, 2, 3)]
    rows += [cell("S1 P0_start", "filler", "none", f"S2#{i:02d}", "x" * 10) for i in (1, 2, 3)]
    rows += [cell("S1 P0_start", "real", "A_COMBINED", f"S2#{i:02d}", "x" * 20) for i in (1, 2, 3)]
    rows += [cell("S1 P0_start", "real", "V0_BASELINE", f"S2#{i:02d}", "x" * n) for i, n in ((1, 5), (2, 0), (3, 7))]
    table = af.variant_table(pd.DataFrame(rows), ("A_COMBINED", "V0_BASELINE"), (T,))
    a, v0 = table.iloc[0], table.iloc[1]
    # without: 30 / 10 = 3; with A: 20 / 10 = 2; (3 − 2) / (3 − 1) = 50 %
    assert (a["ratio_no_anchor"], a["ratio_with_anchor"], a["attenuation_pct"], a["note"]) == (3.0, 2.0, 50.0, "")
    assert math.isnan(v0["attenuation_pct"]) and "2 S2 replies of length > 0 with the anchor" in v0["note"]
    summary = af.variant_summary(table, ("A_COMBINED", "V0_BASELINE"))
    assert summary.iloc[0][["rows", "mean_attenuation_pct", "wins", "fails"]].tolist() == [1, 50.0, 1, 0]
    assert summary.iloc[1]["rows"] == 0 and summary.iloc[1]["note"].startswith("not estimable")


def test_sizes_and_decay_average_the_failed_verdicts_in_and_show_the_valid_ones_beside():
    rows = [cell("S1 P5_pre_C6", "real", "A_SMALL", "C01", "a", score=3.0),
            cell("S1 P5_pre_C6", "real", "A_SMALL", "C02", "b", status="invalid"),
            cell("S1 P5_pre_C6", "real", "A_COMBINED+2", "C01", "c", score=2.0),
            cell("S1 P5_pre_C6", "real", "A_COMBINED+2", "C02", "d", score=1.0),
            cell("S1 P5_pre_C6", "real", "A_COMBINED+0", "C01", "e", status="invalid")]
    sizes = af.size_table(pd.DataFrame(rows), ("small", "large"), (T,)).set_index("size")
    assert sizes.loc["small", ["mean", "mean_valid", "cells", "failed"]].tolist() == [1.0, 3.0, 2, 1]  # (3 − 1) / 2
    assert math.isnan(sizes.loc["large", "mean"]) and sizes.loc["large", "note"].startswith("not estimable")
    decay = af.decay_table(pd.DataFrame(rows), (T,))
    assert decay["offset"].tolist() == [0, 2]
    assert decay.iloc[0]["mean"] == -1.0 and math.isnan(decay.iloc[0]["mean_valid"])
    assert decay.iloc[1][["mean", "mean_valid", "failed"]].tolist() == [1.5, 1.5, 0]


def test_the_trajectory_table_is_fig5_with_the_valid_verdicts_beside():
    rows = []
    for step, label in ((100, "P0_start"), (310, "c1_pre")):
        for item, (real, filler, anchored) in (("C01", (1.0, 3.0, 3.0)), ("C02", (0.0, 2.0, 2.0))):
            rows += [cell(label, "real", "none", item, "r", score=real, step=step),
                     cell(label, "filler", "none", item, "f", score=filler, step=step),
                     cell(label, "real", "A_COMBINED_E15", item, "a", score=anchored, step=step)]
    rows.append(cell("c1_pre", "real", "none", "C03", "r", status="invalid", step=310))
    frame = pd.DataFrame(rows)
    table = af.mitigation(frame, "A_COMBINED_E15", (T, "other/model"), n_resamples=200, seed=42)
    ours = table.iloc[0]
    reference = harness_mitigation(frame, anchor="A_COMBINED_E15", positions=None, n_resamples=200, seed=42).iloc[0]
    for column in ("real_mean", "real_lo", "real_hi", "anchor_mean", "gap", "recovered_gap"):
        assert ours[column] == reference[column]
    # the mean of the position means; with −1 in: real ((1 + 0) / 2 + (1 + 0 − 1) / 3) / 2 = 0.25, filler and
    # anchor 2.5; valid only: real 0.5
    assert np.isclose(ours["real_mean"], 0.25) and np.isclose(ours["gap"], 2.25)
    assert np.isclose(ours["recovered_gap"], 2.25)
    assert np.isclose(ours["gap_valid_only"], 2.0) and np.isclose(ours["recovered_valid_only"], 2.0)
    assert table.iloc[1]["note"].startswith("not estimable") and math.isnan(table.iloc[1]["gap"])


# ---------------------------------------------------------------- the parameters
def test_our_protocol_is_refused_naming_our_own_anchor_notebook():
    with pytest.raises(ParameterError, match="parameter 'protocol'.*a_anchor notebook"):
        coerce(af.Parameters, {"protocol": "contextecho"})
    coerce(af.Parameters, af.PAPER_SCALE)
    for values in af.NAMED_SETS.values():
        coerce(af.Parameters, values)
    with pytest.raises(ParameterError, match="s2_anchors"):
        coerce(af.Parameters, {"s2_anchors": "A_COMBINED_E15"})


# ---------------------------------------------------------------- the whole run
@pytest.fixture
def corpus(scripted_models):
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


FAKE = {"targets": ("scripted/varied", "scripted/chatty"), "judges": ("scripted/judge",), "n_resamples": 200,
        "max_tokens": 16}


def test_the_run_writes_every_declared_table_and_variable(tmp_path, corpus):
    params = af.Parameters(**FAKE, s2_anchors=("V0_BASELINE", "A_COMBINED"), output_dir=str(tmp_path / "af"))
    result = af.run(params)
    tables = {t.stem for t in af.MANUSCRIPT.tables}
    assert {p.stem for p in (result.output_dir / "tables").glob("*.md")} == tables
    assert {p.stem for p in result.figures} == {"mitigation", "sizes", "decay"}
    keys = set(result.variables)
    for variable in af.MANUSCRIPT.variables:
        if variable.per_target:
            for target in params.targets:
                fields = {name: values[0] for name, values in variable.domains.items()}
                assert variable.key(**fields, target=target) in keys, variable.template
        elif not variable.fields:
            assert variable.template in keys, variable.template
    assert result.variables["n_failed"] == 0 and result.variables["decay_last_offset"] == 2
    assert result.variables["attenuation_v1_behavioral_pct"] == "not estimable (the anchor was not asked in this run)"
    assert result.tables["Mean judge score per decay offset at the late position"]["offset"].tolist() == [0, 2, 0, 2]
    cells = pd.read_parquet(result.output_dir / "results" / "s2_cells.parquet")
    assert set(cells["intervention"]) == {"none", "V0_BASELINE", "A_COMBINED"}
    assert set(cells.loc[cells["intervention"] != "none", "arm"]) == {"real"}


@pytest.mark.parametrize("title", list(af.NAMED_SETS))
def test_each_named_set_runs_whole_though_it_asks_no_s2_grid(title, tmp_path, corpus):
    """The named sets ask no S2 stressor and anchor (the second no size or decay offset either):
    their empty grids have the columns the analyses select on, and the run completes (a KeyError
    on the empty frame stopped it, and a plan reported it as a placeholder's)."""
    from tests.conftest import JUDGE_LABELS

    shape = {k: af.NAMED_SETS[title][k] for k in ("stressors", "s2_anchors", "sizes", "decay_offsets")}
    params = af.Parameters(**FAKE, **shape, probes=("C01",), n_positions=1, judge_labels=str(JUDGE_LABELS),
                           output_dir=str(tmp_path / "af"))
    result = af.run(params)
    assert result.variables["n_s2_wordings"] == 0 and result.variables["s2_anchors"] == "none"
    assert len(pd.read_parquet(result.output_dir / "results" / "s2_cells.parquet")) == 0


def test_the_embedded_defaults_stay_within_the_notebook_budget(tmp_path, corpus):
    """At most ~25 target calls the panel's defaults do not already ask (the shared cache answers
    those), window and target tokens within the budget."""
    defaults = af.Parameters()
    assert defaults.window <= 3000 and max(defaults.max_tokens, defaults.stressor_max_tokens) <= 48
    fake = {"targets": ("scripted/x",), "judges": ("scripted/judge",), "plan": True}
    planner = Planner()
    with planning(planner):
        panel.run(panel.Parameters(**fake, output_dir=str(tmp_path / "panel")))
        offset = len(planner.calls)
        af.run(af.Parameters(**fake, output_dir=str(tmp_path / "af")))
    batches = planner.plan(since=offset).as_dict()["batches"]
    targets = [b for b in batches if b["batch"].endswith(":targets")]
    assert sum(b["calls"] for b in targets) == 18 + 12 + 8  # S2, probes, late
    assert sum(b["to_compute"] for b in targets) == 22 <= 25


def test_no_stage_overwrites_a_parameter_in_the_notebook():
    from dataclasses import fields
    assert not {s.name for s in af.STAGES} & {f.name for f in fields(af.Parameters)}
