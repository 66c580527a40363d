"""How the manuscript writes a number: one rule per kind of quantity.

An experiment hands the paper layer raw numbers and declares the kind of each (a manuscript
variable, :mod:`contextecho.paper.variables`; a table column, :mod:`contextecho.paper.tables`);
the kind writes it, the same way in a variable and in a table cell, so that the numbers
of the prose and of the tables agree:

=================  =====================================  ==================  ===============
kind               what                                   variable            table cell
=================  =====================================  ==================  ===============
:data:`POINTS`     judge points (the 0–3 rubric), gaps    ``0.36``            ``0.36``
:data:`SCORE`      questionnaire item scores (1–5)        ``3.50``            ``3.50``
:data:`COEFFICIENT` kappa, correlations, ratios, shares   ``0.79``            ``0.79``
:data:`SIMILARITY` argument similarity M2 and its Δ       ``0.125``           ``0.125``
:data:`VARIANCE`   variance components                    ``0.414``           ``0.414``
:data:`PERCENT`    percentages                            ``41.7%``           ``41.7`` (%)
:data:`POINTS_PP`  percentage points                      ``-8.3``            ``-8.3`` (pp)
:data:`P_VALUE`    p-values, 3 significant digits         ``0.0494``          ``0.0494``
:data:`COUNT`      counts, integers                       ``24``              ``24``
:data:`WHOLE`      a mean of counts, to the whole number  ``1834``            ``1834``
:data:`TEXT`       names, labels, lists                   as is               as is
:data:`MODEL`      a LiteLLM model string                 as is               its model name
:data:`FLAG`       a yes/no outcome                       ``yes`` / ``no``    ``yes`` / ``no``
``interval(k)``    a 95% interval, each bound as ``k``    ``[0.12, 0.83]``    ``[0.12, 0.83]``
``estimate(k)``    an estimate and its interval           ``0.36 [0.12, 0.83]`` the same
=================  =====================================  ==================  ===============

A table cell's unit is its column header's (``Real (%)``): the cell carries the number
alone. A value that could not be estimated is, in a variable, :func:`not_estimable` with
the reason (never a bare "n/a"), and in a table cell :data:`MISSING_CELL` with the row's
footnote saying why.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

#: How the manuscript says a value could not be estimated, before the reason.
NOT_ESTIMABLE = "not estimable"
#: What a value that could not be estimated may never be alone: the reader must learn why.
BARE_MISSING = frozenset({"n/a", "na", "nan", NOT_ESTIMABLE})
#: A variable whose key ends so is a percentage (of kind :data:`PERCENT`), shown with its sign.
PERCENT_SUFFIX = "_pct"
#: A table cell whose value could not be estimated (its row's footnote says why).
MISSING_CELL = "—"


def flat(text: str) -> str:
    """``text`` without parentheses of its own, to stand inside a pair: ``a (b) c`` -> ``a, b c``,
    ``target(s)`` -> ``targets``."""
    return " ".join(str(text).replace(" (", ", ").replace("(", "").replace(")", "").split())


def not_estimable(reason: str) -> str:
    """A manuscript value that could not be estimated, with why (which arm had no valid
    verdict, how many units were left out): ``not estimable (<reason>)``, the reason's own
    parentheses flattened (:func:`flat`), never nested in the value's."""
    if not reason or not reason.strip():
        raise ValueError("a value that could not be estimated needs the reason why")
    return f"{NOT_ESTIMABLE} ({flat(reason)})"


def is_not_estimable(value: Any) -> bool:
    """Whether ``value`` is a :func:`not_estimable` text (with its reason)."""
    return isinstance(value, str) and value.startswith(f"{NOT_ESTIMABLE} (")


def is_missing(value: Any) -> bool:
    """None, NaN (float, numpy, pandas' NA) or NaT: a value that was not estimated."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, NaT and pandas' NA are not equal to themselves
    except (TypeError, ValueError):  # pandas' NA refuses to be a bool
        return True


def model_name(model: str) -> str:
    """A LiteLLM model string by its model name (``hosted_vllm/Qwen/Qwen2.5-7B-Instruct``
    -> ``Qwen2.5-7B-Instruct``)."""
    return str(model).rsplit("/", 1)[-1]


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if math.isinf(number):
        raise ValueError(f"{what} is infinite; say why it could not be estimated instead")
    return number


#: The sign of a negative number (a minus, not a hyphen: typeset alike wherever it stands).
MINUS = "\u2212"


def fixed(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, a negative one with :data:`MINUS`, never ``−0.00``."""
    text = f"{value:.{digits}f}"
    if text.startswith("-"):
        return text[1:] if float(text) == 0 else MINUS + text[1:]
    return text


