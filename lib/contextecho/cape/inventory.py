"""A Likert self-report inventory (MPI-120 by default), read from disk at run time.

The CSV has the MPI columns ``label_raw, text, label_ocean, key``: an IPIP facet
label, the item as a second-person verb phrase ("Worry about things"), its OCEAN
trait and its key (+1: agreeing raises the trait, -1: lowers it). Any inventory in
these columns loads the same way (``load_inventory("mpi_1k")`` reads the 989-item
MPI-1k). Rows whose key is not +1/-1 cannot be scored; they are kept out of
``items`` and listed in ``excluded`` (never dropped silently).

The inventory text is MIT-licensed but never committed: it is read from
``data/mpi/`` (filled by ``make data``) or, failing that, from ``shared/data/mpi/``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..engine.paths import data_dir, shared_dir
from ..sessions.corpus import read_manifest
from ..engine.usage import UsageError

TRAITS = ("O", "C", "E", "A", "N")
INVENTORY_COLUMNS = ("label_raw", "text", "label_ocean", "key")


class InventoryNotFound(UsageError, FileNotFoundError):
    """Neither data/mpi/ nor shared/data/mpi/ holds the requested inventory."""


@dataclass(frozen=True, slots=True)
class InventoryItem:
    index: int  # 0-based row in the inventory file (its identity across orderings)
    text: str  # verb phrase, as in the file: "Worry about things"
    trait: str  # one of TRAITS
    key: int  # +1 or -1
    label: str  # the IPIP facet label


@dataclass(frozen=True)
class Inventory:
    name: str
    items: tuple[InventoryItem, ...]
    path: Path
    sha256: str  # of the file's bytes: goes into every administration record
    excluded: pd.DataFrame = field(repr=False, compare=False, default_factory=pd.DataFrame)

    def __len__(self) -> int:
        return len(self.items)

    def by_trait(self) -> dict[str, tuple[InventoryItem, ...]]:
        return {t: tuple(i for i in self.items if i.trait == t) for t in TRAITS}

    def ipip_facets(self) -> dict[int, str]:
        """Item index -> its IPIP facet, ``trait:label`` (MPI-120: 30 facets of 4 items, 6 per trait)."""
        return {item.index: f"{item.trait}:{item.label}" for item in self.items}

    def subset(self, indices) -> "Inventory":
        """The inventory restricted to item ``indices`` (file rows), in that order."""
        lookup = {i.index: i for i in self.items}
        return Inventory(self.name, tuple(lookup[int(k)] for k in indices), self.path,
                         self.sha256, self.excluded)

    def balanced(self, n_items: int) -> "Inventory":
        """A trait-balanced subset of about ``n_items`` items: the first ``n_items // 5`` of
        each trait (at least one), interleaved O, C, E, A, N; the whole inventory for 0 or
        at least its length."""
        if n_items <= 0 or n_items >= len(self):
            return self
        per = max(1, n_items // len(TRAITS))
        groups = self.by_trait()
        return self.subset([groups[t][k].index for k in range(per) for t in TRAITS if k < len(groups[t])])


def inventory_manifest() -> Path:
    """The committed list of the inventories `make data` fetches (file, sha256, source)."""
    return data_dir() / "inventory_manifest.csv"


def inventory_names() -> list[str]:
    """The inventories :func:`load_inventory` finds by name: those `make data` fetches and
    any CSV already in data/mpi."""
    fetched = [Path(r["file"]).stem for r in read_manifest(inventory_manifest()) if r["file"].endswith(".csv")]
    present = [p.stem for p in sorted((data_dir() / "mpi").glob("*.csv"))]
    return list(dict.fromkeys(fetched + present))


def inventory_path(name: str = "mpi_120") -> Path:
    """``data/mpi/<name>.csv`` if present, else ``shared/data/mpi/<name>.csv``."""
    candidates = [data_dir() / "mpi" / f"{name}.csv", shared_dir() / "data" / "mpi" / f"{name}.csv"]
    for path in candidates:
        if path.is_file():
            return path
    raise InventoryNotFound(
        f"inventory {name!r} not found; looked in " + ", ".join(str(p) for p in candidates)
        + ". Run `make data` (or copy the MPI CSVs from ../shared/data/mpi/ into data/mpi/).")


def load_inventory(name_or_path: str | Path = "mpi_120") -> Inventory:
    """Read and validate an inventory; see the module doc for the columns."""
    path = Path(name_or_path)
    if path.suffix != ".csv":
        path = inventory_path(str(name_or_path))
    raw = path.read_bytes()
    frame = pd.read_csv(path, dtype={"label_raw": str, "text": str, "label_ocean": str})
    missing = [c for c in INVENTORY_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {list(INVENTORY_COLUMNS)}")
    frame = frame.reset_index(drop=True)
    frame["key"] = pd.to_numeric(frame["key"], errors="coerce")
    bad_trait = ~frame["label_ocean"].isin(TRAITS)
    bad_key = ~frame["key"].isin([1, -1])
    bad_text = frame["text"].isna() | (frame["text"].fillna("").str.strip() == "")
    bad = bad_trait | bad_key | bad_text
    excluded = frame[bad].assign(reason=[
        "trait" if t else "key" if k else "text"
        for t, k in zip(bad_trait[bad], bad_key[bad])])
    items = tuple(InventoryItem(int(i), str(r.text).strip(), str(r.label_ocean), int(r.key), str(r.label_raw))
                  for i, r in frame[~bad].iterrows())
    if not items:
        raise ValueError(f"{path}: no scorable items")
    return Inventory(path.stem, items, path, hashlib.sha256(raw).hexdigest(), excluded)
