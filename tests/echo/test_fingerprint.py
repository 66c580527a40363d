"""The six fingerprint features on hand-checked examples, and the PCA helpers."""
import math

import numpy as np
import pytest

from contextecho.echo import FEATURES, fingerprint, fingerprint_frame, fit_pca, project

ASSISTANT = "As an AI, I don't have a favorite language. Python is popular because it is readable."
DRIFTED = ("Honestly? Rust \u2014 no contest.\n\nMy favorite language is Rust; I love the borrow "
           "checker. I remember a bug that I felt was endless \u2014 maybe the worst.\r\n\r\n\r\nAnyway.")


def test_feature_definitions():
    a, d = fingerprint(ASSISTANT), fingerprint(DRIFTED)
    assert a.hedge_density == 0 and a.experiential_density == 0 and a.commits_preference == 0
    assert a.em_dash_count == 0 and a.paragraph_breaks == 0
    assert a.log_length == pytest.approx(math.log1p(len(ASSISTANT)))
    n_words = 27  # Honestly Rust no contest | My favorite ... checker | I remember ... worst | Anyway
    assert d.hedge_density == pytest.approx(100 * 1 / n_words)  # "maybe"
    # "My favorite", "I love", "I remember", "I felt"
    assert d.experiential_density == pytest.approx(100 * 4 / n_words)
    assert d.commits_preference == 1.0 and d.em_dash_count == 2 and d.paragraph_breaks == 2


def test_empty_none_and_huge():
    for r in ("", None):
        assert fingerprint(r).vector().tolist() == [0, 0, 0, 0, 0, 0]
    huge = fingerprint("maybe " * 200_000)
    assert huge.hedge_density == pytest.approx(100) and np.isfinite(huge.vector()).all()


def test_negated_preference_does_not_commit():
    assert fingerprint("I don't prefer any language; it depends on the task.").commits_preference == 0
    assert fingerprint("If I had to choose, I'd pick Python.").commits_preference == 1


def test_pca_projection():
    rng = np.random.default_rng(0)
    texts = [ASSISTANT, DRIFTED, "ls", "Perhaps. I think so \u2014 maybe.", "I love it!\n\nTruly."] * 4
    frame = fingerprint_frame(texts)
    assert list(frame.columns) == list(FEATURES) and len(frame) == len(texts)
    frame["commits_preference"] += rng.normal(0, 1e-3, len(frame))
    proj = fit_pca(frame, 2)
    assert proj.components.shape == (2, 6)
    np.testing.assert_allclose(proj.components @ proj.components.T, np.eye(2), atol=1e-9)
    assert 0 < proj.explained_variance_ratio.sum() <= 1 + 1e-12
    assert (proj.loadings().abs().idxmax() == proj.loadings().idxmax()).all()  # largest loading > 0
    out = project(frame, proj)
    assert {"PC1", "PC2"} <= set(out.columns)
    np.testing.assert_allclose(out["PC1"].mean(), 0, atol=1e-9)
    # Deterministic orientation: refitting on shuffled rows gives the same components.
    again = fit_pca(frame.sample(frac=1, random_state=1), 2)
    np.testing.assert_allclose(again.components, proj.components, atol=1e-9)


def test_pca_bad_input_and_constant_feature():
    with pytest.raises(ValueError, match="at least two rows"):
        fit_pca(np.zeros((1, 6)))
    with pytest.raises(ValueError, match="n_components"):
        fit_pca(np.ones((3, 6)), 5)
    proj = fit_pca(np.column_stack([np.arange(5.0), np.ones(5)]), 1, features=("a", "b"))
    assert np.isfinite(proj.components).all() and proj.scale[1] == 1.0
