"""The default corpus: its committed manifest, filling ``data/corpus``, per-file summaries.

``data/corpus_manifest.csv`` lists every file of the corpus (public source repository,
path, commit, licence, size, sha256, format, counts, raw download URL) — not the files.
:func:`fill_corpus` copies them from the shared folder when present, else downloads
them, and verifies every sha256; :func:`summarize` parses a folder of transcripts.
"""
from __future__ import annotations

import csv
import hashlib
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable

from ..engine.paths import data_dir, shared_dir
from .errors import SessionError, SessionFormatError
from .jsonl import path_problem
from .loader import load_session
from .model import Session
from ..engine.usage import UsageError

MANIFEST_NAME = "corpus_manifest.csv"
COUNT_KEYS = ("n_user_msgs", "n_assistant_msgs", "n_tool_calls", "n_compactions")


class CorpusError(UsageError, SessionError):
    """A corpus file is missing, cannot be fetched, or fails its sha256 check."""


def manifest_path() -> Path:
    return data_dir() / MANIFEST_NAME


def shared_corpus() -> Path:
    return shared_dir() / "corpus" / "real"


def local_corpus() -> Path:
    return data_dir() / "corpus"


def read_manifest(path: str | Path | None = None) -> list[dict[str, str]]:
    path = Path(path) if path else manifest_path()
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    except FileNotFoundError:
        raise CorpusError(f"corpus manifest not found: {path}") from None


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _download(url: str, target: Path, timeout: float = 60.0) -> None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, \
                tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
            shutil.copyfileobj(resp, tmp)
    except OSError as exc:
        raise CorpusError(f"cannot download {url}: {exc}") from None
    Path(tmp.name).replace(target)


@dataclass(frozen=True)
class FillResult:
    copied: int
    downloaded: int
    present: int


def fill_corpus(dest: str | Path | None = None, rows: Iterable[dict] | None = None, *,
                source: str | Path | None = None, allow_download: bool = True,
                progress: Callable[[Iterable], Iterable] = iter) -> FillResult:
    """Make ``dest`` hold every manifest file with the right sha256 (idempotent).

    Files come from ``source`` (default: the shared corpus) when that folder exists,
    otherwise from each row's ``url``. A sha256 mismatch raises :class:`CorpusError`
    naming the file; a copied or downloaded file that fails is removed again.
    """
    dest = Path(dest) if dest else local_corpus()
    rows = list(read_manifest() if rows is None else rows)
    source = Path(source) if source else shared_corpus()
    use_source = source.is_dir()
    copied = downloaded = present = 0
    for row in progress(rows):
        name = row["file"]
        target = dest / name
        if target.is_file() and target.stat().st_size == int(row["bytes"]) \
                and sha256_file(target) == row["sha256"]:
            present += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if use_source:
            origin = source / name
            if not origin.is_file():
                raise CorpusError(f"{name}: listed in the manifest but missing from {source}")
            shutil.copyfile(origin, target)
            copied += 1
        elif allow_download:
            _download(row["url"], target)
            downloaded += 1
        else:
            raise CorpusError(f"{name}: not present and downloading is disabled")
        actual = sha256_file(target)
        if actual != row["sha256"]:
            target.unlink()
            raise CorpusError(f"{name}: sha256 mismatch (expected {row['sha256']}, got {actual})")
    return FillResult(copied, downloaded, present)


def scan(root: str | Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """Every ``.jsonl`` file under ``root`` that can be read, sorted, and every path that
    cannot: ``(files, [(relative path, why)])``.

    Symlinked folders are followed once (a link back into a folder already being scanned
    is a symlink loop); dangling links, symlink loops, unreadable folders and ``.jsonl``
    names that are FIFOs, sockets or devices are reported, never opened, never silently
    left out.
    """
    root = Path(root)
    files: list[Path] = []
    problems: list[tuple[str, str]] = []

    def rel(p: Path) -> str:
        return p.relative_to(root).as_posix() if p != root else "."

    stack = [(root, frozenset())]
    while stack:
        folder, ancestors = stack.pop()
        try:
            real = os.stat(folder)
            ancestors = ancestors | {(real.st_dev, real.st_ino)}
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append((rel(folder), f"cannot list folder: {exc.strerror or exc}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_symlink():
                problem = path_problem(path)
                if problem and ("dangling" in problem or "loop" in problem):
                    problems.append((rel(path), problem))
                    continue
            try:
                st = os.stat(path) if entry.is_dir() else None
            except OSError as exc:
                problems.append((rel(path), f"cannot read: {exc.strerror or exc}"))
                continue
            if st is not None:
                if (st.st_dev, st.st_ino) in ancestors:
                    problems.append((rel(path), f"symlink loop (points to {os.readlink(path)}, "
                                                "a folder that contains it)"))
                else:
                    stack.append((path, ancestors))
            elif entry.name.endswith(".jsonl"):
                problem = path_problem(path)
                if problem:
                    problems.append((rel(path), problem))
                else:
                    files.append(path)
    files.sort(key=lambda p: rel(p))
    problems.sort()
    return files, problems


@dataclass(frozen=True)
class Summary:
    file: str  # relative to the folder summarised
    session: Session

    def as_json(self) -> dict:
        s = self.session
        c, r = s.counts, s.report
        return {"file": self.file, "format": s.format, "session_id": s.session_id,
                "n_user_msgs": c.n_user_msgs, "user_msg_classes": dict(c.user_classes),
                "n_assistant_msgs": c.n_assistant_msgs, "n_tool_calls": c.n_tool_calls,
                "n_compactions": c.n_compactions, "n_microcompactions": c.n_microcompactions,
                "n_agent_steps": c.n_agent_steps, "glued_lines": list(r.glued_lines),
                "session_ids": dict(r.session_ids) if len(r.session_ids) > 1 else {},
                "skipped_lines": [[k.line, k.reason] for k in r.skipped]}

    @property
    def span(self) -> str:
        return span(self.session.first_timestamp, self.session.last_timestamp)


def span(first: str | None, last: str | None) -> str:
    """Wall-clock span of a session as ``1d02h``, ``3h07m`` or ``12m``."""
    if not first or not last:
        return "-"
    try:
        a = datetime.fromisoformat(first.replace("Z", "+00:00"))
        b = datetime.fromisoformat(last.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    minutes = int((b - a).total_seconds() // 60)
    days, rem = divmod(minutes, 1440)
    hours, mins = divmod(rem, 60)
    if days:
        return f"{days}d{hours:02d}h"
    return f"{hours}h{mins:02d}m" if hours else f"{mins}m"


def summarize(root: str | Path) -> tuple[list[Summary], list[tuple[str, str]]]:
    """Parse every transcript under ``root``: (summaries, [(file, why it was not read)]).

    Every path is accounted for: a file that is not a readable transcript, and a path the
    scan could not enter (see :func:`scan`), is listed with its reason.
    """
    root = Path(root)
    files, skipped = scan(root)
    out = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        try:
            out.append(Summary(rel, load_session(path, with_subagents=False)))
        except SessionFormatError as exc:
            skipped.append((rel, exc.reason if exc.line == 0 else f"line {exc.line}: {exc.reason}"))
    return out, sorted(skipped)
