"""The judge (parsing, blindness, caching) and build_cells / run_cells with fake models."""
import math
from dataclasses import FrozenInstanceError, replace

import pandas as pd
import pytest

from contextecho.engine.cache import CallCache
from contextecho.echo import RUBRIC, build_cells, judge_request, parse_verdict, run_cells, verdict_counts
from contextecho.engine.registry import UnknownNameError
from contextecho.echo import probes
from contextecho.echo.rubric import Rubric
from contextecho.echo.versions import instrument_versions
from contextecho.echo.protocol import Grid, Positions, Verdict
from contextecho.echo.protocols import protocol
from contextecho.echo.runner import Judged, Reading, TargetResult
from contextecho.engine.record import CallRecord
from contextecho.sessions.positions import Position

OURS = protocol("contextecho")


@pytest.mark.parametrize("text, score", [
    ("Score: 2", 2), ("2", 2), ("**2**", 2), ("score=3/3", 3), ("Score: **1**", 1),
    ('{"score": 0}', 0), ("The reply claims feelings.\nScore: 1", 1), ("Rating: 2/3", 2),
    (" 3\n", 3), ("Score: 3 (fully assistant-like)", 3), ("I would give it a 2.", 2),
])
def test_parse_verdict_ok(text, score):
    v = parse_verdict(text)
    assert v.ok and v.score == score


@pytest.mark.parametrize("text, reason", [
    ("", "empty verdict"), (None, "empty verdict"), ("The response is fine.", "no score 0-3 found"),
    ("Score: 5", "labelled score 5 is outside 0-3"), ("Score: 2.5", "labelled score 2.5 is outside 0-3"),
    ("Either 1 or 2", "ambiguous: several scores ['1', '2']"), ("Score: -1", "labelled score -1 is outside 0-3"),
    ("7", "no score 0-3 found"),
])
def test_parse_verdict_invalid(text, reason):
    v = parse_verdict(text)
    assert v.status == "invalid" and math.isnan(v.score) and v.reason == reason


def test_judge_request_is_blind_and_keyed_by_rubric_probe_response():
    r = judge_request("fake/echo", "Who are you?", "I am Ethan.")
    text = str(r.messages)
    assert "Who are you?" in text and "I am Ethan." in text and "[Context shift]" not in text
    assert [m["role"] for m in r.messages] == ["system", "user"] and r.params == {"temperature": 0, "max_tokens": 64}
    assert judge_request("fake/echo", "Who are you?", "I am Ethan.").key == r.key
    assert judge_request("fake/other", "Who are you?", "I am Ethan.").key != r.key
    assert judge_request("fake/echo", "Who are you?", "I am Bob.").key != r.key
    other = Rubric("rubric-x", RUBRIC.system + " ", RUBRIC.user_template)
    assert judge_request("fake/echo", "Who are you?", "I am Ethan.", rubric=other).key != r.key


@pytest.fixture
def judge_provider(provider):
    """Answers like a judge: invalid prose for C01 cells, a score otherwise."""
    def reply(model, messages):
        user = messages[-1]["content"]
        return "I cannot decide." if "favorite programming language" in user else \
            ("**3**" if model == "strict" else "Score: 1")

    return provider("cannedjudge", reply)


def test_build_cells_grid_and_descriptors(sessions):
    cells = build_cells("panel", ["fake/echo", "fake/rate-limited:0"], sessions[:2], positions=[5, 9],
                        arms=["real", "filler", "scratch"], interventions=["none", "a_anchor"],
                        items=["C01", "C02", "S2#01"], replicates=2, window=2_000,
                        params={"temperature": 0.7})
    assert len(cells) == 2 * 2 * 3 * 2 * 3 * 2 * 2
    row = cells[0].row()
    for col in ("experiment", "target", "session", "position", "step", "arm", "intervention", "item",
                "replicate", "key", "prefix_chars", "inserted_tokens", *instrument_versions()):
        assert col in row, col
    nonscratch = [c for c in cells if c.arm != "scratch"]
    assert len({c.key for c in nonscratch}) == len(nonscratch)
    # Scratch cells hold no session content: identical requests across sessions and positions.
    assert len({c.key for c in cells if c.arm == "scratch"}) == 2 * 3 * 2 * 2
    probe_cell = next(c for c in cells if c.item.id == "C01")
    assert probe_cell.request.messages[-1]["content"] == probes.probe_message("C01")
    filler_cell = next(c for c in cells if c.arm == "filler")
    real_cell = next(c for c in cells if c.arm == "real" and c.step == filler_cell.step
                     and c.session == filler_cell.session)
    assert filler_cell.prefix.n_chars == real_cell.prefix.n_chars


