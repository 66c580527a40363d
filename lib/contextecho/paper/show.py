"""What an experiment returns to its notebook, and how the notebook shows it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass
class Result:
    name: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    output_dir: Path | None = None


def show(result: Result) -> None:
    """Display the counts, every table and every figure (in a notebook; prints elsewhere)."""
    try:
        from IPython.display import Image, Markdown, display
    except ImportError:  # pragma: no cover - IPython ships with ipykernel
        display = print
        Image = Markdown = lambda *a, **k: a  # noqa: E731
    display(Markdown(f"**Calls** (cached / computed / failed / judged invalid): {result.counts}"))
    for title, table in result.tables.items():
        display(Markdown(f"### {title}"))
        display(table)
    for figure in result.figures:
        display(Image(filename=str(figure)))
    display(Markdown(f"Outputs: `{result.output_dir}`"))
