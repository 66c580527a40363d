"""Token counts for inserted text: a documented approximation.

``approx_tokens`` (pure, instant, model-free): one token per four characters, rounded up —
the usual rule of thumb for English BPE vocabularies; it does not count chat-template
overhead.
"""
from __future__ import annotations

import math


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)
