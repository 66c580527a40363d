"""Lorem-ipsum filler matched to a real prefix in character count and turn structure.

The within-cell control of the seed (§2.2): the real session prefix is replaced by
semantically uninformative filler "matched to c in character count and turn
structure". :func:`filler_like` mirrors the real prefix's unmerged turn skeleton
(``Prefix.turns``) exactly: same roles, same number of turns, the same per-turn
character counts, grouped into the same messages with the same joiner — so message
lengths and the total ``n_chars`` match exactly, not just within 1%. Tool-call and
tool-result turns become plain lorem text like every other turn (neutral filler: no
``[tool_call]`` markers, no JSON), while the skeleton keeps their kinds.

Text: sentences of 6–14 words drawn from the classic lorem-ipsum vocabulary
(:data:`WORDS`), first word capitalised, ending with a full stop, cut to the exact
length (a cut that ends on a space ends on ``.`` instead). Randomness comes only from
the ``numpy.random.Generator`` passed in (seeded from the cell's prefix coordinates).
"""
from __future__ import annotations

import numpy as np

from ..sessions.render import JOINER, Prefix, PrefixTurn

VERSION = "filler-1.0"

WORDS = tuple("""lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor
incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation
ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit
voluptate velit esse cillum eu fugiat nulla pariatur excepteur sint occaecat cupidatat non
proident sunt culpa qui officia deserunt mollit anim id est laborum""".split())


def lorem(n_chars: int, rng: np.random.Generator) -> str:
    """Exactly ``n_chars`` characters of lorem-ipsum sentences (``""`` for 0)."""
    if n_chars < 0:
        raise ValueError(f"n_chars must be >= 0, got {n_chars}")
    parts: list[str] = []
    size = 0
    while size < n_chars + 1:
        n_words = int(rng.integers(6, 15))
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), n_words)]
        sentence = " ".join(words).capitalize() + ". "
        parts.append(sentence)
        size += len(sentence)
    text = "".join(parts)[:n_chars]
    if text.endswith(" "):
        text = text[:-1] + "."
    return text


def filler_like(prefix: Prefix, rng: np.random.Generator) -> tuple[tuple[dict, ...], tuple[PrefixTurn, ...]]:
    """Messages and turns of a filler prefix with ``prefix``'s skeleton.

    Raises ``ValueError`` for a prefix with no session content (nothing to match).
    """
    if not prefix.turns or prefix.n_chars <= 0:
        raise ValueError(
            f"cannot build a filler for a prefix of zero length (session {prefix.session_id!r} "
            f"at step {prefix.step}): there is no real content to match")
    texts = [lorem(t.n_chars, rng) for t in prefix.turns]
    n_messages = max(t.message for t in prefix.turns) + 1
    grouped: list[list[str]] = [[] for _ in range(n_messages)]
    roles: list[str] = [""] * n_messages
    for turn, text in zip(prefix.turns, texts):
        grouped[turn.message].append(text)
        roles[turn.message] = turn.role
    body = tuple({"role": role, "content": JOINER.join(g)} for role, g in zip(roles, grouped))
    head = prefix.messages[:1] if prefix.preamble is not None else ()
    return head + body, prefix.turns


def texts() -> dict:
    """The filler's inputs: the vocabulary and the algorithm version (hashed into cells)."""
    return {"version": VERSION, "words": list(WORDS), "joiner": JOINER}

