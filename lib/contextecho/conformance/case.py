"""A conformance case: reading one, comparing its fields, and what it reports.

Every kind of fixture folder (:mod:`.driver`) speaks this vocabulary: a fixture that cannot be
read or expressed is a :class:`FixtureError` naming its file (and line) or case; one compared
field is a :class:`Check` (``pass``, ``fail``, ``declared``: a declared divergence, never a
pass, ``not_expressible``: an input we cannot run, which fails the case, or
``not_implemented``: listed only, ``not_in_release``: a comparison a replay from released cells
cannot make, listed only); one case is a :class:`CaseResult`, its checks or the error
that stopped it; one family is a :class:`FamilyResult`, a fixture file's cases or a run-level
folder's. A function-level or continuation case records the fields that differ (exact
canonical JSON, :func:`differences`; an expected field without a rule fails,
:func:`compare_fields`); a run-level case records every field it compares (:meth:`CaseResult.add`,
equal as SPEC §3 and §5 define it, :func:`matches`), a mismatch the project declares on purpose
(``data/conformance/declared_divergences.json``) as a declared divergence.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..echo.protocols import protocol
from ..engine.paths import REPO_ROOT

#: The protocol every case checks, looked up by name once; its stored score column
#: (``REFERENCE.stored_score``) is the harness's own value of a judged cell.
REFERENCE = protocol("reference")

DECLARED_FILE = REPO_ROOT / "data" / "conformance" / "declared_divergences.json"
PASS, FAIL, DECLARED, NOT_EXPRESSIBLE, NOT_IMPLEMENTED, NOT_IN_RELEASE = STATUSES = (
    "pass", "fail", "declared", "not_expressible", "not_implemented", "not_in_release")
#: How far a computed mean, gap or bound of a run-level case may be from the harness's (SPEC §5).
TOLERANCE = 1e-9
#: The fixtures' stand-in for the harness's root folder (in printed paths and a driver's ``argv``).
ROOT = "<ROOT>"


class FixtureError(ValueError):
    """A fixture that cannot be read or expressed: ``where`` (a file, a case) and, for a
    line of a JSONL fixture, its ``line`` name it in the message."""

    def __init__(self, where: object, reason: str, line: int | None = None) -> None:
        self.where, self.reason, self.line = where, reason, line
        super().__init__(f"{where}:{line}: {reason}" if line is not None else f"{where}: {reason}")


# ---------------------------------------------------------------- reading a case
def read_cases(path: Path) -> Iterator[tuple[int, dict | FixtureError]]:
    """``(line number, case or FixtureError)`` for each non-blank line of a JSONL fixture.

    Lines are split on ``\n`` only: U+2028, U+0085 and the like are legal inside the
    JSON strings of a case (S2 responses hold them) and do not end a line.
    """
    for no, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            case = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            yield no, FixtureError(path, f"not UTF-8 ({exc.reason} at byte {exc.start})", no)
            continue
        except json.JSONDecodeError as exc:
            yield no, FixtureError(path, f"not valid JSON ({exc.msg}, column {exc.colno})", no)
            continue
        if not isinstance(case, dict):
            yield no, FixtureError(path, f"a case must be a JSON object, got {type(case).__name__}", no)
            continue
        yield no, case


def need(case: dict, key: str, path: Path, line: int, kind: type | tuple = object):
    """``case[key]``, of type ``kind`` (``bool`` is not an ``int``); else a :class:`FixtureError`
    naming ``path:line``."""
    try:
        value = case[key]
    except (KeyError, TypeError):
        raise FixtureError(path, f"missing {key!r}", line) from None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise FixtureError(path, f"{key!r} has the wrong type ({type(value).__name__})", line)
    return value


def integer(value: object, what: str, path: Path, line: int) -> int:
    """``value`` where it is an integer (``bool`` is not); else a :class:`FixtureError`."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise FixtureError(path, f"{what} must be an integer, got {value!r}", line)
    return value


def case_id(case: dict, path: Path, line: int) -> str:
    """The case's ``id``, else ``FILE:LINE``."""
    return str(case.get("id") or f"{path.name}:{line}")


CaseCheck = Callable[[dict, Path, int], list["Check"]]


