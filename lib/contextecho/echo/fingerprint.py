"""The judge-free behavioural fingerprint φ(r) and PCA projection helpers.

The seed (000, §2.4, Fig. 1a) uses a six-feature fingerprint to check that the
probe-surface shift is recoverable without judge labels; the issue names the features.
The seed gives no formulas, so the exact definitions below are ours (bump
:data:`VERSION` on any change). Text is first normalised: CRLF/CR to LF, the typographic
apostrophe U+2019 to ``'``. A *word* is a match of ``[A-Za-z0-9]+(?:'[A-Za-z]+)*``.
Matching is case-insensitive and on word boundaries.

1. ``hedge_density``       — 100 × (matches of :data:`HEDGES`) / words (0 if no words).
2. ``experiential_density`` — 100 × (matches of :data:`EXPERIENTIAL`, first-person
   experience and affect constructions) / words (0 if no words).
3. ``commits_preference``  — 1.0 if any :data:`COMMITS` pattern matches (a committed
   first-person preference: "my favorite ... is", "I prefer", "I'd pick"), else 0.0.
4. ``em_dash_count``       — the number of U+2014 characters (en dashes and ``--`` not).
5. ``paragraph_breaks``    — the number of runs of blank lines inside the stripped text.
6. ``log_length``          — ln(1 + number of characters of the raw response).

A protocol names its fingerprint (:attr:`contextecho.echo.protocol.Protocol.fingerprint`, a
:class:`FingerprintSet`): :data:`CONTEXTECHO` is these six; the ``reference`` protocol's is the
harness's (:mod:`contextecho.echo.reference.fingerprint`).
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

VERSION = "fingerprint-1.0"
FEATURES = ("hedge_density", "experiential_density", "commits_preference", "em_dash_count",
            "paragraph_breaks", "log_length")

WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)*")
HEDGES = (r"might", r"may", r"perhaps", r"possibly", r"maybe", r"probably", r"likely",
          r"arguably", r"somewhat", r"seems?", r"seemed", r"appears?", r"i think", r"i believe",
          r"i guess", r"i suppose", r"not sure", r"sort of", r"kind of", r"in a sense",
          r"in some sense", r"to some extent", r"it depends")
EXPERIENTIAL = (r"i feel", r"i felt", r"i love", r"i loved", r"i enjoy", r"i enjoyed",
                r"i remember", r"i recall", r"i hate", r"i miss", r"i wish", r"i was",
                r"i've been", r"i've had", r"i got", r"i'm feeling", r"i'm excited",
                r"i'm tired", r"my favou?rite", r"personally")
COMMITS = (r"my favou?rite [\w\s'-]{0,40}?\b(?:is|are|would be|has to be)",
           r"i (?:really |definitely |personally |genuinely )?(?:prefer|love|like|enjoy|adore)",
           r"i'd (?:pick|choose|go with|have to go with|have to pick)",
           r"i'm (?:a (?:big |huge )?fan of|partial to|drawn to)", r"i lean towards?")


def _alternation(patterns: Sequence[str]) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(patterns) + r")\b", re.IGNORECASE)


HEDGE_RE, EXPERIENTIAL_RE, COMMITS_RE = (_alternation(p) for p in (HEDGES, EXPERIENTIAL, COMMITS))
BLANK_RUN = re.compile(r"\n(?:[ \t]*\n)+")


@dataclass(frozen=True)
class Fingerprint:
    hedge_density: float
    experiential_density: float
    commits_preference: float
    em_dash_count: float
    paragraph_breaks: float
    log_length: float

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, f) for f in FEATURES], dtype=float)


def normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2019", "'")


def fingerprint(response: str | None) -> Fingerprint:
    """φ(r) for one response (``None`` is treated as the empty response)."""
    raw = response or ""
    t = normalise(raw)
    n_words = len(WORD.findall(t))
    per100 = (lambda n: 100.0 * n / n_words) if n_words else (lambda n: 0.0)
    return Fingerprint(
        hedge_density=per100(len(HEDGE_RE.findall(t))),
        experiential_density=per100(len(EXPERIENTIAL_RE.findall(t))),
        commits_preference=1.0 if COMMITS_RE.search(t) else 0.0,
        em_dash_count=float(raw.count("\u2014")),
        paragraph_breaks=float(len(BLANK_RUN.findall(t.strip()))),
        log_length=math.log1p(len(raw)),
    )


def fingerprint_frame(responses: Iterable[str | None]) -> pd.DataFrame:
    """One row per response, one column per feature (in :data:`FEATURES` order)."""
    return pd.DataFrame([asdict(fingerprint(r)) for r in responses], columns=list(FEATURES))


@dataclass(frozen=True)
class FingerprintSet:
    """A protocol's fingerprint: its ``name``, ``version``, the six ``features`` in order and
    ``extract`` (one response to its feature values, or ``None`` where the set reads no
    features from it: the harness drops an empty reply)."""

    name: str
    version: str
    features: tuple[str, ...]
    extract: Callable[[str | None], Mapping[str, float] | None]

    def frame(self, responses: Iterable[str | None]) -> pd.DataFrame:
        """One row per response, one column per feature (in :attr:`features` order); a
        response the set reads no features from is a row of NaN."""
        rows = [self.extract(r) or {} for r in responses]
        return pd.DataFrame(rows, columns=list(self.features), dtype=float)


#: This project's fingerprint (module doc).
CONTEXTECHO = FingerprintSet("contextecho", VERSION, FEATURES, lambda r: asdict(fingerprint(r)))


@dataclass(frozen=True)
class Projection:
    """A fitted PCA: standardise with ``mean``/``scale``, then project on ``components``."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    components: np.ndarray  # (n_components, n_features), unit rows
    explained_variance_ratio: np.ndarray

    def transform(self, X) -> np.ndarray:
        X = np.asarray(X.loc[:, list(self.features)] if isinstance(X, pd.DataFrame) else X, float)
        return ((X - self.mean) / self.scale) @ self.components.T

    def loadings(self) -> pd.DataFrame:
        return pd.DataFrame(self.components.T, index=list(self.features),
                            columns=[f"PC{i + 1}" for i in range(len(self.components))])


