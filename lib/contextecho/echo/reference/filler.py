"""The reference filler arm: a fixed template repeated to the prefix's character count.

``make_filler(n)`` (harness ``experiments/e07_downstream_pilot/run_clean_control.py``):
repeat :data:`~.texts.FILLER_TEMPLATE` until at least ``n`` characters exist, then cut
to exactly ``n``; ``n <= 0`` gives ``""``. The runners use ``make_filler(len(prefix))``
when the prefix is non-empty and ``""`` otherwise (:func:`filler_for`). The filler is
matched in character count only: it carries no ``--- USER ---`` markers.
"""
from __future__ import annotations

from .texts import FILLER_TEMPLATE


def make_filler(n_chars: int) -> str:
    if n_chars <= 0:
        return ""
    copies = -(-n_chars // len(FILLER_TEMPLATE))  # ceiling division
    return (FILLER_TEMPLATE * copies)[:n_chars]


def filler_for(prefix: str) -> str:
    """The filler arm's prefix for a real prefix (empty stays empty)."""
    return make_filler(len(prefix)) if prefix else ""
