"""Persona Retention: how much of the persona's displacement from generic remains.

For one questionnaire facet (trait) with items 1..m, let

- ``g`` be the answer vector of the same model as a generic assistant (no persona),
- ``i`` the answers with only the persona card (the *initial* answers),
- ``l`` the answers at a later checkpoint of a session (or on a filler prefix).

The persona's displacement is ``d = i - g``. Retention is the scalar projection of the
later displacement ``l - g`` on ``d``, normalised by ``d``'s length::

    R = ((l - g) · (i - g)) / ||i - g||²

so ``R = 1`` when the later answers sit where the initial ones did (fully retained),
``R = 0`` when they are back at generic (or moved only orthogonally to ``d``),
``R > 1`` when they moved further in the persona's direction (overshoot), and
``R < 0`` when they moved past generic, against the persona (reversed). Movement
orthogonal to ``d`` does not count: R is directional, a questionnaire statistic, never a
probability of being "in character". It is reported per facet, never pooled across
facets into one number here.

``R`` is undefined when ``i == g`` on a facet (the persona does not displace that facet):
that raises :class:`DegenerateFacet`, never returns NaN.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np


class DegenerateFacet(ValueError):
    """Retention is undefined: the initial answers equal the generic ones on this facet."""

    def __init__(self, facet: str):
        super().__init__(f"facet {facet!r}: initial answers equal generic answers, so the "
                         "persona displaces nothing and retention is undefined")
        self.facet = facet


class ShapeMismatch(ValueError):
    """The three answer vectors of a facet differ in length, or a facet is missing."""


@dataclass(frozen=True)
class FacetRetention:
    facet: str
    retention: float  # R as defined in the module doc
    n_items: int
    displacement: float  # ||initial - generic||, the size of the persona's effect


def _vector(values: Sequence[float], facet: str, name: str) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ShapeMismatch(f"facet {facet!r}: {name} answers must be a non-empty 1-d vector")
    if not np.all(np.isfinite(v)):
        raise ShapeMismatch(f"facet {facet!r}: {name} answers contain NaN or infinity")
    return v


def facet_retention(initial: Sequence[float], generic: Sequence[float], later: Sequence[float],
                    facet: str = "facet") -> FacetRetention:
    """R for one facet; item ``k`` of each vector is the same questionnaire item."""
    i, g, lat = (_vector(initial, facet, "initial"), _vector(generic, facet, "generic"),
                 _vector(later, facet, "later"))
    if not i.size == g.size == lat.size:
        raise ShapeMismatch(f"facet {facet!r}: initial/generic/later have {i.size}/{g.size}/"
                            f"{lat.size} items")
    d = i - g
    norm2 = float(d @ d)
    if norm2 == 0.0:
        raise DegenerateFacet(facet)
    return FacetRetention(facet, float((lat - g) @ d) / norm2, int(i.size), norm2 ** 0.5)


def retention(initial: Mapping[str, Sequence[float]], generic: Mapping[str, Sequence[float]],
              later: Mapping[str, Sequence[float]]) -> dict[str, FacetRetention]:
    """R per facet for answer vectors grouped by facet (same facets, same item order)."""
    if not set(initial) == set(generic) == set(later):
        raise ShapeMismatch(f"facets differ: initial {sorted(initial)}, generic {sorted(generic)}, "
                            f"later {sorted(later)}")
    return {f: facet_retention(initial[f], generic[f], later[f], f) for f in sorted(initial)}
