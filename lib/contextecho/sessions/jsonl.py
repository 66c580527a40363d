"""Read a JSONL transcript into ``(line, record)`` pairs, counting what cannot be used.

The path is checked before it is opened: FIFOs, sockets and devices are refused (reading
a FIFO would block forever), symlink loops and dangling links are named as such. The
encoding is found by :func:`~contextecho.sessions.encoding.detect_encoding` — UTF-8 with
or without a byte-order mark, UTF-16 and UTF-32 in either byte order (decoded); a
compressed file, an archive or binary data (a NUL byte) is refused with its reason —
and the file is read line by line (:func:`~contextecho.sessions.encoding.iter_lines`: a
line longer than :data:`~contextecho.sessions.encoding.MAX_LINE_BYTES` is skipped and
named, never held whole). A file that is one JSON document rather than one record per
line is named as such.

Each line is decoded by :func:`parse_line`: orjson first (fast), ``json.loads`` for a
line orjson refuses or would read differently, so the records and the errors are
exactly those of ``json.loads``: orjson rejects what ``json.loads`` accepts — lone
surrogate escapes (``"\\ud83d"``, a tool output cut mid-emoji), UTF-8-encoded
surrogates, ``NaN``/``Infinity``, numbers that overflow a double — and reads integers
beyond 64 bits as floats, so a line holding a run of 19 or more digits goes to
``json.loads`` directly. Whole-file problems — missing, empty, compressed, binary,
nothing decodable — raise :class:`SessionFormatError`; a bad line (not JSON, invalid
UTF-8, not an object, nested deeper than :data:`MAX_DEPTH`, truncated final line, too
long) becomes a counted :class:`Skip` naming the line. A *glued* line — two or more
records written with no newline between them — yields each of its records, all with
that line's number, and is listed in :attr:`RawFile.glued_lines`.
"""
from __future__ import annotations

import errno
import io
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

from .encoding import MAX_LINE_BYTES, SNIFF_BYTES, detect_encoding, iter_lines, long_line_reason
from .errors import SessionFormatError
from .fields import json_type
from .model import Skip

MAX_DEPTH = 200  # real transcripts nest about 10 levels; deeper is refused, never recursed into
# One byte-level pass tells both what orjson could misread and how deep a line could
# nest: digits become "0" (orjson reads an integer beyond 64 bits as a float, and such
# a number has at least 19 digits), opening brackets "[", everything else a space.
_SHAPE = bytes(48 if 48 <= b <= 57 else 91 if b in b"[{" else 32 for b in range(256))
_LONG_NUMBER = b"0" * 19
_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


@dataclass(frozen=True, slots=True)
class RawFile:
    path: Path
    records: list[tuple[int, dict]]
    skipped: list[Skip]
    n_lines: int
    n_bytes: int
    glued_lines: tuple[int, ...] = ()  # lines that held two or more records
    notes: tuple[str, ...] = ()


class NotJSONL(SessionFormatError):
    """The file is one JSON document (pretty-printed or not), not one record per line."""

    def __init__(self, path: str | Path, document, reason: str):
        self.document = document
        super().__init__(path, 0, reason)


def path_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a transcript file, without opening it; None if it can."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"dangling symlink (points to {os.readlink(path)}, which does not exist)"
        return "file not found"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop (the link resolves to itself)"
        if exc.errno == errno.EACCES:
            return "permission denied"
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a transcript file"
    for test, what in _NOT_REGULAR:
        if test(st.st_mode):
            return f"is {what}, not a regular file (refused without opening it)"
    return None


class TooDeep(ValueError):
    """A JSON value nested deeper than :data:`MAX_DEPTH` levels."""


def parse_line(raw: bytes):
    """The JSON value of one line, exactly as ``json.loads(raw)`` gives it (see the module
    doc: orjson first, ``json.loads`` for what orjson refuses or reads differently).

    Raises what ``json.loads`` raises — ``ValueError``, ``UnicodeDecodeError`` for invalid
    UTF-8 — and :class:`TooDeep` for a value nested deeper than :data:`MAX_DEPTH` levels
    (also where ``json.loads`` would exhaust the stack: no ``RecursionError``)."""
    shape = raw.translate(_SHAPE)
    if _LONG_NUMBER in shape:
        obj = _json_loads(raw)
    else:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            obj = _json_loads(raw)
    # A container can be no deeper than its count of opening brackets: count first,
    # walk the decoded value only when that bound is high.
    if shape.count(b"[") > MAX_DEPTH and type(obj) in (dict, list) and _too_deep(obj):
        raise TooDeep(_deep_reason())
    return obj


def _json_loads(raw: bytes):
    try:
        return json.loads(raw)
    except RecursionError:
        raise TooDeep(_deep_reason()) from None


