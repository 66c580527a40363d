"""Logical consistency (CAPE App. A): are the answers to item pairs that should agree on
the same side of the scale, and those to pairs that contradict each other on opposite sides?

CAPE uses 38 semantically similar and 73 logically contradictory pairs it does not publish.
Ours are built from the inventory by a stated rule (:func:`item_pairs`): every two items of
the same IPIP facet (``label_raw``) form a pair, *similar* when they are keyed alike and
*contradictory* when keyed oppositely. CAPE's two examples are pairs of this rule: "Take
charge" and "Try to lead others" (Assertiveness, both +1: similar), "Distrust people" (−1) and
"Trust what people say" (+1, both Trust: contradictory). On MPI-120 (30 facets of 4 items)
the rule gives 107 similar and 73 contradictory pairs: the 73 is CAPE's count, the 107 is not
its 38 (which 38 it kept, it does not say).

A pair is read on the answers' *agreement* with the item as written, A (very accurate) = 5
… E (very inaccurate) = 1, before any reverse key (``score`` for a +1 item, ``6 − score``
for a −1 item): contradictory items should get opposite agreement. CAPE counts a pair
correct when its two scores are on the same side of 2.5 (similar) or on opposite sides
(contradictory). On this 1–5 scale 2.5 lies between "moderately inaccurate" (2) and the
neutral option (3), so it counts a neutral answer as agreeing; we split at the scale's
midpoint, :data:`MIDPOINT` = 3: above it an answer agrees (A, B), below it disagrees (D, E),
the neutral answer (C) takes no side, so a pair with one is answered but correct under
neither kind (counted in ``n_neutral``).

Each pair is read in every run that asked both items (a run is a pass through the items:
any factor, variant and repetition), in each setting; accuracy is the share of those pair
answers, both answers valid, that are correct.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from .administer import SETTINGS
from .inventory import Inventory

SIMILAR = "similar"
CONTRADICTORY = "contradictory"
KINDS = (SIMILAR, CONTRADICTORY)
#: The middle of the 1–5 agreement scale: the neutral option, on neither side.
MIDPOINT = 3.0


def item_pairs(inventory: Inventory) -> pd.DataFrame:
    """Every two items of one IPIP facet (module doc): first, second (item indices, file
    order), facet, trait, kind (similar: keyed alike; contradictory: keyed oppositely)."""
    rows = []
    by_facet: dict[tuple[str, str], list] = {}
    for item in inventory.items:
        by_facet.setdefault((item.trait, item.label), []).append(item)
    for (trait, facet), items in by_facet.items():
        for a, b in combinations(sorted(items, key=lambda i: i.index), 2):
            rows.append({"first": a.index, "second": b.index, "facet": facet, "trait": trait,
                         "kind": SIMILAR if a.key == b.key else CONTRADICTORY})
    return pd.DataFrame(rows, columns=["first", "second", "facet", "trait", "kind"])


def agreement(answers: pd.DataFrame) -> pd.Series:
    """Each answer's agreement with its item as written, 5 (A) … 1 (E): the score before its
    reverse key (NaN where the answer was invalid)."""
    return answers["score"].where(answers["key"] == 1, 6 - answers["score"])


def pair_answers(answers: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Every pair read in every run (and setting) that asked both its items: setting, run_id,
    the pair's columns, the two agreements (``a``, ``b``; NaN: invalid), ``answered`` (both
    valid), ``neutral`` (answered, one at :data:`MIDPOINT`) and ``correct``."""
    scored = answers.assign(agreement=agreement(answers))[["setting", "run_id", "item", "agreement"]]
    first = pairs.merge(scored.rename(columns={"item": "first", "agreement": "a"}), on="first")
    both = first.merge(scored.rename(columns={"item": "second", "agreement": "b"}),
                       on=["setting", "run_id", "second"])
    sides = np.sign(both["a"] - MIDPOINT) * np.sign(both["b"] - MIDPOINT)  # NaN where one is invalid
    both["answered"] = both["a"].notna() & both["b"].notna()
    both["neutral"] = both["answered"] & (sides == 0)
    both["correct"] = both["answered"] & np.where(both["kind"] == SIMILAR, sides == 1, sides == -1)
    return both


def pair_accuracy(answers: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """One row per setting and kind of pair: the rule's pairs (``n_pairs``), those a run asked
    both items of (``n_asked``), the pair answers with both answers valid (``n_answered``, over
    runs), those with a neutral answer (``n_neutral``), accuracy in % of the answered, and a
    note where it is undefined."""
    read = pair_answers(answers, pairs)
    settings = [s for s in SETTINGS if s in set(answers["setting"])] or list(SETTINGS)
    rows = []
    for setting in settings:
        for kind in KINDS:
            mine = read[(read["setting"] == setting) & (read["kind"] == kind)]
            answered = mine[mine["answered"]]
            asked = len(mine[["first", "second"]].drop_duplicates())
            why = ("" if len(answered) else
                   f"no run asked both items of a {kind} pair" if not asked else
                   f"no run answered both items of a {kind} pair validly")
            rows.append({"setting": setting, "kind": kind, "n_pairs": int((pairs["kind"] == kind).sum()),
                         "n_asked": asked, "n_answered": len(answered), "n_neutral": int(answered["neutral"].sum()),
                         "accuracy": 100 * float(answered["correct"].mean()) if len(answered) else float("nan"),
                         "note": f"not estimable: {why}" if why else ""})
    return pd.DataFrame(rows)
