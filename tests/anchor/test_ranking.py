"""Ranking the targets by each ANCHOR instrument and the rank agreement between them:
ranks with ties by hand, τ-b against scipy.stats.kendalltau, the session bootstrap against a
reference loop over the same draws, degenerate resamples counted, one target not estimable."""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from contextecho.anchor.ranking import (Instrument, agreement_table, axes_instruments, ranking_table, ranks,
                                        recall_instrument, retention_instrument, tau_b)
from contextecho.stats.resampling import Resampling

TARGETS = ("t1", "t2", "t3", "t4")


def test_ranks_put_the_highest_score_first_and_average_ties():
    got = ranks(np.array([0.9, 0.5, 0.5, np.nan, 0.1]))
    assert got[[0, 1, 2, 4]].tolist() == [1.0, 2.5, 2.5, 4.0] and np.isnan(got[3])


def test_tau_b_is_kendalls_on_a_hand_case_and_scipys_with_ties():
    tau, n, why = tau_b(np.array([4.0, 3, 2, 1]), np.array([4.0, 2, 3, 1]))
    assert (round(tau, 6), n, why) == (round(4 / 6, 6), 4, "")  # 5 concordant, 1 discordant pair of 6
    a, b = np.array([0.1, 0.4, 0.4, 0.9, np.nan]), np.array([0.3, 0.2, 0.5, 0.8, 0.1])
    assert tau_b(a, b)[:2] == pytest.approx((kendalltau(a[:4], b[:4]).statistic, 4))


def test_tau_b_is_undefined_with_fewer_than_two_targets_or_a_ranking_of_ties():
    assert tau_b(np.array([0.5, np.nan]), np.array([0.2, 0.3]))[1:] == (
        1, "1 target with a score under both; a ranking needs two")
    tau, n, why = tau_b(np.array([0.5, 0.5, 0.5]), np.array([0.1, 0.2, 0.3]))
    assert np.isnan(tau) and n == 3 and why.startswith("every target has the same score")


def _instrument(name, sums, counts):
    return Instrument(name, TARGETS[:len(sums)], np.array(sums, float), np.array(counts, float))


def test_a_score_is_the_ratio_of_sums_over_the_sessions_drawn():
    inst = _instrument("x", [[1, 3], [0, 0]], [[2, 4], [0, 0]])
    assert inst.scores()[0] == pytest.approx(4 / 6) and np.isnan(inst.scores()[1])
    assert inst.scores(np.array([[2, 0], [0, 1]]))[:, 0] == pytest.approx([0.5, 0.75])
    table = ranking_table([inst])
    assert table["rank"].tolist()[0] == 1 and np.isnan(table["rank"].tolist()[1])
    assert table["note"].tolist() == ["", "no observation"]


def _random_instruments(seed=1, n_sessions=6):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 4, size=(4, n_sessions)).astype(float)
    return [_instrument(name, rng.random((4, n_sessions)) * counts, counts) for name in ("a", "b", "c")]


def test_the_interval_is_the_percentile_interval_of_tau_over_the_same_session_draws():
    instruments = _random_instruments()
    table = agreement_table(instruments, n_resamples=300, seed=7)
    assert len(table) == 3 and list(table[["instrument_a", "instrument_b"]].iloc[0]) == ["a", "b"]
    draws = np.random.default_rng(7).integers(0, 6, size=(300, 6))  # scipy.stats.bootstrap's draws
    counts = np.stack([np.bincount(row, minlength=6) for row in draws]).astype(float)
    a, b = instruments[0], instruments[1]

    def score(inst, w):
        return (w @ inst.sums.T) / (w @ inst.counts.T)

    taus = np.array([kendalltau(score(a, w), score(b, w)).statistic for w in counts])
    kept = taus[~np.isnan(taus)]
    row = table.iloc[0]
    assert row["tau"] == pytest.approx(kendalltau(a.scores(), b.scores()).statistic)
    assert (row["n_used"], row["n_undefined"]) == (len(kept), len(taus) - len(kept))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.percentile(kept, [2.5, 97.5])))


