"""What a notebook leaves behind, in one folder per notebook (``paper/_generated/<name>/``):

    results/<name>.parquet    tidy results (cells, verdicts, estimates)
    figures/<name>.png|.pdf   every figure in both formats (:mod:`contextecho.paper.figures`)
    tables/<name>.md          the declared tables, for ``{{< include >}}`` (:mod:`contextecho.paper.tables`)
    variables.yml             ``{<notebook>: {key: value as the manuscript writes it}}``
    manifest.json             the run log: commit, parameters, models, the counts of every batch, time
    <notebook>.ipynb          the executed copy (written by papermill)

:class:`Outputs` writes only what the experiment declared (its
:class:`~contextecho.paper.declared.Declared`): a variable is a declared key (or a key of a
declared pattern, such as ``gap_{target}``), given as a raw number and written by its
declared kind (:mod:`contextecho.paper.formats`); a table is a declared table, given as a
frame. :func:`merge_variables` joins the notebooks' variables files into the manuscript's
and fails on a key that two files define.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
import yaml

from ..engine.paths import REPO_ROOT
from .declared import Declared
from .formats import BARE_MISSING, is_not_estimable, not_estimable
from .variables import NO_ESTIMATE, TARGET, Variable

GENERATED = REPO_ROOT / "paper" / "_generated"
SUBDIRS = ("results", "figures", "tables")


class DuplicateVariableError(ValueError):
    """Two variables files define the same key."""


def manuscript_value(variable: Variable, value: Any, why: str | None = None) -> Any:
    """``value`` as the manuscript writes it by ``variable``'s kind; a missing value (None,
    NaN, an interval with a missing bound) is :func:`not_estimable` with ``why``, and an
    error without one; a :func:`not_estimable` text stays as it is; a bare "n/a" is refused."""
    if is_not_estimable(value):
        return value
    if isinstance(value, str) and value.strip().lower() in BARE_MISSING:
        raise ValueError(f"a manuscript variable is {value!r}; say why it could not be estimated "
                         "(paper.formats.not_estimable) instead")
    if variable.kind.missing(value):
        if why:
            return not_estimable(why)
        raise ValueError(f"a manuscript variable is missing ({value!r}); say why it could not be estimated")
    return variable.kind.variable(value)


@dataclass
class Outputs:
    """Writer for one notebook's files; the run log beside them (``manifest.json``) is the
    engine's :class:`~contextecho.engine.manifest.RunLog`, written to :attr:`manifest`.
    ``declared``: the variables and tables the experiment declares, the only ones it writes;
    ``variables``: each key as the manuscript writes it."""

    name: str
    directory: Path
    declared: Declared = field(default_factory=Declared)
    variables: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def folder(name: str, directory: str | Path | None = None) -> Path:
        """Where notebook ``name`` writes (``directory``, relative to the repository root;
        default ``paper/_generated/<name>``), without touching it."""
        path = Path(directory) if directory else GENERATED / name
        return path if path.is_absolute() else REPO_ROOT / path

    @classmethod
    def open(cls, name: str, directory: str | Path | None = None, declared: Declared = Declared()) -> "Outputs":
        path = cls.folder(name, directory)
        for sub in SUBDIRS:  # only what this writer manages; the executed copy stays
            shutil.rmtree(path / sub, ignore_errors=True)
        for stale in ("variables.yml", "manifest.json"):
            (path / stale).unlink(missing_ok=True)
        for sub in SUBDIRS:
            (path / sub).mkdir(parents=True, exist_ok=True)
        return cls(name, path, declared)

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

    def table(self, stem: str, frame: pd.DataFrame) -> Path:
        """Write the declared table ``stem`` of ``frame`` as ``tables/<stem>.md``
        (:meth:`~contextecho.paper.tables.Table.render`)."""
        path = self.directory / "tables" / f"{stem}.md"
        path.write_text(self.declared.table(stem).render(frame))
        return path

    def set(self, **values: Any) -> None:
        """Set declared keys that take no field to raw values (a value that could not be
        estimated: :func:`not_estimable` with why)."""
        for key, value in values.items():
            self._set(self.declared.variable(key), key, value)

    def put(self, template: str, value: Any, *, why: str | None = None, **fields: str) -> None:
        """Set the key of the declared ``template`` for these ``fields`` (``target``: a model
        string) to a raw ``value``; a missing one is :func:`not_estimable` with ``why``."""
        variable = self.declared.variable(template)
        self._set(variable, variable.key(**fields), value, why)

    def per_target(self, templates: Sequence[str], values: Mapping[str, Mapping[str, Any]], targets: Sequence[str],
                   why: Mapping[str, str] | str = NO_ESTIMATE, **fields: str) -> None:
        """Every per-target template of ``templates`` for every one of ``targets``: keyed by
        the target's slug, and unsuffixed for the first (the one the manuscript names as
        ``target``); ``values``: target -> template -> raw value; a value a target lacks (or
        a missing one) is :func:`not_estimable` with ``why`` (one reason, or one per target)."""
        for template in templates:
            variable = self.declared.variable(template)
            if not variable.per_target:
                raise ValueError(f"{self.name}: variable {template!r} is not per target (no {{{TARGET}}} field)")
            for target in targets:
                reason = why if isinstance(why, str) else why.get(target) or NO_ESTIMATE
                value = values.get(target, {}).get(template)
                self._set(variable, variable.key(**fields, target=target), value, reason)
                if target == targets[0]:
                    self._set(variable, variable.key(**fields), value, reason)

    def _set(self, variable: Variable, key: str, value: Any, why: str | None = None) -> None:
        if variable.fields and key == variable.template:
            raise ValueError(f"{self.name}: variable {key!r} takes the fields {', '.join(variable.fields)}; "
                             "set it with put or per_target")
        try:
            self.variables[key] = manuscript_value(variable, value, why)
        except ValueError as exc:
            raise ValueError(f"{self.name}.{key}: {exc}") from None

    def default(self, reason: str, /, *keys: str) -> None:
        """Set declared ``keys`` not set yet to :func:`not_estimable` with ``reason`` (a
        result that could not be estimated is said so in the manuscript, with why, never
        left a dangling reference)."""
        for key in keys:
            self.declared.variable(key)
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


def merge_variables(files: Iterable[Path]) -> dict[str, Any]:
    """Merge variables files into one mapping; a key defined twice is an error."""
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
        _deep_update(merged, data)
    return merged


def _deep_update(into: dict, data: Mapping) -> None:
    for key, value in data.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _deep_update(into[key], value)
        else:
            into[key] = dict(value) if isinstance(value, Mapping) else value
