"""Where things live: the repository, the shared corpus beside it, the cache, data.

Every location can be overridden by an environment variable so that a deployer can
point the project at their own sessions or cache without editing code.
"""
from __future__ import annotations

import os
from pathlib import Path

# lib/contextecho/engine/paths.py -> repository root is two levels above the package.
REPO_ROOT = Path(__file__).resolve().parents[3]


def _from_env(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser().resolve() if value else default


def shared_dir() -> Path:
    """The read-only ``shared/`` folder beside the checkout (corpus, inventories)."""
    return _from_env("CONTEXTECHO_SHARED", REPO_ROOT.parent / "shared")


#: The reference judge's prompt, under :func:`shared_dir` (instrument data of the authors'
#: harness, read at run time and never committed).
JUDGE_PROMPT_FILE = Path("reference") / "contextecho" / "judge_prompt.json"


def data_dir() -> Path:
    """Committed manifests and fixtures, plus the local corpus filled by ``make data``."""
    return _from_env("CONTEXTECHO_DATA", REPO_ROOT / "data")


def released_dir(revision: str) -> Path:
    """A revision of the authors' released per-cell dataset, as ``released fetch`` leaves it
    (git-ignored: 705 MB for v1.0); a revision naming a branch path (``refs/pr/1``) becomes one
    folder name (``refs--pr--1``)."""
    return data_dir() / "released" / revision.replace("/", "--")


def cache_dir() -> Path:
    """The content-addressed Parquet call cache (git-ignored)."""
    return _from_env("CONTEXTECHO_CACHE", REPO_ROOT / "cache")


def runs_dir() -> Path:
    """Run manifests, one JSON file per round (git-ignored)."""
    return _from_env("CONTEXTECHO_RUNS", REPO_ROOT / "runs")
