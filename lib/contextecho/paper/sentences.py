"""Sentences the manuscript prints whose words depend on its numbers, generated from them.

A section whose estimate says nothing on a build (no variance, every verdict the same,
nothing recalled, no complete case) says so in one plain sentence, with the reason and what
would make it a measurement (:func:`measures_nothing`); where the estimate does say
something, the same code writes the section's result sentence instead. An experiment
composes such a sentence from the values it has already written (``run.out.variables``),
so the sentence and the tables print the same numbers, and declares it as a text variable.

A value that could not be estimated carries its reason (:func:`~.formats.not_estimable`);
a sentence names each reason once and refers to it, never inside parentheses of its own:
:func:`reason_of` reads the reason back, :func:`listing` groups the values of one reason.
"""
from __future__ import annotations

from typing import Any, Sequence

from .formats import NOT_ESTIMABLE, is_not_estimable

#: What would make an estimate of the embedded build a measurement.
CAPABLE_JUDGE = "a capable judge"
CAPABLE_TARGET = "a capable target"
PAPER_SCALE_SET = "the notebook's paper-scale set"


def measures_nothing(what: str, why: str, fix: str) -> str:
    """The plain sentence for an estimate that says nothing on this build:
    ``On this build <what> measures nothing: <why>; <fix> would make it a measurement.``"""
    for name, text in (("what", what), ("why", why), ("fix", fix)):
        if not text or not text.strip():
            raise ValueError(f"a sentence that says an estimate measures nothing needs {name}")
    return f"On this build {what.strip()} measures nothing: {why.strip()}; {fix.strip()} would make it a measurement."


def reason_of(value: Any) -> str | None:
    """The reason of a :func:`~.formats.not_estimable` value (None for any other value)."""
    if not is_not_estimable(value):
        return None
    return str(value)[len(NOT_ESTIMABLE) + 2:-1].strip()


def joined(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = [str(i) for i in items]
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def listing(values: Sequence[tuple[str, Any]]) -> str:
    """Labelled values as one clause, each reason named once: the values that were
    estimated as ``v (label)``, then those that were not, grouped by reason:
    ``1.00 (O) and 0.00 (C); E and N not estimable: <reason>``."""
    shown = [f"{value} ({label})" for label, value in values if reason_of(value) is None]
    by_reason: dict[str, list[str]] = {}
    for label, value in values:
        reason = reason_of(value)
        if reason is not None:
            by_reason.setdefault(reason, []).append(label)
    parts = [joined(shown)] if shown else []
    parts += [f"{joined(labels)} {NOT_ESTIMABLE}: {reason}" for reason, labels in by_reason.items()]
    return "; ".join(parts)


def estimates(values: Sequence[tuple[str, Any, Any]]) -> str:
    """Labelled estimates with their 95% intervals as one clause, each reason named once: the
    estimated ones as ``0.00, 95% CI [−0.01, 0.01], under <label>`` (one whose interval could
    not be computed, ``0.00 under <label>, without an interval: <reason>``), then those that
    were not, grouped by reason: ``not estimable under <label> and <label>: <reason>``."""
    shown, by_reason = [], {}
    for label, value, ci in values:
        reason = reason_of(value)
        if reason is not None:
            by_reason.setdefault(reason, []).append(label)
        elif reason_of(ci) is not None:
            shown.append(f"{value} under {label}, without an interval: {reason_of(ci)}")
        else:
            shown.append(f"{value}, 95% CI {ci}, under {label}")
    parts = [joined(shown)] if shown else []
    parts += [f"{NOT_ESTIMABLE} under {joined(labels)}: {reason}" for reason, labels in by_reason.items()]
    return "; ".join(parts)
