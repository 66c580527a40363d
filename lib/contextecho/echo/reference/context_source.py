"""The harness's A1 context-source conditions (e03): the content-position design on a GPT-5 context.

Source: github.com/Accenture/ContextEcho at commit ``5f8dba3`` (Apache License 2.0),
``experiments/e03_same_target_ablation/run_a1_context_source.py`` ``main()`` ``:199-223``.
The runner takes e03's reading of the GPT-5 source transcript
(:func:`~.gpt5_source.extract_gpt5_verbatim`: its last 28 000 characters) and cuts it into
the recent 3 000 characters and the 11 000 before them; the fillers are the reference
filler (:func:`~.filler.make_filler`, the same template) of the earlier part's length and of
14 000 characters. Its five conditions, in its order, are the prior messages before each probe:

* ``scratch``: none;
* ``recent3K``: the recent part;
* ``recent3K_filler``: filler of the earlier part's length, then the recent part;
* ``recent3K_earlier``: the earlier part, then the recent part (the last 14 000);
* ``filler14K``: 14 000 characters of filler;

each non-empty one a plain-string user message followed by the acknowledgement
(:data:`~.texts.ACKNOWLEDGEMENT`). A condition's size (``chars``) is its first message's length.

These are the harness's conditions, not our arms (:mod:`contextecho.echo.arms`: ``shuffled_real``,
``unrelated_session``, ``scratch`` are ours; the harness's A1 has no shuffled or unrelated
condition). The runner cannot run from the release (it imports a module the repository does
not have), and its target system prompt, probe framing and verdict parser are unknown, so only
the conditions are reproduced here: no request is built from them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .filler import make_filler
from .gpt5_source import A1_VERBATIM_CHARS, Record, extract_gpt5_verbatim
from .texts import ACKNOWLEDGEMENT

#: e03's slice sizes: the recent part, and where the earlier part starts (from the end).
A1_RECENT_CHARS = 3_000
A1_EARLIER_FROM_END = 14_000
A1_FILLER_CHARS = 14_000
#: The condition labels, in the runner's order.
A1_CONDITIONS = ("scratch", "recent3K", "recent3K_filler", "recent3K_earlier", "filler14K")


@dataclass(frozen=True)
class A1Slices:
    """The texts e03 ``main()`` cuts and makes (``:203-210``), under its own names."""

    verbatim_full: str
    recent_3K: str
    earlier_11K: str
    filler_11K: str
    filler_14K: str

    @classmethod
    def of(cls, verbatim_full: str) -> "A1Slices":
        earlier = verbatim_full[-A1_EARLIER_FROM_END:-A1_RECENT_CHARS]
        return cls(verbatim_full, verbatim_full[-A1_RECENT_CHARS:], earlier,
                   make_filler(len(earlier)), make_filler(A1_FILLER_CHARS))

    def named(self) -> dict[str, str]:
        """The four slices the runner prints, by its names (``verbatim_full`` apart)."""
        return {"recent_3K": self.recent_3K, "earlier_11K": self.earlier_11K,
                "filler_11K": self.filler_11K, "filler_14K": self.filler_14K}


@dataclass(frozen=True)
class A1Condition:
    """One A1 condition: its label and the prior messages (plain-string content)."""

    label: str
    messages: tuple[dict, ...]

    @property
    def chars(self) -> int:
        """The runner's printed size: the first message's length (0 without messages)."""
        return len(self.messages[0]["content"]) if self.messages else 0


def _primed(context: str) -> tuple[dict, ...]:
    return ({"role": "user", "content": context}, {"role": "assistant", "content": ACKNOWLEDGEMENT})


def a1_conditions(slices: A1Slices) -> tuple[A1Condition, ...]:
    """The five conditions (module doc), in :data:`A1_CONDITIONS` order."""
    contexts = {"recent3K": slices.recent_3K,
                "recent3K_filler": slices.filler_11K + slices.recent_3K,
                "recent3K_earlier": slices.earlier_11K + slices.recent_3K,
                "filler14K": slices.filler_14K}
    return tuple(A1Condition(label, _primed(contexts[label]) if label in contexts else ())
                 for label in A1_CONDITIONS)


def a1_design(records: Iterable[Record], verbatim_chars: int = A1_VERBATIM_CHARS
              ) -> tuple[A1Slices, tuple[A1Condition, ...]]:
    """e03 A1 on a GPT-5 source transcript's records: its slices and its five conditions."""
    slices = A1Slices.of(extract_gpt5_verbatim(records, verbatim_chars))
    return slices, a1_conditions(slices)
