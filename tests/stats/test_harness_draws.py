"""The harness's clustered draws read in bulk are its draws, call for call: checked against the
harness's own loop (written out here as its plotting scripts run it) and against numpy's
``Generator.integers``, rejected words included."""
from __future__ import annotations

import numpy as np
import pytest

from contextecho.stats import bootstrap, harness_draws
from contextecho.stats.harness_draws import WORDS, bounded, clustered_draws


def harness_loop(lengths, n_boot, seed):
    """The harness's draws as its loop makes them: per resample the positions, then per drawn
    position the index draws of each of its arrays."""
    rng = np.random.default_rng(seed)
    n_pos = len(lengths)
    drawn = []
    for _ in range(n_boot):
        row = []
        for j in rng.integers(0, n_pos, size=n_pos).tolist():
            row.append((j, [rng.integers(0, n, size=n) for n in lengths[j]]))
        drawn.append(row)
    return drawn


def as_loop(draws, n_boot, n_pos):
    """clustered_draws' answer in the loop's shape."""
    rows = [[None] * n_pos for _ in range(n_boot)]
    for j, position in enumerate(draws):
        for i, (b, k) in enumerate(zip(position.rows.tolist(), position.slots.tolist())):
            rows[b][k] = (j, [indices[i] for indices in position.indices])
    return rows


@pytest.mark.parametrize("case", range(60))
def test_the_draws_are_the_harness_loops(case):
    g = np.random.default_rng(case)
    n_pos = int(g.integers(1, 9))
    lengths = [[int(n) for n in g.integers(1, 30, size=int(g.integers(1, 3)))] for _ in range(n_pos)]
    if case % 5 == 0:
        lengths[0] = [1] * len(lengths[0])  # a range of one draws no word
    n_boot, seed = int(g.choice([1, 3, 50, 400])), int(g.integers(0, 1 << 31))
    want = harness_loop(lengths, n_boot, seed)
    got = as_loop(clustered_draws(lengths, n_boot, seed), n_boot, n_pos)
    for b in range(n_boot):
        for (j, idx), (j2, idx2) in zip(want[b], got[b]):
            assert j == j2 and all(np.array_equal(x, y) for x, y in zip(idx, idx2)), (b, j)


@pytest.mark.parametrize("n", [2, 3, 7, 1000, 3 * 2**30, 2**31 + 1])
def test_lemire_with_rejections_is_numpys_integers(n):
    """Word by word as numpy takes them: a rejected word (common for these large ranges) is
    skipped and the next word taken."""
    words = np.random.default_rng(11).integers(0, WORDS, size=4000, dtype=np.uint32)
    emulated, at, rejections = [], 0, 0
    while len(emulated) < 1000:
        value, rejected = bounded(words[at:at + 1], n)
        at += 1
        if rejected:
            rejections += 1
            continue
        emulated.append(int(value[0]))
    assert emulated == np.random.default_rng(11).integers(0, n, size=1000).tolist()
    assert (rejections > 0) == (n > 2**31)  # a quarter and half of the words rejected


def test_no_draws_where_the_harness_loop_decides():
    assert clustered_draws([], 10, 1) is None
    assert clustered_draws([[3]], 0, 1) is None
    assert clustered_draws([[3], [0]], 10, 1) is None  # an empty array: the loop raises as the harness does


def test_a_rejected_word_leaves_the_interval_to_the_harness_loop(monkeypatch):
    data = {"A": [0, 1, 3, 2], "B": [3, 3, 2], "C": [1, 0, 0, 2, 2]}
    filler = {"A": [2, 2, 5], "B": [1], "C": [4, 0]}
    bulk = (bootstrap.harness_clustered_bootstrap_mean(data, n_boot=300, seed=5),
            bootstrap.harness_clustered_bootstrap_ratio(data, filler, n_boot=300, seed=5))
    monkeypatch.setattr(harness_draws, "bounded", lambda words, n: (np.zeros(len(words), np.int64), True))
    loop = (bootstrap.harness_clustered_bootstrap_mean(data, n_boot=300, seed=5),
            bootstrap.harness_clustered_bootstrap_ratio(data, filler, n_boot=300, seed=5))
    assert bulk == loop
