"""The framing notebook (e16): runs whole on scripted models, writes every declared variable,
table and its figure; the defaults' plan within the embedded budget. (The framing statistics
on hand-computed scores: tests/experiments/test_framing.py.)"""
from __future__ import annotations

import json

import pytest
import yaml

from contextecho.engine.paths import shared_dir
from contextecho.experiments import framing
from contextecho.experiments.spine import PLAN_FILE
from contextecho.paper.declared import Declared

SCRIPTED = {"targets": ("scripted/x",), "judges": ("scripted/judge",), "n_resamples": 200, "max_tokens": 16}
MAX_TARGET_CALLS, MAX_WINDOW, MAX_TOKENS = 25, 3000, 48


@pytest.fixture(autouse=True)
def corpus(scripted_models):
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


def test_runs_whole_on_scripted_models(tmp_path):
    out = tmp_path / "framing"
    result = framing.run(framing.Parameters(**SCRIPTED, probes=("C01", "C02"), replicates=2, output_dir=str(out)))
    variables = yaml.safe_load((out / "variables.yml").read_text())["framing"]
    assert variables["n_cells"] == 2 * 2 * 2 and variables["n_failed"] == 0
    declared: Declared = framing.MANUSCRIPT
    plain = [v.template for v in declared.variables if "{" not in v.template]
    assert set(plain) <= set(variables) and "framing_effect" in variables
    assert {t.stem for t in declared.tables} <= {p.stem for p in (out / "tables").glob("*.md")}
    assert [f.stem for f in result.figures if f.suffix == ".png"] == ["framing"]


def test_the_defaults_plan_within_the_embedded_budget(tmp_path):
    defaults = framing.Parameters()
    assert defaults.window <= MAX_WINDOW and defaults.max_tokens <= MAX_TOKENS
    out = tmp_path / "plan"
    framing.run(framing.Parameters(plan=True, output_dir=str(out)))
    batches = {b["batch"]: b for b in json.loads((out / PLAN_FILE).read_text())["batches"]}
    assert 0 < batches["framing:targets"]["calls"] <= MAX_TARGET_CALLS
