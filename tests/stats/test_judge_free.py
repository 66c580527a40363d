import numpy as np
import pandas as pd
import pytest

from contextecho.stats import (DegenerateDataError, StatsInputError, compliance_gap,
                               log_verbosity_ratios, verbosity_ratio)
from contextecho.stats.judge_free import weighted_median


def compliance_cells():
    # 2 sessions x 2 positions x 5 replicates; filler complies 5/5 and 4/5, real 3/5 and 1/5
    rows = []
    for s in ("a", "b"):
        for p, (f_ok, r_ok) in enumerate([(5, 3), (4, 1)]):
            for k in range(5):
                rows.append(dict(session=s, position=p, replicate=k, arm="filler",
                                 compliant=k < f_ok))
                rows.append(dict(session=s, position=p, replicate=k, arm="real",
                                 compliant=k < r_ok))
    return pd.DataFrame(rows)


def test_compliance_gap_in_percentage_points():
    r = compliance_gap(compliance_cells(), cluster="session", n_resamples=500)
    # per unit gaps: 40 pp and 60 pp -> 50 pp
    assert r.estimate == pytest.approx(50.0) and r.units == "pp"
    assert r.filler_mean == pytest.approx(90.0) and r.real_mean == pytest.approx(40.0)
    assert r.degenerate  # both sessions identical: every resample gives 50


def test_compliance_values_must_be_binary():
    with pytest.raises(StatsInputError):
        compliance_gap(compliance_cells().assign(compliant=0.5))


def verbosity_cells():
    rows = []
    lengths = {("a", 0): (10, 20), ("a", 1): (10, 40), ("b", 0): (20, 20), ("b", 1): (10, 80)}
    for (s, p), (f, r) in lengths.items():
        rows.append(dict(session=s, position=p, probe="S2", replicate=0, arm="filler", length=f))
        rows.append(dict(session=s, position=p, probe="S2", replicate=0, arm="real", length=r))
    return pd.DataFrame(rows)


def test_verbosity_hand_computed():
    cells = verbosity_cells()
    ratios = log_verbosity_ratios(cells)
    assert np.allclose(np.exp(ratios.log_ratio), [2, 4, 1, 8])
    med = verbosity_ratio(cells, cluster="session", n_resamples=500)
    assert med.estimate == pytest.approx(3.0)          # median of 1, 2, 4, 8
    geo = verbosity_ratio(cells, summary="geometric", cluster=None, n_resamples=500)
    assert geo.estimate == pytest.approx(64 ** 0.25)   # (2*4*1*8)^(1/4)
    assert geo.cluster == "pair" and geo.n_clusters == 4


def test_verbosity_unpaired_and_zero_lengths():
    cells = verbosity_cells()
    cells.loc[0, "length"] = np.nan
    r = verbosity_ratio(cells, cluster=None, n_resamples=500)
    assert r.n == 3 and r.n_unpaired == 1
    cells.loc[2, "length"] = 0
    with pytest.raises(DegenerateDataError):
        verbosity_ratio(cells, cluster=None)


def test_weighted_median_equals_median_of_expanded_sample():
    rng = np.random.default_rng(0)
    values = np.sort(rng.normal(size=9))
    weights = rng.integers(0, 4, size=(200, 9)).astype(float)
    weights[:, 0] += 1                                  # never an empty resample
    got = weighted_median(values, weights)
    want = [np.median(np.repeat(values, w.astype(int))) for w in weights]
    assert np.allclose(got, want, atol=1e-12)


def test_clustered_median_interval_is_sane():
    rng = np.random.default_rng(1)
    rows = []
    for s in range(6):
        shift = rng.normal(0, 0.3)
        for p in range(4):
            for k in range(10):
                f = rng.lognormal(4, 0.3)
                key = dict(session=s, position=p, probe="S2", replicate=k)
                rows += [dict(key, arm="filler", length=f),
                         dict(key, arm="real", length=f * np.exp(1.5 + shift + rng.normal(0, 0.5)))]
    cells = pd.DataFrame(rows)
    for cluster in ("session", ("session", "position"), None):
        r = verbosity_ratio(cells, cluster=cluster, n_resamples=2000, ci_method="bca")
        assert r.ci_low < r.estimate < r.ci_high
        assert 2.5 < r.estimate < 7
