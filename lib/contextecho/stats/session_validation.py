"""The harness's summary of a session-validation run, call for call.

``analysis/analyze_session_validation.py`` ``summarize`` (``:44-104``) reads the cells e18
stored for one target (``runs/README.md``, family ``session_validation``):

* a cell file that does not parse counts as a parse error (its position, arm and probe come
  from its path); every other stored cell is a row with its stored ``score``;
* ``valid_score`` (``:15-16``) keeps an int score of the judge's scale (0-3); the judge
  parser's −1 is *not* valid (``invalid_scores``), unlike the Fig.-2 loader, which averages
  −1 in;
* ``arm_means``: the mean of the valid scores per arm; ``gap_filler_minus_claude`` = filler −
  real (NaN when an arm has none); ``completion_rate`` = valid / expected, expected = positions
  × probes × 2;
* ``trajectory``: per observed position (sorted by label), each arm's mean (``None`` without a
  valid score), its Coding-Self (C01-C05) mean and its count; ``gap`` only where both means
  exist;
* ``missing``: per observed position (or, with none, every expected label ``P00``...) and
  arm, how many probes have no stored cell at all;
* ``acceptable``: no parse error, no invalid score, at least 95 % valid cells, both arms
  present, and at least ``max(2, positions − 1)`` positions observed.

The arms are ours (``real``, ``filler``) in, the harness's names (``claude_session``,
``filler``) out, as its summary writes them. The harness's means are ``numpy.mean`` of
Python lists; so are these.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Our arm -> the harness's arm name, in the harness's order.
HARNESS_ARMS = {"real": "claude_session", "filler": "filler"}
CODING = frozenset({"C01", "C02", "C03", "C04", "C05"})
MIN_COMPLETION = 0.95


@dataclass(frozen=True)
class ValidationCell:
    """One stored cell of a validation run: where, which arm (``real``/``filler``) and
    probe, and the score it stored (``readable=False``: a cell file that did not parse)."""

    position: str
    arm: str
    probe: str
    score: Any = None
    readable: bool = True


def valid_score(value: Any) -> bool:
    """A score on the judge's 0-3 scale (the parser's −1 is not)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3


def session_validation_summary(cells: Sequence[ValidationCell], *, root: str, expected_positions: int = 12,
                               probes: int = 25) -> dict:
    """The harness's summary of one target's stored validation cells (module doc)."""
    arms = tuple(HARNESS_ARMS.values())
    rows = [{"position": c.position, "arm": HARNESS_ARMS[c.arm], "probe": c.probe, "score": c.score,
             "error": not c.readable} for c in cells]
    expected = expected_positions * probes * len(arms)
    parse_errors = [r for r in rows if r["error"]]
    scored = [r for r in rows if not r["error"] and valid_score(r["score"])]
    invalid = [r for r in rows if not r["error"] and not valid_score(r["score"])]

    by_arm: dict[str, list] = defaultdict(list)
    by_pos_arm: dict[tuple, list] = defaultdict(list)
    coding_by_pos_arm: dict[tuple, list] = defaultdict(list)
    for r in scored:
        by_arm[r["arm"]].append(r["score"])
        by_pos_arm[(r["position"], r["arm"])].append(r["score"])
        if r["probe"] in CODING:
            coding_by_pos_arm[(r["position"], r["arm"])].append(r["score"])
    arm_means = {arm: float(np.mean(values)) for arm, values in by_arm.items() if values}
    gap = arm_means.get("filler", math.nan) - arm_means.get("claude_session", math.nan)

    positions = sorted({r["position"] for r in rows})
    trajectory = []
    for pos in positions:
        item: dict[str, Any] = {"position": pos}
        for arm in arms:
            values = by_pos_arm.get((pos, arm), [])
            coding = coding_by_pos_arm.get((pos, arm), [])
            item[f"{arm}_mean"] = float(np.mean(values)) if values else None
            item[f"{arm}_coding_mean"] = float(np.mean(coding)) if coding else None
            item[f"{arm}_n"] = len(values)
        if item["filler_mean"] is not None and item["claude_session_mean"] is not None:
            item["gap"] = item["filler_mean"] - item["claude_session_mean"]
        trajectory.append(item)

    missing = []
    for pos in positions or [f"P{i:02d}" for i in range(expected_positions)]:
        for arm in arms:
            have = {r["probe"] for r in rows if r["position"] == pos and r["arm"] == arm}
            if len(have) < probes:
                missing.append({"position": pos, "arm": arm, "missing_count": probes - len(have)})

    completion = len(scored) / expected if expected else 0.0
    return {
        "root": root,
        "expected_cells": expected,
        "json_files": len(rows),
        "parse_errors": len(parse_errors),
        "invalid_scores": len(invalid),
        "scored_cells": len(scored),
        "completion_rate": completion,
        "arm_means": arm_means,
        "gap_filler_minus_claude": gap,
        "positions_observed": len(positions),
        "trajectory": trajectory,
        "missing": missing,
        "acceptable": (not parse_errors and not invalid and completion >= MIN_COMPLETION
                       and all(arm in arm_means for arm in arms)
                       and len(positions) >= max(2, expected_positions - 1)),
    }
