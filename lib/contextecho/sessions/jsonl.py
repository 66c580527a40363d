"""Read a JSONL transcript into ``(line, record)`` pairs, counting what cannot be used.

The path is checked before it is opened: FIFOs, sockets and devices are refused (reading
a FIFO would block forever), symlink loops and dangling links are named as such. The
bytes are UTF-8, with or without a byte-order mark; UTF-16 and UTF-32 files are named
as such, and so is a file that is one JSON document rather than one record per line.

One pass over the bytes; each line decoded by ``json.loads`` directly from bytes (UTF-8
is validated there). Whole-file problems — missing, empty, binary, another encoding,
nothing decodable — raise :class:`SessionFormatError`; a bad line (not JSON, invalid
UTF-8, not an object, nested deeper than :data:`MAX_DEPTH`, truncated final line)
becomes a counted :class:`Skip` naming the line. A *glued* line — two or more records
written with no newline between them — yields each of its records, all with that
line's number, and is listed in :attr:`RawFile.glued_lines`.
"""
from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import SessionFormatError
from .fields import json_type
from .model import Skip

_SNIFF_BYTES = 8192
MAX_DEPTH = 200  # real transcripts nest about 10 levels; deeper is refused, never recursed into
UTF8_BOM = b"\xef\xbb\xbf"
# Longest first: the UTF-32-LE mark begins with the UTF-16-LE one.
_OTHER_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32-LE"), (b"\x00\x00\xfe\xff", "UTF-32-BE"),
               (b"\xff\xfe", "UTF-16-LE"), (b"\xfe\xff", "UTF-16-BE"))
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


def read_bytes(path: str | Path) -> bytes:
    path = Path(path)
    problem = path_problem(path)
    if problem:
        raise SessionFormatError(path, 0, problem)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SessionFormatError(path, 0, f"cannot read: {exc.strerror or exc}") from None


def other_encoding(data: bytes) -> str | None:
    """The name of a UTF-16/UTF-32 encoding ``data`` is in (by mark or NUL pattern), else None."""
    for bom, name in _OTHER_BOMS:
        if data.startswith(bom):
            return f"{name} (byte-order mark)"
    head = data[:4]
    if len(head) == 4 and b"\x00" in head:
        # The first character of a transcript is ASCII ("{"): its NUL bytes place it.
        pattern = tuple(b == 0 for b in head)
        return {(True, True, True, False): "UTF-32-BE", (False, True, True, True): "UTF-32-LE",
                (True, False, True, False): "UTF-16-BE",
                (False, True, False, True): "UTF-16-LE"}.get(pattern)
    return None


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
    path = Path(path)
    if data is None:
        data = read_bytes(path)
    notes = []
    encoding = other_encoding(data)
    if encoding:
        raise SessionFormatError(path, 0, f"{encoding} encoded text, not UTF-8: transcripts are "
                                 f"UTF-8 (convert it with iconv -f {encoding.split()[0]} -t UTF-8)")
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
        notes.append("UTF-8 byte-order mark at the start of the file (ignored)")
    if not data.strip():
        raise SessionFormatError(path, 0, "empty file (no records)")
    nul = data.find(b"\x00", 0, _SNIFF_BYTES)
    if nul >= 0:
        raise SessionFormatError(path, data.count(b"\n", 0, nul) + 1,
                                 "binary file (NUL byte), not a JSONL transcript")
    lines = data.split(b"\n")
    ends_with_newline = lines[-1] == b""
    if ends_with_newline:
        lines.pop()
    last = len(lines)
    records: list[tuple[int, dict]] = []
    skipped: list[Skip] = []
    glued: list[int] = []
    first_line = None  # 1-based number of the first non-blank line, and whether it was a record
    loads = json.loads
    for no, raw in enumerate(lines, 1):
        try:
            obj = loads(raw)
        except UnicodeDecodeError as exc:
            skipped.append(Skip(no, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"))
            first_line = first_line or (no, False)
            continue
        except RecursionError:
            skipped.append(Skip(no, _deep_reason()))
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
            elif no == last and not ends_with_newline:
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
        # A container can be no deeper than its count of opening brackets: count first,
        # walk the decoded record only when that bound is high.
        if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and _too_deep(obj):
            skipped.append(Skip(no, _deep_reason()))
            continue
        records.append((no, obj))
    if first_line is not None and not first_line[1]:
        _refuse_document(path, data)
    if not records:
        if skipped and all(k.reason.startswith("invalid UTF-8") for k in skipped):
            raise SessionFormatError(path, skipped[0].line, "not UTF-8 text: no line decodes as UTF-8 "
                                     f"(line {skipped[0].line}: {skipped[0].reason}); a legacy 8-bit "
                                     "encoding such as Latin-1 or Windows-1252?")
        first = skipped[0] if skipped else Skip(1, "no records")
        raise SessionFormatError(path, first.line, f"no JSON records in file (line {first.line}: {first.reason})")
    return RawFile(path, records, skipped, len(lines), len(data), tuple(glued), tuple(notes))


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
