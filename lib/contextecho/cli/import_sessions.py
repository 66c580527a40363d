"""``python -m contextecho import-sessions``: copy your own sessions in, redacted.

Reads Claude Code transcripts from ``~/.claude/projects`` and Codex CLI rollouts from
``~/.codex/sessions`` (both overridable) and writes them under the destination as
``claude_code/<project>/<id>.jsonl`` and ``codex_cli/YYYY/MM/DD/rollout-*.jsonl``.

Decode, then redact, or refuse. Each file's encoding is found as the session readers
find it (:func:`~contextecho.sessions.encoding.detect_encoding`): UTF-8 with or without
a byte-order mark, UTF-16 and UTF-32 in either byte order are decoded, redacted and
verified alike and written as UTF-8; a compressed file, an archive or binary data (a
NUL byte anywhere) is refused with its reason and nothing of it is written.

Every key and string value of every record, every line that is not JSON (as text) and
the relative path itself are redacted with one :class:`Redactor` per file (so
placeholders agree within a session), in two passes over the file, line by line:

1. *discover*: the lines are parsed (:func:`~contextecho.sessions.jsonl.parse_line`:
   orjson, ``json.loads`` for what it refuses) and fed to the redactor in batches;
2. *replace and verify*: the lines of a batch are redacted together (a record as JSON,
   another line as text); each batch is verified before it is written: every rule is run
   again on its decoded keys and values (each string as the record holds it, and beside
   the key that names what it is:
   :meth:`~contextecho.sessions.redaction.Redactor.object_survivors`), and its written
   text must hold none of the originals, as written (an original's JSON-escaped forms
   are among those searched) or percent-decoded
   (:meth:`~contextecho.sessions.redaction.Redactor.originals_in`).

Lone surrogates (``"\\ud83d"``, a tool output cut mid-emoji) become U+FFFD as the line is
parsed, and so do invalid UTF-8 bytes: what is redacted, verified and written is valid
UTF-8.

Limits, so that memory stays bounded whatever the file: about :data:`BATCH_BYTES`
(256 KiB) of lines are held at a time, plus the strings the redactor discovered — not
every record, nor every redacted copy; a line longer than
:data:`~contextecho.sessions.encoding.MAX_LINE_BYTES` (32 MiB) is never read whole and
refuses the file; a value nested deeper than :data:`~contextecho.sessions.jsonl.MAX_DEPTH`
(200) levels refuses the file (never recursed into).

Writing goes through a temporary file next to the target (``.<name>.<pid>.tmp``),
flushed to disk and then renamed over it; on any failure, Ctrl-C included, the
temporary file and the folders made for it are removed: no half file, nothing
unverified. Copies land in groups of up to :data:`LAND_FILES`: the group's temporary
files are flushed to disk at once (one ``sync`` on Linux; each file elsewhere), renamed
over their targets, and the renames flushed — a flush per file made thousands of small
sessions take minutes. On Ctrl-C the copies already complete still land.

Imports never abort: a file that fails — unreadable, compressed or binary, a line too
long or too deep, failed verification, any other error — is reported (its redacted
path and the reason: for a failed verification the classes and counts, never the
strings; for an unexpected error only the exception's type, whose message could quote
the file) and skipped; the others are imported, and the exit status is 1. Your login
name and machine name are always redacted; ``--redact-term`` adds more.
"""
from __future__ import annotations

import argparse
import getpass
import hashlib
import json
import os
import re
import socket
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from ..engine.paths import data_dir
from ..sessions.corpus import scan
from ..sessions.encoding import SNIFF_BYTES, detect_encoding, iter_lines, long_line_reason
from ..sessions.errors import RedactionLeak, SessionFormatError
from ..sessions.jsonl import TooDeep, parse_line
from ..sessions.redaction import GENERIC_USERS, Redactor

BATCH_BYTES = 2**18  # lines discovered, or verified and written, at a time
LAND_FILES = 256  # imported copies flushed to disk and put in place together
# A surrogate escape (\ud800-\udfff) or a UTF-8-encoded surrogate, which json.loads accepts
_SURROGATE_SOURCE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")

SOURCES = (("claude_code", "claude_dir", "~/.claude/projects"),
           ("codex_cli", "codex_dir", "~/.codex/sessions"))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claude-dir", type=Path, default=Path("~/.claude/projects"),
                        help="Claude Code projects folder to import from (default: ~/.claude/projects)")
    parser.add_argument("--codex-dir", type=Path, default=Path("~/.codex/sessions"),
                        help="Codex CLI sessions folder to import from (default: ~/.codex/sessions)")
    parser.add_argument("--dest", type=Path, default=None,
                        help=f"where to write the redacted copies (default: {data_dir() / 'own_sessions'})")
    parser.add_argument("--redact-term", action="append", default=[], metavar="TEXT",
                        help="an extra string to replace by <PROJECT_n> (repeatable): "
                             "employer, project code names, colleagues' names")
    parser.add_argument("--dry-run", action="store_true",
                        help="list what would be imported without writing anything")