def fit_pca(X, n_components: int = 2, *, standardize: bool = True,
            features: Sequence[str] = FEATURES) -> Projection:
    """PCA by SVD of the (standardised) feature matrix; signs fixed so that each
    component's largest-magnitude loading is positive (deterministic orientation).
    Constant features get scale 1, so they contribute nothing instead of NaN."""
    A = np.asarray(X.loc[:, list(features)] if isinstance(X, pd.DataFrame) else X, float)
    if A.ndim != 2 or A.shape[0] < 2:
        raise ValueError(f"need a 2-D matrix with at least two rows, got shape {A.shape}")
    if not 1 <= n_components <= min(A.shape):
        raise ValueError(f"n_components must be in 1..{min(A.shape)}, got {n_components}")
    mean = A.mean(axis=0)
    scale = A.std(axis=0, ddof=1) if standardize else np.ones(A.shape[1])
    scale = np.where(scale > 0, scale, 1.0)
    Z = (A - mean) / scale
    _, s, vt = np.linalg.svd(Z, full_matrices=False)
    comps = vt[:n_components]
    signs = np.sign(comps[np.arange(n_components), np.abs(comps).argmax(axis=1)])
    comps = comps * np.where(signs == 0, 1, signs)[:, None]
    var = s ** 2
    ratio = var[:n_components] / var.sum() if var.sum() > 0 else np.zeros(n_components)
    return Projection(tuple(features), mean, scale, comps, ratio)


def project(frame: pd.DataFrame, projection: Projection | None = None,
            n_components: int = 2) -> pd.DataFrame:
    """``frame`` with PC1..PCn columns added (fitting on ``frame`` unless given one)."""
    projection = projection or fit_pca(frame, n_components)
    scores = projection.transform(frame)
    out = frame.copy()
    for i in range(scores.shape[1]):
        out[f"PC{i + 1}"] = scores[:, i]
    return out
