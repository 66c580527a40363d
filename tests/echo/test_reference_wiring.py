"""The reference protocol wired into the experiments: cells equal the harness's requests,
keys carry the protocol, judging/scoring follow the harness, manifests record the
protocol and what the embedded build shortened, the panel's harness statistics equal
the ``harness_`` functions of :mod:`contextecho.stats` and :mod:`contextecho.stats.variance` on hand data."""
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from contextecho.experiments import harness_forests, panel, protocol_record, selection
from contextecho.echo.protocols import protocol, protocol_of
from contextecho.engine.registry import UnknownNameError
from contextecho.echo.reference.cells import (build_reference_cells, named_positions,
                                                      reference_items)
from contextecho.echo.protocol import Positions
from contextecho.echo.reference.filler import filler_for
from contextecho.sessions.positions import Position
from contextecho.echo.reference.requests import probe_request, stressor_request
from contextecho.echo.reference.texts import S2_VARIANTS
from contextecho.echo.reference.transcript import session_prefix
from contextecho.engine.model_request import ModelRequest, strip_cache_markers
from contextecho.experiments.parameters import RangeError
from contextecho.engine.paths import REPO_ROOT, shared_dir
from contextecho.sessions.redaction import redact
from contextecho.stats import variance_decomposition
from contextecho.stats.bootstrap import harness_clustered_bootstrap_mean
from contextecho.stats.permutation import harness_sign_flip_p

REFERENCE_TAG = protocol("reference").key()


def needs_corpus():
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")


# ----------------------------------------------------------------- positions
def _rows(n_turns: int, boundaries: dict[int, bool]) -> list:
    """``n_turns`` user/assistant turns; a compact boundary (+ summary) after the turns
    named in ``boundaries`` (True: with a summary record)."""
    rows = []
    for t in range(1, n_turns + 1):
        rows.append({"type": "user" if t % 2 else "assistant",
                     "message": {"content": f"turn {t}"}})
        if t in boundaries:
            rows.append({"type": "system", "subtype": "compact_boundary"})
            rows.append({"type": "user", "message": {"content": "This session is a summary ..."}}
                        if boundaries[t] else None)
    return rows


def test_named_positions_anchor_on_the_sessions_own_compactions():
    from contextecho.echo.reference.transcript import turn_index

    rows = _rows(400, {150: True, 330: True})
    index = turn_index(rows)
    last = max(index)  # the summaries count as turns: 402
    panel_pos = named_positions(rows, index, "panel")
    assert [p.label for p in panel_pos] == ["P0_start", "c1_pre", "c1_post", "c2_pre", "c2_post"]
    assert [p.step for p in panel_pos] == [100, 150, 250, 331, last]  # post = pre + 100, clipped to the end
    onset = named_positions(rows, index, "onset")
    # as run_onset.py: every turn kept under its own label; those past the end render the last turn
    assert [p.step for p in onset] == [1, 5, 25, 100, 250, 500, 1000, 1500]
    assert onset[0].label == "T0001" and onset[-1].label == "T1500"
    from contextecho.echo.reference.transcript import render_prefix
    assert render_prefix(rows, index, 1500).text == render_prefix(rows, index, 500).text == \
        render_prefix(rows, index, last).text
    assert named_positions(rows, index, "late") == (Position(last - 3, "P5_pre_C6", "late"),)
    assert [p.label for p in named_positions(rows, index, "compaction")] == \
        ["c1_pre", "c1_post", "c2_pre", "c2_post"]
    deciles = named_positions(rows, index, "deciles")
    assert [p.step for p in deciles][:3] == [40, 80, 121] and deciles[0].label == "D01"
    with pytest.raises(Exception, match="panel"):
        named_positions(rows, index, "uniform")


# ----------------------------------------------------------------- cells
def _session(n=1):
    needs_corpus()
    return selection.select_sessions(n, protocol=protocol("reference"))


@pytest.mark.corpus
def test_a_reference_panel_cell_is_the_harness_request():
    session = _session()[0]
    cells = build_reference_cells("panel", "fake/echo", [session], Positions("panel", n=2),
                                  items=["C01", "S2#03"], window=6000, tag=REFERENCE_TAG)
    assert {(c.position, c.arm, c.item.id) for c in cells} == {
        (pos, arm, item) for pos in ("P0_start", "c1_pre") for arm in ("real", "filler")
        for item in ("C01", "S2#03")}
    for cell in cells:
        prefix = session_prefix(session.path, cell.step, 6000).text
        text = prefix if cell.arm == "real" else filler_for(prefix)
        expected = probe_request(text, "C01") if cell.item.id == "C01" \
            else stressor_request(text, S2_VARIANTS[2])
        assert list(cell.request.messages) == strip_cache_markers(expected.chat_messages())
        assert dict(cell.request.params) == {"max_tokens": expected.max_tokens}  # no temperature
        assert cell.row()["prefix_redacted"] == "false"  # in-process target: not redacted


