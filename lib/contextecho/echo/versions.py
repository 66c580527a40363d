"""Versions and content hashes of the instruments, and the instrument seed of their randomness.

Every versioned text set (probe suite, rubric, stressors, contracts, interventions,
filler vocabulary) has a hand-bumped ``version`` string and a ``hash``: the sha256 of
the canonical JSON of its texts. :func:`instrument_versions` returns both for every set;
each cell record stores them, so a result says exactly which texts produced it.

Cells never go stale when a text changes, independently of these hashes: every text a
model reads is part of the request's messages, hence of its request key.

Randomness: every filler, shuffle and choice takes ``engine.hashing.rng_for(arms.INSTRUMENT_SEED, key)``
(a generator seeded from the instrument seed and e.g. the cell's prefix coordinates); there is
no global seeding anywhere.
"""
from __future__ import annotations

from ..engine.hashing import content_hash


def instrument_versions() -> dict[str, str]:
    """``{<set>_version, <set>_hash}`` for every versioned text set, flat (one column each)."""
    from . import contracts, filler, interventions, probes, rubric, stressors

    out: dict[str, str] = {}
    for name, module in (("probes", probes), ("rubric", rubric), ("stressors", stressors),
                         ("contracts", contracts), ("interventions", interventions),
                         ("filler", filler)):
        out[f"{name}_version"] = module.VERSION
        out[f"{name}_hash"] = content_hash(module.texts())
    return out
