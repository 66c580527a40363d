"""Fixtures of the run-level conformance tests: the shared run fixtures' folder."""
from __future__ import annotations

import json

import pytest

from contextecho.engine.paths import shared_dir

RUNS = shared_dir() / "reference" / "contextecho" / "runs"


@pytest.fixture(scope="session")
def runs_dir(missing_shared_data):
    """``shared/reference/contextecho/runs`` (its cases and positions files)."""
    if not (RUNS / "cases").is_dir():
        missing_shared_data(f"run fixtures not found at {RUNS}")
    return RUNS


def case_of(runs_dir, name: str) -> dict:
    """A fresh copy of the shared case ``name`` (to alter)."""
    return json.loads((runs_dir / "cases" / f"{name}.json").read_text(encoding="utf-8"))


def write_case(tmp_path, case: dict):
    """``case`` written as ``tmp_path/cases/<id>.json``; its path."""
    (tmp_path / "cases").mkdir(exist_ok=True)
    path = tmp_path / "cases" / f"{case['id']}.json"
    path.write_text(json.dumps(case), encoding="utf-8")
    return path


def status_of(report, section: str, name: str) -> str:
    """The status of the first check ``section`` ``name`` of a case's report (it must exist)."""
    found = [c.status for c in report.checks if c.section == section and c.field == name]
    assert found, f"no check {section} {name}"
    return found[0]