def local_identity() -> dict[str, list[str]]:
    """This machine's login and host names, always redacted on import."""
    extra: dict[str, list[str]] = {"USER": [], "HOST": []}
    try:
        user = getpass.getuser()
        if user and user not in GENERIC_USERS and len(user) >= 2:
            extra["USER"].append(user)
    except (KeyError, OSError):
        pass
    host = socket.gethostname()
    if host and host != "localhost":
        extra["HOST"].append(host)
    return extra


# One parsed line: (JSON value, or the line's text), is it JSON, did it end with a newline, its size in bytes
Line = tuple[object, bool, bool, int]


def import_file(path: Path, rel: str, extra: Mapping[str, Iterable[str]], dest: Path, *,
                dry_run: bool = False, landing: _Landing | None = None) -> Path:
    """Redact the transcript at ``path`` (``rel`` below its source folder) into ``dest``
    under its redacted relative path, verified; return that target. ``dry_run``: all but
    the writing. With a ``landing``, the copy is staged there (it lands with its group);
    without one, it lands before this returns. Raises :class:`SessionFormatError`
    (refused, with its reason), :class:`RedactionLeak` (failed verification) or
    ``OSError`` (cannot write)."""
    source = _Source(path)
    redactor = _discovered(source.lines(), rel, extra)
    target = dest / _redacted_path(redactor, rel)
    if dry_run:
        _redact(redactor, source.lines(), lambda data: None)
        return target
    own = landing is None
    landing = _Landing() if own else landing
    with landing.stage(target) as write:
        _redact(redactor, source.lines(), write)
    if own:
        for _, exc in landing.land():
            raise exc
    return target


def redact_transcript(text: str, rel: str, extra: Mapping[str, Iterable[str]]) -> tuple[str, str]:
    """Redact one JSONL transcript held in memory and its relative path; verify; return
    both (the same passes as :func:`import_file`). Raises :class:`RedactionLeak` (classes,
    never the strings) when verification finds an original, :class:`SessionFormatError`
    for a line nested too deep."""
    redactor = _discovered(_text_lines(text), rel, extra)
    new_rel = _redacted_path(redactor, rel)
    parts: list[bytes] = []
    _redact(redactor, _text_lines(text), parts.append)
    return b"".join(parts).decode("utf-8"), new_rel


def _discovered(lines: Iterator[Line], rel: str, extra: Mapping[str, Iterable[str]]) -> Redactor:
    """Pass 1: a redactor that has discovered the path and every line, a batch at a time."""
    redactor = Redactor(extra)
    batch, size = [rel], len(rel)
    for value, _, _, n in lines:
        batch.append(value)
        size += n
        if size >= BATCH_BYTES:
            redactor.discover_object(batch)
            batch, size = [], 0
    if batch:
        redactor.discover_object(batch)
    return redactor


def _redacted_path(redactor: Redactor, rel: str) -> str:
    new_rel = redactor.apply(rel)
    found = redactor.object_survivors([new_rel])
    if found:
        raise RedactionLeak(found, "the redacted path")
    return new_rel


def _redact(redactor: Redactor, lines: Iterator[Line], write: Callable[[bytes], object]) -> None:
    """Pass 2: redact a batch of lines at a time (settled over the batch: one rescan of
    what changed, not one per record), verify it, then write it."""
    batch: list[Line] = []
    size = 0
    for line in lines:
        batch.append(line)
        size += line[3]
        if size >= BATCH_BYTES:
            _redact_batch(redactor, batch, write)
            batch, size = [], 0
    if batch:
        _redact_batch(redactor, batch, write)


def _redact_batch(redactor: Redactor, batch: list[Line], write: Callable[[bytes], object]) -> None:
    clean = redactor.apply_object([value for value, _, _, _ in batch])  # a text line is a string
    out = [(json.dumps(c, ensure_ascii=False) if is_json else c) + ("\n" if newline else "")
           for c, (_, is_json, newline, _) in zip(clean, batch)]
    _verify_and_write(redactor, clean, out, write)


