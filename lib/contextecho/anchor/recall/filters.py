"""ANCHOR's three question filters: blind, with-history validation, and calibration.

1. **blind**: ``blind_filter(items, answers)`` drops the items a model answered correctly
   without any history (they are answerable from the question text alone) and keeps the
   rest. An answer is a letter/response text, an option index, or ``None`` for a failed
   call (:mod:`.asking`); an answer that cannot be read is never counted as wrong or
   right: the item is kept and counted as unparsed (failures are data).
2. **validate with history**: at least ``min_agree`` of the evaluators (ANCHOR: 3 of 4),
   each answering with the item's causal window, recover the recorded answer. An
   evaluator is any source of one answer per item: another model, or, where only one
   model is at hand, a sampled replicate of it (weaker evidence; the run says which).
   A failed or unreadable answer counts as not recovering the answer: the item needs
   ``min_agree`` positive confirmations, and the unreadable ones are counted.
3. **calibrate**: answered ``n`` more times (ANCHOR: 5) with causal context. With ``m`` the
   number of runs that name an option and ``share`` the modal option's share of them:
   ``invalid`` when ``m < n / 2`` (mostly unreadable or failed), else ``main`` when
   ``share >= stable_share`` (default 0.8: 4 of 5 runs agree), else ``hard``. Stability
   is agreement of the model with itself, not correctness: a stably wrong item is main.

Each step reports how many items it kept and discarded (:func:`filter_counts`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

from .asking import choice_of
from .items import RecallItem

MAIN, HARD, INVALID = "main", "hard", "invalid"


@dataclass(frozen=True)
class BlindFilterResult:
    kept: tuple[RecallItem, ...]  # not answered correctly blind
    discarded: tuple[RecallItem, ...]  # answered correctly without history
    n_unparsed: int  # kept because the blind answer named no option
    n_failed: int  # kept because the blind call failed (None)

    @property
    def counts(self) -> dict[str, int]:
        return {"candidates": len(self.kept) + len(self.discarded), "kept": len(self.kept),
                "discarded": len(self.discarded), "unparsed": self.n_unparsed,
                "failed": self.n_failed}


def blind_filter(items: Sequence[RecallItem],
                 answers: Sequence[int | str | None]) -> BlindFilterResult:
    """Drop items whose blind answer is the correct option; keep and count the rest."""
    if len(items) != len(answers):
        raise ValueError(f"{len(items)} items but {len(answers)} blind answers")
    kept, discarded, unparsed, failed = [], [], 0, 0
    for item, answer in zip(items, answers):
        choice = choice_of(answer)
        failed += answer is None
        unparsed += answer is not None and choice is None
        (discarded if choice == item.answer else kept).append(item)
    return BlindFilterResult(tuple(kept), tuple(discarded), unparsed, failed)


@dataclass(frozen=True)
class ValidationResult:
    kept: tuple[RecallItem, ...]
    discarded: tuple[RecallItem, ...]
    recovered: Mapping[str, int]  # item id -> evaluators recovering the answer
    n_unreadable: int  # answers (all evaluators) that named no option or failed
    n_evaluators: int
    min_agree: int


def validate_with_history(items: Sequence[RecallItem], answers: Mapping[str, Sequence[int | str | None]],
                          *, min_agree: int = 3) -> ValidationResult:
    """Keep items whose answer ``min_agree`` evaluators recover; ``answers[evaluator][k]`` is
    that evaluator's answer to ``items[k]``."""
    if not answers:
        raise ValueError("with-history validation needs at least one evaluator")
    if not 1 <= min_agree <= len(answers):
        raise ValueError(f"min_agree={min_agree} with {len(answers)} evaluators")
    for name, given in answers.items():
        if len(given) != len(items):
            raise ValueError(f"evaluator {name!r}: {len(given)} answers for {len(items)} items")
    kept, discarded, recovered, unreadable = [], [], {}, 0
    for k, item in enumerate(items):
        choices = [choice_of(given[k]) for given in answers.values()]
        unreadable += sum(c is None for c in choices)
        recovered[item.id] = sum(c == item.answer for c in choices)
        (kept if recovered[item.id] >= min_agree else discarded).append(item)
    return ValidationResult(tuple(kept), tuple(discarded), recovered, unreadable, len(answers), min_agree)


@dataclass(frozen=True)
class RecallCalibration:
    item: RecallItem
    verdict: str  # main | hard | invalid
    n_runs: int
    n_readable: int
    modal_share: float  # share of the modal option among readable runs (0 when none)
    accuracy: float  # correct runs / all runs


def calibrate_recall(items: Sequence[RecallItem], runs: Sequence[Sequence[int | str | None]], *,
                     stable_share: float = 0.8) -> list[RecallCalibration]:
    """``runs[r][k]`` is run ``r``'s answer to ``items[k]``; one verdict per item."""
    if not runs:
        raise ValueError("calibration needs at least one run")
    if any(len(run) != len(items) for run in runs):
        raise ValueError("every calibration run must answer every item")
    out = []
    for k, item in enumerate(items):
        choices = [choice_of(run[k]) for run in runs]
        readable = [c for c in choices if c is not None]
        share = Counter(readable).most_common(1)[0][1] / len(readable) if readable else 0.0
        verdict = INVALID if len(readable) < len(runs) / 2 else MAIN if share >= stable_share else HARD
        out.append(RecallCalibration(item, verdict, len(runs), len(readable), share,
                                     sum(c == item.answer for c in choices) / len(runs)))
    return out


def filter_counts(blind: BlindFilterResult, validation: ValidationResult,
                  calibration: Sequence[RecallCalibration]) -> list[dict]:
    """Kept and discarded at each step, as rows for a table."""
    verdicts = Counter(c.verdict for c in calibration)
    return [
        {"step": "candidates", "in": blind.counts["candidates"], "kept": blind.counts["candidates"],
         "discarded": 0, "note": ""},
        {"step": "blind filter", "in": blind.counts["candidates"], "kept": len(blind.kept),
         "discarded": len(blind.discarded),
         "note": f"{blind.n_unparsed} unreadable and {blind.n_failed} failed blind answers kept"},
        {"step": "with-history validation", "in": len(blind.kept), "kept": len(validation.kept),
         "discarded": len(validation.discarded),
         "note": f"{validation.min_agree} of {validation.n_evaluators} evaluators; "
                 f"{validation.n_unreadable} unreadable answers"},
        {"step": "calibration: main", "in": len(calibration), "kept": verdicts[MAIN],
         "discarded": len(calibration) - verdicts[MAIN], "note": f"{verdicts[HARD]} hard, {verdicts[INVALID]} invalid"},
    ]
