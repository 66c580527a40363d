"""The embedded model's sampler and its top log-probabilities, without the model: the draw
follows the softmax (checked by scipy's chi-square test), is repeatable for a seed, and the
top tokens are those of a stable sort of the whole vocabulary."""
import numpy as np
import pytest
from scipy.stats import chisquare

from contextecho.engine.local_model import LocalChatModel, log_softmax, top_tokens


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_a_draw_follows_the_softmax_at_its_temperature(temperature):
    logits = np.array([0.0, 1.0, 2.0, -1.0, 0.5], dtype=np.float32)
    rng = np.random.default_rng(7)
    n = 20_000
    counts = np.bincount([LocalChatModel._sample(logits, temperature, 1.0, 0, rng) for _ in range(n)], minlength=5)
    weights = np.exp(logits.astype(np.float64) / temperature)
    p = weights / weights.sum()
    assert chisquare(counts, n * p).pvalue > 1e-3
    # a seed gives the same draws; a token of no probability is never drawn
    again = [LocalChatModel._sample(logits, temperature, 1.0, 0, np.random.default_rng(3)) for _ in range(5)]
    assert again == [LocalChatModel._sample(logits, temperature, 1.0, 0, np.random.default_rng(3)) for _ in range(5)]
    masked = np.array([-np.inf, 1.0, -np.inf, 0.0, -np.inf])
    assert {LocalChatModel._sample(masked, temperature, 1.0, 0, rng) for _ in range(500)} <= {1, 3}


def test_top_k_and_top_p_restrict_the_draw_and_zero_is_the_argmax():
    logits = np.array([0.0, 3.0, 2.9, -1.0, 2.8], dtype=np.float32)
    rng = np.random.default_rng(0)
    assert LocalChatModel._sample(logits, 0.0, 1.0, 0, rng) == 1
    assert {LocalChatModel._sample(logits, 1.0, 1.0, 2, rng) for _ in range(300)} == {1, 2}
    assert {LocalChatModel._sample(logits, 1.0, 0.3, 0, rng) for _ in range(300)} == {1}


def test_top_tokens_are_a_stable_sort_of_the_vocabulary_ties_included():
    rng = np.random.default_rng(1)
    for trial in range(30):
        logits = (rng.normal(size=5_000) * 3).astype(np.float32)
        if trial % 3 == 0:
            logits[rng.integers(0, len(logits), 40)] = logits.max()  # ties at the top
        logp = log_softmax(logits)
        for k in (1, 7, 20, len(logits)):
            assert list(top_tokens(logp, k)) == list(np.argsort(-logp, kind="stable")[:k])
    assert len(top_tokens(logp, 0)) == 0
