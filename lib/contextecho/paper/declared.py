"""What an experiment declares the manuscript reads from it: its variables and its tables.

Each experiment module holds one :class:`Declared` (``MANUSCRIPT``), made of its own
variables and tables and of the groups its shared stages write (the judges' calibration,
the protocol record): ``CALIBRATION + PROTOCOL + Declared(variables=..., tables=...)``.
A run's writer refuses a key or a table the experiment did not declare
(:class:`~contextecho.paper.outputs.Outputs`), and :func:`undeclared_keys` lists every
``{{< var notebook.key >}}`` of the manuscript that no experiment declares.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from .tables import Table
from .variables import Variable

_VAR = re.compile(r"\{\{<\s*var\s+([^\s>]+)\s*>\}\}")


class UndeclaredError(KeyError):
    """A variable key or a table the experiment did not declare."""

    def __str__(self) -> str:  # KeyError quotes its message; this one reads as a sentence
        return str(self.args[0])


@dataclass(frozen=True)
class Declared:
    """The variables and tables of one experiment (or of a group of its stages)."""

    variables: tuple[Variable, ...] = ()
    tables: tuple[Table, ...] = ()

    def __post_init__(self) -> None:
        for what, names in (("variable", [v.template for v in self.variables]),
                            ("table", [t.stem for t in self.tables])):
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ValueError(f"{what} {twice[0]!r} is declared twice")

    def __add__(self, other: "Declared") -> "Declared":
        return Declared(self.variables + other.variables, self.tables + other.tables)

    def variable(self, template: str) -> Variable:
        """The variable declared with this template (or plain key)."""
        for v in self.variables:
            if v.template == template:
                return v
        raise UndeclaredError(f"variable {template!r} is not declared by the experiment "
                              f"(declared: {', '.join(v.template for v in self.variables) or 'none'})")

    def table(self, stem: str) -> Table:
        """The table declared with this stem."""
        for t in self.tables:
            if t.stem == stem:
                return t
        raise UndeclaredError(f"table {stem!r} is not declared by the experiment "
                              f"(declared: {', '.join(t.stem for t in self.tables) or 'none'})")

    def declares(self, key: str) -> bool:
        """Whether ``key`` is one of the keys the declared variables write."""
        return any(v.matches(key) for v in self.variables)


def manuscript_keys(sources: Iterable[Path]) -> list[tuple[str, str]]:
    """(``file:line``, ``notebook.key``) of every ``{{< var >}}`` in ``sources``."""
    return [(f"{path}:{number}", key) for path in sources
            for number, line in enumerate(Path(path).read_text().splitlines(), start=1)
            for key in _VAR.findall(line)]


def undeclared_keys(sources: Iterable[Path], declared: Mapping[str, Declared],
                    others: Mapping[str, Iterable[str]] = {}) -> list[str]:
    """Every ``{{< var notebook.key >}}`` of ``sources`` that notebook ``notebook``'s
    experiment does not declare (``declared``: notebook -> its declaration), nor ``others``
    (a source that is not an experiment -> the keys it writes), one problem each."""
    problems = []
    for where, dotted in manuscript_keys(sources):
        section, _, key = dotted.partition(".")
        if key in set(others.get(section, ())):
            continue
        if section not in declared:
            problems.append(f"{where}: variable {dotted!r}: no experiment writes the section {section!r}")
        elif not declared[section].declares(key):
            problems.append(f"{where}: variable {dotted!r} is not declared by the {section} experiment")
    return problems
