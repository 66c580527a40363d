"""Shared test set-up: no test writes run manifests or cache cells into the checkout."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


@pytest.fixture(autouse=True)
def _isolated_outputs(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CONTEXTECHO_RUNS", str(tmp_path_factory.mktemp("runs")))
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path_factory.mktemp("cache")))