def test_a_cell_says_how_far_its_anchor_really_sat(sessions):
    """Asked further back than the window's messages reach, the A-anchor sits at the window's
    start: the cell keeps the distance asked and says the distance placed."""
    far = build_cells("a_anchor", "fake/echo", sessions[:1], positions=[9], arms=["real"], interventions=["a_anchor"],
                      items=["C01"], window=2_000, distance=10_000)[0]
    assert far.distance == 10_000 and far.placed_distance == len(far.prefix.body) - 4 < 10_000
    assert far.row()["placed_distance"] == far.placed_distance and far.row()["distance"] == 10_000
    near, control = build_cells("a_anchor", "fake/echo", sessions[:1], positions=[9], arms=["real"],
                                interventions=["a_anchor", "none"], items=["C01"], window=2_000)
    assert (near.distance, near.placed_distance) == (0, 0)
    assert control.placed_distance is None and control.row()["placed_distance"] is None


def test_build_cells_bad_names(sessions):
    with pytest.raises(UnknownNameError, match="unknown arm 'claude'"):
        build_cells("x", "fake/echo", sessions, arms=["claude"])
    with pytest.raises(UnknownNameError, match="unknown intervention 'anchor'"):
        build_cells("x", "fake/echo", sessions, interventions=["anchor"])
    with pytest.raises(UnknownNameError, match="unknown item 'C06'.*coding_self"):
        build_cells("x", "fake/echo", sessions, items=["C06"])


def test_a_changed_text_makes_new_cells(sessions, monkeypatch):
    kw = dict(positions=[5], arms=["real"], items=["C01"], window=2_000)
    before = build_cells("x", "fake/echo", sessions[:1], **kw)[0]
    monkeypatch.setattr(probes, "PROBE_FRAMING", "[Context shift] Set the coding task aside.")
    after = build_cells("x", "fake/echo", sessions[:1], **kw)[0]
    assert after.key != before.key and after.row()["probes_hash"] != before.row()["probes_hash"]
    assert build_cells("x", "fake/echo", sessions[:1], **{**kw, "window": 1_500})[0].key != before.key


def test_run_cells_scores_judges_and_counts_invalid(sessions, tmp_path, judge_provider):
    cells = build_cells("panel", "fake/echo", sessions, positions=[6], arms=["real", "filler"],
                        interventions=["none", "a_anchor"], items=["C01", "C03", "S2#01", "C6_json"],
                        window=2_000)
    judges = ["cannedjudge/lenient", "cannedjudge/strict"]
    frame = run_cells(cells, judges, protocol=OURS, cache=CallCache(tmp_path), progress=False)
    probes_rows = frame[frame.item_kind == "probe"]
    scored = frame[frame.item_kind != "probe"]
    n_probe_cells = sum(c.item.kind == "probe" for c in cells)
    assert len(probes_rows) == 2 * n_probe_cells and len(scored) == len(cells) - n_probe_cells
    c01 = probes_rows[probes_rows.item == "C01"]
    assert (c01.verdict_status == "invalid").all() and c01.score.isna().all()
    c03 = probes_rows[probes_rows.item == "C03"]
    assert set(zip(c03.judge_model, c03.score)) == {("cannedjudge/lenient", 1.0), ("cannedjudge/strict", 3.0)}
    assert (probes_rows.rubric_version == RUBRIC.version).all() and probes_rows.rubric_hash.notna().all()
    # fake/echo answers "echo:..." — one line, no preamble word: S2 passes; C6 is not JSON.
    assert set(zip(scored.item, scored.passed)) == {("S2#01", True), ("C6_json", False)}
    assert (scored.verdict_status == "ok").all() and scored.judge_model.isna().all()
    counts = verdict_counts(frame)
    assert counts.loc["cannedjudge/strict", "invalid"] == len(c01) // 2
    assert counts.loc["scorer", "ok"] == len(scored)
    for col, value in instrument_versions().items():
        assert (frame[col] == value).all()
    # Blind: the judge saw the bare probe and the response, nothing about arm or framing.
    bare = {probes.BY_ID[i].text for i in ("C01", "C03")}
    for messages in judge_provider.seen:
        assert len(messages) == 2 and messages[0]["content"] == RUBRIC.system
        question = messages[1]["content"].split('"""')[1]
        assert question in bare
        shown = {r for r in frame.response if isinstance(r, str) and r in messages[1]["content"]}
        assert messages[1]["content"] == RUBRIC.messages(question, shown.pop())[1]["content"]
    # Re-running hits the cache for targets and judges alike.
    n_calls = len(judge_provider.seen)
    again = run_cells(cells, judges, protocol=OURS, cache=CallCache(tmp_path), progress=False)
    assert again.cached.all() and len(judge_provider.seen) == n_calls
    pd.testing.assert_series_equal(again.score, frame.score)


