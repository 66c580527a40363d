"""What an experiment shows: a saved figure that a notebook displays inline, and the
result a whole run returns to its caller (the command line, the tests)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class SavedFigure:
    """A figure written under a notebook's outputs (PNG and PDF); as the last expression
    of a notebook cell it shows inline (its PNG)."""

    path: Path

    def _repr_png_(self) -> bytes:
        return self.path.read_bytes()


@dataclass
class Result:
    """One run of one experiment: its titled tables, figures (PNG paths), manuscript
    variables, the counts of each batch (as the run log holds them) and its folder."""

    name: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    batches: dict[str, dict[str, int]] = field(default_factory=dict)
    output_dir: Path | None = None
