"""The tables a person reads: declared columns, human headers with units, one format per
column, notes as footnotes, and a width that fits the page.

An experiment declares each table it writes (:class:`Table`: its stem, its title and its
:class:`Column` s, each a human header, the :mod:`kind <contextecho.paper.formats>` of its
values and the frame column(s) it reads) and hands the paper layer the frame of raw
numbers; :meth:`Table.render` writes the Markdown pipe table that the manuscript includes
(``{{< include >}}``), the same for HTML and for the PDF:

- each cell written by its column's kind (a missing value: :data:`~.formats.MISSING_CELL`),
  a unit in its header (``Real (%)``), numbers aligned right, text left;
- a row's note (the frame's ``note`` column) a footnote under the table, marked on the
  row's first cell (``S1^a^``), one mark per distinct note, never a column of its own; the
  notes are one paragraph, a line each, so that they stay with the table on the PDF page;
- a row, or a column, whose every value is missing says why: :func:`unexplained_missing`
  finds, in a rendered table, such a row or column without a footnote mark (the
  manuscript check fails on it);
- within :data:`WIDTH` characters and :data:`COLUMNS` columns a row: a table wider than
  that is split into parts, each repeating the columns that name a row (the first
  ``index`` columns) and taking as many of the next columns, in the declared order, as
  fit; a part after the first is headed ``<title> (continued)``, a paragraph of its own
  (Quarto's Typst output drops the caption of a table without an identifier,
  quarto-cli issue 11733, so a caption would show in the HTML only);
- the relative column widths set by the separator line (Pandoc sizes a table whose line
  is longer than 72 characters by its dashes), so a long text column wraps at its words
  rather than squeezing a number.

The manuscript writes a table's caption (``: caption {#tbl-x}``) on the line before its
include, so that the notes after the table never part it from its caption.
"""
from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any, Sequence

import pandas as pd

from .formats import (COUNT, MISSING_CELL, MODEL, P_VALUE, PERCENT, POINTS, POINTS_PP, TEXT, Estimate, Interval, Kind,
                      Model, is_missing)

#: The most characters a row of a table takes on the PDF page (cells and their padding).
WIDTH = 90
#: The most columns a table (or a part of one) has.
COLUMNS = 7
#: Characters a cell takes beyond its text (its inset on both sides, and a little slack).
PADDING = 3
#: A text cell wider than this wraps at its words.
WRAP = 18
#: Markdown characters a cell's text escapes (a cell is text, never markup).
_ESCAPE = re.compile(r"([\\`*_{}\[\]<>#+!|^~$@])")
#: How the heading of a continued part begins and ends (an emphasised paragraph).
CONTINUED_START, CONTINUED_END = "*", " (continued)*"
#: A footnote mark at the end of a rendered row's first cell.
_MARK = re.compile(r"\^([a-z]+)\^$")


@dataclass(frozen=True)
class Column:
    """One column of a declared table: its ``header`` (human words, the unit added from
    the kind: ``Real (%)``), the ``kind`` of its values, and ``source``, the frame column it
    reads (an interval: its two columns; an estimate with its interval: three).
    ``optional``: left out where the frame has no such column (a column only one protocol
    fills). ``widest``: the widest plausible text of a text column (the width check)."""

    header: str
    kind: Kind
    source: str | tuple[str, ...]
    optional: bool = False
    widest: str = ""

    def __post_init__(self) -> None:
        sources = (self.source,) if isinstance(self.source, str) else tuple(self.source)
        if len(sources) != self.kind.arity:
            raise ValueError(f"column {self.header!r}: a {self.kind.name} reads {self.kind.arity} frame "
                             f"column(s), got {', '.join(sources)}")

    @property
    def sources(self) -> tuple[str, ...]:
        return (self.source,) if isinstance(self.source, str) else tuple(self.source)

    @property
    def title(self) -> str:
        """The header as printed: with the kind's unit, unless the header names it."""
        unit = self.kind.unit
        return f"{self.header} ({unit})" if unit and unit not in self.header else self.header

    def values(self, frame: pd.DataFrame) -> list[Any]:
        """The raw value of each row (a tuple for an interval or an estimate)."""
        if not len(frame):
            return []
        if self.kind.arity == 1:
            return list(frame[self.source])
        return list(zip(*(frame[c] for c in self.sources)))


