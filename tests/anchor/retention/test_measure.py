import math

import pytest

from contextecho.anchor.retention.measure import DegenerateFacet, ShapeMismatch, facet_retention, retention

GENERIC = [3.0, 3.0, 3.0, 3.0]
INITIAL = [5.0, 4.0, 1.0, 3.0]


def r(later):
    return facet_retention(INITIAL, GENERIC, later).retention


def test_fully_retained_is_one():
    assert r(INITIAL) == pytest.approx(1.0)


def test_reverted_to_generic_is_zero():
    assert r(GENERIC) == pytest.approx(0.0)


def test_halfway_is_half():
    assert r([4.0, 3.5, 2.0, 3.0]) == pytest.approx(0.5)


def test_overshoot_exceeds_one():
    assert r([6.0, 4.5, 0.0, 3.0]) > 1.0


def test_reversed_is_negative():
    assert r([1.0, 2.0, 5.0, 3.0]) < 0.0


def test_orthogonal_movement_does_not_count():
    # Moving only on an item the persona did not displace leaves R unchanged.
    assert r([5.0, 4.0, 1.0, 5.0]) == pytest.approx(1.0)


def test_degenerate_facet_raises_instead_of_nan():
    with pytest.raises(DegenerateFacet) as err:
        facet_retention(GENERIC, GENERIC, INITIAL, facet="openness")
    assert err.value.facet == "openness"


def test_per_facet_mapping_and_displacement():
    out = retention({"a": INITIAL, "b": [1.0]}, {"a": GENERIC, "b": [2.0]},
                    {"a": GENERIC, "b": [1.0]})
    assert list(out) == ["a", "b"]
    assert out["a"].retention == pytest.approx(0.0) and out["b"].retention == pytest.approx(1.0)
    assert out["a"].displacement == pytest.approx(math.sqrt(4 + 1 + 4)) and out["a"].n_items == 4


@pytest.mark.parametrize("later", [[1.0, 2.0], [float("nan")] * 4])
def test_bad_vectors_raise(later):
    with pytest.raises(ShapeMismatch):
        facet_retention(INITIAL, GENERIC, later)


def test_mismatched_facets_raise():
    with pytest.raises(ShapeMismatch):
        retention({"a": INITIAL}, {"a": GENERIC}, {"b": INITIAL})