def line_cases(family: str, path: Path, check: CaseCheck) -> Iterator[CaseResult]:
    """Run ``check(case, path, line)`` on every case of a JSONL family; a
    :class:`FixtureError` (from reading or from the check) fails that case only."""
    for line, case in read_cases(path):
        if isinstance(case, FixtureError):
            yield CaseResult(family, f"{path.name}:{line}", error=str(case))
            continue
        name = case_id(case, path, line)
        try:
            yield CaseResult(family, name, check(case, path, line))
        except FixtureError as exc:
            yield CaseResult(family, name, error=str(exc))
        except Exception as exc:  # a rule that crashes on this case fails it, not the run
            yield CaseResult(family, name, error=f"{path}:{line}: {type(exc).__name__}: {exc}")


def decode(value: Any) -> Any:
    """A run-level case's value with ``{"$float": "nan"}`` and friends as floats."""
    if isinstance(value, dict):
        if set(value) == {"$float"}:
            return float(value["$float"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


# ---------------------------------------------------------------- comparing
def sha256_text(text: str) -> str:
    """The hex sha256 of ``text``'s UTF-8 bytes (how the fixtures digest a text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Missing:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Missing()
NO_RULE = "<no rule for this field>"


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


def differences(expected: object, actual: object, path: str = "", limit: int = 5) -> list[Check]:
    """The first ``limit`` places where ``actual`` differs from ``expected`` (exact JSON).

    Every key of an expected object must be in ``actual`` with the same value; keys
    only ``actual`` has are not differences.
    """
    out: list[Check] = []

    def walk(e: object, a: object, p: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(e, dict) and isinstance(a, dict):
            for k in e:
                walk(e[k], a.get(k, ABSENT), f"{p}.{k}" if p else str(k))
        elif isinstance(e, list) and isinstance(a, list) and len(e) == len(a):
            for i, (x, y) in enumerate(zip(e, a)):
                walk(x, y, f"{p}[{i}]")
        elif isinstance(e, _Missing) or isinstance(a, _Missing) or _canonical(e) != _canonical(a):
            out.append(Check(p or "value", e, a))

    walk(expected, actual, path)
    return out


def compare_fields(expected: dict, actual: dict, known: Iterable[str] | None = None,
                   prefix: str = "expected") -> list[Check]:
    """:func:`differences` of ``expected`` from ``actual`` over the ``known`` fields (default: those
    ``actual`` has); an expected field outside them has no rule and fails (:data:`NO_RULE`); a
    raise where a value was expected (or the reverse) is one difference showing both."""
    known = set(actual if known is None else known)
    found = [Check(f"{prefix}.{k}", expected[k], NO_RULE) for k in expected if k not in known]
    wanted = {k: v for k, v in expected.items() if k in known}
    if ("raises" in wanted) != ("raises" in actual):
        return found + [Check(prefix, wanted, actual)]
    return found + differences(wanted, actual, prefix)


def matches(expected: Any, actual: Any, tolerance: float = 0.0) -> bool:
    """Equality as SPEC §3 and §5 define it: digests by sha256 and length, exact strings,
    numbers within ``tolerance`` (NaN equals NaN), a key present on one side only differs."""
    if isinstance(expected, dict) and set(expected) == {"$digest"}:
        if not isinstance(actual, str):
            return False
        d = expected["$digest"]
        return len(actual) == d["len"] and sha256_text(actual) == d["sha256"]
    if isinstance(expected, dict) and set(expected) == {"$float"}:
        expected = float(expected["$float"])
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual or expected == actual and type(expected) is type(actual)
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        if math.isnan(expected) or math.isnan(actual):
            return math.isnan(expected) and math.isnan(actual)
        return abs(expected - actual) <= tolerance
    if isinstance(expected, dict) and isinstance(actual, dict):
        return set(expected) == set(actual) and all(matches(expected[k], actual[k], tolerance) for k in expected)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(matches(e, a, tolerance) for e, a in zip(expected, actual))
    return expected == actual and type(expected) is type(actual)


def field_differences(expected: Mapping, actual: Mapping, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(field, expected, actual)`` for each top-level key that differs (absent = ``<absent>``)."""
    out = []
    for k in sorted(set(expected) | set(actual)):
        e, a = expected.get(k, "<absent>"), actual.get(k, "<absent>")
        if k not in expected or k not in actual or not matches(e, a):
            out.append((f"{prefix}{k}", e, a))
    return out


def load_declared(path: Path = DECLARED_FILE) -> list[dict]:
    """The project's declared divergences: ``[{family, section, field, reason}]``; a field
    ending ``*`` matches every field it starts."""
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    for i, d in enumerate(data):
        if not isinstance(d, dict) or not {"family", "section", "field", "reason"} <= set(d):
            raise FixtureError(path, f"entry {i} needs family, section, field and reason")
    return data


def declared_for(declared: Sequence[dict], family: str, section: str, name: str) -> dict | None:
    for d in declared:
        if d["family"] in (family, "*") and d["section"] == section and \
                (d["field"] == name or d["field"].endswith("*") and name.startswith(d["field"][:-1])):
            return d
    return None


# ---------------------------------------------------------------- what a case reports
@dataclass(frozen=True)
class Check:
    """One compared field (module doc): where it is (``field``, within a run-level case's
    ``section``: requests, cells, tables, ...), the expected and actual values, its status
    and a note."""

    field: str
    expected: Any = None
    actual: Any = None
    status: str = FAIL
    section: str = ""
    note: str = ""

    def describe(self, max_lines: int = 40) -> str:
        """The difference as text (two texts as a unified diff)."""
        if isinstance(self.expected, str) and isinstance(self.actual, str):
            diff = list(difflib.unified_diff(self.expected.splitlines(), self.actual.splitlines(),
                                             "expected", "actual", n=1, lineterm=""))
            if not diff:  # differ only in line endings or a final newline
                diff = [f"expected {self.expected[-60:]!r}", f"actual   {self.actual[-60:]!r}"]
            shown = "\n".join(diff[:max_lines])
            more = f"\n    ... {len(diff) - max_lines} more diff lines" if len(diff) > max_lines else ""
            return f"{self.field}:\n    " + shown.replace("\n", "\n    ") + more
        return f"{self.field}: expected {_shown(self.expected)}, got {_shown(self.actual)}"

    def as_dict(self) -> dict:
        """The check as the run-level ``--out`` files write it (long values cut)."""
        return {"section": self.section, "field": self.field, "status": self.status,
                "expected": _cut(self.expected), "actual": _cut(self.actual), "note": self.note}


def _shown(value: object, limit: int = 300) -> str:
    text = _canonical(value) if not isinstance(value, _Missing) else "<absent>"
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def _cut(value: Any, limit: int = 400) -> Any:
    text = _canonical(value)
    return value if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


@dataclass
class CaseResult:
    """One case (module doc): its family and id, its checks, or the error that stopped it."""

    family: str
    case_id: str
    checks: list[Check] = field(default_factory=list)
    error: str | None = None

    def add(self, section: str, name: str, ok: bool, expected: Any = None, actual: Any = None,
            declared: Sequence[dict] = (), note: str = "") -> None:
        """One compared field: a pass, else a declared divergence where ``declared`` says so,
        else a failure."""
        status = PASS if ok else FAIL
        if not ok:
            d = declared_for(declared, self.family, section, name)
            if d is not None:
                status, note = DECLARED, d["reason"]
        self.checks.append(Check(name, expected, actual, status, section, note))

    def compare(self, section: str, name: str, expected: Any, actual: Any, declared: Sequence[dict] = (),
                tolerance: float = 0.0, note: str = "") -> None:
        """:meth:`add` of a field equal when it :func:`matches` within ``tolerance``."""
        self.add(section, name, matches(expected, actual, tolerance), expected, actual, declared, note)

    def not_expressible(self, section: str, name: str, note: str) -> None:
        """An input we cannot run (it fails the case), with why."""
        self.checks.append(Check(name, status=NOT_EXPRESSIBLE, section=section, note=note))

    def not_in_release(self, section: str, name: str, note: str) -> None:
        """A comparison a replay from released cells cannot make (listed, with why; not a pass)."""
        self.checks.append(Check(name, status=NOT_IN_RELEASE, section=section, note=note))

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.checks)

    @property
    def passed(self) -> bool:
        return self.error is None and not any(c.status in (FAIL, NOT_EXPRESSIBLE) for c in self.checks)

    def summary(self) -> dict:
        return {"case": self.case_id, "family": self.family, "passed": self.passed, "error": self.error,
                **{s: self.count(s) for s in STATUSES}}


@dataclass
class FamilyResult:
    """One family's cases: those of a fixture file, or of a run-level folder (``path``);
    ``missing`` when the file is not there."""

    family: str
    path: Path
    missing: bool = False
    cases: list[CaseResult] = field(default_factory=list)

    @property
    def n_passed(self) -> int:
        return sum(c.passed for c in self.cases)

    @property
    def n_failed(self) -> int:
        return len(self.cases) - self.n_passed

    @property
    def ok(self) -> bool:
        return not self.missing and self.n_failed == 0 and bool(self.cases)