@dataclass(frozen=True)
class Table:
    """A declared table: ``stem`` (the file ``tables/<stem>.md``), ``title`` (what a notebook
    shows it as, and the caption of a continued part), its ``columns``; the first ``index``
    of them name a row (repeated in every part of a split table); ``notes``, the frame
    column whose text becomes the footnotes."""

    stem: str
    title: str
    columns: tuple[Column, ...]
    index: int = 1
    notes: str = "note"

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9_]+", self.stem):
            raise ValueError(f"table {self.stem!r}: a stem is lower-case letters, digits and _")
        if not 1 <= self.index < max(2, len(self.columns)) or len(self.columns) < 1:
            raise ValueError(f"table {self.stem!r}: index {self.index} must name at least one column and "
                             "leave one to show")

    def shown(self, frame: pd.DataFrame) -> tuple[Column, ...]:
        """The columns this frame fills (an optional one it lacks is left out); a required
        column the frame lacks is an error naming the table and the column."""
        out = []
        for column in self.columns:
            absent = [c for c in column.sources if c not in frame.columns]
            if absent and column.optional:
                continue
            if absent and len(frame):
                raise ValueError(f"table {self.stem!r}: column {column.header!r} reads {absent[0]!r}, which "
                                 f"the frame lacks (it has {', '.join(map(str, frame.columns)) or 'none'})")
            out.append(column)
        return tuple(out)

    def cells(self, frame: pd.DataFrame, columns: Sequence[Column]) -> list[list[str]]:
        """The text of every cell, row by row (a model column by its model names, unless
        two would read alike)."""
        out = []
        for column in columns:
            values = column.values(frame)
            kind = column.kind
            if isinstance(kind, Model):
                whole = {v for v in values if not is_missing(v)}
                if len({kind.cell(v) for v in whole}) < len(whole):
                    kind = TEXT  # two model names read alike: the whole strings
            try:
                out.append([kind.cell(v) for v in values])
            except ValueError as exc:
                raise ValueError(f"table {self.stem!r}, column {column.header!r}: {exc}") from None
        return [list(row) for row in zip(*out)] if out else [[] for _ in range(len(frame))]

    def footnotes(self, frame: pd.DataFrame) -> tuple[list[str], list[str]]:
        """Each row's footnote mark (empty: none) and the notes in mark order."""
        if self.notes not in frame.columns:
            return [""] * len(frame), []
        marks, notes = [], []
        for note in frame[self.notes]:
            text = "" if is_missing(note) else " ".join(str(note).split())
            if not text:
                marks.append("")
                continue
            if text not in notes:
                notes.append(text)
            marks.append(_mark(notes.index(text)))
        return marks, notes

    def layout(self, frame: pd.DataFrame) -> "Layout":
        """The cells, footnote marks and column widths of ``frame`` as this table shows it,
        and its parts: the index columns, then as many of the next columns as fit
        :data:`WIDTH` and :data:`COLUMNS` (one part when the table fits)."""
        columns = self.shown(frame)
        cells = self.cells(frame, columns)
        marks, notes = self.footnotes(frame)
        widths = [column_width(c, [row[i] for row in cells], marks if i == 0 else ()) for i, c in enumerate(columns)]
        # the declared index columns this frame shows (an optional one left out is not replaced)
        index = min(sum(1 for c in self.columns[:self.index] if c in columns), max(1, len(columns) - 1))
        head = list(range(min(index, len(columns))))
        parts: list[list[int]] = []
        current = list(head)
        for i in range(len(head), len(columns)):
            trial = current + [i]
            if len(current) > len(head) and (len(trial) > COLUMNS or row_width([widths[j] for j in trial]) > WIDTH):
                parts.append(current)
                current = head + [i]
            else:
                current = trial
        parts.append(current)
        return Layout(columns, cells, marks, notes, widths, [tuple(p) for p in parts])

    def render(self, frame: pd.DataFrame) -> str:
        """The Markdown the manuscript includes: the table (split into parts where wider than
        the page), then its notes as footnotes."""
        layout = self.layout(frame)
        out = []
        for number, part in enumerate(layout.parts):
            if number:
                out.append(f"{CONTINUED_START}{_escape(self.title)}{CONTINUED_END}\n")
            out.append(layout.pipe_table(part))
        if layout.notes:  # one paragraph, a line each (a trailing backslash breaks the line)
            out.append("\\\n".join(f"^{_mark(i)}^ {_escape(_sentence(note))}"
                                     for i, note in enumerate(layout.notes)) + "\n")
        return "\n".join(out)

    def fits(self, frame: pd.DataFrame) -> list[str]:
        """Every part of this table's rendering of ``frame`` that is wider than :data:`WIDTH`
        or has more than :data:`COLUMNS` columns, one problem each (none: it fits)."""
        layout = self.layout(frame)
        problems = []
        for number, part in enumerate(layout.parts, start=1):
            widths = [layout.widths[i] for i in part]
            if len(part) > COLUMNS or row_width(widths) > WIDTH:
                problems.append(f"table {self.stem!r} part {number}: {len(part)} columns, {row_width(widths)} "
                                f"characters a row (at most {COLUMNS} and {WIDTH}): "
                                + ", ".join(f"{layout.columns[i].title} {layout.widths[i]}" for i in part))
        return problems


