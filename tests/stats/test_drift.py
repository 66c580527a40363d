import numpy as np
import pandas as pd
import pytest
from scipy import stats

from contextecho.stats import (EmptyArmError, InvalidScoreError, MissingColumnError,
                               StatsInputError, TooFewClustersError, drift_gap,
                               drift_gap_table)


def tiny() -> pd.DataFrame:
    # position 0: filler 3,3 real 1,2 -> d=1.5 ; position 1: filler 2 real 2,2,2 -> d=0
    rows = [(0, "filler", 3), (0, "filler", 3), (0, "real", 1), (0, "real", 2),
            (1, "filler", 2), (1, "real", 2), (1, "real", 2), (1, "real", 2)]
    return pd.DataFrame([dict(session="s", position=p, arm=a, score=float(v)) for p, a, v in rows])


def test_hand_computed_gap_weights_positions_equally():
    r = drift_gap(tiny(), n_resamples=2000)
    assert r.estimate == pytest.approx(0.75)          # (1.5 + 0) / 2, not the cell mean
    assert r.filler_mean == pytest.approx(2.5) and r.real_mean == pytest.approx(1.75)
    assert (r.n, r.n_units, r.n_clusters, r.cluster) == (8, 2, 2, "position")
    # two positions: replicates are 1.5, 0.75, 0 -> percentile CI is [0, 1.5]
    assert (r.ci_low, r.ci_high) == (0.0, 1.5)


def test_position_clustered_replicate_is_mean_over_resampled_positions(cells):
    one = cells[cells.session == "s0"]
    r = drift_gap(one, n_resamples=10_000, seed=3)
    per_pos = one.groupby(["position", "arm"]).score.mean().unstack()
    d = (per_pos["filler"] - per_pos["real"]).to_numpy()
    assert r.estimate == pytest.approx(d.mean(), abs=1e-12)
    ref = stats.bootstrap((d,), lambda x, axis: x.mean(axis=axis), method="percentile",
                          n_resamples=10_000, rng=np.random.default_rng(3))
    # identical stream: same positions drawn, so the same interval
    assert r.ci_low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert r.ci_high == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_position_clustered_bca_matches_scipy(make_cells):
    # 30 positions: replicate ties with the estimate (which scipy's sums reproduce only
    # up to rounding, shifting its z0) are negligible, so the intervals agree exactly.
    one = make_cells(n_sessions=1, n_positions=30, n_probes=3, seed=8)
    per_pos = one.groupby(["position", "arm"]).score.mean().unstack()
    d = (per_pos["filler"] - per_pos["real"]).to_numpy()
    bca = drift_gap(one, n_resamples=5000, seed=3, ci_method="bca")
    ref = stats.bootstrap((d,), lambda x, axis: x.mean(axis=axis), method="BCa",
                          n_resamples=5000, rng=np.random.default_rng(3))
    assert bca.ci_low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert bca.ci_high == pytest.approx(ref.confidence_interval.high, abs=1e-12)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_cell_bootstrap_at_one_position_matches_scipy_two_sample(method, make_cells):
    one = make_cells(n_sessions=1, n_positions=1, n_probes=40, seed=5)
    f = one.loc[one.arm == "filler", "score"].to_numpy()
    g = one.loc[one.arm == "real", "score"].to_numpy()
    r = drift_gap(one, cluster=None, n_resamples=20_000, ci_method=method, seed=1)
    ref = stats.bootstrap((f, g), lambda a, b, axis: a.mean(axis) - b.mean(axis),
                          method=method, n_resamples=20_000, rng=np.random.default_rng(2))
    assert r.estimate == pytest.approx(f.mean() - g.mean(), abs=1e-12)
    assert r.cluster == "cell" and r.n_clusters == 80
    # SE ~0.11; MC error of the quantiles with 20k resamples is ~0.003
    assert r.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.015)
    assert r.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.015)
    assert r.standard_error == pytest.approx(ref.standard_error, rel=0.03)


