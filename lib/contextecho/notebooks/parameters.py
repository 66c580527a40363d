"""Notebook parameters: declared once (a frozen dataclass per experiment), validated twice.

Papermill only *warns* about a parameter the notebook does not declare. Here an unknown
or misspelled name is an error, checked

1. by the runner before the kernel starts (:func:`check_overrides`, against the names
   assigned in the notebook's cell tagged ``parameters``), and
2. inside the notebook (:func:`bind`, the first cell after the parameters), so that a
   plain ``papermill nb.ipynb out.ipynb -p tyop 1`` fails too.

Values are coerced to the declared type: ``-p targets a,b`` gives a tuple of strings,
``-p n_sessions 3`` an int; a value that does not fit is an error naming the parameter.
"""
from __future__ import annotations

import ast
import difflib
import typing
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Mapping


class ParameterError(ValueError):
    """An unknown, misspelled or ill-typed notebook parameter."""


def declared(spec: type) -> dict[str, Any]:
    """Name → default of every parameter of ``spec`` (a dataclass)."""
    if not is_dataclass(spec):
        raise TypeError(f"{spec!r} is not a dataclass")
    out = {}
    for f in fields(spec):
        if f.default is not MISSING:
            out[f.name] = f.default
        elif f.default_factory is not MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
        else:
            raise TypeError(f"parameter {f.name!r} of {spec.__name__} has no default")
    return out


def _unknown_message(unknown: list[str], valid: list[str], where: str) -> str:
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, valid, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"unknown parameter(s) for {where}: {', '.join(parts)}; valid: {', '.join(valid)}"


def _coerce(name: str, value: Any, annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    try:
        if origin is tuple:
            inner = args[0] if args else str
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, (list, tuple)):
                value = [value]
            return tuple(_coerce(name, v, inner) for v in value)
        if annotation is bool:
            if isinstance(value, str):
                if value.lower() in ("true", "1", "yes"):
                    return True
                if value.lower() in ("false", "0", "no"):
                    return False
                raise ValueError(value)
            if isinstance(value, (bool, int)):
                return bool(value)
            raise ValueError(value)
        if annotation is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(value)
        if annotation is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if annotation is str:
            if not isinstance(value, str):
                raise ValueError(value)
            return value
    except (TypeError, ValueError):
        raise ParameterError(f"parameter {name!r}: {value!r} is not a valid "
                             f"{getattr(annotation, '__name__', annotation)}") from None
    return value


def coerce(spec: type, values: Mapping[str, Any], where: str | None = None):
    """An instance of ``spec`` from ``values`` (unknown names and bad types raise)."""
    valid = list(declared(spec))
    unknown = sorted(set(values) - set(valid))
    if unknown:
        raise ParameterError(_unknown_message(unknown, valid, where or spec.__name__))
    hints = typing.get_type_hints(spec)
    return spec(**{k: _coerce(k, v, hints[k]) for k, v in values.items()})


# Names IPython and papermill leave in a kernel's namespace that are not parameters.
_KERNEL_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})


def bind(spec: type, namespace: Mapping[str, Any], baseline: set[str] | frozenset[str]):
    """Inside a notebook: the parameters now in ``namespace`` (``globals()``) as ``spec``.

    ``baseline`` is ``set(globals())`` taken before the parameters cell: every public
    name added since came from the parameters cell or papermill's injected cell, so a
    name ``spec`` does not declare is a misspelled parameter.
    """
    added = {k: v for k, v in namespace.items()
             if k not in baseline and not k.startswith("_") and k not in _KERNEL_NAMES}
    return coerce(spec, added, where=f"notebook {spec.__name__}")


def parameters_cell_names(source: str) -> list[str]:
    """The names assigned at top level in a parameters cell's source."""
    names = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if isinstance(target, ast.Name):
                names.append(target.id)
    return names


def check_overrides(parameters_source: str, overrides: Mapping[str, Any], where: str) -> None:
    """Fail on an override the notebook's parameters cell does not assign."""
    valid = parameters_cell_names(parameters_source)
    unknown = sorted(set(overrides) - set(valid))
    if unknown:
        raise ParameterError(_unknown_message(unknown, valid, where))