def test_the_bootstrap_is_seeded_and_reproducible():
    first = agreement_table(_random_instruments(), n_resamples=200, seed=3)
    pd.testing.assert_frame_equal(first, agreement_table(_random_instruments(), n_resamples=200, seed=3))
    assert first["n_used"].gt(0).all() and first["ci_low"].le(first["ci_high"]).all()


def test_a_resample_where_tau_is_undefined_is_counted_and_left_out():
    # "a" ties every target in session 1 and ranks them in session 2, "b" the other way round:
    # a resample that draws one session twice has a ranking of ties only
    a = _instrument("a", [[1, 0], [1, 1], [1, 2]], [[2, 2], [2, 2], [2, 2]])
    b = _instrument("b", [[0, 1], [1, 1], [2, 1]], [[2, 2], [2, 2], [2, 2]])
    row = agreement_table([a, b], n_resamples=400, seed=11).iloc[0]
    counts = Resampling.clusters(2).draw(np.random.default_rng(11), 400)
    assert row["n_undefined"] == int((counts == 0).any(axis=1).sum()) > 0
    assert row["n_used"] == 400 - row["n_undefined"] and row["tau"] == pytest.approx(1.0)
    assert row["note"] == f"{row['n_undefined']} of 400 resamples left out: τ is undefined in them"


def test_one_target_is_not_estimable_and_no_resample_is_drawn():
    table = agreement_table([_instrument("a", [[1, 2]], [[2, 2]]), _instrument("b", [[1, 1]], [[2, 2]])],
                            n_resamples=100, seed=1)
    row = table.iloc[0]
    assert np.isnan(row["tau"]) and (row["n_targets"], row["n_used"], row["n_undefined"]) == (1, 0, 0)
    assert row["note"] == "1 target with a score under both; a ranking needs two" and np.isnan(row["ci_low"])


def test_each_instrument_reads_its_section_frame():
    retention = pd.DataFrame({"target": ["t1", "t1", "t1", "t2", "t2"], "session": ["S1", "S1", "S2", "S1", "S2"],
                              "arm": ["checkpoint", "checkpoint", "checkpoint", "filler", "checkpoint"],
                              "checkpoint": [2, 2, 2, 2, 1], "retention": [0.2, np.nan, 0.8, 5.0, 5.0]})
    inst = retention_instrument(retention, ("t1", "t2"), ("S1", "S2"), checkpoint=2)
    assert inst.scores()[0] == pytest.approx(0.5) and np.isnan(inst.scores()[1])  # last checkpoint, prefix arm
    per_item = pd.DataFrame({"target": ["t1", "t1", "t2", "t2", "t1"], "session": ["S1"] * 4 + ["S2"],
                             "condition": ["long_context"] * 4 + ["retrieval"], "context": [True] * 5,
                             "main": [True, False, False, False, True], "correct": [True, False, True, False, True]})
    blind = recall_instrument(per_item, ("t1", "t2"), ("S1", "S2"))  # t2 has no main item: blind-kept for both
    assert blind.name == "recall (blind-kept)" and blind.scores().tolist() == [0.5, 0.5]
    main = recall_instrument(per_item.assign(main=[True, False, True, False, True]), ("t1", "t2"), ("S1", "S2"))
    assert main.name == "recall (main set)" and main.scores().tolist() == [1.0, 1.0]
    rows = [{"turn_id": f"{source}{target}{k}", "judge_model": "j", "source": source, "session": "S1", "step": k,
             "target": target, "axis": axis, "status": "deviated" if (target, k, axis) == ("t2", 0, "style") else "held"}
            for source, target in (("real", "recorded"), ("fork", "t1"), ("fork", "t2")) for k in (0, 1)
            for axis in ("role", "boundaries", "values", "style")]
    (held,) = axes_instruments(pd.DataFrame(rows), ("t1", "t2"), ("S1",), ("j",))
    assert held.name == "all four axes (j)" and held.scores().tolist() == [1.0, 0.5]  # forked turns only