@pytest.mark.corpus
def test_reference_cell_keys_carry_the_protocol_and_differ_per_position():
    session = _session()[0]
    cells = build_reference_cells("panel", "fake/echo", [session], Positions("panel", n=3), items=["C01"],
                                  window=3000, max_tokens=16, tag=REFERENCE_TAG)
    ref = protocol("reference")
    for cell in cells:
        tag = cell.request.tag
        assert {k: tag[k] for k in ref.key()} == ref.key()
        assert cell.row()["protocol"] == "reference"
        assert cell.request.key_payload()["tag"]["protocol_sha256"] == ref.sha256
        assert cell.request.params == {"max_tokens": 16}
        untagged = ModelRequest(cell.request.model, cell.request.messages, cell.request.params)
        assert untagged.key != cell.key
    # Equal-length fillers at two positions are still two calls (two samples).
    assert len({c.key for c in cells}) == len(cells)


@pytest.mark.corpus
def test_a_provider_target_gets_the_redacted_prefix_and_a_filler_of_its_length():
    session = _session()[0]
    cells = build_reference_cells("panel", "openai/gpt-4o", [session], Positions("panel", n=1), items=["C01"],
                                  window=6000, tag=REFERENCE_TAG)
    real = next(c for c in cells if c.arm == "real")
    filler = next(c for c in cells if c.arm == "filler")
    raw = session_prefix(session.path, real.step, 6000).text
    assert real.row()["prefix_redacted"] == "true"
    assert real.request.messages[1]["content"] == redact(raw)[0]
    assert filler.request.messages[1]["content"] == filler_for(redact(raw)[0])


def test_reference_items_resolve_batteries_and_s2_and_refuse_others():
    items = reference_items(["coding_self", "S2"])
    assert [i.id for i in items][:5] == ["C01", "C02", "C03", "C04", "C05"]
    assert [i.id for i in items][5:] == [f"S2#{k:02d}" for k in range(1, 11)]
    assert items[0].message.startswith("[Context shift]") and items[0].probe_text in items[0].message
    assert items[5].message == S2_VARIANTS[0] and items[5].scorer == "S2" and items[5].contract is not None
    with pytest.raises(Exception, match="coding_self"):
        reference_items(["S9"])


# ----------------------------------------------------------------- judge verdicts
@pytest.mark.parametrize("text, status, score, ref", [
    ('{"score": 2, "label": "mixed", "reason": "r"}', "ok", 2.0, 2),
    ("no json at all", "invalid", math.nan, -1),
    ('{"score": 7}', "invalid", math.nan, -1),
    ('{"score": null}', "invalid", math.nan, None),  # the harness raises TypeError here
])
def test_reference_verdicts_keep_failures_as_invalid_rows_with_the_harness_score(text, status, score, ref):
    verdict = protocol("reference").read_verdict(text)
    assert verdict.status == status and verdict.reference_score == ref
    assert (math.isnan(verdict.score) and math.isnan(score)) or verdict.score == score
    if ref is None:
        assert "TypeError" in verdict.reason


# ----------------------------------------------------------------- parameters, manifest
def test_an_unknown_protocol_lists_the_valid_ones():
    with pytest.raises(RangeError, match="contextecho, reference"):
        panel.Parameters(protocol="paper")


def test_an_unknown_protocol_exits_2_on_the_command_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "contextecho", "notebook", "panel", "-p", "protocol",
                             "paper", "--output-dir", str(tmp_path)], capture_output=True, text=True,
                            cwd=REPO_ROOT, timeout=120)
    assert result.returncode == 2
    assert "protocol" in result.stderr and "contextecho, reference" in result.stderr


def test_a_run_carries_its_protocol_with_the_options_its_parameters_set():
    assert protocol_of(panel.Parameters(s2_requests="e10")).s2_requests == "e10"
    assert protocol_of(panel.Parameters()) == protocol("reference") and protocol("reference").s2_requests == "e08"
    assert protocol_of(panel.Parameters(protocol="contextecho", s2_requests="e10")) is protocol("contextecho")
    with pytest.raises(UnknownNameError):
        protocol("reference").configured(type("P", (), {"s2_requests": "e99"})())


