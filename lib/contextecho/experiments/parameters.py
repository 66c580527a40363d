"""Notebook parameters: declared once (a frozen dataclass per experiment), validated twice.

Papermill only *warns* about a parameter the notebook does not declare. Here an unknown
or misspelled name is an error, checked

1. by the runner before the kernel starts (:func:`check_overrides`, against the names
   assigned in the notebook's cell tagged ``parameters``), and
2. inside the notebook (:func:`bind`, the first cell after the parameters), so that a
   plain ``papermill nb.ipynb out.ipynb -p tyop 1`` fails too.

How :func:`bind` reads a notebook's parameters, so that an author's edit is honoured
however the cells run (Run All, Run Selected Cell and All Below, a re-run in the same
kernel, papermill): the *values* are the declared names' values in the kernel's
namespace now (the last assignment the kernel ran; a name never assigned keeps its
default). The *names to check* come from the cells' own source, not from a snapshot of
the namespace (which a second run, or any variable an earlier run left behind, would
make wrong): IPython keeps every cell it ran in its input history ``In``, the current
cell last, so the cells run just before the ``bind`` cell are the parameters cell and,
under papermill, the injected-parameters cell papermill places right after it. Walking
back from the ``bind`` cell, every cell that only assigns values to names (constants,
lists, papermill's ``float('nan')``; comments allowed) is such a cell; the walk stops at
the first other cell (the imports, or the last stage of an earlier run). A name those
cells assign that the notebook does not declare is an error (names ``PAPERMILL_...``,
which ``papermill --inject-paths`` adds, excepted). Where there is no input history (the
cells run as a plain script, top to bottom once), the names checked are those bound to
such values in the namespace, which then holds only the imports and the parameters.

Which parameters a protocol reads: a Parameters class may declare, beside ``HELP``
(name → text), ``PROTOCOL_HELP`` (name → protocol → the text that applies under that
protocol, in place of ``HELP``'s) and ``IGNORED`` (name → protocol → why that protocol
does not read it). :func:`parameter_help` and :func:`ignored` read them for one protocol:
the notebook's parameters cell is commented for its default protocol
(:mod:`contextecho.notebooks.build`), and :func:`bind` says which of the values set the
chosen protocol ignores.

Values are coerced to the declared type: ``-p targets a,b`` gives a tuple of strings,
``-p n_sessions 3`` an int; a value that does not fit is an error naming the parameter.

Values are then range-checked (:func:`check_ranges`, called by :func:`coerce`, so both
places above): each Parameters dataclass declares ``RANGES``, a map from field name to
one rule or a tuple of rules (:class:`Interval`, :class:`Temperature`, :class:`OneOf`,
:class:`Models`, :class:`NonEmpty`, :class:`Includes`,
:class:`Endpoints`, :class:`ModelOptionsText`), next to its ``HELP``. A rule on a
tuple field checks every element (``NonEmpty`` and ``Includes`` check the whole). Every
error names the parameter, the value and the valid range; all of them are reported at once.
A value is shown with every credential in it masked
(:func:`contextecho.engine.manifest.masked_text`): an endpoint's URL with a key in it is
refused without being echoed.

Some ranges depend on the data a run reads (how many sessions the corpus has, how many
positions a session offers): those are checked where the run reads it, before any target
call, and raise the same :class:`RangeError`.
"""
from __future__ import annotations

import ast
import difflib
import math
import typing
from dataclasses import MISSING, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from ..engine.manifest import masked_text
from ..engine.usage import UsageError


