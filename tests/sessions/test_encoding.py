"""The one encoding detection of every reader: marks, NUL patterns, compressed files and
binary data, and the line reader's limits (hand-built bytes, expected answers by hand)."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zipfile

import pytest

from contextecho.sessions import encoding
from contextecho.sessions.encoding import TextEncoding, detect_encoding, iter_lines
from contextecho.sessions.errors import SessionFormatError

TEXT = '{"type": "user", "text": "café ☕ 😀"}\n{"type": "assistant"}\n'


@pytest.mark.parametrize("data, name, bom", [
    (TEXT.encode("utf-8"), "UTF-8", b""),
    (b"\xef\xbb\xbf" + TEXT.encode("utf-8"), "UTF-8", b"\xef\xbb\xbf"),
    (b"\xff\xfe" + TEXT.encode("utf-16-le"), "UTF-16-LE", b"\xff\xfe"),
    (b"\xfe\xff" + TEXT.encode("utf-16-be"), "UTF-16-BE", b"\xfe\xff"),
    (b"\xff\xfe\x00\x00" + TEXT.encode("utf-32-le"), "UTF-32-LE", b"\xff\xfe\x00\x00"),
    (b"\x00\x00\xfe\xff" + TEXT.encode("utf-32-be"), "UTF-32-BE", b"\x00\x00\xfe\xff"),
    (b'{\x00"\x00t\x00', "UTF-16-LE", b""),
    (b'\x00{\x00"\x00t', "UTF-16-BE", b""),
    (b'{\x00\x00\x00"\x00\x00\x00', "UTF-32-LE", b""),
    (b'\x00\x00\x00{\x00\x00\x00"', "UTF-32-BE", b""),
])
def test_marks_and_nul_patterns(data, name, bom):
    assert detect_encoding(data[:encoding.SNIFF_BYTES], "f.jsonl") == TextEncoding(name, bom)


@pytest.mark.parametrize("encoding_", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be",
                                       "utf-32", "utf-32-le", "utf-32-be"])
def test_every_encoding_gives_the_same_utf8_lines(encoding_):
    data = TEXT.encode(encoding_)
    fh = io.BytesIO(data)
    lines = list(iter_lines(fh, detect_encoding(fh.read(encoding.SNIFF_BYTES), "f"), "f"))
    assert lines == ['{"type": "user", "text": "café ☕ 😀"}\n'.encode(), b'{"type": "assistant"}\n']


@pytest.mark.parametrize("data, reason", [
    (gzip.compress(TEXT.encode()), "gzip-compressed: decompress it first (gunzip)"),
    (bz2.compress(TEXT.encode()), "bzip2-compressed: decompress it first (bunzip2)"),
    (lzma.compress(TEXT.encode()), "xz-compressed: decompress it first (unxz)"),
    (b"\x28\xb5\x2f\xfd" + b"\x00" * 20, "zstd-compressed: decompress it first (unzstd)"),
    (b"7z\xbc\xaf\x27\x1c" + b"\x00" * 20, "a 7-Zip archive: extract it first (7z x)"),
], ids=["gzip", "bzip2", "xz", "zstd", "7z"])  # gzip's header holds the time: no id from the bytes
def test_compressed_files_are_refused_by_magic(data, reason):
    with pytest.raises(SessionFormatError, match=rf"^f\.jsonl: {reason.replace('(', '.').replace(')', '.')}"):
        detect_encoding(data, "f.jsonl")


def test_zip_archive_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("s.jsonl", TEXT)
    with pytest.raises(SessionFormatError, match=r"a zip archive: extract it first \(unzip\)"):
        detect_encoding(buf.getvalue(), "f.jsonl")


def test_text_that_merely_starts_like_bzip2_is_text():
    assert detect_encoding(b"BZh is not a digit\n", "f").name == "UTF-8"


@pytest.mark.parametrize("data, line, kind", [
    (TEXT.encode() + b"\x00" * 4096, 3, "NUL-padded"),           # a cut-short write: NULs after the last line
    (b"\x00" * 100, 1, "NUL-padded"),                             # nothing but NULs
    (TEXT.encode() + b'{"a": "x\x00y"}\n', 3, "NUL byte"),        # a NUL inside a line
    (TEXT.encode() * 400 + b"\x00" * 64, 801, "NUL-padded"),      # far past the sniffed head
    (TEXT.encode("utf-16-le") + b"\x00" * 64, 3, "NUL-padded"),   # a wide file padded with NULs
])
def test_nul_bytes_refuse_the_file_at_their_line(data, line, kind):
    fh = io.BytesIO(data)
    enc = detect_encoding(fh.read(encoding.SNIFF_BYTES), "f")
    with pytest.raises(SessionFormatError, match=rf"^f:{line}: binary file \({kind}"):
        list(iter_lines(fh, enc, "f"))


@pytest.mark.parametrize("name", ["UTF-8", "UTF-16-LE", "UTF-32-BE"])
def test_a_line_past_the_limit_is_dropped_not_kept(name):
    text = "short\n" + "x" * 5000 + "\nend"
    fh = io.BytesIO(text.encode(name.lower()))
    assert list(iter_lines(fh, TextEncoding(name), "f", max_bytes=1000)) == [b"short\n", None, b"end"]


def test_long_line_reason_follows_the_limit(monkeypatch):
    assert encoding.long_line_reason() == "line longer than 32 MiB"
    monkeypatch.setattr(encoding, "MAX_LINE_BYTES", 2**19)
    assert encoding.long_line_reason() == "line longer than 0.5 MiB"
