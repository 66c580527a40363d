"""The harness's consolidation: hand-computed cases, scipy and statsmodels.

Bit-for-bit equality with the authors' code is checked on their own outputs by the
conformance test (``tests/conformance/test_consolidate.py``).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from contextecho.stats import consolidation
from contextecho.stats.permutation import harness_sign_flip_p


def _results(scores):
    return {"results": [{"probe_id": k, "score": v} for k, v in scores.items()]}


def test_content_position_contrast_by_hand_and_against_scipy():
    base = {"I01": 3, "I02": 2, "I03": -1, "I04": 1, "O01": 3, "O02": 2, "O03": 3, "O04": "2"}
    cond = {"I01": 1, "I02": 2, "I03": 3, "O01": 0, "O02": 2.0, "O03": True, "O04": 2, "O05": 0}
    run = {"full_results": {"scratch": _results(base)}, "per_condition": {"recent3K": _results(cond)}}
    # valid in both: I01, I02, O01, O02, O03 (I03 is -1 in scratch, I04 has no pair,
    # O04's "2" is not a score, O05 no pair); condition - scratch in probe order
    deltas = [1 - 3, 2 - 2, 0 - 3, 2.0 - 2, True - 3]
    delta, p, n = consolidation.content_position_contrast(run, "recent3K")
    assert (delta, n) == (sum(deltas) / 5, 5)
    exact = stats.permutation_test((np.array(deltas, dtype=float), np.zeros(5)),
                                   lambda x, y: np.mean(x) - np.mean(y), permutation_type="samples",
                                   n_resamples=np.inf).pvalue
    assert p == pytest.approx(exact, abs=0.02)      # 10,000 sign flips against all 32
    assert (delta, p) == harness_sign_flip_p(deltas, n_resamples=10_000, seed=42)
    # no pairs: NaN; the run's own paired result is taken as stored
    assert all(math.isnan(v) for v in consolidation.content_position_contrast(run, "filler14K")[:2])
    stored = {**run, "paired_vs_scratch": {"recent3K": {"mean_diff_vs_scratch": -0.4, "p_raw": 0.01}}}
    assert consolidation.content_position_contrast(stored, "recent3K") == (-0.4, 0.01, 25)


def test_consolidate_contrasts_holm_within_and_across_the_panel():
    from statsmodels.stats.multitest import multipletests
    runs = [("A", {"full_results": {"scratch": _results({"x": 0, "y": 0, "z": 0, "w": 0}),
                                    "c1": _results({"x": 3, "y": 3, "z": 3, "w": 3}),
                                    "c2": _results({"x": 1, "y": 0, "z": 0, "w": 0})}}),
            ("B", None),
            ("C", {"per_condition": {"scratch": _results({"x": 2}), "c1": _results({"x": 1}),
                                     "c2": _results({})}})]
    table = consolidation.consolidate_contrasts(runs, ["c1", "c2"], n_resamples=2_000)
    rows = {(c.target, c.condition): c for c in table.contrasts}
    assert [(c.target, c.condition) for c in table.contrasts] == [
        ("A", "c1"), ("A", "c2"), ("B", "c1"), ("B", "c2"), ("C", "c1"), ("C", "c2")]
    assert rows["A", "c1"].delta == 3 and rows["A", "c2"].delta == 0.25 and rows["C", "c1"].n == 1
    assert rows["B", "c1"].note == consolidation.NO_RUN_NOTE and rows["B", "c1"].p_raw is None \
        and rows["B", "c1"].p_holm_panel is None and rows["B", "c1"].n == 0
    assert math.isnan(rows["C", "c2"].p_raw) and table.n_contrasts == 4
    # A/c1: only the two all-same-sign flips of 16 reach |3| (p -> 2/16); A/c2 and C/c1:
    # every flip ties the observed |mean|, so p = 1 exactly
    assert rows["A", "c1"].p_raw == pytest.approx(2 / 16, abs=0.03)
    assert rows["A", "c2"].p_raw == rows["C", "c1"].p_raw == 1.0
    finite = [rows["A", "c1"].p_raw, rows["A", "c2"].p_raw]
    _, within, _, _ = multipletests(finite, method="holm")
    assert [rows["A", "c1"].p_holm_within, rows["A", "c2"].p_holm_within] == pytest.approx(list(within))
    assert rows["A", "c1"].p_holm_panel == pytest.approx(min(1.0, 4 * rows["A", "c1"].p_raw))


# ---------------------------------------------------------------- the stressor forest (fig_forest_stressors.py)
