"""What a notebook leaves behind, in one folder per notebook (``paper/_generated/<name>/``):

    results/<name>.parquet    tidy results (cells, verdicts, estimates)
    figures/<name>.png|.pdf   every figure in both formats, one style (:func:`style`)
    tables/<name>.md          Markdown tables for ``{{< include >}}``
    variables.yml             ``{<notebook>: {key: number or short text}}``
    manifest.json             the run log: commit, parameters, models, the counts of every batch, time
    <notebook>.ipynb          the executed copy (written by papermill)

:func:`merge_variables` joins the notebooks' variables files into the manuscript's and
fails on a key that two files define.
"""
from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
import yaml

from ..engine.paths import REPO_ROOT

GENERATED = REPO_ROOT / "paper" / "_generated"
SUBDIRS = ("results", "figures", "tables")


class DuplicateVariableError(ValueError):
    """Two variables files define the same key."""


#: How the manuscript says a value could not be estimated, before the reason.
NOT_ESTIMABLE = "not estimable"
#: What a value that could not be estimated may never be alone: the reader must learn why.
BARE_MISSING = frozenset({"n/a", "na", "nan", NOT_ESTIMABLE})


def not_estimable(reason: str) -> str:
    """A manuscript value that could not be estimated, with why (which arm had no valid
    verdict, how many units were left out): ``not estimable (<reason>)``."""
    if not reason or not reason.strip():
        raise ValueError("a value that could not be estimated needs the reason why")
    return f"{NOT_ESTIMABLE} ({reason.strip()})"


def _plain(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            raise ValueError("a manuscript variable is NaN or infinite; say why in text instead")
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in BARE_MISSING:
        raise ValueError(f"a manuscript variable is {value!r}; say why it could not be estimated "
                         "(paper.outputs.not_estimable) instead")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def style() -> None:
    """The one figure style of the paper."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 200, "font.size": 9,
                         "axes.spines.top": False, "axes.spines.right": False,
                         "axes.grid": True, "grid.alpha": 0.3, "figure.figsize": (6.0, 3.6),
                         "savefig.bbox": "tight",
                         # long tick labels of one panel must not run into the next
                         "figure.constrained_layout.use": True})


@dataclass
class Outputs:
    """Writer for one notebook's files; the run log beside them (``manifest.json``) is the
    engine's :class:`~contextecho.engine.manifest.RunLog`, written to :attr:`manifest`."""

    name: str
    directory: Path
    variables: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, name: str, directory: str | Path | None = None) -> "Outputs":
        path = Path(directory) if directory else GENERATED / name
        path = path if path.is_absolute() else REPO_ROOT / path
        for sub in SUBDIRS:  # only what this writer manages; the executed copy stays
            shutil.rmtree(path / sub, ignore_errors=True)
        for stale in ("variables.yml", "manifest.json"):
            (path / stale).unlink(missing_ok=True)
        for sub in SUBDIRS:
            (path / sub).mkdir(parents=True, exist_ok=True)
        style()
        return cls(name, path)

    @property
    def manifest(self) -> Path:
        """Where the run log goes."""
        return self.directory / "manifest.json"

    def parquet(self, stem: str, frame: pd.DataFrame) -> Path:
        path = self.directory / "results" / f"{stem}.parquet"
        out = frame.copy()
        for column in out.columns:  # nested dicts/objects -> JSON text, so Parquet takes them
            if out[column].dtype == object and out[column].map(lambda v: isinstance(v, (dict, list, tuple))).any():
                out[column] = out[column].map(lambda v: json.dumps(v, sort_keys=True, default=str)
                                              if isinstance(v, (dict, list, tuple)) else v)
        out.attrs = {}
        out.to_parquet(path, index=False)
        return path

    def figure(self, stem: str, fig) -> Path:
        png = self.directory / "figures" / f"{stem}.png"
        fig.savefig(png)
        fig.savefig(png.with_suffix(".pdf"))
        return png

    def table(self, stem: str, markdown: str) -> Path:
        path = self.directory / "tables" / f"{stem}.md"
        path.write_text(markdown if markdown.endswith("\n") else markdown + "\n")
        return path

    def set(self, **values: Any) -> None:
        for key, value in values.items():
            try:
                self.variables[key] = _plain(value)
            except ValueError as exc:
                raise ValueError(f"{self.name}.{key}: {exc}") from None

    def default(self, reason: str, /, *keys: str) -> None:
        """Set ``keys`` not set yet to :func:`not_estimable` with ``reason`` (a result that
        could not be estimated is said so in the manuscript, with why, never left a
        dangling reference)."""
        for key in keys:
            self.variables.setdefault(key, not_estimable(reason))

    def write_variables(self) -> Path:
        """Write ``variables.yml`` (``{<notebook>: {key: value}}``); return its path."""
        path = self.directory / "variables.yml"
        path.write_text(yaml.safe_dump({self.name: self.variables}, sort_keys=True, allow_unicode=True))
        return path


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


#: A variable whose key ends so is a percentage: the manuscript shows it with its sign.
PERCENT_SUFFIX = "_pct"


def manuscript_form(data: Mapping[str, Any]) -> dict[str, Any]:
    """The variables as the manuscript shows them: a percentage (a key ending
    :data:`PERCENT_SUFFIX`) carries its own sign (``12.5%``), so that one that could not be
    estimated reads as its reason with no stray ``%`` after it (the manuscript writes
    ``{{< var k_pct >}}``, never ``{{< var k_pct >}}%``); everything else as it is."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out[key] = manuscript_form(value)
        elif str(key).endswith(PERCENT_SUFFIX) and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = f"{value}%"
        else:
            out[key] = value
    return out


def merge_variables(files: Iterable[Path]) -> dict[str, Any]:
    """Merge variables files into one mapping in the manuscript's form
    (:func:`manuscript_form`); a key defined twice is an error."""
    merged: dict[str, Any] = {}
    owner: dict[str, Path] = {}
    for path in files:
        data = yaml.safe_load(Path(path).read_text()) or {}
        for dotted in _flatten(data):
            parts = dotted.split(".")
            clash = [p for p in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if p in owner]
            clash += [k for k in owner if k.startswith(dotted + ".")]
            if clash:
                raise DuplicateVariableError(
                    f"variable {dotted!r} in {path} collides with {clash[0]!r} from {owner[clash[0]]}")
            owner[dotted] = Path(path)
        _deep_update(merged, manuscript_form(data))
    return merged


def _deep_update(into: dict, data: Mapping) -> None:
    for key, value in data.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _deep_update(into[key], value)
        else:
            into[key] = dict(value) if isinstance(value, Mapping) else value