def test_session_and_two_level_clustering(cells):
    by_session = drift_gap(cells, cluster="session", n_resamples=2000)
    two = drift_gap(cells, cluster=("session", "position"), n_resamples=2000)
    assert by_session.n_clusters == 3 and two.n_clusters == 3
    assert two.cluster == "session>position" and by_session.cluster == "session"
    assert by_session.estimate == pytest.approx(two.estimate)
    assert two.ci_low < two.estimate < two.ci_high


def test_default_settings_follow_the_paper(cells):
    r = drift_gap(cells)
    assert (r.n_resamples, r.confidence, r.seed, r.cluster) == (10_000, 0.95, 42, "position")


def test_invalid_verdicts_drop_zero_raise():
    frame = tiny()
    frame.loc[0, "score"] = np.nan                   # one filler cell at position 0
    dropped = drift_gap(frame, n_resamples=500)
    assert dropped.n_invalid == 1 and dropped.n == 7
    assert dropped.estimate == pytest.approx(0.75)    # filler mean at p0 stays 3
    zero = drift_gap(frame, n_resamples=500, invalid="zero")
    assert zero.estimate == pytest.approx(((1.5 - 1.5) + 0) / 2)
    with pytest.raises(InvalidScoreError):
        drift_gap(frame, invalid="raise")


def test_empty_arm_and_unit_missing_an_arm():
    frame = tiny()
    with pytest.raises(EmptyArmError, match="real"):
        drift_gap(frame[frame.arm == "filler"])
    frame.loc[(frame.position == 1) & (frame.arm == "filler"), "score"] = np.nan
    with pytest.raises(EmptyArmError) as lacking:
        drift_gap(frame)
    # the unit named as a reader reads it (the reason is printed in the manuscript), not as a dict
    assert str(lacking.value).startswith("1 unit lacks valid cells in one arm: ") and "{" not in str(lacking.value)
    assert "position 1" in str(lacking.value)


def test_one_cluster_is_an_error(cells):
    with pytest.raises(TooFewClustersError):
        drift_gap(cells[cells.position == 0], cluster="position")
    with pytest.raises(TooFewClustersError):  # cell bootstrap needs 2 cells per stratum
        drift_gap(tiny(), cluster=None)


def test_all_equal_scores_give_documented_zero_gap(cells):
    flat = cells.assign(score=2.0)
    r = drift_gap(flat, cluster="position")
    assert r.estimate == 0.0 and r.degenerate and (r.ci_low, r.ci_high) == (0.0, 0.0)


def test_bad_columns_and_cluster_outside_unit(cells):
    with pytest.raises(MissingColumnError):
        drift_gap(cells.drop(columns="arm"))
    with pytest.raises(StatsInputError):
        drift_gap(cells, cluster="probe")


def test_other_arms_are_ignored_and_labels_are_parameters(cells):
    renamed = cells.replace({"arm": {"real": "claude"}})
    extra = pd.concat([renamed, renamed.assign(arm="scratch", score=99.0)])
    a = drift_gap(extra, real_arm="claude", n_resamples=500)
    b = drift_gap(cells, n_resamples=500)
    assert a.estimate == pytest.approx(b.estimate) and a.ci_low == pytest.approx(b.ci_low)


def test_tables_per_position_and_category(cells):
    per_position = drift_gap_table(cells, by="position", cluster=None, n_resamples=500)
    assert list(per_position.position) == list(range(6))
    assert {"estimate", "ci_low", "ci_high", "n_units"} <= set(per_position.columns)
    per_category = drift_gap_table(cells, by="category", cluster="position", n_resamples=500)
    assert set(per_category.category) == {"coding-self", "identity"}
    # position-averaged gap == mean of the per-position gaps over all sessions' units
    whole = drift_gap(cells, n_resamples=500)
    units = cells.groupby(["session", "position", "arm"]).score.mean().unstack()
    assert whole.estimate == pytest.approx((units.filler - units.real).mean())
    with pytest.raises(TooFewClustersError, match="position"):
        drift_gap_table(cells, by="position", n_resamples=500)


def test_record_to_dict_is_flat_and_plain(cells):
    d = drift_gap(cells, n_resamples=500).to_dict()
    assert d["units"] == "score" and isinstance(d["estimate"], float)
    assert all(not hasattr(v, "dtype") for v in d.values())
