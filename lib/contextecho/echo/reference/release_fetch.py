"""A local copy of the authors' released per-cell dataset: fetched, verified, counted, receipted.

The authors released their harness's per-cell evaluations on the Hugging Face Hub as the
dataset :data:`RELEASE_REPO` (v1.0: 3 sessions and 41,921 cells; v2.0: 57 sessions and
116,694 cells), laid out as the harness writes them: ``results/<experiment>/…/<cell>.json``,
with the sessions under ``data/sessions/``. This module obtains one revision of it and says
what can be trusted about the copy:

* :func:`download_release` — ``huggingface_hub.snapshot_download`` of the revision's commit
  into a folder (resumable: a rerun fetches only what is missing). It resolves the revision
  first with a short timeout, so a machine that cannot reach huggingface.co fails at once
  (:class:`ReleaseUnreachable`) instead of falling back on a partial folder.
* :func:`link_release` — use a copy made elsewhere: the folder itself, or a symlink to it.
* :func:`verify_release` — every checksum list the tree ships (``SHA256SUMS`` and other
  ``sha256sum``/BSD-style lists, ``<file>.sha256`` sidecars, JSON manifests with a sha256 per
  file, Croissant ``FileObject`` records, CSV manifests with path and sha256 columns) checked
  file by file: mismatches, files listed but absent, files no list covers. A tree without any
  checksum list is *unverifiable*, and is said to be.
* :func:`count_release` — cells (``results/**/*.json``, per experiment) and sessions
  (``data/sessions/*``), and the archives whose contents are not counted.
* :class:`Receipt` — what was fetched, from where, when, the counts and the verification,
  written next to the tree (``<tree>.receipt.json``) and read back by ``released status``.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Iterator

from ...sessions.corpus import sha256_file
from ...engine.usage import UsageError

RELEASE_REPO = "contextecho2026/persona-drift-contextecho"
#: Seconds to wait for huggingface.co to answer before calling it unreachable.
CONNECT_TIMEOUT_S = 10.0
RECEIPT_SUFFIX = ".receipt.json"
#: What huggingface_hub keeps inside a ``local_dir`` (download metadata): not the release.
HUB_METADATA_DIR = ".cache"
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.xz", ".zip", ".7z")

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_GNU_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")
_BSD_LINE = re.compile(r"^SHA256 ?\((.+)\) ?= ?([0-9a-fA-F]{64})$")
_PATH_KEYS = ("path", "file", "filename", "file_name", "relpath", "relative_path", "contentUrl")
_HASH_KEYS = ("sha256", "sha256sum", "checksum", "hash", "digest")


class ReleaseError(UsageError):
    """The release cannot be fetched, linked or read (the message names the file and why)."""


class ReleaseUnreachable(ReleaseError):
    """huggingface.co cannot be reached (offline mode, no route, a timeout, the Hub down)."""


# --- obtaining a copy ----------------------------------------------------------------------

def download_release(revision: str, dest: Path, *, repo: str = RELEASE_REPO,
                     timeout: float = CONNECT_TIMEOUT_S) -> str:
    """Download ``revision`` of the dataset into ``dest``; the commit it resolved to.

    The revision (tag, branch or commit) is resolved first, within ``timeout`` seconds, and
    the download asks for that commit, so the copy is one commit even if the tag moves. A
    rerun resumes: files already in ``dest`` are not downloaded again. Raises
    :class:`ReleaseUnreachable` when the Hub cannot be reached, :class:`ReleaseError` when
    the dataset or the revision does not exist there or ``dest`` is a link to another copy.
    """
    import httpx2
    from huggingface_hub import HfApi, is_offline_mode, snapshot_download
    from huggingface_hub.errors import (HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled,
                                        RepositoryNotFoundError, RevisionNotFoundError)

    if dest.is_symlink():
        raise ReleaseError(f"{dest} links to a local copy ({os.readlink(dest)}); remove the link to download into it")
    if is_offline_mode():
        raise ReleaseUnreachable("HF_HUB_OFFLINE is set: huggingface_hub makes no request")
    try:
        commit = HfApi().dataset_info(repo, revision=revision, timeout=timeout).sha
        if not commit:
            raise ReleaseError(f"huggingface.co named no commit for {repo}@{revision}")
        dest.mkdir(parents=True, exist_ok=True)
        snapshot_download(repo, repo_type="dataset", revision=commit, local_dir=dest, etag_timeout=timeout)
    except RevisionNotFoundError:
        raise ReleaseError(f"{repo} has no revision {revision!r} on huggingface.co") from None
    except RepositoryNotFoundError:
        raise ReleaseError(f"huggingface.co has no dataset {repo} (or it is private)") from None
    except (httpx2.TransportError, OfflineModeIsEnabled, LocalEntryNotFoundError) as exc:
        raise ReleaseUnreachable(f"{type(exc).__name__}: {exc}") from None
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status is not None and status < 500:
            raise ReleaseError(f"huggingface.co refused {repo}@{revision}: {exc}") from None
        raise ReleaseUnreachable(f"huggingface.co answered {exc}") from None
    except OSError as exc:
        raise ReleaseError(f"{dest}: cannot write the download ({exc})") from None
    return commit


def link_release(source: Path, dest: Path) -> Path:
    """Use the copy at ``source`` as ``dest``: nothing to do when they are one folder, else a
    symlink ``dest`` → ``source``. Raises :class:`ReleaseError` when ``source`` is no folder,
    holds neither ``results/`` nor ``data/`` (no released tree), or ``dest`` is already
    something else."""
    source = source.expanduser().resolve()
    if not source.is_dir():
        raise ReleaseError(f"{source}: not a folder (--from takes the released tree's root)")
    if not any((source / part).is_dir() for part in ("results", "data")):
        raise ReleaseError(f"{source}: holds neither results/ nor data/, so it is no released tree "
                           "(--from takes the root of the dataset's copy)")
    if dest.resolve() == source:
        return source
    if dest.is_symlink() or dest.exists():
        raise ReleaseError(f"{dest} already exists and is not {source}; remove it or choose another folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.symlink_to(source, target_is_directory=True)
    return source


# --- verification ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Listed:
    """One file a checksum list names: its path in the tree, its sha256 (``None`` when the
    list gives only the name) and the list that names it."""
    path: str
    sha256: str | None
    listed_in: str


@dataclass(frozen=True)
class Mismatch:
    path: str
    expected: str
    actual: str
    listed_in: str


@dataclass(frozen=True)
class Verification:
    """What the tree's own checksum lists allow to be said about it.

    ``status``: ``verified`` (every file listed with a sha256 that matches), ``incomplete``
    (what is listed matches, but some files are in no list or listed without a sha256),
    ``failed`` (a mismatch or a listed file absent), ``unverifiable`` (no checksum list).
    """
    status: str
    lists: tuple[str, ...]
    verified: int
    unchecked_listed: tuple[str, ...]
    mismatched: tuple[Mismatch, ...]
    missing: tuple[str, ...]
    uncovered: tuple[str, ...]
    unreadable: tuple[str, ...]
    files: int

    def lines(self, *, limit: int = 10) -> list[str]:
        """The verification in words: a headline, then the files behind each problem."""
        if self.status == "unverifiable":
            head = (f"unverifiable: the tree ships no checksum list (SHA256SUMS, *.sha256, a manifest with sha256); "
                    f"its {self.files:,} files were counted, not checked")
        else:
            head = (f"{self.status}: {self.verified:,} of {self.files:,} files match the sha256 of "
                    f"{len(self.lists)} checksum list(s) ({', '.join(self.lists)})")
        out = [head]
        groups = [("sha256 mismatch", [f"{m.path} (expected {m.expected[:12]}…, found {m.actual[:12]}…, "
                                       f"listed in {m.listed_in})" for m in self.mismatched]),
                  ("listed but absent", list(self.missing)),
                  ("in no checksum list (not verified)", list(self.uncovered)),
                  ("listed without a sha256 (present, not verified)", list(self.unchecked_listed)),
                  ("checksum lists or lines not understood", list(self.unreadable))]
        for title, items in groups:
            if items:
                out.append(f"  {title}: {len(items):,}")
                out += [f"    {item}" for item in items[:limit]]
                if len(items) > limit:
                    out.append(f"    … and {len(items) - limit:,} more (all in the receipt)")
        return out


def is_checksum_list(name: str) -> bool:
    """Whether a file name is one of the checksum-list or manifest forms :func:`verify_release`
    reads: ``SHA256SUMS[.txt]``, ``checksums.{txt,json,csv}``, ``<file>.sha256[sum]``,
    ``MANIFEST[*].{txt,json,csv,tsv}``, ``croissant*.json``."""
    low = name.lower()
    if low.endswith((".sha256", ".sha256sum", ".sha256sums")):
        return True
    stem, _, ext = low.partition(".")
    if ext not in ("", "txt", "json", "csv", "tsv"):
        return False
    return stem in ("sha256sums", "sha256sum", "checksums") or stem.startswith("manifest") or \
        (stem.startswith("croissant") and ext == "json")


def _walk(root: Path) -> Iterator[str]:
    """Every file under ``root`` as a POSIX path relative to it (symlinks followed), without
    huggingface_hub's download metadata."""
    for folder, dirs, files in os.walk(root, followlinks=True):
        rel = Path(folder).relative_to(root)
        if rel == Path("."):
            dirs[:] = [d for d in dirs if d != HUB_METADATA_DIR]
        dirs.sort()
        for name in sorted(files):
            yield (rel / name).as_posix()


