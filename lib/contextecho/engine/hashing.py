"""Content hashes and derived randomness: the one place that turns a value into a digest.

* :func:`canonical_json` — JSON with sorted keys and no whitespace: the same value always
  gives the same text (a request's key, an instrument's hash, a derived seed).
* :func:`digest` / :func:`content_hash` — the sha256 of that text, as bytes / hex.
* :func:`rng_for` / :func:`seed_for` — a ``numpy.random.Generator`` (or a 63-bit integer
  seed) derived from a seed and a key of JSON-able parts; there is no global seeding
  anywhere.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

import numpy as np


def canonical_json(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """JSON with sorted keys and no whitespace: the same value always gives the same text.
    ``default`` turns values JSON cannot encode into ones it can (as ``json.dumps``)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False, default=default)


def digest(value: Any, *, default: Callable[[Any], Any] | None = None) -> bytes:
    """sha256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value, default=default).encode("utf-8")).digest()


def content_hash(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """sha256 (hex) of the canonical JSON of ``value``."""
    return digest(value, default=default).hex()


def rng_for(seed: int, *key: Any) -> np.random.Generator:
    """A generator derived from ``seed`` and ``key`` (any JSON-able parts)."""
    words = digest([seed, list(key)])
    return np.random.default_rng(np.random.SeedSequence(
        [int.from_bytes(words[i:i + 4], "little") for i in range(0, 32, 4)]))


def seed_for(seed: int, *key: Any) -> int:
    """A 63-bit integer seed derived like :func:`rng_for` (for records and sampling params)."""
    return int(rng_for(seed, *key).integers(0, 2**63 - 1))
