"""The manuscript against fresh outputs: every notebook's experiment run at a tiny scale on
scripted models (two targets where a notebook takes several), its variables merged as
``make paper`` merges them, and the manuscript checked as ``paper --check-only`` checks it:
every variable key, include and figure the text names is produced by the experiments."""
import shutil

import pytest

from contextecho.cape.inventory import InventoryNotFound, load_inventory
from contextecho.engine.paths import REPO_ROOT
from contextecho.notebooks import NOTEBOOKS, experiment
from contextecho.paper import manuscript
from contextecho.paper.outputs import merge_variables

JUDGED = {"targets": ("scripted/varied", "scripted/chatty"), "judges": ("scripted/judge",),
          "n_resamples": 200, "max_tokens": 16, "window": 3000}
TINY = {
    "panel": {**JUDGED, "n_sessions": 2, "n_positions": 3, "probes": ("C01", "C02", "C03"),
              "stressors": ("S2#01", "S2#02")},
    "compaction": {**JUDGED, "n_sessions": 2, "probes": ("C01", "C02")},
    "onset": {**JUDGED, "n_sessions": 2, "probes": ("C01", "C02"), "steps": (1, 5, 25)},
    "a_anchor": {**JUDGED, "n_sessions": 1, "interventions": ("none", "a_anchor", "placebo_anchor"),
                         "probes": ("C01", "C03"), "contracts": ("S2#01", "C1_csv"), "distances": (0, 4)},
    "cross_judge": {**JUDGED, "n_sessions": 2, "n_positions": 2, "probes": ("C01", "C02")},
    "anchor_family": {**JUDGED, "n_sessions": 1},
    "cross_session": {"targets": ("scripted/varied", "scripted/chatty"), "judges": ("scripted/judge",),
                      "n_resamples": 200, "n_positions": 2, "format_positions": 2},
    "controls": {**JUDGED, "n_sessions": 2, "items": ("N01", "N02"),
                 "arms": ("real", "filler", "shuffled_real", "unrelated_session", "scratch")},
    "framing": {**JUDGED, "probes": ("C01", "C02")},
    "instruction_override": {"targets": ("scripted/x", "scripted/chatty"), "length_targets": ("scripted/x",)},
    "continuation": {"targets": ("fake/tool-call", "scripted/chatty"), "n_cutpoints": 4, "n_resamples": 200},
    "cape": {"targets": ("scripted/letters",), "reasoning_targets": ("fake/think",), "n_items": 5,
             "factors": ("stability", "option_order"), "history_window": 2, "orderings": ("cyclic",),
             "bridge_positions": 1, "bridge_runs": 1},
    "anchor": {"targets": ("scripted/letters", "scripted/varied"), "judges": ("scripted/judge", "scripted/chatty"),
                  "summariser": "scripted/chatty", "n_sessions": 1, "n_items": 5, "checkpoints": 2,
                  "axes_positions": 2,
                  "per_family": 2, "n_evaluators": 1, "min_agree": 1, "calibration_runs": 1,
                  "retention_window": 1500, "axes_window": 1500, "window": 2000, "recent_chars": 800,
                  "summary_block_steps": 100, "summary_turn_chars": 40, "summary_max_tokens": 16,
                  "fork_max_tokens": 16, "n_resamples": 200},
    "published": {},
}


@pytest.mark.corpus
def test_every_key_include_and_figure_of_the_manuscript_is_produced(tmp_path, corpus_dir, scripted_models):
    try:
        load_inventory("mpi_120")
    except InventoryNotFound as exc:
        pytest.skip(str(exc))
    assert set(TINY) == set(NOTEBOOKS)
    paper = tmp_path / "paper"
    paper.mkdir()
    shutil.copy(REPO_ROOT / "paper" / "index.qmd", paper / "index.qmd")
    shutil.copytree(REPO_ROOT / "paper" / "sections", paper / "sections")
    for name in NOTEBOOKS:
        module = experiment(name)
        module.run(module.Parameters(**TINY[name], output_dir=str(paper / "_generated" / name)))
    variables = manuscript.write_variables(merge_variables(sorted((paper / "_generated").glob("*/variables.yml"))),
                                           tmp_path / "_variables.yml", merge=False)
    assert manuscript.check_sources(paper, variables) == []
