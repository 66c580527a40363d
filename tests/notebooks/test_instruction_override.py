"""The instruction_override notebook (e11, e12): runs whole on scripted models with its
defaults' design (no gpt5_3K arm: its source is not released), writes every declared
variable, table and figure; compliance per stressor and per length by hand; the defaults'
plan within the embedded budget."""
from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from contextecho.engine.paths import shared_dir
from contextecho.experiments import instruction_override as io
from contextecho.experiments.spine import PLAN_FILE

MAX_TARGET_CALLS, MAX_TOKENS = 25, 48


@pytest.fixture
def corpus(scripted_models):
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


def test_rates_per_stressor_and_length_by_hand():
    rows = [("e11", None, "scratch", "S1_ONE_WORD", True, 1, 3), ("e11", None, "scratch", "S1_ONE_WORD", True, 0, 5),
            ("e11", None, "scratch", "S1_ONE_WORD", False, None, None), ("e11", None, "scratch", "S2_NO_PREAMBLE", True, 1, 4),
            ("e12", 1000, "filler", "S3_NO_ACTION", True, 1, 2), ("e12", 3000, "filler", "S3_NO_ACTION", True, 0, 8)]
    frame = pd.DataFrame([{"design": d, "target": "t", "length": n, "arm": a, "stressor": s, "stored": k,
                           "compliance": c, "response_len": r} for d, n, a, s, k, c, r in rows])
    arms = io.arm_compliance(frame).set_index("stressor")
    assert arms.loc["S1_ONE_WORD", ["asked", "stored", "compliant"]].tolist() == [3, 2, 1]
    assert arms.loc["S1_ONE_WORD", "compliance_pct"] == 50.0 and arms.loc["S1_ONE_WORD", "mean_len"] == 4.0
    assert arms.loc["S2_NO_PREAMBLE", "compliance_pct"] == 100.0  # never pooled with S1
    lengths = io.length_rates(frame).set_index("length")
    assert lengths.loc[1000, "compliance_pct"] == 100.0 and lengths.loc[3000, "compliance_pct"] == 0.0


def test_runs_whole_on_scripted_models(corpus, tmp_path):
    out = tmp_path / "instruction_override"
    result = io.run(io.Parameters(targets=("scripted/x",), length_targets=("scripted/x",), output_dir=str(out)))
    variables = yaml.safe_load((out / "variables.yml").read_text())["instruction_override"]
    assert set(v.template for v in io.MANUSCRIPT.variables) <= set(variables)
    assert variables["n_cells"] == 3 * 4 + 2 * 2 * 2 and "gpt5_3K" not in variables["arms"]
    assert {t.stem for t in io.MANUSCRIPT.tables} <= {p.stem for p in (out / "tables").glob("*.md")}
    assert {f.stem for f in result.figures} == {"override_compliance", "length_compliance"}
    cells = pd.read_parquet(out / "results" / "cells.parquet")
    assert set(cells["arm"]) == {"scratch", "filler3K", "recent3K", "claude_session", "filler"}


def test_the_paper_scale_is_the_harness_design():
    assert io.PAPER_SCALE["arms"] == ("scratch", "filler3K", "gpt5_3K", "recent3K")
    assert len(io.PAPER_SCALE["cut_indices"]) == 10 and io.PAPER_SCALE["max_tokens"] == 0
    assert io.PAPER_SCALE["lengths"] == (3000, 30000, 100000, 200000)


def test_the_defaults_plan_within_the_embedded_budget(corpus, tmp_path):
    defaults = io.Parameters()
    assert 0 < defaults.max_tokens <= MAX_TOKENS and max(defaults.lengths) <= 3000
    out = tmp_path / "plan"
    io.run(io.Parameters(plan=True, output_dir=str(out)))
    batches = {b["batch"]: b for b in json.loads((out / PLAN_FILE).read_text())["batches"]}
    assert 0 < batches["instruction_override:targets"]["calls"] <= MAX_TARGET_CALLS
