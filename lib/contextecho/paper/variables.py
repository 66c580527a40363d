"""The manuscript's variables an experiment declares: each key, its kind, its pattern.

A :class:`Variable` is a key template and the :mod:`kind <contextecho.paper.formats>` of its
value. A template names its fields in braces, each with the values it may take
(``Variable("retention_final_{arm}_{facet}", COEFFICIENT, arm=ARMS, facet=TRAITS)``), so an
experiment never builds a key by hand: it hands the paper layer the template and the
fields (:meth:`~contextecho.paper.outputs.Outputs.put`). The field ``{target}``, last in
a template, is a run's targets: ``gap_{target}`` is ``gap_<slug>`` for every target
(:func:`target_slug`) and ``gap`` for the first, the one the manuscript names as
``target`` (:meth:`~contextecho.paper.outputs.Outputs.per_target`).

A key ending ``_pct`` (before ``_{target}``) is a percentage, of kind
:data:`~contextecho.paper.formats.PERCENT`, and no other kind is.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from .formats import PERCENT, PERCENT_SUFFIX, Kind, is_missing

#: The field of a per-target template: a run's targets (any slug).
TARGET = "target"
#: Why a target has no estimate when nothing more precise is known.
NO_ESTIMATE = "no valid cell of this target to estimate it from"
_SLUG = r"[a-z0-9]+(?:_[a-z0-9]+)*"


def target_slug(target: str) -> str:
    """A target's model string as a key suffix (``local/smollm2-135m`` -> ``local_smollm2_135m``)."""
    return re.sub(r"[^a-z0-9]+", "_", str(target).lower()).strip("_")


def fields_of(template: str) -> tuple[str, ...]:
    """The fields a key template names, in order (``gap_{score}_{target}`` -> score, target)."""
    return tuple(name for _, name, _, _ in string.Formatter().parse(template) if name is not None)


@dataclass(frozen=True)
class Variable:
    """One declared manuscript key (or key pattern) and the kind of its value; ``domains``
    holds the values each field other than ``{target}`` may take."""

    template: str
    kind: Kind
    domains: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __init__(self, template: str, kind: Kind, **domains: Iterable[str]) -> None:
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "domains", {k: tuple(v) for k, v in domains.items()})
        names = fields_of(template)
        if not re.fullmatch(r"[a-z0-9_{}]+", template) or len(set(names)) != len(names):
            raise ValueError(f"variable {template!r}: a key is lower-case letters, digits and _, each "
                             "field once in braces")
        if TARGET in names and not template.endswith("_{" + TARGET + "}"):
            raise ValueError(f"variable {template!r}: the field {{target}} comes last, after an underscore")
        if set(names) - {TARGET} != set(self.domains):
            raise ValueError(f"variable {template!r}: give the values of every field but target "
                             f"(fields {', '.join(names) or 'none'}, values for {', '.join(self.domains) or 'none'})")
        stem = template[: -len("_{" + TARGET + "}")] if self.per_target else template
        if stem.endswith(PERCENT_SUFFIX) != (kind == PERCENT):
            raise ValueError(f"variable {template!r}: a key ends {PERCENT_SUFFIX!r} exactly when it is a "
                             f"percentage (kind {kind.name!r})")

    @property
    def fields(self) -> tuple[str, ...]:
        return fields_of(self.template)

    @property
    def per_target(self) -> bool:
        return TARGET in self.fields

    def key(self, **values: str) -> str:
        """The key for these field values (``target``: its slug; absent: the first target's
        unsuffixed key); a value outside a field's domain is an error."""
        names = [n for n in self.fields if n != TARGET or TARGET in values]
        wrong = sorted(set(values) ^ set(names))
        if wrong:
            raise ValueError(f"variable {self.template!r} takes the fields {', '.join(names) or 'none'}, "
                             f"got {', '.join(sorted(values)) or 'none'}")
        for name, value in values.items():
            if name != TARGET and value not in self.domains[name]:
                raise ValueError(f"variable {self.template!r}: {name} {value!r} is not one of "
                                 f"{', '.join(self.domains[name])}")
        template = self.template if TARGET in values else self.template.replace("_{" + TARGET + "}", "")
        return template.format(**{k: target_slug(v) if k == TARGET else v for k, v in values.items()})

    def pattern(self) -> re.Pattern:
        """Every key this variable declares (a target's slug: any slug)."""
        parts = []
        for literal, name, _, _ in string.Formatter().parse(self.template):
            if name == TARGET:  # the literal ends with the underscore before it: both optional
                parts += [re.escape(literal[:-1]), f"(?:_{_SLUG})?"]
                continue
            parts.append(re.escape(literal))
            if name is not None:
                parts.append("(?:" + "|".join(map(re.escape, self.domains[name])) + ")")
        return re.compile("".join(parts))

    def matches(self, key: str) -> bool:
        return self.pattern().fullmatch(key) is not None


def reasons(table: pd.DataFrame, note: str = "note") -> dict[str, str]:
    """Per target, why its estimates could not be made: the ``note`` of its rows in
    ``table`` (an estimate table whose failed rows say ``not estimable: <why>``), joined."""
    if not len(table) or note not in table or "target" not in table:
        return {}
    out: dict[str, str] = {}
    for target, notes in table.groupby("target")[note]:
        said = [re.sub(r"^\s*(?:\w+ )?not estimable:\s*", "", str(n)).strip() for n in notes if str(n or "").strip()]
        if said:
            out[target] = "; ".join(dict.fromkeys(said))
    return out


def by_target(table: pd.DataFrame, columns: Mapping[str, str | Sequence[str]],
              target: str = "target") -> dict[str, dict[str, Any]]:
    """Per target (a row of ``table`` each), the raw value of each template from its
    ``columns`` (one column, or the columns of an interval or an estimate with its
    interval); a missing value is left out, for :meth:`~.outputs.Outputs.per_target` to say why."""
    out: dict[str, dict[str, Any]] = {}
    for _, row in table.iterrows() if len(table) else ():
        own = out.setdefault(row[target], {})
        for template, source in columns.items():
            value = row[source] if isinstance(source, str) else tuple(row[c] for c in source)
            first = value if isinstance(source, str) else value[0]
            if not is_missing(first):
                own[template] = value
    return out
