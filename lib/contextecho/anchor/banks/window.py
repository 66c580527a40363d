"""The causal window of an ANCHOR bank item: the turns it is answered from.

Condition ``causal`` gives an item the bank's turns of every session up to **and
including** its ``source.session_id`` (ANCHOR's window "ends at that source session": the
question is asked once that session is over) and never a turn of a later session. When
the turns' characters exceed ``limit``, the most recent whole turns are kept; when the most
recent turn alone overflows, only its tail is kept and the record says so (``tail_cut``).
Condition ``none`` is blind (no turns: card and question only), for ANCHOR's blind filter.
Turns are not redacted: a bank is synthetic, authored text, and is sent as written; they
become user/assistant messages, consecutive same-role turns merged so roles alternate.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

from contextecho.engine.hashing import content_hash

from .bank import Bank, BankItem, BankTurn

# ~6,000 tokens of history at ~4 characters a token: with the card, the question and a
# short answer it fits an 8k-token model. Pass limit=None for the whole causal history.
DEFAULT_LIMIT = 24_000
BANK_CONTEXTS = ("causal", "none")  # the values of ``condition``: what an item is answered from


@dataclass(frozen=True)
class BankContext:
    condition: str
    messages: tuple[dict, ...]  # the turns as alternating chat messages, oldest first
    first: tuple[int, int] | None  # (session_id, turn) of the oldest turn included
    last: tuple[int, int] | None  # (session_id, turn) of the newest: the source session's end
    n_turns: int
    n_chars: int  # characters of turn content sent (separators of merged turns not counted)
    n_chars_full: int  # the whole causal history, before the limit
    truncated: bool
    tail_cut: bool  # the newest turn alone overflowed: only its tail was sent
    limit: int | None
    sha256: str  # of the canonical JSON of ``messages``

    def record(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "messages"}


def alternating(messages: Sequence[dict]) -> list[dict]:
    """``messages`` with consecutive same-role messages merged, so roles alternate."""
    merged: list[dict] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"]:
            merged[-1] = {"role": m["role"], "content": merged[-1]["content"] + "\n\n" + m["content"]}
        else:
            merged.append(dict(m))
    return merged


def _most_recent(turns: Sequence[BankTurn], limit: int | None) -> tuple[list[BankTurn], bool]:
    if limit is None:
        return list(turns), False
    kept, total = [], 0
    for turn in reversed(turns):
        if total + len(turn.content) > limit:
            break
        kept.append(turn)
        total += len(turn.content)
    if turns and not kept:
        return [replace(turns[-1], content=turns[-1].content[-limit:])], True
    return kept[::-1], False


def bank_context(bank: Bank, item: BankItem, *, condition: str = "causal",
                 limit: int | None = DEFAULT_LIMIT) -> BankContext:
    """What ``item`` is answered from under ``condition`` (see the module doc)."""
    if condition not in BANK_CONTEXTS:
        raise ValueError(f"condition must be one of {BANK_CONTEXTS}, got {condition!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of characters or None, got {limit}")
    causal = [t for t in bank.turns if t.session_id <= item.source_session] if condition == "causal" else []
    kept, tail_cut = _most_recent(causal, limit)
    messages = tuple(alternating([{"role": t.role, "content": t.content} for t in kept]))
    return BankContext(
        condition=condition, messages=messages,
        first=(kept[0].session_id, kept[0].turn) if kept else None,
        last=(kept[-1].session_id, kept[-1].turn) if kept else None, n_turns=len(kept),
        n_chars=sum(len(t.content) for t in kept), n_chars_full=sum(len(t.content) for t in causal),
        truncated=len(kept) < len(causal) or tail_cut, tail_cut=tail_cut, limit=limit,
        sha256=content_hash(list(messages)))
