"""The harness's pairings (:mod:`contextecho.stats.paired`'s ``harness_`` functions), by hand."""
from contextecho.stats.paired import harness_paired_cuts, harness_paired_differences


def test_harness_paired_differences_use_common_sorted_keys():
    a = {"p2": 1, "p1": 3, "only_a": 0}
    b = {"p1": 2, "p2": 3, "only_b": 1}
    assert harness_paired_differences(a, b) == [-1, 2]


def test_harness_paired_cuts_complete_case_and_itt_by_hand():
    a = {0: 0.5, 1: None, 2: 1.0, 4: 0.2}  # cut 3 never generated in a; 4 never in b
    b = {0: 0.25, 1: 0.4, 2: None, 3: 0.9}
    assert harness_paired_cuts(a, b) == ([0], [0.25])
    assert harness_paired_cuts(a, b, fill=0.0) == ([0, 1, 2], [0.25, -0.4, 1.0])
