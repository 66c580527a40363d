import math

import numpy as np
import pandas as pd
import pytest

from contextecho.stats import (DegenerateDataError, StatsInputError, compliance_gap,
                               log_verbosity_ratios, verbosity_ratio)
from contextecho.stats.bootstrap import harness_clustered_bootstrap_mean, harness_clustered_bootstrap_ratio
from contextecho.stats.judge_free import StressorCell, harness_stressor_forest, weighted_median


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


# ---------------------------------------------------------------- the harness's stressor forest (fig_forest_stressors.py)
# By hand; bit-for-bit equality with the authors' outputs is checked by the run-level conformance.

def _cell(position, item, arm, compliant, length, target="t"):
    return StressorCell(target, "s", position, item, arm, compliant, length)


def test_harness_stressor_forest_reads_cells_as_the_stressor_plot_does():
    cells = [_cell("P0", f"S2_v0{i}", "real", i % 2 == 0, 10 * (i + 1)) for i in range(4)] + \
        [_cell("P0", f"S2_v0{i}", "filler", i != 1, 5 + i) for i in range(4)] + \
        [_cell("P3", f"S2_v0{i}", "real", i == 0, 40) for i in range(3)] + \
        [_cell("P3", f"S2_v0{i}", "filler", True, 8) for i in range(2)] + \
        [_cell("P5", "S2_v00", "real", True, 3)]  # no filler cell at P5: the position is left out
    forest = harness_stressor_forest(cells, ["P0", "P3", "P5"], n_boot=400, seed=42)
    assert list(forest["per_position"]) == ["P0", "P3"]
    assert forest["per_position"]["P0"] == {"claude_compliance_pct": 50.0, "filler_compliance_pct": 75.0,
                                            "claude_mean_len": 25.0, "filler_mean_len": 6.5,
                                            "n_claude": 4, "n_filler": 4}
    assert forest["cl_c"] == pytest.approx((50 + 100 / 3) / 2) and forest["fi_c"] == pytest.approx((75 + 100) / 2)
    assert forest["compliance_drop"] == forest["fi_c"] - forest["cl_c"]
    assert forest["cl_r"] == forest["length_inflation"] == pytest.approx((25 / 6.5 + 40 / 8) / 2)
    # compliance: the two-stage bootstrap of 100 per compliant reply, 0 otherwise, items in id order
    real = harness_clustered_bootstrap_mean({"P0": [100.0, 0.0, 100.0, 0.0], "P3": [100.0, 0.0, 0.0]},
                                            n_boot=400, seed=42)
    assert (forest["cl_c"], forest["cl_c_lo"], forest["cl_c_hi"]) == (real.mean, real.lo, real.hi)
    ratio = harness_clustered_bootstrap_ratio({"P0": [10, 20, 30, 40], "P3": [40, 40, 40]},
                                              {"P0": [5, 6, 7, 8], "P3": [8, 8]}, n_boot=400, seed=42)
    assert (forest["cl_r"], forest["cl_r_lo"], forest["cl_r_hi"]) == ratio
    # the cells' order does not matter: within a position they are read in item order
    assert harness_stressor_forest(cells[::-1], ["P0", "P3", "P5"], n_boot=400, seed=42) == forest
    none = harness_stressor_forest([], ["P0"])
    assert none["per_position"] == {} and all(math.isnan(none[k]) for k in ("fi_c", "cl_c_lo", "cl_r_hi"))


def test_harness_stressor_compliance_bounds_are_the_plots_rates_by_hand(percentile):
    """The plot's own statistic, 100·k/n per resampled position, laid out by hand for a few
    resamples, equals the forest's compliance interval exactly."""
    by_position = {"P0": [True, False, True], "P3": [False, False, True, True, True]}
    cells = [_cell(p, f"S2_v0{i}", arm, ok, 1) for p, oks in by_position.items() for i, ok in enumerate(oks)
             for arm in ("real", "filler")]
    rng = np.random.default_rng(42)
    boots = []
    for _ in range(5):
        rates = []
        for j in rng.integers(0, 2, size=2):
            oks = by_position[["P0", "P3"][j]]
            sample = [oks[k] for k in rng.integers(0, len(oks), size=len(oks))]
            rates.append(100.0 * sum(sample) / len(sample))
        boots.append(float(np.mean(rates)))
    forest = harness_stressor_forest(cells, ["P0", "P3"], n_boot=5, seed=42)
    assert forest["cl_c"] == float(np.mean([100.0 * 2 / 3, 100.0 * 3 / 5]))
    assert (forest["cl_c_lo"], forest["cl_c_hi"]) == (float(np.percentile(boots, 2.5)),
                                                      float(np.percentile(boots, 97.5)))
    assert forest["cl_c_lo"] == pytest.approx(percentile(boots, 2.5), abs=1e-12)
