"""Versions and content hashes of the instruments, and the seeded randomness they use.

Every versioned text set (probe suite, rubric, stressors, contracts, interventions,
filler vocabulary) has a hand-bumped ``version`` string and a ``hash``: the sha256 of
the canonical JSON of its texts. :func:`instrument_versions` returns both for every set;
each cell record stores them, so a result says exactly which texts produced it.

Cells never go stale when a text changes, independently of these hashes: every text a
model reads is part of the request's messages, hence of its cell key.

Randomness: :func:`rng_for` gives a ``numpy.random.Generator`` seeded from a base seed
and a key (e.g. the cell's prefix coordinates); there is no global seeding anywhere.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..model_request import canonical_json

BASE_SEED = 20260501  # the default base seed of every filler, shuffle and choice


def content_hash(value: Any) -> str:
    """sha256 (hex) of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def rng_for(base_seed: int, *key: Any) -> np.random.Generator:
    """A generator derived from ``base_seed`` and ``key`` (any JSON-able parts)."""
    digest = hashlib.sha256(canonical_json([base_seed, list(key)]).encode("utf-8")).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 32, 4)]
    return np.random.default_rng(np.random.SeedSequence(words))


def seed_for(base_seed: int, *key: Any) -> int:
    """A 63-bit integer seed derived like :func:`rng_for` (for records and sampling params)."""
    return int(rng_for(base_seed, *key).integers(0, 2**63 - 1))


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