def widest(kind: Kind) -> tuple[Any, ...]:
    """The widest plausible raw value(s) of ``kind`` (the width check's): a negative number
    at the edge of its scale, a p-value of three significant digits below 0.001."""
    one = {POINTS.name: -2.75, PERCENT.name: 100.0, POINTS_PP.name: -100.0, P_VALUE.name: 0.000123,
           COUNT.name: 12345, MODEL.name: "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"}
    base = kind.of if isinstance(kind, (Interval, Estimate)) else kind
    value = one.get(base.name, -1.234 if base.numeric else "x" * 12)
    if kind.arity == 1:
        return (value,)
    return (value,) * kind.arity


def column_width(column: Column, cells: Sequence[str], marks: Sequence[str] = ()) -> int:
    """The characters a column takes: its widest cell (a text cell wraps beyond :data:`WRAP`,
    never inside a word) or its header, which wraps at its words onto two lines at most."""
    marked = [len(c) + (len(m) + 1 if m else 0) for c, m in zip(cells, list(marks) + [""] * len(cells))]
    if column.kind.numeric:
        body = max(marked, default=0)
    else:
        body = max((max(min(w, WRAP), _longest_word(c)) for w, c in zip(marked, cells)), default=0)
    title = column.title
    header = max(_longest_word(title), math.ceil(len(title) / 2) + 2)  # two lines, with room to break
    return max(body, header, 3)


def row_width(widths: Sequence[int]) -> int:
    """The characters a row of columns this wide takes, with their padding."""
    return sum(widths) + PADDING * len(widths)


def _longest_word(text: str) -> int:
    return max((len(w) for w in str(text).split()), default=0)


