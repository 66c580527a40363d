"""Whether a notebook's outputs are still what running it again would write (``contextecho paper``).

A notebook run writes its folder under ``paper/_generated/<name>`` from three things: its code
(the notebook and this library), its inputs (parameters, the data it reads, the installed
packages, the environment) and the model answers it reads from the call cache, which is
append-only and content-addressed: an answer once stored is never changed. So a run that
completed with no failed call (a failed call is not stored, and a run again would call it
again) is repeated exactly by a run with the same code and inputs, and need not be run.

After such a run :func:`record` writes :data:`STAMP` into the folder: a digest of each part of
:func:`inputs`, and the sha256 of every file the run left there. Before the next one,
:func:`stale` says why the notebook must run (``None``: it need not): no stamp, a part of the
inputs changed (named), an output missing, added or changed, a run that failed or did not
finish. ``contextecho paper --force`` runs every notebook whatever the stamps say. A
reviewer's ``papermill`` run of one notebook, and ``contextecho notebook``, never read them.

The parts: the notebook file; the overrides it is given; every file of the library
(``lib/contextecho``); the installed versions of the packages the run log names and Python's;
every file under ``data/`` but the corpus sessions, which ``contextecho paper`` checks against
their manifest (a part) before any notebook, and the authors' release (``data/released``, up to
116,694 cells, verified by ``contextecho released``), and the corpus folder's listing with sizes
and times (a session added or written there is read); where a notebook is given a release
(``released``: the published notebook), that folder's listing the same way; the
reference judge's prompt where it is present; and the environment variables that choose how
models are reached or answer (``CONTEXTECHO_*``, ``LITELLM_*``, the names of the
``*_API_KEY``/``*_API_BASE``/``*_BASE_URL`` variables that are set).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..engine.hashing import canonical_json
from ..engine.manifest import package_versions
from ..engine.paths import JUDGE_PROMPT_FILE, data_dir, shared_dir
from ..experiments.parameters import resolve_path
from .build import notebook_path

#: The parameter that points a notebook at a release (its files are an input).
RELEASED = "released"

#: The stamp a run that can be repeated exactly leaves in its output folder.
STAMP = "inputs.json"
#: Environment variables whose values choose how models are reached or how they answer.
ENV_PREFIXES = ("CONTEXTECHO_", "LITELLM_")
#: Environment variables counted by name only (whether they are set): credentials and routes.
ENV_NAMED = ("_API_KEY", "_API_BASE", "_BASE_URL")
LIBRARY = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Inputs:
    """The digest of each part of what a notebook run reads (module doc)."""

    name: str
    parts: Mapping[str, str]

    def changed(self, before: Mapping[str, str]) -> list[str]:
        """The parts that differ from ``before`` (one recorded by an earlier run)."""
        return sorted(k for k in {*self.parts, *before} if self.parts.get(k) != before.get(k))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tree(root: Path, *, skip: tuple[str, ...] = ()) -> str:
    """The digest of every file under ``root`` (its path and content), ``skip`` folders left out."""
    h = hashlib.sha256()
    if root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = path.relative_to(root).as_posix()
            if "__pycache__" in path.parts or rel.split("/", 1)[0] in skip:
                continue
            h.update(rel.encode() + b"\0" + _sha(path.read_bytes()).encode() + b"\n")
    return h.hexdigest()


def _listing(root: Path) -> str:
    """The digest of the names, sizes and modification times of the files under ``root`` (a
    file written again, even to the same size, counts as changed)."""
    rows = sorted((p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    return _sha(canonical_json(rows).encode())


def _environment() -> str:
    chosen = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    named = sorted(k for k, v in os.environ.items() if v and k.endswith(ENV_NAMED))
    return _sha(canonical_json({"values": chosen, "set": named}).encode())


def shared_parts() -> dict[str, str]:
    """The digests of the parts every notebook reads alike (all but its file and overrides):
    computed once for a ``contextecho paper`` and given to :func:`inputs` for each notebook."""
    judge_prompt = shared_dir() / JUDGE_PROMPT_FILE
    return {
        "library": _tree(LIBRARY),
        "packages": _sha(canonical_json({**package_versions(), "python": sys.version}).encode()),
        "data": _tree(data_dir(), skip=("corpus", "released")),
        "corpus": _listing(data_dir() / "corpus"),
        "judge_prompt": _sha(judge_prompt.read_bytes()) if judge_prompt.is_file() else "absent",
        "environment": _environment(),
    }


def inputs(name: str, overrides: Mapping[str, Any], shared: Mapping[str, str] | None = None) -> Inputs:
    """The digest of each part of what running notebook ``name`` with ``overrides`` reads;
    ``shared``: :func:`shared_parts`, where the caller computed it already."""
    parts = {
        "notebook": _sha(notebook_path(name).read_bytes()),
        "overrides": _sha(canonical_json({k: str(v) for k, v in overrides.items()}).encode()),
        **(shared if shared is not None else shared_parts()),
    }
    if overrides.get(RELEASED):  # the release a notebook is pointed at: its files, as the corpus's
        parts[RELEASED] = _listing(resolve_path(str(overrides[RELEASED])))
    return Inputs(name, parts)


def _outputs(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): _sha(p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != STAMP}


def _run_log(folder: Path) -> dict[str, Any] | None:
    """The run log the last run left in ``folder`` (None: missing or unreadable)."""
    try:
        return json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def _repeatable(folder: Path) -> str | None:
    """Why the run that left ``folder`` would not be repeated exactly (None: it would)."""
    manifest = _run_log(folder)
    if manifest is None:
        return "its run log is missing or unreadable"
    if manifest.get("status") != "complete":
        return f"its last run is {manifest.get('status', 'of no status')}"
    failed = sum(int(b.get("failed", 0)) for b in (manifest.get("batches") or {}).values())
    return f"its last run has {failed} failed call(s), which a run again calls again" if failed else None


def asked_no_model(folder: Path) -> bool:
    """Whether the run that left ``folder`` completed with every call answered from the cache
    (its run log counts no call computed and none failed)."""
    manifest = _run_log(folder) or {}
    batches = (manifest.get("batches") or {}).values()
    return manifest.get("status") == "complete" and not any(
        int(b.get("computed", 0)) or int(b.get("failed", 0)) for b in batches)


def stale(now: Inputs, folder: Path) -> str | None:
    """Why notebook ``now.name`` must run to fill ``folder`` (None: its outputs there are what a
    run would write again)."""
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return "no record of a repeatable run"
    changed = now.changed(stamp.get("inputs", {}))
    if changed:
        return f"changed since its last run: {', '.join(changed)}"
    if folder.is_dir() and _outputs(folder) != stamp.get("outputs"):
        return "its outputs are not those its last run wrote"
    return _repeatable(folder)


def forget(folder: Path) -> None:
    """Remove ``folder``'s stamp (before a run that rewrites it)."""
    (folder / STAMP).unlink(missing_ok=True)


def record(now: Inputs, folder: Path) -> bool:
    """After a run of ``now.name`` that filled ``folder``: stamp it where the run can be repeated
    exactly, else remove an earlier stamp; whether it was stamped."""
    path = folder / STAMP
    forget(folder)
    if _repeatable(folder) is not None:
        return False
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"notebook": now.name, "inputs": dict(now.parts), "outputs": _outputs(folder)},
                              indent=1, sort_keys=True))
    tmp.replace(path)
    return True

