"""Question orderings (CAPE §6.4): the file's order, random, trait-grouped, cyclic rotation.

- ``original``: the inventory file's order (MPI-120's file already cycles N E O A C).
- ``random``: a permutation drawn from the ``numpy.random.Generator`` passed in (no
  default seed: the caller derives one and records it).
- ``trait_grouped``: all O items, then C, E, A, N, each in file order.
- ``cyclic``: one item from each trait in the fixed rotation O C E A N, repeated
  (file order within a trait; a trait that runs out is skipped).
"""
from __future__ import annotations

import numpy as np

from .inventory import TRAITS, Inventory

ORDERINGS = ("original", "random", "trait_grouped", "cyclic")


def order_items(inventory: Inventory, ordering: str = "original",
                rng: np.random.Generator | None = None) -> Inventory:
    """The inventory with its items reordered by ``ordering`` (one of :data:`ORDERINGS`)."""
    items = inventory.items
    if ordering == "original":
        order = [i.index for i in items]
    elif ordering == "random":
        if not isinstance(rng, np.random.Generator):
            raise ValueError("the random ordering needs an explicitly seeded numpy Generator (rng=...)")
        order = [items[k].index for k in rng.permutation(len(items))]
    elif ordering == "trait_grouped":
        order = [i.index for t in TRAITS for i in items if i.trait == t]
    elif ordering == "cyclic":
        groups = inventory.by_trait()
        depth = max(len(g) for g in groups.values())
        order = [groups[t][k].index for k in range(depth) for t in TRAITS if k < len(groups[t])]
    else:
        raise ValueError(f"unknown ordering {ordering!r}; expected one of {ORDERINGS}")
    return inventory.subset(order)