def _too_deep(obj, limit: int = MAX_DEPTH) -> bool:
    """True when ``obj`` nests containers more than ``limit`` levels deep (no recursion)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        if type(value) is dict:
            stack.extend((v, depth + 1) for v in value.values() if type(v) in (dict, list))
        elif type(value) is list:
            stack.extend((v, depth + 1) for v in value if type(v) in (dict, list))
    return False


def _glued(raw: bytes) -> list | None:
    """The values of a line that is two or more JSON values written back to back, else None."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    values, i, n = [], 0, len(text)
    try:
        while i < n:
            value, i = decoder.raw_decode(text, i)
            values.append(value)
            while i < n and text[i].isspace():
                i += 1
    except (ValueError, RecursionError):
        return None
    return values if len(values) >= 2 else None


def _deep_reason() -> str:
    return f"JSON nested deeper than {MAX_DEPTH} levels (refused)"


def read_jsonl(path: str | Path, data: bytes | None = None) -> RawFile:
    """Read the transcript at ``path`` (or its bytes ``data``); see the module doc."""
    path = Path(path)
    if data is not None:
        return _read(path, io.BytesIO(data))
    problem = path_problem(path)
    if problem:
        raise SessionFormatError(path, 0, problem)
    try:
        with path.open("rb") as fh:
            return _read(path, fh)
    except OSError as exc:
        raise SessionFormatError(path, 0, f"cannot read: {exc.strerror or exc}") from None


def _read(path: Path, fh: BinaryIO) -> RawFile:
    encoding = detect_encoding(fh.read(SNIFF_BYTES), path)
    notes = [encoding.note] if encoding.note else []
    records: list[tuple[int, dict]] = []
    skipped: list[Skip] = []
    glued: list[int] = []
    first_line = None  # 1-based number of the first non-blank line, and whether it was a record
    n_lines = n_bytes = 0
    for no, raw in enumerate(iter_lines(fh, encoding, path), 1):
        n_lines = no
        if raw is None:
            skipped.append(Skip(no, f"{long_line_reason()} (not read)"))
            first_line = first_line or (no, False)
            continue
        n_bytes += len(raw)
        try:
            obj = parse_line(raw)  # a trailing newline is JSON whitespace: no copy without it
        except UnicodeDecodeError as exc:
            skipped.append(Skip(no, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"))
            first_line = first_line or (no, False)
            continue
        except TooDeep as exc:
            skipped.append(Skip(no, str(exc)))
            first_line = first_line or (no, False)
            continue
        except ValueError:
            if not raw.strip():
                continue  # blank line: not a record, not an error
            first_line = first_line or (no, False)
            values = _glued(raw)
            if values is not None:
                bad = [f"value {i} is JSON {json_type(v)}, not an object"
                       for i, v in enumerate(values, 1) if type(v) is not dict]
                deep = [i for i, v in enumerate(values, 1) if type(v) is dict and _too_deep(v)]
                if bad or deep:
                    skipped.append(Skip(no, "glued line (several JSON values on one line): " +
                                        "; ".join(bad + [f"value {i}: {_deep_reason()}" for i in deep])))
                else:
                    glued.append(no)
                    records.extend((no, v) for v in values)
            elif not raw.endswith(b"\n"):  # only the last line can lack its newline
                skipped.append(Skip(no, "truncated last line (incomplete JSON, no final newline)"))
            elif raw.lstrip().startswith((b"//", b"#")):
                skipped.append(Skip(no, "comment line, not JSON"))
            else:
                skipped.append(Skip(no, "not valid JSON"))
            continue
        first_line = first_line or (no, True)
        if type(obj) is not dict:
            skipped.append(Skip(no, f"JSON {type(obj).__name__}, not an object"))
            continue
        records.append((no, obj))
    if first_line is None:
        raise SessionFormatError(path, 0, "empty file (no records)")
    if not first_line[1] and n_bytes <= MAX_LINE_BYTES:  # a document is no longer than a line may be
        _refuse_document(path, b"".join(raw for raw in iter_lines(fh, encoding, path) if raw is not None))
    if not records:
        if skipped and all(k.reason.startswith("invalid UTF-8") for k in skipped):
            raise SessionFormatError(path, skipped[0].line, "not UTF-8 text: no line decodes as UTF-8 "
                                     f"(line {skipped[0].line}: {skipped[0].reason}); a legacy 8-bit "
                                     "encoding such as Latin-1 or Windows-1252?")
        first = skipped[0]
        raise SessionFormatError(path, first.line, f"no JSON records in file (line {first.line}: {first.reason})")
    return RawFile(path, records, skipped, n_lines, n_bytes, tuple(glued), tuple(notes))


def _refuse_document(path: Path, data: bytes) -> None:
    """Raise :class:`NotJSONL` when the whole file parses as one JSON value."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return
    if type(document) is dict:
        keys = ", ".join(sorted(document)[:8])
        what = f"a JSON object with keys {keys}" if keys else "an empty JSON object"
    else:
        what = f"a JSON {json_type(document).split()[-1]}"
    raise NotJSONL(path, document, f"one JSON document ({what}), not JSONL (one JSON record per line)")