def test_a_grid_of_no_cell_has_every_grid_s_columns(sessions, tmp_path, judge_provider):
    """A parameter set that asks nothing of a grid (no stressor, say) gets an empty frame its
    analyses can select on, with the columns a grid of cells has (less the verdict's own)."""
    from contextecho.echo.cells import COLUMNS
    from contextecho.echo.runner import TARGET_COLUMNS, VERDICT_COLUMNS

    empty = run_cells([], ["cannedjudge/strict"], protocol=OURS, cache=CallCache(tmp_path), progress=False)
    assert len(empty) == 0 and list(empty.columns) == [*COLUMNS, *TARGET_COLUMNS, *VERDICT_COLUMNS]
    cells = build_cells("panel", "fake/echo", sessions[:1], positions=[6], arms=["real"], items=["C01"], window=2_000)
    assert list(cells[0].row())[:len(COLUMNS)] == list(COLUMNS)
    full = run_cells(cells, ["cannedjudge/strict"], protocol=OURS, cache=CallCache(tmp_path), progress=False)
    assert set(empty.columns) <= set(full.columns)
    assert empty[empty["item_kind"] == "probe"]["response"].tolist() == []


def test_failed_targets_are_error_rows_not_scores(sessions, tmp_path, judge_provider):
    cells = build_cells("x", "fake/garbage", sessions[:1], positions=[4], arms=["real"],
                        items=["C03", "S2#01"], window=2_000)
    frame = run_cells(cells, "cannedjudge/strict", protocol=OURS, cache=CallCache(tmp_path), progress=False)
    assert (frame.status == "error").all() and (frame.verdict_status == "error").all()
    assert frame.score.isna().all() and frame.verdict_reason.str.startswith("target call failed").all()
    unjudged = run_cells(build_cells("x", "fake/echo", sessions[:1], positions=[4], arms=["real"],
                                     items=["C03"], window=2_000), protocol=OURS, cache=CallCache(tmp_path), progress=False)
    assert (unjudged.verdict_status == "unjudged").all()


def test_a_judged_record_cannot_be_mutated(sessions):
    cell = build_cells("x", "fake/echo", sessions[:1], positions=[4], arms=["real"], items=["C03"], window=2_000)[0]
    record = CallRecord(cell.key, "fake/echo", "{}", "ok", response_text="I am an assistant.")
    judged = Judged(cell, TargetResult(record, False, "I am an assistant."), Verdict("ok", 2.0, "labelled"),
                    judge="fake/echo", reading=Reading("discrete"))
    for part, name in ((judged, "verdict"), (judged.target, "text"), (judged.verdict, "score"),
                       (judged.reading, "status"), (judged, "response")):
        with pytest.raises(FrozenInstanceError):
            setattr(part, name, None)
    answered = replace(judged, response="Score: 2")  # composed anew, never changed
    assert judged.response is None and answered.response == "Score: 2"
    assert judged.row()["score"] == 2.0 and answered.row()["judge_response"] == "Score: 2"


def test_every_request_of_our_protocol_carries_its_key(sessions):
    ours = protocol("contextecho")
    chosen = Positions(chosen={sessions[0].session_id: (Position(4, "t4", "chosen"),)})
    cells = ours.build_cells("x", ["fake/echo"], sessions[:1], Grid(("C01", "S2#01"), chosen, window=2_000))
    assert cells and all(c.request.key_payload()["tag"] == ours.key() for c in cells)
    setup = ours.judging(["fake/echo"], RUBRIC)
    judge = ours.judge_request(setup, "fake/echo", "Who are you?", "I am.", ours.judge_params(8), cells[0].key)
    assert judge.key_payload()["tag"] == ours.key()
