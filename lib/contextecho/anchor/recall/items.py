"""A four-option trajectory-recall item, its prompt, and its seeded randomness.

Every random choice about an item (which events it asks about, the option order) takes
a ``numpy.random.Generator`` derived from (session id, item id, purpose), so the same
session always yields the same items with the same option order, on any machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from contextecho.engine.hashing import digest

N_OPTIONS = 4
LETTERS = "ABCD"
ANSWER_INSTRUCTION = "Answer with the letter of the correct option (A, B, C or D) only."


@dataclass(frozen=True)
class RecallItem:
    """One counterfactual question: every option happened in the same session."""

    id: str  # unique within the session, e.g. "temporal_order/2"
    session_id: str
    family: str
    question: str
    options: tuple[str, ...]  # exactly four, distinct
    answer: int  # index of the correct option
    option_steps: tuple[int, ...]  # agent step each option comes from (aligned with options)
    source_steps: tuple[int, ...]  # the step(s) that make the correct option correct
    decision_step: int  # the question is asked at this step; later records are unseen

    def __post_init__(self) -> None:
        if len(self.options) != N_OPTIONS or len(set(self.options)) != N_OPTIONS:
            raise ValueError(f"item {self.id}: needs {N_OPTIONS} distinct options, got {self.options}")
        if not 0 <= self.answer < N_OPTIONS or len(self.option_steps) != N_OPTIONS:
            raise ValueError(f"item {self.id}: answer or option steps out of shape")
        if max(self.option_steps + self.source_steps) > self.decision_step:
            raise ValueError(f"item {self.id}: a source lies after the decision step")

    @property
    def letter(self) -> str:
        return LETTERS[self.answer]


def item_rng(session_id: str, item_id: str, purpose: str = "shuffle") -> np.random.Generator:
    """The generator for one purpose of one item; independent of every other item."""
    # Seeded from the first 16 bytes of the key's digest, not through hashing.rng_for: the
    # items (and so every recall request key) stay those of the runs already in the cache.
    return np.random.default_rng(int.from_bytes(digest([session_id, item_id, purpose])[:16], "big"))


def make_item(*, session_id: str, item_id: str, family: str, question: str, correct: str,
              distractors: Sequence[str], correct_step: int, distractor_steps: Sequence[int],
              source_steps: Sequence[int], decision_step: int) -> RecallItem:
    """Shuffle the correct option among three distractors with the item's own generator."""
    options = [correct, *distractors]
    steps = [correct_step, *distractor_steps]
    order = item_rng(session_id, item_id).permutation(len(options))
    return RecallItem(id=item_id, session_id=session_id, family=family, question=question,
                      options=tuple(options[k] for k in order), answer=int(np.argmin(order)),
                      option_steps=tuple(int(steps[k]) for k in order),
                      source_steps=tuple(int(s) for s in source_steps),
                      decision_step=int(decision_step))


def prompt_text(item: RecallItem) -> str:
    """The question as asked: stem, lettered options, answer instruction."""
    lines = [item.question, ""]
    lines += [f"{LETTERS[k]}. {option}" for k, option in enumerate(item.options)]
    return "\n".join(lines + ["", ANSWER_INSTRUCTION])
