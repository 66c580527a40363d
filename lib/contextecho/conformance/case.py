"""A run-level fixture case of the reference harness: its format, and how one field is compared.

``shared/reference/contextecho/runs/cases/*.json`` (its ``README.md`` gives the format, its
``SPEC.md`` what a runner must do): reading a case (:func:`read_case`: a bad file is a
:class:`CaseError` naming it), its encoded values (``$float``, ``$digest``), the identity of
a request key, equality as SPEC §3 and §5 define it (:func:`matches`), the project's
declared divergences (``data/conformance/declared_divergences.json``), and the report of one
case (:class:`CaseReport`: one :class:`Check` per compared field). Every family's runner
(:mod:`.runs` and the family modules it dispatches to) reports through these.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..engine.paths import REPO_ROOT

FORMAT_VERSION = 1
FAMILIES = ("panel", "s2", "onset", "cross_judge_b3", "session_validation", "consolidate")
DECLARED_FILE = REPO_ROOT / "data" / "conformance" / "declared_divergences.json"


# ---------------------------------------------------------------- reading a case
class CaseError(ValueError):
    """A case file that cannot be checked (bad JSON, an unknown family or format)."""


def read_case(path: Path) -> dict:
    try:
        case = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CaseError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise CaseError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not isinstance(case, dict):
        raise CaseError(f"{path}: a case is a JSON object")
    for name in ("id", "family", "inputs", "expected", "harness_driver"):
        if name not in case:
            raise CaseError(f"{path}: no {name!r}")
    if case.get("format_version") != FORMAT_VERSION:
        raise CaseError(f"{path}: format_version {case.get('format_version')!r} (this runner reads {FORMAT_VERSION})")
    if case["family"] not in FAMILIES:
        raise CaseError(f"{path}: unknown family {case['family']!r} (known: {', '.join(FAMILIES)})")
    return case


def decode(value: Any) -> Any:
    """``{"$float": "nan"}`` and friends as floats; everything else as it is."""
    if isinstance(value, dict):
        if set(value) == {"$float"}:
            return float(value["$float"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def known_texts(case: dict) -> dict[str, str]:
    """Every string of the case's inputs and ``expected.texts`` whose whole text is there, by
    sha256: a digested canned reply (over 1,000 characters) is one of the injections."""
    found: dict[str, str] = {}

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.setdefault(hashlib.sha256(value.encode("utf-8")).hexdigest(), value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(case.get("inputs", {}))
    for sha, text in (case["expected"].get("texts") or {}).items():
        if text.get("len", 0) <= len(text.get("head", "")):
            found.setdefault(sha, text["head"])
    return found


def resolve_digests(value: Any, texts: Mapping[str, str], where: str) -> Any:
    """``value`` with every ``{"$digest"}`` replaced by its text (a :class:`CaseError` when
    the case does not hold it)."""
    if isinstance(value, dict) and set(value) == {"$digest"}:
        sha = value["$digest"]["sha256"]
        if sha not in texts:
            raise CaseError(f"{where}: the text of digest {sha[:12]} is nowhere in the case")
        return texts[sha]
    if isinstance(value, dict):
        return {k: resolve_digests(v, texts, where) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_digests(v, texts, where) for v in value]
    return value


def key_identity(key: Mapping[str, Any]) -> tuple:
    """A target request key as a cell identity: (target, position, arm, item, replicate)."""
    return (key.get("target"), key.get("position"), key.get("arm"), key.get("item"), int(key.get("replicate", 0)))


def key_text(key: Mapping[str, Any]) -> str:
    return json.dumps(key, sort_keys=True)


# ---------------------------------------------------------------- comparing
STATUSES = ("pass", "fail", "declared", "not_expressible", "not_implemented")


@dataclass
class Check:
    """One compared field: ``pass``, ``fail``, ``declared`` (a declared divergence, never a
    pass), ``not_expressible`` (an input we cannot run: fails the case) or
    ``not_implemented`` (a positions scheme we do not implement: listed, SPEC §6);
    expected and actual values for the report."""

    section: str
    field: str
    status: str
    expected: Any = None
    actual: Any = None
    note: str = ""

    def as_dict(self) -> dict:
        return {"section": self.section, "field": self.field, "status": self.status,
                "expected": _short(self.expected), "actual": _short(self.actual), "note": self.note}


def _short(value: Any, limit: int = 400) -> Any:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    return value if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def matches(expected: Any, actual: Any, tolerance: float = 0.0) -> bool:
    """Equality as SPEC §3 and §5 define it: digests by sha256 and length, exact strings,
    numbers within ``tolerance`` (NaN equals NaN), a key present on one side only differs."""
    if isinstance(expected, dict) and set(expected) == {"$digest"}:
        if not isinstance(actual, str):
            return False
        d = expected["$digest"]
        return len(actual) == d["len"] and hashlib.sha256(actual.encode("utf-8")).hexdigest() == d["sha256"]
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
            raise CaseError(f"{path}: entry {i} needs family, section, field and reason")
    return data


def declared_for(declared: Sequence[dict], family: str, section: str, name: str) -> dict | None:
    for d in declared:
        if d["family"] in (family, "*") and d["section"] == section and \
                (d["field"] == name or d["field"].endswith("*") and name.startswith(d["field"][:-1])):
            return d
    return None


# ---------------------------------------------------------------- a case's report
@dataclass
class CaseReport:
    case_id: str
    family: str
    checks: list[Check] = field(default_factory=list)
    error: str | None = None

    def add(self, section: str, name: str, ok: bool, expected: Any = None, actual: Any = None,
            declared: Sequence[dict] = (), note: str = "") -> None:
        status = "pass" if ok else "fail"
        if not ok:
            d = declared_for(declared, self.family, section, name)
            if d is not None:
                status, note = "declared", d["reason"]
        self.checks.append(Check(section, name, status, expected, actual, note))

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.checks)

    @property
    def passed(self) -> bool:
        return self.error is None and not any(c.status in ("fail", "not_expressible") for c in self.checks)

    def summary(self) -> dict:
        return {"case": self.case_id, "family": self.family, "passed": self.passed, "error": self.error,
                **{s: self.count(s) for s in STATUSES}}
