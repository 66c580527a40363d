"""Scoring an ANCHOR bank: one cached batch, per-item records and run files.

**Context.** What an item is answered from is :mod:`.window`'s (condition ``causal``,
the turns up to its source session; ``none``, blind). The request is the card's system
prompt, those turns as user/assistant messages (consecutive same-role turns merged so roles
alternate; a question after a final user turn joins it), then the question in the layout of
our own recall items.

**Scores.** ``correct`` is the parsed choice equal to the key. With ``n_scored = n_items -
n_errors``: ``accuracy = n_correct / n_scored``, an unparsed answer counting as wrong;
``accuracy_answered = n_correct / n_answered`` states the parsed-only view separately.
Chance is 0.25. A provider error is never a wrong answer: by default it fails the run
(``per_item.jsonl`` and ``run_manifest.json``, the run's
:class:`~contextecho.engine.manifest.RunLog`, are written with status "failed", any old
``summary.json`` is removed, :class:`BankRunFailed` is raised); with ``allow_errors`` it is
recorded, left out of ``n_scored``, and counted in the summary.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.record import CallRecord
from contextecho.engine.hashing import content_hash
from contextecho.engine.manifest import RunLog, masked, write_record
from contextecho.engine.model_request import ModelRequest

from ..recall.asking import parse_choice
from ..recall.items import LETTERS, N_OPTIONS, prompt_text
from .bank import Bank, BankItem
from .window import DEFAULT_LIMIT, BankContext, alternating, bank_context

DEFAULT_PARAMS = {"temperature": 0.0, "max_tokens": 32}  # a letter, with room for "The answer is C."


def item_request(bank: Bank, item: BankItem, context: BankContext, model: str,
                 params: Mapping[str, Any] | None = None) -> ModelRequest:
    """Card as system message, the context, then the question as the last user message."""
    messages = [{"role": "system", "content": bank.card.system_prompt()}, *context.messages,
                {"role": "user", "content": prompt_text(item)}]
    return ModelRequest(model, tuple(alternating(messages)), dict(DEFAULT_PARAMS if params is None else params))


def item_row(item: BankItem, context: BankContext, request: ModelRequest, record: CallRecord,
             cached: bool) -> dict:
    """One line of ``per_item.jsonl``: status ``ok`` (an option named), ``unparsed`` or ``error``."""
    choice = parse_choice(record.response_text) if record.ok else None
    status = "error" if not record.ok else "unparsed" if choice is None else "ok"
    return {"item_id": item.item_id, "family": item.family, "source_session_id": item.source_session,
            "answer": item.letter, "context": context.record(),
            "prompt_sha256": content_hash(list(request.messages)), "request_key": request.key, "cached": cached,
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
               allow_errors: bool = False, cache: CallCache | None = None, transport: Transport = Transport(),
               progress: bool = False) -> BankRun:
    """Ask every item of ``bank`` once (cached), write the run files into ``out_dir``.

    Raises :class:`BankRunFailed` after writing when a call failed and not ``allow_errors``;
    a model that cannot start (``ModelConfigError``) raises before any call and any file."""
    params = dict(DEFAULT_PARAMS if params is None else params)
    log = RunLog(Path(out_dir) / "run_manifest.json", "anchor-score", models={model},
                 parameters={"model": model, "params": params, "condition": condition, "limit": limit},
                 about={"transport": masked(transport),
                        "context_policy": {"condition": condition, "limit_chars": limit,
                                           "window_ends_with_source_session": True,
                                           "keeps": "most recent whole turns"},
                        "bank": {"id": bank.bank_id, "path": str(bank.path), "file_sha256": bank.file_sha256,
                                 "card_sha256": bank.card.sha256}})
    contexts = [bank_context(bank, item, condition=condition, limit=limit) for item in bank.items]
    requests = [item_request(bank, item, c, model, params) for item, c in zip(bank.items, contexts)]
    batch = generate(requests, cache=cache, transport=transport, progress=progress,
                     name=f"anchor-score-{bank.bank_id}",
                     parameters={"bank": bank.bank_id, "condition": condition, "limit": limit})
    rows = [item_row(*parts) for parts in zip(bank.items, contexts, requests, batch.records, batch.cached)]
    counts = _counts(rows)
    errors = Counter(r["error_type"] for r in rows if r["status"] == "error")
    failed = bool(errors) and not allow_errors
    log.add("answers", batch.counts(invalid=counts["n_unparsed"]))
    log.about.update(
        failure_reason=(f"{sum(errors.values())} of {len(rows)} calls failed "
                        f"({', '.join(f'{k} {v}' for k, v in errors.most_common())}); failed calls "
                        "are not cached, so a rerun retries only them (permanent ones only with --retry-errors)")
        if failed else None,
        scores={**{k: v for k, v in counts.items() if k.startswith("n_")}, "errors_by_type": dict(errors)},
        generate_manifest=batch.manifest.get("path"))
    manifest = log.record("failed" if failed else "complete")
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
    write_record(run.out_dir / "run_manifest.json", run.manifest)