class ParameterError(UsageError, ValueError):
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
        parts.append(shown(name) + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"unknown parameter(s) for {where}: {', '.join(parts)}; valid: {', '.join(valid)}"


def _coerce(name: str, value: Any, annotation: Any) -> Any:
    try:
        return _as_type(name, value, annotation)
    except (TypeError, ValueError):
        pass
    # Raised outside the handler, so nothing down its chain holds the value (it may be a key).
    raise ParameterError(f"parameter {name!r}: {shown(value)} is not a valid "
                         f"{getattr(annotation, '__name__', annotation)}")


def _as_type(name: str, value: Any, annotation: Any) -> Any:
    """``value`` as ``annotation``; TypeError or ValueError where it is none."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
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
    return value


def coerce(spec: type, values: Mapping[str, Any], where: str | None = None):
    """An instance of ``spec`` from ``values`` (unknown names and bad types raise)."""
    valid = list(declared(spec))
    unknown = sorted(set(values) - set(valid))
    if unknown:
        raise ParameterError(_unknown_message(unknown, valid, where or spec.__name__))
    hints = typing.get_type_hints(spec)
    typed = {k: _coerce(k, v, hints[k]) for k, v in values.items()}
    try:
        params = spec(**typed)  # a Checked spec checks its ranges here
    except RangeError as exc:
        raise RangeError(where or spec.__name__, exc.problems) from None
    if not isinstance(params, Checked):
        check_ranges(params, where or spec.__name__)  # any other spec that declares RANGES
    return params


def bind(spec: type, namespace: Mapping[str, Any]):
    """Inside a notebook: its parameters as ``spec``, read from ``namespace`` (``globals()``).

    Each declared name's value is the one ``namespace`` holds (its default where it holds
    none); a name that the parameters cells just run assign and ``spec`` does not declare
    is a :class:`ParameterError` (module doc: how those cells are found). A value the chosen
    protocol ignores (:func:`ignored`) that differs from its default is said in a note."""
    defaults = declared(spec)
    where = f"notebook {spec.__name__}"
    history = namespace.get("In")
    if isinstance(history, list) and history:
        assigned = {name for source in parameter_cells(history) for name in parameters_cell_names(source)}
    else:
        assigned = {name for name, value in namespace.items()
                    if not name.startswith("_") and _is_value(value)}
    unknown = sorted(n for n in assigned - set(defaults) if not n.startswith(_PAPERMILL_PREFIX))
    if unknown:
        raise ParameterError(_unknown_message(unknown, list(defaults), where))
    shadowed = sorted(n for n in defaults if n in namespace and not _is_value(namespace[n]))
    if shadowed:  # e.g. a stage's result of the same name, from an earlier run in this kernel
        raise ParameterError(f"{where}: {', '.join(shadowed)} in this kernel hold(s) no parameter value "
                             f"(a {type(namespace[shadowed[0]]).__name__}, left by an earlier cell); "
                             "run the parameters cell, then this one")
    params = coerce(spec, {name: namespace[name] for name in defaults if name in namespace}, where=where)
    protocol = getattr(params, "protocol", None)
    unread = {name: why for name, why in ignored(spec, protocol).items() if getattr(params, name) != defaults[name]}
    for name, why in unread.items():
        print(f"note: {name} = {shown(getattr(params, name))} is ignored under protocol {protocol!r}: {why}")
    return params


# papermill --inject-paths adds PAPERMILL_INPUT_PATH and the like to its injected cell.
_PAPERMILL_PREFIX = "PAPERMILL_"
# What a parameters cell assigns: constants and containers of them, signed numbers, simple
# arithmetic, and ``float('nan')`` / ``float('inf')`` (how papermill writes those floats).
_VALUE_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.unaryop,
                ast.operator, ast.expr_context)


def _is_value(value: Any) -> bool:
    """Whether ``value`` is of a type a parameters cell assigns (not a module, function, ...)."""
    if isinstance(value, (list, tuple, set)):
        return all(_is_value(v) for v in value)
    if isinstance(value, dict):
        return all(_is_value(k) and _is_value(v) for k, v in value.items())
    return value is None or isinstance(value, (str, bytes, int, float, complex))


def _is_value_expression(node: ast.expr) -> bool:
    """Whether the expression ``node`` is built of values alone (``_VALUE_NODES``, ``float('...')``)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if not (isinstance(sub.func, ast.Name) and sub.func.id == "float" and not sub.keywords
                    and len(sub.args) == 1 and isinstance(sub.args[0], ast.Constant)):
                return False
        elif isinstance(sub, ast.Name):
            if sub.id != "float":
                return False
        elif not isinstance(sub, _VALUE_NODES):
            return False
    return True


