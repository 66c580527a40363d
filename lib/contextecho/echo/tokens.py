"""Token counts for inserted text: a documented approximation, or the embedded tokenizer.

``approx_tokens`` is the default everywhere (pure, instant, model-free): one token per
four characters, rounded up — the usual rule of thumb for English BPE vocabularies; it
does not count chat-template overhead. ``embedded_tokens`` counts with the embedded
SmolLM2 tokenizer (loads the 135M model once, ~1 s), for when a real count is wanted.
"""
from __future__ import annotations

import math


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def embedded_tokens(text: str) -> int:
    from ..engine.local_model import shared_model

    return len(shared_model()._tokens(text))