def _verify_and_write(redactor: Redactor, clean: list[object], out: list[str],
                      write: Callable[[bytes], object]) -> None:
    text = "".join(out)
    # decoded keys and values, by every rule; the written text, for every original; per
    # class, the larger of the two counts (one original is found by both)
    found = Counter(redactor.object_survivors(clean)) | Counter(redactor.originals_in(text))
    if found:
        raise RedactionLeak(list(found.elements()), "the redacted copy")
    write(text.encode("utf-8"))


class _Source:
    """A transcript file read twice, line by line: the second read must see the very
    bytes the first one saw (a session still being written grows between the two)."""

    def __init__(self, path: Path):
        self.path = path
        self.n_lines: int | None = None
        self.digest: bytes | None = None

    def lines(self) -> Iterator[Line]:
        """The file's lines, decoded and parsed, one at a time; on the second read only
        as many as the first saw, and :class:`SessionFormatError` if they differ."""
        path, digest, no = self.path, hashlib.blake2b(digest_size=16), 0
        try:
            with path.open("rb") as fh:
                encoding = detect_encoding(fh.read(SNIFF_BYTES), path)
                for no, raw in enumerate(iter_lines(fh, encoding, path), 1):
                    if self.n_lines is not None and no > self.n_lines:
                        no -= 1
                        break
                    if raw is None:
                        raise SessionFormatError(path, no, f"{long_line_reason()} (refused: no line is "
                                                           "read whole past that)")
                    digest.update(raw)
                    yield _parsed(path, no, raw)
        except OSError as exc:
            raise SessionFormatError(path, 0, f"cannot read it ({exc.strerror or type(exc).__name__})") from None
        if self.digest is None:
            self.n_lines, self.digest = no, digest.digest()
        elif (no, digest.digest()) != (self.n_lines, self.digest):
            raise SessionFormatError(path, 0, "the file changed while it was being imported (a session "
                                              "still running?): import it again once it is closed")


def _text_lines(text: str) -> Iterator[Line]:
    lines = text.split("\n")
    for no, line in enumerate(lines, 1):
        raw = line.encode("utf-8", "surrogatepass") + (b"\n" if no < len(lines) else b"")
        if raw:
            yield _parsed("<text>", no, raw)


def _parsed(path: str | Path, no: int, raw: bytes) -> Line:
    newline = raw.endswith(b"\n")
    body = raw[:-1] if newline else raw
    try:
        try:
            value = parse_line(body)
        except UnicodeDecodeError:  # invalid UTF-8: U+FFFD, as a reader of text shows it
            body = body.decode("utf-8", "replace").encode("utf-8")
            value = parse_line(body)
    except TooDeep as exc:
        raise SessionFormatError(path, no, str(exc)) from None
    except ValueError:
        return body.decode("utf-8", "replace"), False, newline, len(raw)
    if _SURROGATE_SOURCE.search(body):
        value = _without_surrogates(value)
    return value, True, newline, len(raw)


def _without_surrogates(value):
    """``value`` with every lone surrogate in its keys and strings replaced by U+FFFD
    (its depth is bounded by the parser)."""
    if type(value) is str:
        return _SURROGATE.sub("\ufffd", value)
    if type(value) is list:
        return [_without_surrogates(v) for v in value]
    if type(value) is dict:
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