def assigns_values_only(source: str) -> bool:
    """Whether the cell ``source`` holds assignments of values to names and nothing else
    (comments aside): a parameters cell, or papermill's injected-parameters cell."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    for node in body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            return False
        if not all(isinstance(t, ast.Name) for t in targets) or not _is_value_expression(value):
            return False
    return bool(body)


def parameter_cells(history: Sequence[str]) -> list[str]:
    """The sources of the cells run just before the current one (``history``: IPython's
    ``In``, the current cell last) that assign values only, nearest first."""
    cells = []
    for source in reversed(history[:-1]):
        if not assigns_values_only(source):
            break
        cells.append(source)
    return cells


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


def shown(value: Any) -> str:
    """``repr(value)`` as an error shows it: every credential in it masked."""
    return masked_text(repr(value))


# ---------------------------------------------------------------- help per protocol
def _per_protocol(spec: type, attribute: str) -> dict[str, dict[str, str]]:
    """``spec.<attribute>`` (name → protocol → text); a name that is not a field is an error."""
    table = getattr(spec, attribute, {})
    unknown = sorted(set(table) - {f.name for f in fields(spec)})
    if unknown:
        raise TypeError(f"{spec.__name__}.{attribute} names no parameter: {', '.join(unknown)}")
    return table


def parameter_help(spec: type, protocol: str | None = None) -> dict[str, str]:
    """Name → the help of each parameter of ``spec`` that has one, as it applies under
    ``protocol``: ``PROTOCOL_HELP[name][protocol]`` where declared, else ``HELP[name]``."""
    out = dict(getattr(spec, "HELP", {}))
    for name, texts in _per_protocol(spec, "PROTOCOL_HELP").items():
        if protocol in texts:
            out[name] = texts[protocol]
    return out


def ignored(spec: type, protocol: str | None) -> dict[str, str]:
    """Name → why, for each parameter of ``spec`` that ``protocol`` does not read (``IGNORED``)."""
    return {name: reasons[protocol] for name, reasons in _per_protocol(spec, "IGNORED").items()
            if protocol in reasons}


def protocols_of(spec: type) -> tuple[str, ...]:
    """The protocols ``spec``'s ``protocol`` parameter accepts (its :class:`OneOf` range);
    none for a spec without one."""
    return tuple(name for rule in rules(spec).get("protocol", ()) if isinstance(rule, OneOf)
                 for name in rule._names())


# ---------------------------------------------------------------- ranges
def _number(value: Any) -> str:
    return "an integer" if isinstance(value, int) else "a finite number"


def _bound(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Interval:
    """A number in ``[low, high]`` (``(low, ...`` with ``low_open``), finite. ``zero``: what
    0 means where 0 is allowed outside the interval ("all", "auto"). ``high`` may be a
    function of the parameters, described by ``high_text``."""

    low: float | None = None
    high: float | Callable[[Any], float] | None = None
    low_open: bool = False
    zero: str = ""
    high_text: str = ""

    def _high(self, params: Any) -> float | None:
        return self.high(params) if callable(self.high) else self.high

    def valid(self, value: Any, params: Any) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {_bound(self.low)}")
        high = self._high(params)
        if high is not None:
            parts.append(f"<= {self.high_text or _bound(high)}" + (f" ({_bound(high)})" if self.high_text else ""))
        text = f"{_number(value)} {' and '.join(parts)}".rstrip()
        return text + (f", or 0 for {self.zero}" if self.zero else "")

    def problem(self, value: Any, params: Any) -> str | None:
        if self.zero and value == 0:
            return None
        high = self._high(params)
        ok = (math.isfinite(value)
              and (self.low is None or (value > self.low if self.low_open else value >= self.low))
              and (high is None or value <= high))
        return None if ok else "is out of range"


def count(zero: str = "") -> Interval:
    """A count: 1 or more (0 too, where it means ``zero``: "all", "auto")."""
    return Interval(1, zero=zero)


POSITIVE = Interval(0, low_open=True)  # windows, characters, max tokens
NON_NEGATIVE = Interval(0)  # seeds, distances
RESAMPLES = Interval(100)  # bootstrap resamples: fewer make the CI's percentiles noise


@dataclass(frozen=True)
class Temperature:
    """A sampling temperature every model of the ``models`` fields accepts (finite, within
    the narrowest provider range among them; see :func:`contextecho.engine.calls.temperature_range`)."""

    models: tuple[str, ...] = ("targets",)

    def _range(self, params: Any) -> tuple[float, float, str]:
        from ..engine.calls import temperature_range

        low, high, who = 0.0, math.inf, ""
        for model in _models_of(params, self.models):
            lo, hi = temperature_range(model)
            if hi < high:
                who = model
            low, high = max(low, lo), min(high, hi)
        return low, high, who

    def valid(self, value: Any, params: Any) -> str:
        low, high, who = self._range(params)
        return f"a finite number in [{_bound(low)}, {_bound(high)}]" + (f" (the range of {who})" if who else "")

    def problem(self, value: Any, params: Any) -> str | None:
        low, high, _ = self._range(params)
        return None if math.isfinite(value) and low <= value <= high else "is out of range"


def _models_of(params: Any, names: Iterable[str]) -> list[str]:
    out = []
    for name in names:
        value = getattr(params, name)
        out += [value] if isinstance(value, str) else list(value)
    return out


@dataclass(frozen=True)
class OneOf:
    """A known name: one of ``names`` (a tuple, or a function giving them, read when checked).
    ``files``: a value ending so that names an existing file is accepted as well."""

    names: tuple[str, ...] | Callable[[], Iterable[str]]
    what: str
    files: str = ""

    def _names(self) -> list[str]:
        return list(self.names() if callable(self.names) else self.names)

    def valid(self, value: Any, params: Any) -> str:
        files = f", or a path to a {self.files} file" if self.files else ""
        return f"one of {', '.join(self._names())}{files}"

    def problem(self, value: Any, params: Any) -> str | None:
        names = self._names()
        if value in names or (self.files and _is_file(str(value), self.files)):
            return None
        close = difflib.get_close_matches(str(value), names, n=1)
        return f"is not a known {self.what}" + (f" (did you mean {close[0]!r}?)" if close else "")


def resolve_path(value: str) -> Path:
    """The file or folder ``value`` names: from the working folder if it is there, else from
    the repository root (where the notebooks run)."""
    from ..engine.paths import REPO_ROOT

    return Path(value) if Path(value).exists() else REPO_ROOT / value


def _is_file(value: str, suffix: str) -> bool:
    """Whether ``value`` ends in ``suffix`` and names an existing file (:func:`resolve_path`)."""
    return value.endswith(suffix) and resolve_path(value).is_file()


@dataclass(frozen=True)
class Models:
    """A LiteLLM model string that can be routed (the call site's own preflight check), or
    one of the names in ``also`` that stand for models (a judge named ``self``: each target).
    ``used_with``: the parameter without whose value the model is never asked nor read (the
    released judge without a release); its model is checked only where that one is set, so
    a run whose models are all in-process never imports LiteLLM to check an unused name."""

    also: tuple[str, ...] = ()
    used_with: str = ""

    def valid(self, value: Any, params: Any) -> str:
        from ..engine.llm import LOCAL_MODEL

        return (f"a provider-prefixed LiteLLM model string such as 'openai/gpt-4o-mini', "
                f"'anthropic/claude-sonnet-4-5', 'hosted_vllm/<name>', or {LOCAL_MODEL!r}"
                + "".join(f", or {name!r}" for name in self.also))

    def problem(self, value: Any, params: Any) -> str | None:
        from ..engine.calls import ModelConfigError, check_routable

        if value in self.also or (self.used_with and not getattr(params, self.used_with)):
            return None
        try:
            check_routable(value)
        except ModelConfigError:
            return "is not a model LiteLLM can route"
        return None


@dataclass(frozen=True)
class NonEmpty:
    """At least one value (a tuple field)."""

    def valid(self, value: Any, params: Any) -> str:
        return "at least one value"

    def problem(self, value: Any, params: Any) -> str | None:
        return None if len(value) else "is empty"


@dataclass(frozen=True)
class Lengths:
    """As many values as one of ``lengths`` (a tuple field), for ``why``."""

    lengths: tuple[int, ...]
    why: str

    def valid(self, value: Any, params: Any) -> str:
        return f"{' or '.join(map(str, self.lengths))} values ({self.why})"

    def problem(self, value: Any, params: Any) -> str | None:
        return None if len(value) in self.lengths else f"has {len(value)}"


@dataclass(frozen=True)
class Includes:
    """The tuple lists ``name`` (e.g. the control condition), for ``why``."""

    name: str
    why: str

    def valid(self, value: Any, params: Any) -> str:
        return f"a list that includes {self.name!r} ({self.why})"

    def problem(self, value: Any, params: Any) -> str | None:
        return None if self.name in value else f"lacks {self.name!r}"


@dataclass(frozen=True)
class Endpoints:
    """Endpoints in the syntax of :func:`contextecho.engine.endpoints.parse_endpoints` (a tuple
    field, checked whole): each ``MODEL=API_BASE[|API_BASE...][#KEY_ENV]``, http(s) API bases
    without credentials, one endpoint per model."""

    def valid(self, value: Any, params: Any) -> str:
        return ("MODEL=API_BASE[|API_BASE...][#KEY_ENV], e.g. "
                "hosted_vllm/my-model=http://127.0.0.1:8000/v1#VLLM_KEY")

    def problem(self, value: Any, params: Any) -> str | None:
        from ..engine.endpoints import EndpointError, parse_endpoints

        try:
            parse_endpoints(value)
        except EndpointError as exc:
            return f"is not usable: {exc}"
        return None


@dataclass(frozen=True)
class ModelOptionsText:
    """Per-model request options in the syntax of :mod:`contextecho.engine.request_options`
    (a JSON object, model or pattern to options), or empty."""

    def valid(self, value: Any, params: Any) -> str:
        from ..engine.request_options import SYNTAX

        return f"{SYNTAX}, e.g. " + '{"hosted_vllm/*": {"extra_body": {"chat_template_kwargs": {"enable_thinking": false}}}}'

    def problem(self, value: Any, params: Any) -> str | None:
        from ..engine.request_options import OptionsError, RequestOptions

        try:
            RequestOptions.parse(value)
        except OptionsError as exc:
            return f"is not usable: {exc}"
        return None


@dataclass(frozen=True)
class File:
    """A path to an existing file whose name ends in ``suffix`` (from the working folder or
    the repository root, where the notebooks run), or empty, which means ``empty``."""

    suffix: str
    empty: str

    def valid(self, value: Any, params: Any) -> str:
        return f"a path to an existing {self.suffix} file, or empty ({self.empty})"

    def problem(self, value: Any, params: Any) -> str | None:
        if value == "" or _is_file(str(value), self.suffix):
            return None
        return f"is not an existing {self.suffix} file"


@dataclass(frozen=True)
class Folder:
    """A path to an existing folder (from the working folder or the repository root, where
    the notebooks run), or empty, which means ``empty``."""

    empty: str

    def valid(self, value: Any, params: Any) -> str:
        return f"a path to an existing folder, or empty ({self.empty})"

    def problem(self, value: Any, params: Any) -> str | None:
        if value == "" or resolve_path(str(value)).is_dir():
            return None
        return "is not an existing folder"


Rule = Union[Interval, Temperature, OneOf, Models, NonEmpty, Includes, Endpoints, File, Folder]
_WHOLE = (NonEmpty, Lengths, Includes, Endpoints)  # rules on the tuple itself; the others check each element


def rules(spec: type) -> dict[str, tuple[Rule, ...]]:
    """Field name → its rules, from ``spec.RANGES``; a name that is not a field is an error."""
    ranges = getattr(spec, "RANGES", {})
    unknown = sorted(set(ranges) - {f.name for f in fields(spec)})
    if unknown:
        raise TypeError(f"{spec.__name__}.RANGES names no parameter: {', '.join(unknown)}")
    return {name: rule if isinstance(rule, tuple) else (rule,) for name, rule in ranges.items()}


def range_problems(params: Any) -> list[str]:
    """One message per out-of-range value of ``params``: the parameter, the value, the range."""
    problems = []
    for name, checks in rules(type(params)).items():
        value = getattr(params, name)
        for rule in checks:
            elements = [value] if isinstance(rule, _WHOLE) or not isinstance(value, tuple) else value
            for element in elements:
                reason = rule.problem(element, params)
                if reason:
                    where = f" (in {shown(list(value))})" if element is not value and len(value) > 1 else ""
                    problems.append(f"parameter {name!r}: {shown(element)}{where} {reason}; "
                                    f"valid: {rule.valid(element, params)}")
    return problems


class RangeError(ParameterError):
    """Out-of-range parameter values; ``problems`` holds one message per value."""

    def __init__(self, where: str, problems: list[str]) -> None:
        self.where, self.problems = where, problems
        super().__init__(f"out-of-range parameter(s) for {where}:\n  " + "\n  ".join(problems))


def check_ranges(params: Any, where: str | None = None) -> None:
    """Raise :class:`RangeError` listing every out-of-range value of ``params``."""
    problems = range_problems(params)
    if problems:
        spec = type(params)
        raise RangeError(where or f"{spec.__module__.rsplit('.', 1)[-1]}.{spec.__qualname__}", problems)


class Checked:
    """A Parameters dataclass that checks its ``RANGES`` when built, however it is built
    (the runner, a notebook's ``bind`` cell, or a direct call of ``experiment.run``)."""

    def __post_init__(self) -> None:
        check_ranges(self)
