"""What a session file's bytes are: Unicode text to read line by line, or a refusal.

One detection, :func:`detect_encoding`, serves every reader — ``corpus`` and
``load_session`` (through :func:`~contextecho.sessions.jsonl.read_jsonl`) and
``import-sessions`` — so a file is read, or refused for the same reason, everywhere.
It looks at the first :data:`SNIFF_BYTES` of the file:

1. Compressed files and archives are refused by their magic number, with what to do:
   gzip, bzip2, xz, zstd, lz4 (``gzip-compressed: decompress it first (gunzip)``), zip
   and 7-Zip archives (``extract it first``). Nothing of them is read as text.
2. A byte-order mark names the encoding: UTF-32 LE/BE (looked for before UTF-16, whose
   LE mark begins the UTF-32-LE one), UTF-16 LE/BE, UTF-8. The mark is not part of
   the text.
3. Without a mark, a wide encoding is recognised by its NUL bytes: a transcript begins
   with an ASCII character (``{``), whose NUL bytes in the first four bytes place it
   (``{\\0\\0\\0`` is UTF-32-LE, ``\\0{`` UTF-16-BE ...); the first line, decoded so, must
   hold no NUL character (else it is binary data that merely starts like one).
4. Anything else is read as UTF-8.

:func:`iter_lines` then yields the file line by line as UTF-8 bytes, each with its
newline (the last one may lack it): UTF-8 as it is, wide encodings decoded (code units
that do not decode become U+FFFD) and re-encoded, so what follows sees one encoding.

Limits, so that memory stays bounded whatever the file:

* a line is read only up to :data:`MAX_LINE_BYTES` (32 MiB); past that its bytes are
  read and dropped in :data:`_CHUNK` pieces and the line is yielded as ``None`` — the
  reader says what it does with it (``read_jsonl`` skips it and names it,
  ``import-sessions`` refuses the file). The longest line of the corpus is far below.
* a NUL byte can never be in JSONL text (JSON writes U+0000 as ``\\u0000``): a line
  holding one ends the file with :class:`SessionFormatError` naming the line, as
  ``binary file (NUL-padded ...)`` when NUL bytes run to the end of the line (a file
  preallocated and never fully written) and ``binary file (NUL byte)`` otherwise.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

from .errors import SessionFormatError

SNIFF_BYTES = 8192
MAX_LINE_BYTES = 32 * 2**20
_CHUNK = 2**20

# (magic number, what the file is, what to do first). bzip2 is "BZh" and a block-size digit.
_PACKED = ((b"\x1f\x8b", "gzip-compressed", "decompress it first (gunzip)"),
           (b"\xfd7zXZ\x00", "xz-compressed", "decompress it first (unxz)"),
           (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it first (unzstd)"),
           (b"\x04\x22\x4d\x18", "lz4-compressed", "decompress it first (unlz4)"),
           (b"PK\x03\x04", "a zip archive", "extract it first (unzip)"),
           (b"PK\x05\x06", "an empty zip archive", "it holds no file"),
           (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract it first (7z x)"))
# Longest first: the UTF-32-LE mark begins with the UTF-16-LE one.
_MARKS = ((b"\xff\xfe\x00\x00", "UTF-32-LE"), (b"\x00\x00\xfe\xff", "UTF-32-BE"),
          (b"\xff\xfe", "UTF-16-LE"), (b"\xfe\xff", "UTF-16-BE"), (b"\xef\xbb\xbf", "UTF-8"))
# Which of the first four bytes are NUL when the first character is ASCII.
_NUL_PATTERNS = {(True, True, True, False): "UTF-32-BE", (False, True, True, True): "UTF-32-LE",
                 (True, False, True, False): "UTF-16-BE", (False, True, False, True): "UTF-16-LE"}


@dataclass(frozen=True, slots=True)
class TextEncoding:
    """How a session file's text is encoded: ``name`` (``UTF-8``, ``UTF-16-LE`` ...) and
    the byte-order mark it starts with (``b""`` when none)."""

    name: str
    bom: bytes = b""

    @property
    def codec(self) -> str:
        return self.name.lower()

    @property
    def note(self) -> str | None:
        """What the reader did about the encoding, for the parse report (None for plain UTF-8)."""
        if self.name == "UTF-8":
            return "UTF-8 byte-order mark at the start of the file (ignored)" if self.bom else None
        how = "byte-order mark" if self.bom else "no byte-order mark; recognised by its NUL bytes"
        return f"{self.name} text ({how}), decoded to UTF-8"


def packed_reason(head: bytes) -> str | None:
    """Why ``head`` (a file's first bytes) is a compressed file or archive, else None."""
    for magic, what, todo in _PACKED:
        if head.startswith(magic):
            return f"{what}: {todo}; not a JSONL transcript"
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[3:4] != b"0":
        return "bzip2-compressed: decompress it first (bunzip2); not a JSONL transcript"
    return None


def detect_encoding(head: bytes, path: str | Path) -> TextEncoding:
    """The encoding of a file whose first bytes are ``head`` (see the module doc);
    :class:`SessionFormatError` naming ``path`` for a compressed file or an archive."""
    reason = packed_reason(head)
    if reason:
        raise SessionFormatError(path, 0, reason)
    for mark, name in _MARKS:
        if head.startswith(mark):
            return TextEncoding(name, mark)
    if len(head) >= 4 and b"\x00" in head[:4]:
        name = _NUL_PATTERNS.get(tuple(b == 0 for b in head[:4]))
        if name:
            unit = 4 if name.startswith("UTF-32") else 2
            text = head[:len(head) - len(head) % unit].decode(name.lower(), errors="replace")
            if "\x00" not in text.split("\n", 1)[0]:
                return TextEncoding(name)
    return TextEncoding("UTF-8")


def iter_lines(fh: BinaryIO, encoding: TextEncoding, path: str | Path,
               max_bytes: int | None = None) -> Iterator[bytes | None]:
    """Each line of the open binary file ``fh`` as UTF-8 bytes with its newline, from
    just after the byte-order mark; ``None`` for a line longer than ``max_bytes``
    (default :data:`MAX_LINE_BYTES`), which is not kept. :class:`SessionFormatError`
    naming ``path`` at the first line that holds a NUL byte."""
    limit = MAX_LINE_BYTES if max_bytes is None else max_bytes
    fh.seek(len(encoding.bom))
    if encoding.name == "UTF-8":
        return _byte_lines(fh, limit, path)
    return _wide_lines(fh, encoding.codec, limit, path)


def _byte_lines(fh: BinaryIO, limit: int, path: str | Path) -> Iterator[bytes | None]:
    """Lines cut from :data:`_CHUNK`-sized reads: one copy of each line (a buffered
    ``readline`` copies a line longer than its buffer several times)."""
    read = fh.read
    pieces: list[bytes] = []  # the start of a line that runs past the chunk
    held = 0  # its length so far; past ``limit`` its bytes are no longer kept
    no = 0
    while chunk := read(_CHUNK):
        find, start = chunk.find, 0
        while (end := find(b"\n", start) + 1) > 0:
            no += 1
            if held + end - start > limit:
                line = None
            elif pieces:
                pieces.append(chunk[start:end])
                line = b"".join(pieces)
            else:
                line = chunk[start:end]
            if line is not None and b"\x00" in line:
                raise SessionFormatError(path, no, _nul_reason(line))
            yield line
            pieces, held, start = [], 0, end
        if start < len(chunk):
            held += len(chunk) - start
            if held <= limit:
                pieces.append(chunk[start:])
            else:
                pieces = []
    if held:
        line = b"".join(pieces) if held <= limit else None
        if line is not None and b"\x00" in line:
            raise SessionFormatError(path, no + 1, _nul_reason(line))
        yield line


def _wide_lines(fh: BinaryIO, codec: str, limit: int, path: str | Path) -> Iterator[bytes | None]:
    text = io.TextIOWrapper(fh, encoding=codec, errors="replace", newline="\n")
    chars = max(1, limit // 4)  # a character is at most four bytes of UTF-8
    try:
        readline = text.readline
        no = 0
        while line := readline(chars + 1):
            no += 1
            if len(line) > chars and not line.endswith("\n"):
                while line and not line.endswith("\n"):
                    line = readline(_CHUNK)
                yield None
                continue
            if "\x00" in line:
                raise SessionFormatError(path, no, _nul_reason(line.encode("utf-8")))
            yield line.encode("utf-8")
    finally:
        if not fh.closed:
            text.detach()  # the caller owns (and closes) the binary file


def long_line_reason() -> str:
    """What a reader says of a line :func:`iter_lines` did not keep."""
    return f"line longer than {MAX_LINE_BYTES / 2**20:g} MiB"


def _nul_reason(raw: bytes) -> str:
    if b"\x00" not in raw.rstrip(b"\r\n").rstrip(b"\x00"):
        return "binary file (NUL-padded: NUL bytes to the end of the line, as a write cut short leaves), " \
               "not a JSONL transcript"
    return "binary file (NUL byte), not a JSONL transcript"
