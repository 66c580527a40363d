"""The one driver: which kind a fixture folder is (:func:`kind_of`), and its checks run (:func:`check`).

A **run-level** folder (``shared/reference/contextecho/runs``: ``cases/``, ``positions/``) replays
whole runs of the harness through our experiments (:mod:`.runs`); a **continuation** folder
(``.../continuation``) checks the tool-call continuation (:mod:`.continuation`); any other is
**function-level** (``.../fixtures``, :mod:`.functions`). Every kind gives
:class:`~.case.FamilyResult`\\ s: a function-level or continuation family is one file (missing
when the folder lacks it, never passed); the run-level families are ``cases`` and ``positions``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..engine.paths import shared_dir
from . import continuation, functions
from .case import FamilyResult

FUNCTIONS, CONTINUATION, RUNS = "function-level", "continuation", "run-level"
#: The families of the kinds that have them, each one file.
FAMILIES: dict[str, Mapping[str, str]] = {FUNCTIONS: functions.FAMILIES, CONTINUATION: continuation.FAMILIES}


def default_corpus() -> Path:
    """Where function-level and run-level cases' session paths are, unless told otherwise."""
    return shared_dir() / "corpus" / "real"


def kind_of(folder: Path) -> str:
    """A folder with ``cases/`` is run-level; one with the continuation's cut points or
    prefixes is the continuation's; any other is function-level."""
    if (folder / "cases").is_dir():
        return RUNS
    if any((folder / continuation.FAMILIES[f]).is_file() for f in ("cutpoints", "prefixes")):
        return CONTINUATION
    return FUNCTIONS


def check(folder: str | Path, corpus: str | Path | None = None, families: Sequence[str] | None = None,
          kind: str | None = None, released: bool = False) -> list[FamilyResult]:
    """Every family of ``folder`` (or the named ones; a run-level folder runs whole), checked.

    ``corpus``: the folder the cases' session paths are relative to (function level and
    run level; default :func:`default_corpus`); for the continuation, a corpus folder tried
    before each case's own path (:class:`~.continuation.ReferencedSessions`). ``kind``: the folder's
    kind, where it is not to be recognised (:func:`kind_of`; a folder of a few families).
    ``released`` (run level only): each case's replies are its cells read as a release
    (:mod:`.released`), not its canned replies."""
    folder = Path(folder)
    kind = kind or kind_of(folder)
    if kind == RUNS:
        from . import runs  # the experiments the runs replay through: only for a run-level folder

        return runs.run_cases(folder, Path(corpus) if corpus is not None else default_corpus(), released)
    if released:
        raise ValueError(f"{folder}: --released replays run-level cases; this is a {kind} folder")
    unknown = [f for f in families or () if f not in FAMILIES[kind]]
    if unknown:
        raise ValueError(f"unknown {kind} families {unknown} (known: {', '.join(FAMILIES[kind])})")
    if kind == FUNCTIONS:
        checks, sessions = functions, functions.CorpusSessions(Path(corpus) if corpus is not None else default_corpus())
    else:
        checks, sessions = continuation, continuation.ReferencedSessions(corpus)
    results = []
    for family in families or list(checks.FAMILIES):
        path = folder / checks.FAMILIES[family]
        results.append(FamilyResult(family, path, cases=list(checks.CHECKERS[family](path, sessions)))
                       if path.is_file() else FamilyResult(family, path, missing=True))
    return results
