"""The name registry: sorted names by default, the order added where that order is a grid's."""
import pytest

from contextecho.engine.registry import Registry, UnknownNameError


def test_names_are_sorted_unless_the_order_added_is_kept():
    plain, ordered = Registry("arm"), Registry("recall family", keep_order=True)
    for name in ("real", "filler", "scratch"):
        plain.add(name, name.upper())
        ordered.add(name, name.upper())
    assert plain.names() == list(plain) == ["filler", "real", "scratch"]
    assert ordered.names() == list(ordered) == ["real", "filler", "scratch"]
    assert ordered.get("filler") == "FILLER" and "real" in ordered and len(ordered) == 3


def test_an_unknown_name_lists_the_valid_ones_and_a_name_is_added_once():
    registry = Registry("recall family", keep_order=True)
    registry.add("last_edit", 1)
    with pytest.raises(UnknownNameError, match="unknown recall family 'x'; valid recall families: last_edit"):
        registry.get("x")
    with pytest.raises(ValueError, match="already registered"):
        registry.add("last_edit", 2)

