"""The draws of the harness's position-clustered bootstraps, read in bulk.

Each resample of those bootstraps (``plotting/fig_forest_*.py``) draws from one
``numpy.random.default_rng(seed)``: ``integers(0, P, P)`` positions, then, for each drawn
position in turn, ``integers(0, n, n)`` indices into each of its arrays in turn (one array
for a mean, the real then the filler values for a ratio). Run as written, that is two to
three small numpy calls per drawn position, tens of thousands per interval.

``Generator.integers`` with a range of ``n`` below ``2**32`` takes each value from the
generator's stream of 32-bit words by Lemire's method: ``(word * n) >> 32``, the word
rejected (and the next one taken) when its low half is below ``(2**32 - n) % n``. It takes
one word per value, none when ``n`` is 1, and consecutive calls go on with the same stream,
which ``integers(0, 2**32, size, dtype=uint32)`` returns word for word. So every draw of
every resample can be read from one block of words: the positions one resample after the
other (where a resample's words begin depends on the positions the one before drew), then
all the indices at once. A rejected word would shift every later draw; it is about as likely
as ``n / 2**32`` per word, and :func:`clustered_draws` then answers ``None`` so that the
caller runs the harness's own loop.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WORDS = 1 << 32
_LOW = np.uint64(WORDS - 1)
_HIGH = np.uint64(32)


@dataclass(frozen=True)
class PositionDraws:
    """One position's draws: the resamples (``rows``) and slots (``slots``) where it was drawn,
    in resample order, and for each of its arrays the index draws made there, one row each."""

    rows: np.ndarray
    slots: np.ndarray
    indices: tuple[np.ndarray, ...]


def bounded(words: np.ndarray, n: int) -> tuple[np.ndarray, bool]:
    """``integers(0, n)`` of each 32-bit word by Lemire's method, and
    whether any word would have been rejected (its draw is then not the generator's)."""
    scaled = words.astype(np.uint64) * np.uint64(n)
    rejected = bool(((scaled & _LOW) < np.uint64((WORDS - n) % n)).any())
    return (scaled >> _HIGH).astype(np.int64), rejected


class _Words:
    """The generator's 32-bit words, drawn a block at a time as they are needed (consecutive
    draws continue the stream, so the blocks join into the one stream)."""

    def __init__(self, rng: np.random.Generator, first: int) -> None:
        self._rng = rng
        self.array = rng.integers(0, WORDS, size=first, dtype=np.uint32)

    def ensure(self, end: int) -> None:
        """At least ``end`` words drawn."""
        if end > len(self.array):
            more = self._rng.integers(0, WORDS, size=max(end, 2 * len(self.array)) - len(self.array), dtype=np.uint32)
            self.array = np.concatenate([self.array, more])


def clustered_draws(lengths: Sequence[Sequence[int]], n_boot: int, seed: int) -> list[PositionDraws] | None:
    """The draws of ``n_boot`` resamples of positions whose arrays have ``lengths`` (position
    ``j`` has arrays of ``lengths[j]``, drawn in that order), as the harness makes them from
    ``default_rng(seed)``; ``None`` where a word would be rejected, or for no positions, no
    resamples or an empty array (the harness's loop then decides)."""
    n_pos = len(lengths)
    if n_pos == 0 or n_boot < 1 or any(n < 1 for sizes in lengths for n in sizes):
        return None
    spent = np.array([sum(n for n in sizes if n > 1) for sizes in lengths], dtype=np.int64)
    position_words = n_pos if n_pos > 1 else 0
    stream = _Words(np.random.default_rng(seed), n_boot * (position_words + n_pos * int(spent.mean() + 1)))
    spent_of, threshold = spent.tolist(), (WORDS - n_pos) % n_pos
    positions, starts = [], []  # per resample: the drawn positions, where each one's words begin
    at = 0
    for _ in range(n_boot):  # one resample after the other, in Python ints (a few positions each)
        drawn = [0] * n_pos
        if position_words:
            stream.ensure(at + n_pos)
            for k, word in enumerate(stream.array[at:at + n_pos].tolist()):
                scaled = word * n_pos
                if scaled & 0xFFFFFFFF < threshold:
                    return None
                drawn[k] = scaled >> 32
            at += n_pos
        for j in drawn:
            starts.append(at)
            at += spent_of[j]
        positions.extend(drawn)
    stream.ensure(at)
    words = stream.array
    positions = np.array(positions, dtype=np.int64).reshape(n_boot, n_pos)
    starts = np.array(starts, dtype=np.int64).reshape(n_boot, n_pos)
    draws = []
    for j, sizes in enumerate(lengths):
        rows, slots = np.nonzero(positions == j)
        first = starts[rows, slots]
        indices = []
        for n in sizes:
            if n == 1:
                indices.append(np.zeros((len(rows), 1), dtype=np.int64))
                continue
            drawn, rejected = bounded(words[first[:, None] + np.arange(n)], n)
            if rejected:
                return None
            indices.append(drawn)
            first = first + n
        draws.append(PositionDraws(rows, slots, tuple(indices)))
    return draws
