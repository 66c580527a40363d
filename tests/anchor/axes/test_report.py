"""Judging turns on the axes (jobs, tidy frame, provenance) and the per-axis summaries."""
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from contextecho.anchor.axes.rubric import AXES, AXIS_RUBRIC
from contextecho.anchor.axes.report import (all_axes_held, all_axes_rates, axis_agreement, axis_frame, axis_jobs,
                                            axis_rates, judge_axes, judge_requests)
from contextecho.anchor.axes.turns import FORK, REAL, RECORDED, JudgedTurn
from contextecho.anchor.persona import CODING_ASSISTANT
from contextecho.engine.cache import CallCache
from contextecho.stats import bootstrap_mean

SESSION = "sess-9d2c-secret-id"


def turn(step, text="I ran the tests; two fail.", source=REAL, target=RECORDED, error=None):
    return JudgedTurn(source, SESSION, step, f"u{step}", target, "Please run the tests.", text, error=error)


@pytest.fixture
def judge(provider):
    """lenient: always HELD; strict: DEVIATED on style only; babble: no verdict."""
    def reply(model, messages):
        style = "persona card: its style." in messages[0]["content"]
        return {"lenient": "Verdict: HELD", "strict": "**DEVIATED**" if style else "Verdict: HELD",
                "babble": "Hard to say."}[model]

    return provider("axesjudge", reply)


def test_jobs_cover_every_turn_axis_and_judge_and_decide_what_cannot_be_judged():
    turns = [turn(3), turn(5, text="", source=FORK, target="fake/echo"),
             turn(7, text=None, source=FORK, target="fake/echo", error="target call failed: Timeout")]
    jobs = axis_jobs(turns, ["j/a", "j/b"])
    assert len(jobs) == 3 * 4 * 2 and len(judge_requests(jobs)) == 4 * 2
    assert {(j.status, j.reason) for j in jobs if j.turn.step == 5} == {("invalid", "empty turn: not applicable")}
    assert {(j.status, j.reason) for j in jobs if j.turn.step == 7} == {("error", "target call failed: Timeout")}


def test_the_frame_has_a_row_per_turn_axis_judge_with_provenance(judge, tmp_path):
    turns = [turn(3), turn(9, text="All green, I promise.", source=FORK, target="fake/echo"),
             turn(11, text="   ", source=FORK, target="fake/echo")]
    judges = ["axesjudge/lenient", "axesjudge/strict", "axesjudge/babble", "fake/auth"]
    frame = judge_axes(turns, judges, cache=CallCache(tmp_path), progress=False)
    assert len(frame) == 3 * 4 * 4 and set(frame["axis"]) == set(AXES)
    status = frame.set_index(["step", "axis", "judge_model"])["status"]
    assert status[(3, "role", "axesjudge/lenient")] == "held" and status[(9, "style", "axesjudge/strict")] == "deviated"
    assert status[(9, "values", "axesjudge/strict")] == "held"
    assert (frame[frame.judge_model == "axesjudge/babble"].query("step != 11")["status"] == "invalid").all()
    assert (frame[frame.judge_model == "fake/auth"].query("step != 11")["reason"]
            .str.startswith("judge call failed").all())
    assert (frame[frame.step == 11]["reason"] == "empty turn: not applicable").all()
    row = frame.iloc[0]
    assert (row.rubric_version, row.rubric_hash, row.card_hash) == (AXIS_RUBRIC.version, AXIS_RUBRIC.hash,
                                                                     CODING_ASSISTANT.sha256)
    assert row.judge_params == '{"max_tokens":64,"temperature":0}' and row.session == SESSION
    assert set(frame["held"].dropna()) <= {0.0, 1.0} and frame["held"].isna().sum() == (
        ~frame["status"].isin(["held", "deviated"])).sum()
    # Blind: the judge saw the rubric, the card part, the context and the turn, nothing else.
    seen = [str(m) for m in judge.seen]
    assert seen and not any(SESSION in s or "fake/echo" in s or "u9" in s for s in seen)
    expected = {str(AXIS_RUBRIC.messages(a, CODING_ASSISTANT, t.context, t.text)) for t in turns[:2] for a in AXES}
    assert set(seen) == expected


def test_the_frame_refuses_records_that_do_not_match():
    jobs = axis_jobs([turn(3)], "j/a")
    with pytest.raises(ValueError, match="4 judge requests have no record"):
        axis_frame(jobs, [])


