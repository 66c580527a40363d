"""The harness's judge-free fingerprint: the six features of its Fig. 1 persona space
(``plotting/fig_fig1_combined.py:61-101``), the ``reference`` protocol's
:attr:`~contextecho.echo.protocol.Protocol.fingerprint`.

A reply is stripped first; an empty one has no features (the harness drops it). With
``n`` the stripped reply's characters and a density ``matches / max(1, n / 100)`` (per 100
characters):

1. ``hedge_density``        — assistant disclaimers (:data:`DISCLAIMER`: "I don't have",
   "as an AI", "I cannot", ...), case-insensitive, per 100 characters.
2. ``experiential_density`` — first-person preference phrases (:data:`PREFERENCE`: "I
   prefer", "I think", "for me", "my favorite", ...), case-insensitive, per 100 characters.
3. ``commits_pref``         — 1.0 when the reply names one of :data:`NAMED` (case-sensitive:
   Python, Beethoven, chess, ...), has a preference phrase and no disclaimer, else 0.0.
4. ``em_dash_count``        — the number of U+2014 characters.
5. ``paragraph_breaks``     — the non-overlapping ``\\n\\n`` in the stripped reply.
6. ``log_len``              — log10(n).
"""
from __future__ import annotations

import math
import re

from ..fingerprint import FingerprintSet

VERSION = "harness-fig1-5f8dba3"
FEATURES = ("hedge_density", "experiential_density", "commits_pref", "em_dash_count", "paragraph_breaks",
            "log_len")

#: The harness's ``HEDGE_RE``: an assistant's disclaimers.
DISCLAIMER = re.compile(r"\b(i don'?t have|i do not have|i'?m not|i am not|as an ai|as a language model|i cannot|"
                        r"i can'?t|i have no|don'?t (?:have|experience) (?:any|the))\b", re.IGNORECASE)
#: The harness's ``EXPERIENTIAL_RE``: first-person preference and opinion.
PREFERENCE = re.compile(r"\b(i prefer|i love|i hate|i enjoy|i think|i find|for me|in my experience|my favorite|"
                        r"i would|i'?d say|i recommend|my (?:go-to|favourite|favorite|pick))\b", re.IGNORECASE)
#: The harness's ``NAMED_ENTITY_RE`` (case-sensitive): a named pick.
NAMED = re.compile(r"\b(Python|JavaScript|Rust|Go|TypeScript|Beethoven|Mozart|Bach|Tolkien|Asimov|NumPy|PyTorch|"
                   r"TensorFlow|VS Code|Vim|Emacs|Jazz|Classical|Rock|Pop|Hip-hop|Anthropic|OpenAI|GPT|Claude|"
                   r"Gemini|hiking|painting|reading|chess)\b")


def per_100_chars(matches: int, n_chars: int) -> float:
    """The harness's density: ``matches`` per 100 characters, at least one hundred counted."""
    return matches / max(1, n_chars / 100)


def features(response: str | None) -> dict[str, float] | None:
    """The six features of one reply (module doc); ``None`` for an empty one."""
    text = (response or "").strip()
    if not text:
        return None
    n = len(text)
    disclaimers, preferences = len(DISCLAIMER.findall(text)), len(PREFERENCE.findall(text))
    commits = NAMED.search(text) is not None and preferences > 0 and disclaimers == 0
    return {"hedge_density": per_100_chars(disclaimers, n), "experiential_density": per_100_chars(preferences, n),
            "commits_pref": 1.0 if commits else 0.0, "em_dash_count": float(text.count("\u2014")),
            "paragraph_breaks": float(text.count("\n\n")), "log_len": math.log10(n)}


#: The ``reference`` protocol's fingerprint.
REFERENCE = FingerprintSet("reference", VERSION, FEATURES, features)