def _mark(number: int) -> str:
    """The footnote mark of the ``number``-th note: a, b, ..., z, aa, ab, ..."""
    letters = string.ascii_lowercase
    return letters[number] if number < len(letters) else _mark(number // len(letters) - 1) + letters[number % len(letters)]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _escape(text: str) -> str:
    """Cell text as Markdown that shows it as it is (a line of its own)."""
    return _ESCAPE.sub(r"\\\1", " ".join(str(text).split()))


@dataclass(frozen=True)
class Layout:
    """A frame as a declared table shows it: the columns it fills, the text of every cell,
    each row's footnote mark, the notes in mark order, each column's width, and the parts
    (column positions) it is split into."""

    columns: tuple[Column, ...]
    cells: list[list[str]]
    marks: list[str]
    notes: list[str]
    widths: list[int]
    parts: list[tuple[int, ...]]

    def pipe_table(self, part: Sequence[int]) -> str:
        """One pipe table of the columns at ``part``, its separator's dashes proportional to
        each column's width with its padding (Pandoc's relative widths: a cell's padding is
        the same in a narrow column as in a wide one), a row's footnote mark on its first cell."""
        header = "| " + " | ".join(_escape(self.columns[i].title) for i in part) + " |"
        rule = "|" + "|".join(("-" if self.columns[i].kind.numeric else ":") + "-" * (self.widths[i] + PADDING - 2)
                              + (":" if self.columns[i].kind.numeric else "-") for i in part) + "|"
        body = []
        for row, mark in zip(self.cells, self.marks):
            texts = [_escape(row[i]) for i in part]
            if mark and texts:
                texts[0] = f"{texts[0]}^{mark}^"
            body.append("| " + " | ".join(texts) + " |")
        return "\n".join([header, rule, *body]) + "\n"


def _cells(line: str) -> list[str]:
    """The cells of a rendered pipe-table row (an escaped ``\\|`` stays in its cell)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _parts(markdown: str) -> list[tuple[list[str], list[bool], list[list[str]]]]:
    """The pipe tables of ``markdown`` (a rendered table: one table, in parts), each its
    header, whether each column is numeric (aligned right) and its rows of cells."""
    parts = []
    current: list[str] = []
    for line in markdown.splitlines() + [""]:
        if line.lstrip().startswith("|"):
            current.append(line)
        elif current:
            if len(current) > 1:
                numeric = [rule.endswith(":") for rule in _cells(current[1])]
                parts.append((_cells(current[0]), numeric, [_cells(row) for row in current[2:]]))
            current = []
    return parts


def explained_if_empty(frame: pd.DataFrame, why: str, table: "Table | None" = None, **cells: Any) -> pd.DataFrame:
    """``frame`` where it has a row; else one row whose footnote is ``why``, its other cells
    missing but for ``cells`` (every column the frame has, and every one ``table`` always shows): a
    table with no row would render as a bare header, which says nothing
    (:func:`unexplained_missing` refuses one)."""
    if len(frame):
        return frame
    notes = table.notes if table is not None else "note"
    read = [s for c in table.columns if not c.optional for s in c.sources] if table is not None else []
    columns = list(dict.fromkeys([*frame.columns, *read, *cells, notes]))
    return pd.DataFrame([{**{c: None for c in columns}, **cells, notes: why}], columns=columns)


def unexplained_missing(markdown: str) -> list[str]:
    """Every row and every numeric column of the table rendered in ``markdown``
    (:meth:`Table.render`, its parts joined back by row) whose numbers are all
    :data:`MISSING_CELL` and that no footnote explains: a row without a mark, a column with
    a row without one; and a table with no row at all. A row's numbers are its cells in the
    columns aligned right."""
    parts = _parts(markdown)
    if not parts:
        return []
    if not parts[0][2]:
        return ["the table has a header and no row: write one row whose footnote says why it is empty"]
    n_rows = len(parts[0][2])
    marked = [bool(_MARK.search(row[0])) for row in parts[0][2]]
    label = [re.sub(r"\\(.)", r"\1", " ".join(_MARK.sub("", c) for c, numeric in zip(row, parts[0][1])
                                              if not numeric) or row[0]) for row in parts[0][2]]
    columns = {}  # header -> the column's cells, row by row (a column every part repeats: once)
    for header, numeric, rows in parts:
        for position, name in enumerate(header):
            if numeric[position] and name not in columns:
                columns[name] = [row[position] if position < len(row) else "" for row in rows][:n_rows]
    problems = []
    for number in range(n_rows):
        cells = [values[number] for values in columns.values() if number < len(values)]
        if cells and not marked[number] and all(c == MISSING_CELL for c in cells):
            problems.append(f"row '{label[number]}' is all '{MISSING_CELL}' and no footnote says why")
    for name, values in columns.items():
        if values and all(v == MISSING_CELL for v in values) and not all(marked):
            problems.append(f"column '{name}' is all '{MISSING_CELL}' and no footnote says why on every row")
    return problems
