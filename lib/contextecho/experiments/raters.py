"""Offline raters that are not the LLM judge: a genuinely different second opinion.

``tfidf``: a lexical rater. The four anchor descriptions of the rubric (score 0–3) and the
responses are embedded as TF-IDF vectors (word 1–2-grams, fitted on the anchors plus the
responses being rated); a response gets the score of the anchor it is most similar to
(cosine). It knows nothing but word overlap with the rubric's own wording — crude, cheap,
deterministic, and independent of any chat model. An empty response is unrated (NaN).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ..echo.rubric import ANCHORS

RATERS = ("tfidf",)
DESCRIPTIONS = {"tfidf": "TF-IDF cosine similarity to the rubric's four anchor descriptions (nearest anchor)"}


def tfidf_scores(responses: Iterable[str | None]) -> np.ndarray:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    texts = [r if isinstance(r, str) else "" for r in responses]
    levels = sorted(ANCHORS)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, stop_words="english")
    vectorizer.fit([ANCHORS[k] for k in levels] + [t for t in texts if t.strip()])
    anchors = vectorizer.transform([ANCHORS[k] for k in levels])
    out = np.full(len(texts), np.nan)
    rated = [i for i, t in enumerate(texts) if t.strip()]
    if rated:
        sims = cosine_similarity(vectorizer.transform([texts[i] for i in rated]), anchors)
        out[rated] = np.asarray(levels, float)[sims.argmax(axis=1)]
    return out


def rate(name: str, responses: Iterable[str | None]) -> np.ndarray:
    if name == "tfidf":
        return tfidf_scores(responses)
    raise ValueError(f"unknown rater {name!r}; choose one of {RATERS}")
