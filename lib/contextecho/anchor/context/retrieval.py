"""Retrieval of the earlier turns most relevant to a question: TF-IDF cosine, no model.

A *turn* is one chat message as the renderer would send it: consecutive rendered entries
of one role (an assistant's text and tool calls; the tool results that answer them),
with the entry range it came from. Its text is cut to ``turn_chars`` (head kept) before
scoring, so what is scored is what would be shown.

Relevance is the cosine between TF-IDF vectors (scikit-learn; words,
sublinear term frequency, English stop words) of the query and each candidate turn,
fitted on the candidates and the query only. The ``k`` best turns with a positive score
are kept and returned in their original order; ties go to the earlier turn, and scores
are rounded before ranking so the last bits of a float never decide.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from contextecho.sessions.model import Session
from contextecho.sessions.render import JOINER, entry_turns

SCORE_DECIMALS = 9


@dataclass(frozen=True)
class ChatTurn:
    first_entry: int
    last_entry: int
    role: str  # "user" | "assistant"
    text: str


def chat_turns(session: Session, end: int, *, turn_chars: int) -> list[ChatTurn]:
    """The turns made of entries ``0..end`` (inclusive), oldest first, texts cut."""
    turns: list[ChatTurn] = []
    for i, entry in enumerate(session.entries[:end + 1]):
        for role, _, text in entry_turns([entry]):
            if turns and turns[-1].role == role:
                last = turns[-1]
                turns[-1] = ChatTurn(last.first_entry, i, role, last.text + JOINER + text)
            else:
                turns.append(ChatTurn(i, i, role, text))
    return [ChatTurn(t.first_entry, t.last_entry, t.role,
                 t.text if len(t.text) <= turn_chars else t.text[:turn_chars] + " …[cut]")
            for t in turns]


def most_relevant(texts: Sequence[str], query: str, k: int) -> list[tuple[int, float]]:
    """(index, score) of the ``k`` texts most similar to ``query``, in their original order."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    if not texts or k < 1:
        return []
    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    try:
        matrix = vectorizer.fit_transform([*texts, query])
    except ValueError:  # not one word in any text: nothing is relevant
        return []
    scores = cosine_similarity(matrix[len(texts):], matrix[:len(texts)]).ravel().round(SCORE_DECIMALS)
    ranked = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
    return [(i, float(scores[i])) for i in sorted(i for i in ranked[:k] if scores[i] > 0)]