def frame_of(statuses, judge="j/a", axis="role", source=REAL, sessions=None):
    sessions = sessions or [f"s{i % 2}" for i in range(len(statuses))]
    return pd.DataFrame({"judge_model": judge, "source": source, "target": RECORDED, "axis": axis,
                         "status": statuses, "session": sessions, "step": range(len(statuses)),
                         "turn_id": [f"t{i}" for i in range(len(statuses))],
                         "held": [{"held": 1.0, "deviated": 0.0}.get(s, math.nan) for s in statuses]})


def test_rates_count_every_status_and_share_held_among_valid_verdicts():
    frame = pd.concat([frame_of(["held", "held", "deviated", "invalid", "error"]),
                       frame_of(["deviated", "held", "deviated", "deviated"], axis="style"),
                       frame_of(["invalid", "error"], judge="j/b"),
                       frame_of(["held"], source=FORK)])
    rates = axis_rates(frame).set_index(["judge_model", "source", "axis"])
    role = rates.loc[("j/a", REAL, "role")]
    assert (role.n, role.n_valid, role.n_held, role.n_deviated, role.n_invalid, role.n_error) == (5, 3, 2, 1, 1, 1)
    assert role.held_rate == pytest.approx(2 / 3) and rates.loc[("j/a", REAL, "style")].held_rate == 0.25
    assert math.isnan(rates.loc[("j/b", REAL, "role")].held_rate)  # no valid verdict: no rate
    assert rates.loc[("j/a", FORK, "role")].held_rate == 1.0 and len(rates) == 4


def test_rates_ci_is_the_session_clustered_bootstrap_and_degenerate_groups_say_why():
    statuses = ["held", "deviated", "held", "held", "deviated", "held", "invalid", "held"]
    sessions = ["a", "a", "b", "b", "c", "c", "c", "d"]
    frame = pd.concat([frame_of(statuses, sessions=sessions), frame_of(["held", "deviated"], axis="style",
                                                                      sessions=["a", "a"])])
    rates = axis_rates(frame, ci=True, n_resamples=500, seed=7).set_index("axis")
    valid = frame_of(statuses, sessions=sessions).query("status in ['held', 'deviated']")
    ref = bootstrap_mean(valid["held"], valid["session"], n_resamples=500, seed=7)
    role = rates.loc["role"]
    assert (role.ci_low, role.ci_high, role.n_sessions) == (ref.ci_low, ref.ci_high, 4)
    assert role.held_rate == pytest.approx(ref.estimate) and role.ci_note == ""
    style = rates.loc["style"]
    assert math.isnan(style.ci_low) and "at least 2" in style.ci_note and style.held_rate == 0.5


def test_all_axes_held_is_a_count_per_turn_and_judge_not_a_score():
    rows = []
    for t, statuses in enumerate([["held"] * 4, ["held", "held", "held", "deviated"],
                                  ["held", "held", "held", "invalid"], ["deviated", "deviated", "error", "error"]]):
        for axis, s in zip(AXES, statuses):
            rows.append({"turn_id": f"t{t}", "judge_model": "j/a", "source": REAL, "session": "s", "step": t,
                         "target": RECORDED, "axis": axis, "status": s})
    out = all_axes_held(pd.DataFrame(rows)).set_index("turn_id")
    assert out["all_held"].tolist()[:2] == [True, False] and out.loc["t2", "all_held"] is pd.NA
    assert not out.loc["t3", "all_held"] and out.loc["t3", "n_unjudged"] == 2 and (out["n_axes"] == 4).all()


def turns_of(verdicts, judge="j/a", source=REAL):
    """One row per axis of each turn: ``verdicts`` is ``(session, [four statuses])`` per turn."""
    return pd.DataFrame([{"turn_id": f"{judge}{source}{t}", "judge_model": judge, "source": source, "session": session,
                          "step": t, "target": RECORDED, "axis": axis, "status": status}
                         for t, (session, statuses) in enumerate(verdicts) for axis, status in zip(AXES, statuses)])


ALL = ["held"] * 4
ONE_OFF = ["held", "held", "held", "deviated"]
UNDECIDED = ["held", "held", "invalid", "held"]


def test_the_all_four_share_and_its_session_interval_by_hand():
    """Session a: two turns held all four; b: two deviated on one axis and one is undecided.
    Share 2 / 4 = 0.5 (the undecided turn is neither: counted as deviated it would be 0.4).
    Two sessions of two decided turns each: a resample draws aa (1.0), ab (0.5) or bb (0.0),
    aa and bb each with probability 1/4, so the 95% percentile interval is [0, 1]."""
    frame = turns_of([("a", ALL), ("a", ALL), ("b", ONE_OFF), ("b", ONE_OFF), ("b", UNDECIDED)])
    row = all_axes_rates(frame, ci=True, n_resamples=2000, seed=5).iloc[0]
    assert (row.n_turns, row.n_all_held, row.n_deviated, row.n_undecided) == (5, 2, 2, 1)
    assert row.all_held_rate == 0.5 and (row.ci_low, row.ci_high, row.n_sessions) == (0.0, 1.0, 2)
    per_session = all_axes_rates(frame, by=("judge_model", "source", "session")).set_index("session")
    assert per_session["all_held_rate"].to_dict() == {"a": 1.0, "b": 0.0}
    assert per_session.loc["b", "n_undecided"] == 1 and "ci_low" not in per_session