def _in_tree(base: str, name: str) -> str | None:
    """``name`` (as a list writes it, relative to the list's folder ``base``) as a path in the
    tree; ``None`` when it leaves the tree."""
    name = name.strip().replace("\\", "/")
    if name.startswith("/") or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", name):
        return None
    parts: list[str] = [p for p in PurePosixPath(base).parts if p != "."]
    for part in PurePosixPath(name).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts) or None


def _text_list(rel: str, text: str) -> tuple[list[Listed], list[str]]:
    """A ``sha256sum`` (GNU), BSD (``SHA256 (f) = …``) or sidecar (``<file>.sha256``) list, or a
    plain ``MANIFEST`` of paths: its entries, and the lines it could not read."""
    base = str(PurePosixPath(rel).parent)
    suffix = next((x for x in (".sha256", ".sha256sum") if rel.lower().endswith(x)), None)
    sidecar = suffix is not None and PurePosixPath(rel).name.lower().partition(".")[0] not in (
        "sha256sums", "sha256sum", "checksums")
    plain = PurePosixPath(rel).name.lower() in ("manifest", "manifest.txt")
    listed, bad = [], []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        gnu, bsd = _GNU_LINE.match(line), _BSD_LINE.match(line)
        if gnu or bsd:
            digest, name = (gnu.group(1), gnu.group(2)) if gnu else (bsd.group(2), bsd.group(1))
        elif sidecar and _SHA256.fullmatch(line.split()[0]):
            digest, name = line.split()[0], PurePosixPath(rel).name[:-len(suffix)]
        elif plain:
            digest, name = None, line
        else:
            bad.append(f"{rel}:{number}: not a sha256 line ({line[:60]!r})")
            continue
        path = _in_tree(base, name)
        if path is None:
            bad.append(f"{rel}:{number}: {name!r} is outside the tree")
        else:
            listed.append(Listed(path, digest.lower() if digest else None, rel))
    return listed, bad


