"""The harness's anchor tables (:mod:`contextecho.experiments.anchor_designs`) on small frames
computed by hand, and the anchored reference cells."""
from __future__ import annotations

import math

import pandas as pd

from contextecho.echo.reference.anchor_runners import anchor_runner, decay_offsets, harness_arm
from contextecho.experiments import anchor_designs as ad
from contextecho.stats.bootstrap import harness_clustered_bootstrap_mean, harness_clustered_bootstrap_ratio
from contextecho.stats.judge_free import StressorCell, harness_stressor_forest

T = "claude-sonnet-4-6"


def row(position, arm, intervention, item, response, passed=True, score=math.nan):
    return {"target": T, "position": position, "arm": arm, "intervention": intervention, "item": item,
            "response": response, "passed": passed, "reference_score": score}


def test_variant_ratio_and_attenuation_by_hand():
    rows = [row("P0_start", "real", "none", f"S2#{i:02d}", "x" * 30) for i in range(1, 4)]
    rows += [row("P0_start", "filler", "none", f"S2#{i:02d}", "x" * 10) for i in range(1, 4)]
    rows += [row("P0_start", "real", "V1_BEHAVIORAL", f"S2#{i:02d}", "x" * 20) for i in range(1, 4)]
    rows += [row("P0_start", "real", "V0_BASELINE", f"S2#{i:02d}", "x" * n) for i, n in ((1, 5), (2, 0))]
    got = ad.variant_results(pd.DataFrame(rows))
    (only,) = got["results"]["V1_BEHAVIORAL"]
    # ratio without 30/10 = 3, with 20/10 = 2: (3 - 2) / (3 - 1) = 50 %
    assert (only["ratio_no_anchor"], only["ratio_with_anchor"], only["attenuation_pct"]) == (3.0, 2.0, 50.0)
    assert got["results"]["V0_BASELINE"] == []  # one length > 0: fewer than three
    assert any("no data (1)" in line for line in got["printout"])
    assert ad.trajectory_results(pd.DataFrame(rows)) == []  # no V2 cells


def test_size_means_keep_minus_one_and_decay_sorts_offsets():
    rows = [row("P5_pre_C6", "real", "A_SMALL", "C01", "a", score=3), row("P5_pre_C6", "real", "A_SMALL", "C02", "b",
                                                                         score=-1),
            row("P5_pre_C6", "real", "A_SMALL", "C03", None)]
    means, read = ad.size_means(pd.DataFrame(rows), "reference_score", targets=(T, "other"))
    assert means["small"][0] == 1.0 and math.isnan(means["small"][1]) and math.isnan(means["large"][0])
    assert read == [{"size": "small", "target": T, "scores": [3, -1]}]
    rows = [row("P5_pre_C6", "real", f"A_COMBINED+{n}", "C01", "a", score=s) for n, s in ((10, 1), (2, 3), (0, 2))]
    curve = ad.decay_curve(pd.DataFrame(rows), "reference_score", target=T)
    assert curve == {"offsets": [0, 2, 10], "means": [2.0, 3.0, 1.0], "individual": [[0, 2], [2, 3], [10, 1]]}
    assert ad.decay_printout(curve, "R")[-1] == "Mean per offset: {0: 2.0, 2: 3.0, 10: 1.0}"
    beside = rows + [row("P5_pre_C6", "real", "A_SMALL", "C01", "a", score=0)]  # another anchor's cell in the frame
    assert ad.decay_curve(pd.DataFrame(beside), "reference_score", target=T) == curve


def test_the_forests_anchor_arm_is_the_harness_resampling():
    cells = [StressorCell(T, "", p, f"S2#{i:02d}", arm, (i + len(p)) % 3 != 0, 10 + i * (arm == "real"))
             for p in ("P0_start", "P5_pre_C6") for i in range(1, 6) for arm in ("real", "filler")]
    anchored = [StressorCell(T, "", "P5_pre_C6", f"S2#{i:02d}", "real", i % 2 == 0, 5 + i) for i in range(1, 6)]
    got = harness_stressor_forest(cells, ["P0_start", "P3_post_C3", "P5_pre_C6"], anchored=anchored, n_boot=200)
    a = harness_clustered_bootstrap_mean({"P5_pre_C6": [100.0 if c.compliant else 0.0 for c in anchored]}, n_boot=200)
    ratio = harness_clustered_bootstrap_ratio({"P5_pre_C6": [c.length for c in anchored]},
                                              {p: [c.length for c in cells if c.position == p and c.arm == "filler"]
                                               for p in ("P0_start", "P5_pre_C6")}, n_boot=200)
    assert (got["a_c"], got["a_c_lo"], got["a_c_hi"]) == (a.mean, a.lo, a.hi)
    assert (got["a_r"], got["a_r_lo"], got["a_r_hi"]) == ratio
    assert (got["n_pos_cl"], got["n_pos_a"], got["compliance_recovery"]) == (2, 1, a.mean - got["cl_c"])
    assert "a_c" not in harness_stressor_forest(cells, ["P0_start"], n_boot=10)


def test_runner_table():
    assert anchor_runner("experiments/e04_path_y/run_anchor_variants.py").anchors({})[3] == "V3_SYSTEM_INJECT"
    decay = anchor_runner("experiments/e04_path_y/run_anchor_decay.py")
    assert decay.anchors({"N_OFFSETS": None}) == tuple(f"A_COMBINED+{n}" for n in (0, 1, 5, 10, 20))
    assert decay_offsets({"N_OFFSETS": "2, 3"}) == (2, 3)
    assert [harness_arm(a) for a in ("A_COMBINED+5", "A_LARGE", "PLACEMENT_V3", "A_COMBINED_E15", "V0_BASELINE")] == \
        ["N05", "large", "V3_SYSTEM_INJECT", "A_COMBINED", "V0_BASELINE"]
    assert anchor_runner("experiments/e15_probes_at_crosscompaction/run.py") is None