class _Landing:
    """Imported copies on their way in: each written to a temporary file beside its target
    (:meth:`stage`), then a group of them flushed to disk, renamed over their targets and
    the renames flushed (:meth:`land`)."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path, list[Path]]] = []  # temporary file, target, folders made

    def __len__(self) -> int:
        return len(self._staged)

    @contextmanager
    def stage(self, target: Path) -> Iterator[Callable[[bytes], object]]:
        """Write ``target``'s temporary file; on any failure (Ctrl-C too) remove it and the
        folders made for it."""
        made = []
        folder = target.parent
        while not folder.exists():
            made.append(folder)
            folder = folder.parent
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        n = 1
        while any(tmp == staged for staged, _, _ in self._staged):  # two files redacted to one name
            n += 1
            tmp = target.with_name(f".{target.name}.{os.getpid()}.{n}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                yield fh.write
        except BaseException:
            tmp.unlink(missing_ok=True)
            _remove_folders(made)
            raise
        self._staged.append((tmp, target, made))

    def land(self) -> list[tuple[Path, OSError]]:
        """Put the staged copies in place: flushed, renamed, the renames flushed. Returns
        (target, error) of those that could not be (their temporary files removed)."""
        staged, self._staged = self._staged, []
        failed: list[tuple[Path, OSError]] = []
        _flush([tmp for tmp, _, _ in staged])
        folders = set()
        for tmp, target, made in staged:
            try:
                os.replace(tmp, target)
                folders.add(target.parent)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                _remove_folders(made)
                failed.append((target, exc))
        _flush(sorted(folders))
        return failed


def _remove_folders(made: list[Path]) -> None:
    for folder in made:  # deepest first; one that is not empty stays
        try:
            folder.rmdir()
        except OSError:
            break


def _flush(paths: list[Path]) -> None:
    """Flush ``paths`` (files, or folders whose entries changed) to disk: one ``sync`` of
    every file system on Linux, where it waits for the writes; each path elsewhere (where
    the platform allows opening it)."""
    if not paths:
        return
    if sys.platform.startswith("linux"):
        os.sync()
        return
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def leak_counts(exc: RedactionLeak) -> str:
    """``2 EMAIL, 1 SECRET``: what failed verification, by class, never the strings."""
    return ", ".join(f"{n} {cls}" for cls, n in sorted(Counter(exc.classes).items()))


def skip_reason(exc: Exception) -> str:
    """Why a file was not imported, in words that quote nothing of the file."""
    if isinstance(exc, RedactionLeak):
        return f"failed verification ({leak_counts(exc)} original string(s) survive redaction)"
    if isinstance(exc, SessionFormatError):
        return f"line {exc.line}: {exc.reason}" if exc.line else exc.reason
    if isinstance(exc, OSError):
        return f"cannot write it ({exc.strerror or type(exc).__name__})"
    if isinstance(exc, MemoryError):
        return "too large to redact in memory"
    return f"failed ({type(exc).__name__}; the message is not shown, it could quote the file)"


def run(args: argparse.Namespace) -> int:
    """Import every transcript; one that cannot be imported is reported with its reason
    and skipped, the others are imported. Exit status 1 when any was skipped."""
    dest = (args.dest or data_dir() / "own_sessions").expanduser()
    extra = local_identity()
    if args.redact_term:
        extra["PROJECT"] = list(args.redact_term)
    n_files, skipped = 0, []
    landing, shown_of = _Landing(), {}  # the report's names of the staged copies, by target

    def skip(shown: object, why: str) -> None:
        print(f"NOT imported {shown}: {why}; skipped", file=sys.stderr)
        skipped.append(str(shown))

    def land() -> int:
        failed = landing.land()
        for target, exc in failed:
            skip(shown_of[target], skip_reason(exc))
        shown_of.clear()
        return len(failed)

    try:
        for label, attr, _ in SOURCES:
            root = getattr(args, attr).expanduser()
            if not root.is_dir():
                print(f"{label}: {root} not found, nothing to import", file=sys.stderr)
                continue
            files, problems = scan(root)  # FIFOs, devices, dangling links and loops: never opened
            for index, (rel, why) in enumerate(problems, start=len(files) + 1):
                skip(_shown_path(label, rel, index, extra), why)
            for index, path in enumerate(files, start=1):
                rel = path.relative_to(root).as_posix()
                # what the report names: the redacted path (the original may hold the user name)
                shown = _LazyShown(label, rel, index, extra)
                try:
                    target = import_file(path, rel, extra, dest / label, dry_run=args.dry_run, landing=landing)
                except Exception as exc:  # one file's failure is that file's skip, never the import's end
                    skip(shown, skip_reason(exc))
                    continue
                if args.dry_run:
                    print(f"would write {target}")
                shown_of[target] = shown
                n_files += 1
                if len(landing) >= LAND_FILES:
                    n_files -= land()
    finally:
        n_files -= land()  # Ctrl-C too: the copies already complete land
    verb = "would import" if args.dry_run else "imported"
    print(f"{verb} {n_files} transcript file(s) into {dest} (redacted)")
    if skipped:
        print(f"skipped {len(skipped)} file(s) that could not be imported (reasons above): "
              f"{', '.join(skipped)}", file=sys.stderr)
        return 1
    return 0


class _LazyShown:
    """A file's name in the report, redacted only if it is shown (most files never are)."""

    def __init__(self, label: str, rel: str, index: int, extra: dict[str, list[str]]):
        self.args = (label, rel, index, extra)

    def __str__(self) -> str:
        return _shown_path(*self.args)


def _shown_path(label: str, rel: str, index: int, extra: dict[str, list[str]]) -> str:
    """How the report names a file: its redacted path, else its number."""
    try:
        redactor = Redactor(extra)
        redactor.discover(rel)
        shown = redactor.apply(rel)
        if not redactor.survivors(shown):
            return f"{label}/{shown}"
    except Exception:  # a redaction bug must not end the import, nor show the path
        pass
    return f"{label} file #{index}"
