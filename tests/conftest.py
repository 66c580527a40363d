"""Shared test set-up.

- No test writes run manifests or cache cells into the checkout.
- Shared data (the real corpus, the MPI inventory) must be present under CI, where a
  missing ``../shared`` is a broken set-up: there the tests that need it fail; on a
  developer machine without it they are skipped, saying why.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, NoReturn

import pytest

from contextecho.engine.paths import shared_dir

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


@pytest.fixture(autouse=True)
def _isolated_outputs(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CONTEXTECHO_RUNS", str(tmp_path_factory.mktemp("runs")))
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path_factory.mktemp("cache")))


def _missing_shared_data(message: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{message} (CI needs ../shared beside the checkout)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def missing_shared_data() -> Callable[[str], NoReturn]:
    """Call with a reason when shared data is absent: fails under CI, skips elsewhere."""
    return _missing_shared_data


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The real corpus folder (``shared/corpus/real`` with its MANIFEST.csv)."""
    path = shared_dir() / "corpus" / "real"
    if not (path / "MANIFEST.csv").is_file():
        _missing_shared_data(f"real corpus not found at {path} (set CONTEXTECHO_SHARED to the "
                             "folder holding corpus/real)")
    return path
