"""Scoring an ANCHOR bank: causal context, one cached batch, per-item records and run files.

**Context.** Condition ``causal`` gives an item the bank's turns of every session up to
**and including** its ``source.session_id`` (ANCHOR's window "ends at that source
session": the question is asked once that session is over) and never a turn of a later
session. When the turns' characters exceed ``limit``, the most recent whole turns are
kept; when the most recent turn alone overflows, only its tail is kept and the record
says so (``tail_cut``). Condition ``none`` is blind (card and question only), for ANCHOR's
blind filter. Turns are not redacted: a bank is synthetic, authored text, and is sent as
written. The request is the card's system prompt, the turns as user/assistant messages
(consecutive same-role turns merged so roles alternate; a question after a final user
turn joins it), then the question in the layout of our own recall items.

**Scores.** ``correct`` is the parsed choice equal to the key. With ``n_scored = n_items -
n_errors``: ``accuracy = n_correct / n_scored``, an unparsed answer counting as wrong;
``accuracy_answered = n_correct / n_answered`` states the parsed-only view separately.
Chance is 0.25. A provider error is never a wrong answer: by default it fails the run
(``per_item.jsonl`` and ``run_manifest.json`` are written with status "failed", any old
``summary.json`` is removed, :class:`BankRunFailed` is raised); with ``allow_errors`` it is
recorded, left out of ``n_scored``, and counted in the summary.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from contextecho.cache import CellCache
from contextecho.calls import Transport, generate
from contextecho.cell import CellRecord, utc_now
from contextecho.manifest import git_state, package_versions
from contextecho.model_request import ModelRequest, canonical_json

from .bank import Bank, BankItem, Turn
from .filters import parse_choice
from .items import LETTERS, N_OPTIONS, prompt_text

# ~6,000 tokens of history at ~4 characters a token: with the card, the question and a
# short answer it fits an 8k-token model. Pass limit=None for the whole causal history.
DEFAULT_LIMIT = 24_000
CONDITIONS = ("causal", "none")
DEFAULT_PARAMS = {"temperature": 0.0, "max_tokens": 32}  # a letter, with room for "The answer is C."


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


def _alternating(messages: Sequence[dict]) -> list[dict]:
    merged: list[dict] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"]:
            merged[-1] = {"role": m["role"], "content": merged[-1]["content"] + "\n\n" + m["content"]}
        else:
            merged.append(dict(m))
    return merged


def _most_recent(turns: Sequence[Turn], limit: int | None) -> tuple[list[Turn], bool]:
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
    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of characters or None, got {limit}")
    causal = [t for t in bank.turns if t.session_id <= item.source_session] if condition == "causal" else []
    kept, tail_cut = _most_recent(causal, limit)
    messages = tuple(_alternating([{"role": t.role, "content": t.content} for t in kept]))
    return BankContext(
        condition=condition, messages=messages,
        first=(kept[0].session_id, kept[0].turn) if kept else None,
        last=(kept[-1].session_id, kept[-1].turn) if kept else None, n_turns=len(kept),
        n_chars=sum(len(t.content) for t in kept), n_chars_full=sum(len(t.content) for t in causal),
        truncated=len(kept) < len(causal) or tail_cut, tail_cut=tail_cut, limit=limit,
        sha256=_sha256(list(messages)))


def _sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def item_request(bank: Bank, item: BankItem, context: BankContext, model: str,
                 params: Mapping[str, Any] | None = None) -> ModelRequest:
    """Card as system message, the context, then the question as the last user message."""
    messages = [{"role": "system", "content": bank.card.system_prompt()}, *context.messages,
                {"role": "user", "content": prompt_text(item)}]
    return ModelRequest(model, tuple(_alternating(messages)), dict(DEFAULT_PARAMS if params is None else params))


def item_row(item: BankItem, context: BankContext, request: ModelRequest, record: CellRecord,
             cached: bool) -> dict:
    """One line of ``per_item.jsonl``: status ``ok`` (an option named), ``unparsed`` or ``error``."""
    choice = parse_choice(record.response_text) if record.ok else None
    status = "error" if not record.ok else "unparsed" if choice is None else "ok"
    return {"item_id": item.item_id, "family": item.family, "source_session_id": item.source_session,
            "answer": item.letter, "context": context.record(),
            "prompt_sha256": _sha256(list(request.messages)), "cell_key": request.key, "cached": cached,
            "status": status, "response": record.response_text,
            "choice": None if choice is None else LETTERS[choice],
            "correct": None if choice is None else choice == item.answer,
            "error_type": record.error_type, "error_message": record.error_message}


def _counts(rows: Sequence[dict]) -> dict[str, Any]:
    status = Counter(r["status"] for r in rows)
    n_correct = sum(r["correct"] is True for r in rows)
    n_scored = len(rows) - status["error"]
    return {"n_items": len(rows), "n_answered": status["ok"], "n_unparsed": status["unparsed"],
            "n_errors": status["error"], "n_scored": n_scored, "n_correct": n_correct,
            "accuracy": n_correct / n_scored if n_scored else None,
            "accuracy_answered": n_correct / status["ok"] if status["ok"] else None}


def summarize(rows: Sequence[dict], **about: Any) -> dict[str, Any]:
    """``summary.json``: counts and accuracies overall and per family (defined in the module doc)."""
    families = sorted({r["family"] for r in rows})
    return {**about, **_counts(rows), "chance": 1 / N_OPTIONS,
            "per_family": {f: _counts([r for r in rows if r["family"] == f]) for f in families}}


class BankRunFailed(RuntimeError):
    """Provider errors failed the run; ``run`` holds what was written (nothing is lost)."""

    def __init__(self, run: "BankRun") -> None:
        super().__init__(f"bank {run.manifest['bank']['id']}: {run.manifest['failure_reason']}")
        self.run = run


@dataclass(frozen=True)
class BankRun:
    out_dir: Path
    rows: list[dict]  # per_item.jsonl, in the bank's item order
    summary: dict | None  # None when the run failed (no accuracy is claimed)
    manifest: dict

    @property
    def status(self) -> str:
        return self.manifest["status"]


def score_bank(bank: Bank, model: str, out_dir: str | Path, *, condition: str = "causal",
               limit: int | None = DEFAULT_LIMIT, params: Mapping[str, Any] | None = None,
               allow_errors: bool = False, cache: CellCache | None = None, transport: Transport = Transport(),
               progress: bool = False) -> BankRun:
    """Ask every item of ``bank`` once (cached), write the run files into ``out_dir``.

    Raises :class:`BankRunFailed` after writing when a call failed and not ``allow_errors``;
    a model that cannot start (``ModelConfigError``) raises before any call and any file."""
    started, clock = utc_now(), time.perf_counter()
    params = dict(DEFAULT_PARAMS if params is None else params)
    contexts = [bank_context(bank, item, condition=condition, limit=limit) for item in bank.items]
    requests = [item_request(bank, item, c, model, params) for item, c in zip(bank.items, contexts)]
    batch = generate(requests, cache=cache, transport=transport, progress=progress,
                     name=f"anchor-score-{bank.bank_id}",
                     parameters={"bank": bank.bank_id, "condition": condition, "limit": limit})
    rows = [item_row(*parts) for parts in zip(bank.items, contexts, requests, batch.records, batch.cached)]
    counts = _counts(rows)
    errors = Counter(r["error_type"] for r in rows if r["status"] == "error")
    failed = bool(errors) and not allow_errors
    manifest = {
        "name": "anchor-score", "status": "failed" if failed else "complete",
        "failure_reason": (f"{sum(errors.values())} of {len(rows)} calls failed "
                           f"({', '.join(f'{k} {v}' for k, v in errors.most_common())}); failed calls "
                           "are not cached, so a rerun retries only them") if failed else None,
        "model": model, "params": params, "transport": asdict(transport),
        "context_policy": {"condition": condition, "limit_chars": limit,
                           "window_ends_with_source_session": True, "keeps": "most recent whole turns"},
        "bank": {"id": bank.bank_id, "path": str(bank.path), "file_sha256": bank.file_sha256,
                 "card_sha256": bank.card.sha256},
        "counts": {**{k: v for k, v in counts.items() if k.startswith("n_")},
                   "errors_by_type": dict(errors), "cache_hits": batch.n_hits,
                   "calls": len(requests) - batch.n_hits},
        "generate_manifest": batch.manifest.get("path"),
        "started": started, "finished": utc_now(), "runtime_s": round(time.perf_counter() - clock, 3),
        "git": git_state(), "packages": package_versions(),
    }
    summary = None if failed else summarize(rows, bank_id=bank.bank_id, model=model, condition=condition,
                                            limit=limit, errors_excluded=counts["n_errors"])
    run = BankRun(Path(out_dir), rows, summary, manifest)
    _write(run)
    if failed:
        raise BankRunFailed(run)
    return run


def _write(run: BankRun) -> None:
    run.out_dir.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps(r, ensure_ascii=False) + "\n" for r in run.rows)
    (run.out_dir / "per_item.jsonl").write_text("".join(lines), encoding="utf-8")
    summary = run.out_dir / "summary.json"
    if run.summary is None:
        summary.unlink(missing_ok=True)  # an older run's accuracy must not sit beside a failure
    else:
        summary.write_text(json.dumps(run.summary, indent=2) + "\n", encoding="utf-8")
    (run.out_dir / "run_manifest.json").write_text(json.dumps(run.manifest, indent=2, default=str) + "\n",
                                                    encoding="utf-8")