def test_protocol_record_lists_what_the_embedded_build_shortened():
    p = panel.Parameters()
    record = protocol_record.protocol_record(protocol(p.protocol), p, p.stressor_max_tokens)
    assert record["protocol"] == "reference" and record["protocol_sha256"] == protocol("reference").sha256
    assert record["shortened"] == ["judge_max_tokens", "probe_max_tokens", "stressor_max_tokens",
                                   "window_chars"]
    assert record["settings"]["temperature"] == "provider default"
    paper = panel.Parameters(**{k: v for k, v in panel.PAPER_SCALE.items() if k not in ("targets", "judges")})
    assert protocol_record.protocol_record(protocol(paper.protocol), paper, paper.stressor_max_tokens)["shortened"] == []
    ours = protocol_record.protocol_record(protocol("contextecho"), panel.Parameters(protocol="contextecho"))
    assert ours["protocol"] == "contextecho" and ours["shortened"] == []


@pytest.mark.corpus
def test_the_panel_manifest_records_the_protocol_and_the_shortened_settings(tmp_path):
    needs_corpus()
    p = panel.Parameters(targets=("fake/echo",), judges=("fake/echo",), n_resamples=200, max_tokens=16,
                         window=3000, n_sessions=1, n_positions=2, probes=("C01",),
                         stressors=("S2#01",), output_dir=str(tmp_path / "panel"))
    result = panel.run(p)
    manifest = json.loads((result.output_dir / "manifest.json").read_text())
    assert manifest["protocol"]["protocol"] == "reference"
    assert manifest["protocol"]["settings"]["window_chars"] == 3000
    assert "window_chars" in manifest["protocol"]["shortened"]
    assert result.variables["protocol"] == "reference"
    assert "window_chars 3000 (protocol: 30000)" in result.variables["protocol_shortened"]
    cells = pd.read_parquet(result.output_dir / "results" / "cells.parquet")
    assert set(cells["protocol"]) == {"reference"}
    s2 = cells[cells["item_kind"] == "stressor"]
    assert s2["contextecho_score"].notna().all()  # both S2 scorers on every scored cell


# ----------------------------------------------------------------- statistics
def _hand_frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for target in ("a/x", "b/y", "c/z"):
        for step, position in ((100, "P0_start"), (300, "c1_pre"), (400, "c1_post")):
            for item in ("C01", "C02", "C03"):
                for arm in ("real", "filler"):
                    shift = 1 if arm == "filler" and target != "c/z" else 0
                    rows.append({"target": target, "session": "S1", "step": step, "position": position,
                                 "item": item, "replicate": 0, "arm": arm,
                                 "score": float(min(3, rng.integers(0, 3) + shift))})
    return pd.DataFrame(rows)


def test_harness_table_equals_the_harness_procedures_and_holm():
    frame = _hand_frame()
    frame.loc[3, "score"] = np.nan  # an invalid verdict: its pair leaves the permutation
    table = harness_forests.harness_table(frame.sample(frac=1, random_state=1), n_resamples=500, seed=42)
    for _, row in table.iterrows():
        g = frame[(frame["target"] == row["target"]) & frame["score"].notna()]
        for arm in ("real", "filler"):
            a = g[g["arm"] == arm]
            by = {pos: list(a[a["position"] == pos].sort_values("item")["score"])
                  for pos in ("P0_start", "c1_pre", "c1_post")}
            expected = harness_clustered_bootstrap_mean(by, n_boot=500, seed=42)
            assert (row[f"{arm}_mean"], row[f"{arm}_lo"], row[f"{arm}_hi"]) == \
                (expected.mean, expected.lo, expected.hi)
        wide = g.pivot_table(index=["step", "item"], columns="arm", values="score").dropna()
        deltas = list(wide["filler"] - wide["real"])
        assert row["n_pairs"] == len(deltas)
        assert row["perm_p"] == harness_sign_flip_p(deltas, n_resamples=500, seed=42)[1]
        assert row["gap"] == pytest.approx(row["filler_mean"] - row["real_mean"])
    assert table["n_pairs"].tolist()[0] == 8
    expected_holm = multipletests(table["perm_p"], method="holm")[1]
    assert np.allclose(table["holm_p"], expected_holm)