@dataclass(frozen=True)
class Kind:
    """One kind of quantity: how a raw value is written in a variable (:meth:`variable`)
    and in a table cell (:meth:`cell`), and the unit a column header of it names."""

    name: str
    unit: str = ""

    #: How many raw values one value of this kind takes (an interval: 2, an estimate with it: 3).
    arity = 1

    def text(self, value: Any) -> str:
        """The value as the manuscript writes it (never missing)."""
        return str(value)

    def variable(self, value: Any) -> Any:
        """The value of a manuscript variable: text, or a plain int for a count."""
        return self.text(value)

    def cell(self, value: Any) -> str:
        """The value in a table cell (:data:`MISSING_CELL` when missing); the unit is the header's."""
        return MISSING_CELL if self.missing(value) else self.text(value)

    def missing(self, value: Any) -> bool:
        return is_missing(value)

    @property
    def numeric(self) -> bool:
        """A numeric column is aligned right."""
        return True


@dataclass(frozen=True)
class Decimals(Kind):
    """A number with a fixed number of decimals; ``sign`` follows it in a variable (``%``)."""

    digits: int = 2
    sign: str = ""

    def text(self, value: Any) -> str:
        return fixed(_number(value, self.name), self.digits)

    def variable(self, value: Any) -> str:
        return self.text(value) + self.sign


@dataclass(frozen=True)
class Significant(Kind):
    """A number with ``digits`` significant digits, in fixed notation (``0.0494``, ``1.00``)."""

    digits: int = 3

    def text(self, value: Any) -> str:
        number = _number(value, self.name)
        rounded = float(f"{number:.{self.digits - 1}e}")  # to its significant digits first: 0.9996 -> 1.00
        if rounded == 0:
            return fixed(0.0, self.digits - 1)
        return fixed(rounded, max(0, self.digits - 1 - math.floor(math.log10(abs(rounded)))))


@dataclass(frozen=True)
class Count(Kind):
    """A whole number (a float that is whole is taken as one; a fraction is refused)."""

    def text(self, value: Any) -> str:
        return str(self.variable(value))

    def variable(self, value: Any) -> int:
        number = _number(value, self.name)
        if not number.is_integer():
            raise ValueError(f"a count must be a whole number, got {value!r}")
        return int(number)


@dataclass(frozen=True)
class Text(Kind):
    """Text as it is (a name, a label, a list)."""

    def text(self, value: Any) -> str:
        return str(value)

    @property
    def numeric(self) -> bool:
        return False


@dataclass(frozen=True)
class Model(Text):
    """A LiteLLM model string: whole in a variable, by its model name in a table cell
    (:func:`model_name`; a table shows the whole strings where two would read alike)."""

    def cell(self, value: Any) -> str:
        return MISSING_CELL if self.missing(value) else model_name(value)


@dataclass(frozen=True)
class Flag(Kind):
    """A yes/no outcome."""

    def text(self, value: Any) -> str:
        return "yes" if bool(value) else "no"

    @property
    def numeric(self) -> bool:
        return False


@dataclass(frozen=True)
class Interval(Kind):
    """A 95% interval ``[lo, hi]``, each bound written as ``of``; its raw value is the pair."""

    of: Kind = Decimals("judge points")
    arity = 2

    def text(self, value: Any) -> str:
        low, high = _pair(value, 2, "an interval")
        return f"[{self.of.text(low)}, {self.of.text(high)}]"

    def missing(self, value: Any) -> bool:
        return is_missing(value) or any(is_missing(v) for v in _pair(value, 2, "an interval"))


@dataclass(frozen=True)
class Estimate(Kind):
    """An estimate with its 95% interval, ``0.36 [0.12, 0.83]``; its raw value is the triple
    (an estimate whose interval is missing is written alone)."""

    of: Kind = Decimals("judge points")
    arity = 3

    def text(self, value: Any) -> str:
        estimate, low, high = _pair(value, 3, "an estimate with its interval")
        if is_missing(low) or is_missing(high):
            return self.of.text(estimate)
        return f"{self.of.text(estimate)} [{self.of.text(low)}, {self.of.text(high)}]"

    def missing(self, value: Any) -> bool:
        return is_missing(value) or is_missing(_pair(value, 3, "an estimate with its interval")[0])


def _pair(value: Any, size: int, what: str) -> tuple:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != size:
        raise ValueError(f"{what} takes {size} values, got {value!r}")
    return tuple(value)


POINTS = Decimals("judge points", digits=2)
SCORE = Decimals("item score", digits=2)
COEFFICIENT = Decimals("coefficient", digits=2)
SIMILARITY = Decimals("similarity", digits=3)
VARIANCE = Decimals("variance", digits=3)
PERCENT = Decimals("percentage", unit="%", digits=1, sign="%")
POINTS_PP = Decimals("percentage points", unit="pp", digits=1)
P_VALUE = Significant("p-value", digits=3)
COUNT = Count("count")
WHOLE = Decimals("mean count", digits=0)
TEXT = Text("text")
MODEL = Model("model")
FLAG = Flag("flag")


def interval(of: Kind) -> Interval:
    """The kind of a 95% interval whose bounds are of kind ``of`` (its unit, ``of``'s)."""
    return Interval(f"interval of {of.name}", unit=of.unit, of=of)


def estimate(of: Kind) -> Estimate:
    """The kind of an estimate of kind ``of`` with its 95% interval (its unit, ``of``'s)."""
    return Estimate(f"{of.name} with its interval", unit=of.unit, of=of)
