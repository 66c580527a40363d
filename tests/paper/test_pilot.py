"""The pilot end to end on the fake model, and the manuscript's keys against its variables."""
import pytest

from contextecho import manuscript
from contextecho.cache import CellCache
from contextecho.pilot import PilotConfig, pilot_sessions, pilot_table, run_pilot
from contextecho.sessions.corpus import fill_corpus

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from contextecho.sessions.corpus import shared_corpus

    if not shared_corpus().is_dir():
        import os
        if os.environ.get("CI") == "true":
            pytest.fail(f"the shared corpus is missing at {shared_corpus()}")
        pytest.skip("shared corpus not available")
    dest = tmp_path_factory.mktemp("corpus")
    fill_corpus(dest, allow_download=False)
    return dest


def test_pilot_sessions_are_openly_licensed_main_transcripts(corpus):
    chosen = pilot_sessions(4, corpus)
    assert len(chosen) == 4 and all(p.is_file() for p in chosen)
    assert not any("subagents" in p.parts for p in chosen)


def test_pilot_runs_end_to_end_and_fills_every_manuscript_variable(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr("contextecho.pilot.local_corpus", lambda: corpus)
    config = PilotConfig(model="fake/echo", n_sessions=2, n_positions=2)
    frame, variables = run_pilot(config, cache=CellCache(tmp_path / "cache"))
    assert len(frame) == 2 * 2 + 1 and variables["n_errors"] == 0
    assert (frame.loc[frame.arm == "real", "prefix_chars"] <= config.window).all()
    assert frame.cell_key.is_unique
    # Every {{< var pilot.* >}} in the manuscript resolves against what the pilot produces.
    paper = tmp_path / "paper"
    (paper / "_generated").mkdir(parents=True)
    (paper / "index.qmd").write_text((manuscript.PAPER_DIR / "index.qmd").read_text())
    (paper / "_generated" / "pilot_table.md").write_text(pilot_table(frame))
    variables_file = manuscript.write_variables({"pilot": variables}, tmp_path / "_variables.yml")
    assert manuscript.check_sources(paper, variables_file) == []
    assert pilot_table(frame).count("\n") == len(frame) + 2
    again, variables = run_pilot(config, cache=CellCache(tmp_path / "cache"))
    assert variables["cache_hits"] == len(again)


def test_inventory_manifest_matches_the_shared_inventories(corpus, tmp_path):
    from contextecho.data_cli import fill_inventories

    summary = fill_inventories(tmp_path / "mpi", offline=True)
    assert "3 files verified" in summary and (tmp_path / "mpi" / "mpi_120.csv").is_file()