def test_sign_flip_on_hand_data():
    # Three equal positive differences: only the two all-same-sign flips reach |mean| = 1,
    # so p is about 2/8; with the harness's generator it is what harness_sign_flip_p gives.
    table = harness_forests.harness_table(pd.DataFrame([
        {"target": "t", "session": "S1", "step": s, "position": f"p{s}", "item": "C01", "replicate": 0,
         "arm": arm, "score": float(arm == "filler")} for s in (1, 2, 3) for arm in ("real", "filler")]),
        n_resamples=10_000, seed=42)
    assert table["perm_p"].iloc[0] == pytest.approx(0.25, abs=0.02)
    assert table["perm_p"].iloc[0] == harness_sign_flip_p([1.0, 1.0, 1.0], n_resamples=10_000, seed=42)[1]


def test_verbosity_variance_is_the_variance_decomposition_of_the_log_ratios():
    rng = np.random.default_rng(0)
    rows = []
    for target in ("a/x", "b/y"):
        for session in ("S1", "S2", "S3"):
            for position in ("p1", "p2"):
                for item in ("S2#01", "S2#02"):
                    for arm in ("real", "filler"):
                        rows.append({"target": target, "session": session, "position": position,
                                     "item": item, "replicate": 0, "arm": arm,
                                     "response_chars": int(rng.integers(5, 200))})
    s2 = pd.DataFrame(rows)
    table = panel.verbosity_variance(s2).set_index("target")
    wide = s2.pivot_table(index=["target", "session", "position", "item"], columns="arm",
                          values="response_chars").reset_index()
    wide["log_ratio"] = np.log(wide["real"] / wide["filler"])
    for target in ("a/x", "b/y"):
        v = variance_decomposition(wide[wide["target"] == target], group="session")
        assert table.loc[target, "sigma2_within"] == pytest.approx(v.sigma2_within)
        assert table.loc[target, "between_pct"] == pytest.approx(100 * v.share_between)
    pooled = variance_decomposition(wide, group="session", fixed=("target",))
    assert table.loc["pooled", "sigma2_between"] == pytest.approx(pooled.sigma2_between)
    assert table.loc["pooled", "n"] == 24


@pytest.mark.corpus
def test_limit_keeps_the_first_positions_of_every_session():
    sessions = _session(3)
    cells = build_reference_cells("panel", "fake/echo", sessions, Positions("panel", n=2), items=["C01", "S2#01"],
                                  window=2000, max_tokens=8, stressor_max_tokens=9, tag=REFERENCE_TAG)
    for session in sessions:
        assert [c.position for c in cells if c.session == session.session_id and c.arm == "real"
                and c.item.id == "C01"] == ["P0_start", "c1_pre"]
    assert {c.request.params["max_tokens"] for c in cells if c.item.id == "S2#01"} == {9}
    assert {c.request.params["max_tokens"] for c in cells if c.item.id == "C01"} == {8}


def test_onset_harness_curve_equals_harness_onset_gap_cis():
    from contextecho.stats.bootstrap import harness_onset_gap_cis

    frame = _hand_frame()
    frame = frame[frame["target"] == "a/x"]
    curve = harness_forests.harness_curve(frame.sample(frac=1, random_state=2), n_resamples=300, seed=42)
    steps = [100, 300, 400]
    by = {arm: {s: list(frame[(frame["arm"] == arm) & (frame["step"] == s)].sort_values("item")["score"])
                for s in steps} for arm in ("filler", "real")}
    expected = harness_onset_gap_cis(by["filler"], by["real"], steps, n_boot=300, seed=42)
    assert [tuple(r) for r in curve[["harness_gap", "harness_lo", "harness_hi"]].to_numpy()] == \
        [expected[s] for s in steps]


@pytest.mark.corpus
def test_the_panel_still_runs_under_our_own_protocol(tmp_path):
    needs_corpus()
    p = panel.Parameters(targets=("fake/echo",), judges=("fake/echo",), n_resamples=200, max_tokens=16,
                         window=3000, n_sessions=1, n_positions=2, probes=("C01",),
                         stressors=("S2#01",), protocol="contextecho", output_dir=str(tmp_path / "ours"))
    result = panel.run(p)
    manifest = json.loads((result.output_dir / "manifest.json").read_text())
    assert manifest["protocol"]["protocol"] == "contextecho" and manifest["protocol"]["shortened"] == []
    cells = pd.read_parquet(result.output_dir / "results" / "cells.parquet")
    assert set(cells["position"]) == {"u01", "u02"}  # uniform positions, our instruments
    assert "contextecho_score" not in cells and result.variables["protocol_shortened"] == "none"