def _hash_of(value: Any) -> str | None:
    if isinstance(value, str):
        value = value.removeprefix("sha256:").removeprefix("sha256-")
        if _SHA256.fullmatch(value):
            return value.lower()
    return None


def _json_entries(value: Any) -> Iterator[tuple[str, str | None]]:
    """(path, sha256 or None) for every file a JSON manifest describes, in any of the common
    shapes: records with a path key and a sha256 key (``{"files": [{"path", "sha256"}]}``,
    Croissant's ``{"contentUrl", "sha256"}``), ``{path: sha256}`` and ``{path: {"sha256"}}``
    maps, and records with a path key alone (listed, not checksummed)."""
    if isinstance(value, list):
        for item in value:
            yield from _json_entries(item)
        return
    if not isinstance(value, dict):
        return
    path = next((value[k] for k in _PATH_KEYS if isinstance(value.get(k), str)), None)
    digest = next((h for k in _HASH_KEYS if (h := _hash_of(value.get(k))) is not None), None)
    if path is None and digest is not None and isinstance(value.get("name"), str):
        path = value["name"]
    if path is not None:
        yield path, digest
        return
    for key, item in value.items():
        pathlike = "/" in key or "." in key
        digest = _hash_of(item) if pathlike else None
        if digest is None and pathlike and isinstance(item, dict):
            digest = next((h for k in _HASH_KEYS if (h := _hash_of(item.get(k))) is not None), None)
        if digest is not None:
            yield key, digest
        else:
            yield from _json_entries(item)


