"""The controls notebook: the experiment runs whole on scripted models and writes every
declared variable and table; arm − real is the panel's drift gap with the arm where filler
stands (checked by hand); e03's conditions table; the defaults' plan within the embedded budget."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from contextecho.engine.paths import shared_dir
from contextecho.experiments import controls
from contextecho.experiments.spine import PLAN_FILE
from contextecho.echo.reference.context_source import A1_CONDITIONS

SCRIPTED = {"targets": ("scripted/x",), "judges": ("scripted/judge",), "n_resamples": 200, "max_tokens": 16}
#: The embedded build's budget per notebook (uncached target calls; prefix and answer sizes).
MAX_TARGET_CALLS, MAX_WINDOW, MAX_TOKENS = 25, 3000, 48


@pytest.fixture
def corpus(scripted_models):
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


def _rows(scores: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"target": "t", "session": "S1", "position": "late", "step": 9, "arm": arm, "item": f"N0{i}",
                          "score": s} for arm, values in scores.items() for i, s in enumerate(values, 1)])


def test_arm_gaps_by_hand():
    frame = _rows({"real": [3, 2, 1, np.nan], "filler": [3, 3, 3, 1], "scratch": [0, 0, 1, 1]})
    gaps = controls.control_gaps(frame, ("real", "filler", "scratch"), n_resamples=200, seed=1).set_index("arm")
    assert gaps.loc["filler", "estimate"] == pytest.approx(10 / 4 - 2.0)   # filler − real, the −/NaN cell out
    assert gaps.loc["scratch", "estimate"] == pytest.approx(0.5 - 2.0)
    assert gaps.loc["filler", "source"] == "harness" and gaps.loc["scratch", "source"] == "ours"
    assert gaps.loc["scratch", "real_mean"] == pytest.approx(2.0) and gaps.loc["scratch", "arm_mean"] == 0.5
    assert gaps.loc["scratch", "ci_low"] <= -1.5 <= gaps.loc["scratch", "ci_high"]


def test_an_arm_without_a_valid_cell_names_itself():
    gaps = controls.control_gaps(_rows({"real": [1, 2], "scratch": [np.nan, np.nan]}), ("real", "scratch"),
                                 n_resamples=50, seed=1)
    assert np.isnan(gaps["estimate"].iloc[0]) and "not estimable" in gaps["note"].iloc[0]
    assert "'filler'" not in gaps["note"].iloc[0]


def test_item_means_per_arm():
    table = controls.item_means(_rows({"real": [3, 1], "filler": [2, np.nan]}))
    assert list(table["item"]) == ["N01", "N02"] and list(table["real"]) == [3, 1]
    assert table["filler"].iloc[0] == 2 and np.isnan(table["filler"].iloc[1])


def test_context_source_without_a_source_says_why():
    table = controls.context_source_table(None, "no source")
    assert list(table["condition"]) == list(A1_CONDITIONS) and table["chars"].isna().all()
    assert set(table["note"]) == {"not estimable: no source"}


def test_runs_whole_on_scripted_models(corpus, tmp_path):
    out = tmp_path / "controls"
    result = controls.run(controls.Parameters(**SCRIPTED, n_sessions=2, items=("N01", "N02", "N03"),
                                              arms=("real", "filler", "shuffled_real", "unrelated_session",
                                                    "scratch"), output_dir=str(out)))
    variables = yaml.safe_load((out / "variables.yml").read_text())["controls"]
    assert variables["n_failed"] == 0 and variables["n_cells"] == 2 * 3 * 5
    for key in ("negative_gap", *(f"control_gap_{a}" for a in controls.OUR_ARMS)):
        assert key in variables
    stems = {t.stem for t in controls.MANUSCRIPT.tables}
    assert stems <= {p.stem for p in (out / "tables").glob("*.md")}
    sizes = pd.read_parquet(out / "results" / "context_source.parquet")
    assert list(sizes["condition"]) == list(A1_CONDITIONS) and sizes["chars"].iloc[0] == 0
    assert all(f.is_file() for f in result.figures)


def test_the_defaults_plan_within_the_embedded_budget(corpus, tmp_path):
    defaults = controls.Parameters()
    assert defaults.window <= MAX_WINDOW and defaults.max_tokens <= MAX_TOKENS
    out = tmp_path / "plan"
    controls.run(controls.Parameters(plan=True, output_dir=str(out)))
    batches = {b["batch"]: b for b in json.loads((out / PLAN_FILE).read_text())["batches"]}
    assert 0 < batches["controls:targets"]["calls"] <= MAX_TARGET_CALLS
