"""Read a JSONL transcript into ``(line, record)`` pairs, counting what cannot be used.

One pass over the bytes; each line decoded by ``json.loads`` directly from bytes (UTF-8
is validated there). Whole-file problems — missing, empty, binary, nothing decodable —
raise :class:`SessionFormatError`; a bad line (not JSON, invalid UTF-8, not an object,
truncated final line) becomes a counted :class:`Skip` naming the line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import SessionFormatError
from .model import Skip

_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class RawFile:
    path: Path
    records: list[tuple[int, dict]]
    skipped: list[Skip]
    n_lines: int
    n_bytes: int


def read_bytes(path: str | Path) -> bytes:
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise SessionFormatError(path, 0, "file not found") from None
    except IsADirectoryError:
        raise SessionFormatError(path, 0, "is a directory, not a transcript file") from None
    except OSError as exc:
        raise SessionFormatError(path, 0, f"cannot read: {exc.strerror or exc}") from None


def read_jsonl(path: str | Path, data: bytes | None = None) -> RawFile:
    path = Path(path)
    if data is None:
        data = read_bytes(path)
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
    loads = json.loads
    for no, raw in enumerate(lines, 1):
        try:
            obj = loads(raw)
        except UnicodeDecodeError:
            skipped.append(Skip(no, "invalid UTF-8"))
            continue
        except ValueError:
            if not raw.strip():
                continue  # blank line: not a record, not an error
            if no == last and not ends_with_newline:
                skipped.append(Skip(no, "truncated last line (incomplete JSON, no final newline)"))
            elif raw.lstrip().startswith((b"//", b"#")):
                skipped.append(Skip(no, "comment line, not JSON"))
            else:
                skipped.append(Skip(no, "not valid JSON"))
            continue
        if type(obj) is not dict:
            skipped.append(Skip(no, f"JSON {type(obj).__name__}, not an object"))
            continue
        records.append((no, obj))
    if not records:
        first = skipped[0] if skipped else Skip(1, "no records")
        raise SessionFormatError(path, first.line, f"no JSON records in file (line {first.line}: {first.reason})")
    return RawFile(path, records, skipped, len(lines), len(data))
