"""Progress bars of rounds of calls: widgets where a person watches a notebook, text where a
console shows the run.

``tqdm.auto`` draws a widget in a Jupyter kernel (JupyterLab, with ipywidgets installed) and
a text bar elsewhere. A notebook run by ``contextecho notebook`` or ``make paper`` runs in a
kernel too, but nobody watches it there: its console shows what the kernel writes to
stderr. Such a runner sets :data:`PROGRESS_ENV` to ``text`` for the kernel it starts, and
the bars are text bars on stderr, which the console shows as they move (and the executed
notebook keeps as its stderr output).
"""
from __future__ import annotations

import os
import sys
from typing import Any

#: ``text``: text bars on stderr even inside a Jupyter kernel (a console run of a notebook).
PROGRESS_ENV = "CONTEXTECHO_PROGRESS"


def progress(iterable: Any = None, **kwargs: Any):
    """A tqdm bar over ``iterable`` (or a manual one with ``total=``), as the module doc says."""
    if os.environ.get(PROGRESS_ENV, "").strip().lower() == "text":
        from tqdm.std import tqdm

        return tqdm(iterable, file=sys.stderr, **kwargs)
    from tqdm.auto import tqdm

    return tqdm(iterable, **kwargs)


def say(line: str) -> None:
    """Print ``line`` without breaking a bar that is being drawn (``tqdm.write``)."""
    from tqdm.auto import tqdm

    tqdm.write(line)
