"""The cross-session notebook: run whole on the scripted models, its statistics against
hand-computed cases and scipy, and the embedded defaults' plan within the build's budget."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from contextecho.engine.paths import shared_dir
from contextecho.experiments import cross_session as xs
from contextecho.experiments.spine import plan_stages
from contextecho.stats.judge_free import StressorCell

FAKE = {"targets": ("scripted/x",), "judges": ("scripted/judge",), "n_resamples": 200}


@pytest.fixture
def corpus(scripted_models):
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


def test_the_experiment_runs_whole_and_writes_every_declared_variable_and_table(tmp_path, corpus):
    out = tmp_path / "cross_session"
    result = xs.run(xs.Parameters(**FAKE, output_dir=str(out), n_positions=2, format_positions=2))
    written = yaml.safe_load((out / "variables.yml").read_text())["cross_session"]
    for variable in xs.MANUSCRIPT.variables:
        assert any(variable.matches(key) for key in written), variable.template
    for table in xs.MANUSCRIPT.tables:
        assert (out / "tables" / f"{table.stem}.md").is_file(), table.stem
    assert (out / "figures" / "trajectories.png").is_file()
    # the figure's gap of each session is the replication table's estimate (the same scores)
    traj = result.tables[xs.MANUSCRIPT.table("trajectories").title]
    gaps = result.tables[xs.MANUSCRIPT.table("session_gaps").title]
    for session, own in traj.groupby("session"):
        row = gaps[gaps["session"] == session].iloc[0]
        assert row["gap"] == pytest.approx(xs.gap(own))
    # both formats of the corpus are compared, under the protocol that reads both
    formats = result.tables[xs.MANUSCRIPT.table("format_gaps").title]
    assert set(formats["format"]) == {"claude_code", "codex_cli"}
    assert written["format_protocol"] == "contextecho"


def test_plan_subset_spreads_the_positions_evenly():
    assert xs.plan_subset(12, 3) == [0, 6, 11]
    assert xs.plan_subset(12, 2) == [0, 11]
    assert xs.plan_subset(12, 1) == [11]
    assert xs.plan_subset(12, 0) == list(range(12)) == xs.plan_subset(12, 20)


def _cells(gaps: dict[str, list[tuple[float, float]]]) -> pd.DataFrame:
    """Per session, per position (real, filler) scores: one probe each."""
    rows = []
    for session, positions in gaps.items():
        for i, (real, filler) in enumerate(positions):
            for arm, value in (("real", real), ("filler", filler)):
                rows.append({"target": "t", "session": session, "position": f"P{i:02d}", "arm": arm,
                             "item": "C01", "score": value})
    return pd.DataFrame(rows)


def test_replication_by_hand():
    # S1 gaps 1, 1, 2 (mean 4/3); S2 gaps −1, 0, −2 (mean −1); S3 gaps 1, 0, 0 (mean 1/3)
    frame = _cells({"S1": [(0, 1), (1, 2), (0, 2)], "S2": [(2, 1), (1, 1), (3, 1)], "S3": [(0, 1), (2, 2), (1, 1)]})
    per, pooled = xs.replication(frame, column="score", n_resamples=500, seed=1)
    assert per.set_index("session")["gap"].to_dict() == pytest.approx({"S1": 4 / 3, "S2": -1.0, "S3": 1 / 3})
    row = pooled.iloc[0]
    assert row["pooled_gap"] == pytest.approx((4 / 3 - 1 + 1 / 3) / 3)  # mean over the nine units
    assert per["same_sign"].tolist() == [True, False, True]
    assert (row["n_sessions"], row["n_replicated"]) == (3, 2)
    assert row["replicated_pct"] == pytest.approx(200 / 3)
    # each session's interval lies within its position gaps (a bootstrap over positions)
    s1 = per.set_index("session").loc["S1"]
    assert 1.0 <= s1["ci_low"] <= s1["gap"] <= s1["ci_high"] <= 2.0


def test_replication_of_one_session_is_not_estimable_and_says_why():
    per, pooled = xs.replication(_cells({"S1": [(0, 1), (1, 2)]}), column="score", n_resamples=100, seed=1)
    assert per["gap"].iloc[0] == pytest.approx(1.0)
    assert math.isnan(pooled["replicated_pct"].iloc[0]) and pooled["note"].iloc[0].startswith("not estimable")


def test_s2_audit_by_hand():
    def c(session, pos, item, arm, ok, n):
        return StressorCell("t", session, pos, item, arm, ok, n)
    cells = [c("S1", "p", "a", "real", False, 300), c("S1", "p", "a", "filler", True, 100),
             c("S1", "p", "b", "real", True, 200), c("S1", "p", "b", "filler", True, 100),
             c("S2", "p", "a", "real", True, 50), c("S2", "p", "a", "filler", True, 100),
             c("S2", "p", "b", "real", True, 80)]  # its filler cell lost: the pair drops
    table = xs.audit_rows(cells, ["t"]).set_index("session")
    s1, s2, pooled = table.loc["S1"], table.loc["S2"], table.loc[xs.ALL_SESSIONS]
    assert (s1["n_pairs"], s1["real_compliant"], s1["filler_compliant"]) == (2, 1, 2)
    assert s1["raw_ratio"] == pytest.approx(500 / 200) and s1["cond_ratio"] == pytest.approx(200 / 100)
    assert (s2["n_pairs"], s2["raw_ratio"], s2["n_cond"]) == (1, 0.5, 1)
    assert (pooled["n_pairs"], pooled["real_pct"]) == (3, pytest.approx(200 / 3))
    assert pooled["raw_ratio"] == pytest.approx(550 / 300)
    assert pooled["cond_ratio"] == pytest.approx(np.mean([200, 50]) / np.mean([100, 100]))


def test_format_gaps_by_hand_and_a_missing_format_is_not_estimable():
    frame = _cells({"A": [(0, 2), (1, 2)], "B": [(1, 1), (0, 1)]})
    frame["format"] = frame["session"].map({"A": "claude_code", "B": "codex_cli"})
    table, diff = xs.format_gaps(frame, column="score", targets=["t"], n_resamples=100, seed=1)
    assert table.set_index("format")["gap"].to_dict() == pytest.approx({"claude_code": 1.5, "codex_cli": 0.5})
    assert diff["difference"].iloc[0] == pytest.approx(0.5 - 1.5)
    table, diff = xs.format_gaps(frame[frame["format"] == "claude_code"], column="score", targets=["t"],
                                 n_resamples=100, seed=1, missing={"codex_cli": "the corpus has no usable codex_cli session"})
    assert math.isnan(diff["difference"].iloc[0]) and "codex_cli" in diff["note"].iloc[0]
    assert "no usable codex_cli" in table.set_index("format").loc["codex_cli", "note"]


def test_the_format_comparison_reads_both_formats_under_one_protocol():
    protocol = xs.format_protocol(xs.Parameters())
    assert {"claude_code", "codex_cli"} <= set(protocol.formats)


def test_the_defaults_plan_within_the_embedded_budget(tmp_path, corpus):
    defaults = xs.Parameters(output_dir=str(tmp_path / "cross_session"))
    assert defaults.window <= 3000 and defaults.max_tokens <= 48 and defaults.stressor_max_tokens <= 48
    plan = plan_stages(xs.STAGES, defaults)
    targets = [c for c in plan.calls if c.round.endswith(":targets")]
    judges = [c for c in plan.calls if c.round.endswith(":judges")]
    # 2 sessions x 2 positions x 2 arms x 1 probe, 2 x 1 x 2 x 1 S2, 2 formats x 1 x 2 positions x 2 arms
    # (two positions per format: the format gap's interval resamples positions)
    assert len(targets) == 8 + 4 + 8 <= 25
    assert len(judges) == 8 + 8
    assert all(c.max_tokens is None or c.max_tokens <= 48 for c in targets)