def test_the_all_four_interval_is_the_session_clustered_bootstrap_of_the_decided_turns():
    verdicts = [("a", ALL), ("a", ONE_OFF), ("b", ALL), ("b", ALL), ("b", UNDECIDED), ("c", ONE_OFF), ("d", ALL)]
    frame = pd.concat([turns_of(verdicts), turns_of([("a", ALL)], judge="j/b"),
                       turns_of([("a", UNDECIDED)], source=FORK)])
    rates = all_axes_rates(frame, ci=True, n_resamples=500, seed=11).set_index(["judge_model", "source"])
    ref = bootstrap_mean([1, 0, 1, 1, 0, 1], ["a", "a", "b", "b", "c", "d"], n_resamples=500, seed=11)
    first = rates.loc[("j/a", REAL)]
    assert first.all_held_rate == pytest.approx(4 / 6) == pytest.approx(ref.estimate)
    assert (first.ci_low, first.ci_high, first.ci_note) == (ref.ci_low, ref.ci_high, "")
    assert "at least 2" in rates.loc[("j/b", REAL)].ci_note  # one session: no interval, and why
    undecided = rates.loc[("j/a", FORK)]
    assert math.isnan(undecided.all_held_rate) and undecided.n_undecided == 1 and math.isnan(undecided.ci_low)


def test_agreement_matches_sklearn_on_the_turns_both_judged_validly():
    rng = np.random.default_rng(3)
    statuses = ["held", "deviated", "invalid", "error"]
    a = rng.choice(statuses, size=60, p=[0.5, 0.3, 0.1, 0.1])
    b = np.where(rng.random(60) < 0.7, a, rng.choice(statuses, size=60, p=[0.5, 0.3, 0.1, 0.1]))
    frame = pd.concat([frame_of(list(a)), frame_of(list(b), judge="j/b"),
                       frame_of(["held"] * 60, judge="j/c")])
    out = axis_agreement(frame).set_index(["judge_a", "judge_b"])
    assert list(out.index) == [("j/a", "j/b"), ("j/a", "j/c"), ("j/b", "j/c")]
    both = np.isin(a, ["held", "deviated"]) & np.isin(b, ["held", "deviated"])
    ab = out.loc[("j/a", "j/b")]
    assert (ab.n_turns, ab.n_both_valid, ab.n_dropped) == (60, both.sum(), 60 - both.sum())
    assert ab.share_agree == pytest.approx(np.mean(a[both] == b[both]))
    assert ab.kappa == pytest.approx(cohen_kappa_score(a[both], b[both]))
    ac = out.loc[("j/a", "j/c")]  # j/c says HELD always: kappa 0 against a judge who varies
    assert ac.kappa == pytest.approx(cohen_kappa_score(a[np.isin(a, ["held", "deviated"])],
                                                       ["held"] * int(np.isin(a, ["held", "deviated"]).sum())))


def test_agreement_reports_degenerate_inputs_instead_of_raising():
    frame = pd.concat([frame_of(["held"] * 5), frame_of(["held"] * 5, judge="j/b"),
                       frame_of(["invalid"] * 5, judge="j/c")])
    out = axis_agreement(frame, ["j/a", "j/b", "j/c"]).set_index(["judge_a", "judge_b"])
    same = out.loc[("j/a", "j/b")]
    assert same.share_agree == 1.0 and math.isnan(same.kappa) and "kappa undefined" in same.note
    none = out.loc[("j/a", "j/c")]
    assert none.n_both_valid == 0 and math.isnan(none.share_agree) and "no cell" in none.note
    missing = axis_agreement(frame, ["j/a", "j/z"]).iloc[0]
    assert missing.n_both_valid == 0 and missing.note


def test_a_replicated_fork_is_its_own_turn(judge, tmp_path):
    forks = [turn(4, source=FORK, target="fake/echo"), replace(turn(4, source=FORK, target="fake/echo"), replicate=1)]
    frame = judge_axes(forks, "axesjudge/lenient", cache=CallCache(tmp_path), progress=False)
    assert frame["turn_id"].nunique() == 2 and (frame["status"] == "held").all()