def _json_list(rel: str, text: str) -> tuple[list[Listed], list[str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [f"{rel}: not JSON ({exc.msg}, line {exc.lineno})"]
    base = str(PurePosixPath(rel).parent)
    listed, bad = [], []
    for name, digest in _json_entries(data):
        path = _in_tree(base, name)
        if path is None:
            bad.append(f"{rel}: {name!r} is outside the tree")
        else:
            listed.append(Listed(path, digest, rel))
    return listed, bad


def _csv_list(rel: str, text: str) -> tuple[list[Listed], list[str]]:
    reader = csv.DictReader(io.StringIO(text), delimiter="\t" if rel.lower().endswith(".tsv") else ",")
    columns = {c.lower(): c for c in reader.fieldnames or []}
    path_col = next((columns[k.lower()] for k in _PATH_KEYS if k.lower() in columns), None)
    hash_col = next((columns[k] for k in _HASH_KEYS if k in columns), None)
    if path_col is None:
        return [], [f"{rel}: no path column (one of {', '.join(_PATH_KEYS)})"]
    base = str(PurePosixPath(rel).parent)
    listed, bad = [], []
    for number, row in enumerate(reader, 2):
        path = _in_tree(base, row[path_col] or "")
        digest = _hash_of(row.get(hash_col)) if hash_col else None
        if path is None:
            bad.append(f"{rel}:{number}: {row[path_col]!r} is outside the tree")
        elif hash_col and digest is None:
            bad.append(f"{rel}:{number}: {row.get(hash_col)!r} is not a sha256")
        else:
            listed.append(Listed(path, digest, rel))
    return listed, bad


def read_checksum_list(root: Path, rel: str) -> tuple[list[Listed], list[str]]:
    """The entries of the checksum list ``rel`` (a path in the tree ``root``), and what in it
    could not be read (``file[:line]: reason``)."""
    try:
        text = (root / rel).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [f"{rel}: cannot be read ({exc})"]
    low = rel.lower()
    if low.endswith(".json"):
        return _json_list(rel, text)
    if low.endswith((".csv", ".tsv")):
        return _csv_list(rel, text)
    return _text_list(rel, text)


def verify_release(root: Path, *, progress: Callable[[Iterable], Iterable] = lambda it: it) -> Verification:
    """Check every file of the tree ``root`` against the checksum lists it ships.

    ``progress`` wraps the files being hashed (a tqdm bar). Each listed file is hashed once;
    a file two lists give different sha256 to is a mismatch of one of them."""
    root = Path(root)
    if not root.is_dir():
        raise ReleaseError(f"{root}: no released tree here (run `released fetch` first)")
    files = list(_walk(root))
    lists = [rel for rel in files if is_checksum_list(PurePosixPath(rel).name)]
    listed: list[Listed] = []
    unreadable: list[str] = []
    used = []
    for rel in lists:
        entries, bad = read_checksum_list(root, rel)
        unreadable += bad
        if entries:
            used.append(rel)
            listed += entries
        elif not bad:
            unreadable.append(f"{rel}: lists no file")
    present = set(files)
    covered = {entry.path for entry in listed}
    checked = [e for e in listed if e.sha256 is not None and e.path in present]
    actual: dict[str, str] = {}
    for path in progress(sorted({e.path for e in checked})):
        actual[path] = sha256_file(root / path)
    mismatched = tuple(Mismatch(e.path, e.sha256, actual[e.path], e.listed_in)
                       for e in checked if actual[e.path] != e.sha256)
    bad_paths = {m.path for m in mismatched}
    verified = len({e.path for e in checked} - bad_paths)
    missing = tuple(sorted({e.path for e in listed if e.path not in present}))
    with_hash = {e.path for e in checked}
    unchecked = tuple(sorted({e.path for e in listed if e.sha256 is None and e.path in present} - with_hash))
    uncovered = tuple(sorted(present - covered - set(lists)))
    if not any(e.sha256 for e in listed):
        status = "unverifiable"
    elif mismatched or missing:
        status = "failed"
    elif uncovered or unchecked:
        status = "incomplete"
    else:
        status = "verified"
    return Verification(status=status, lists=tuple(used), verified=verified, unchecked_listed=unchecked,
                        mismatched=mismatched, missing=missing, uncovered=uncovered,
                        unreadable=tuple(unreadable), files=len(files) - len(lists))


# --- counts ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReleaseCounts:
    """Cells are the JSON files under ``results/`` (the harness writes one per cell; its run
    summaries such as ``RESULTS.json`` count alike, checksum lists do not); sessions are the
    entries of ``data/sessions/``. Cells packed in an archive are not counted: the archives are
    named."""
    cells: int
    sessions: int
    cells_by_experiment: dict[str, int] = field(default_factory=dict)
    archives: tuple[str, ...] = ()


def count_release(root: Path) -> ReleaseCounts:
    root = Path(root)
    by_experiment: dict[str, int] = {}
    archives = []
    for rel in _walk(root):
        parts = rel.split("/")
        if rel.lower().endswith(ARCHIVE_SUFFIXES):
            archives.append(rel)
        elif parts[0] == "results" and len(parts) > 1 and rel.endswith(".json") and not is_checksum_list(parts[-1]):
            experiment = parts[1] if len(parts) > 2 else "."
            by_experiment[experiment] = by_experiment.get(experiment, 0) + 1
    sessions_dir = root / "data" / "sessions"
    sessions = sum(1 for p in sessions_dir.iterdir() if not p.name.startswith(".")) if sessions_dir.is_dir() else 0
    return ReleaseCounts(cells=sum(by_experiment.values()), sessions=sessions,
                         cells_by_experiment=dict(sorted(by_experiment.items())), archives=tuple(archives))


# --- the receipt -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Receipt:
    """What ``released fetch`` obtained: ``source`` is ``huggingface.co`` or the local folder it
    linked; ``commit`` is the dataset commit the revision resolved to (``None`` for a local
    copy); ``expected`` holds the paper's counts for the revision, when it states them."""
    repo: str
    revision: str
    commit: str | None
    source: str
    tree: str
    when: str
    counts: ReleaseCounts
    verification: Verification
    expected: dict[str, int] | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, *, where: str = "receipt") -> Receipt:
        try:
            data = json.loads(text)
            v = data.pop("verification")
            verification = Verification(**{**v, **{k: tuple(v[k]) for k in (
                "lists", "unchecked_listed", "missing", "uncovered", "unreadable")},
                "mismatched": tuple(Mismatch(**m) for m in v["mismatched"])})
            counts = data.pop("counts")
            return cls(**data, counts=ReleaseCounts(**{**counts, "archives": tuple(counts["archives"])}),
                       verification=verification)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ReleaseError(f"{where}: not a release receipt ({exc})") from None

    def count_lines(self) -> list[str]:
        """The counts in words, each beside the paper's count for the revision where it states one."""
        c, expected = self.counts, self.expected or {}

        def beside(key: str, found: int) -> str:
            if key not in expected:
                return ""
            return f" ({'as' if found == expected[key] else 'but'} the paper states {expected[key]:,} for {self.revision})"

        out = [f"cells: {c.cells:,} JSON files under results/ in {len(c.cells_by_experiment)} experiment folder(s)"
               + beside("cells", c.cells),
               f"sessions: {c.sessions:,} under data/sessions/" + beside("sessions", c.sessions)]
        if c.archives:
            out.append(f"archives (their contents not counted): {', '.join(c.archives)}")
        return out


def receipt_path(tree: Path) -> Path:
    """The receipt of a tree: beside it (never inside a linked copy)."""
    tree = Path(tree)
    return tree.with_name(tree.name + RECEIPT_SUFFIX)


def make_receipt(tree: Path, *, revision: str, commit: str | None, source: str, repo: str = RELEASE_REPO,
                 expected: dict[str, int] | None = None,
                 progress: Callable[[Iterable], Iterable] = lambda it: it) -> Receipt:
    """Verify and count ``tree`` and write its receipt beside it."""
    receipt = Receipt(repo=repo, revision=revision, commit=commit, source=source, tree=str(Path(tree).absolute()),
                      when=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      counts=count_release(tree), verification=verify_release(tree, progress=progress),
                      expected=expected)
    receipt_path(tree).write_text(receipt.to_json(), encoding="utf-8")
    return receipt


def read_receipt(tree: Path) -> Receipt:
    path = receipt_path(tree)
    try:
        return Receipt.from_json(path.read_text(encoding="utf-8"), where=str(path))
    except FileNotFoundError:
        raise ReleaseError(f"{path}: no receipt (run `released fetch` for this folder)") from None
