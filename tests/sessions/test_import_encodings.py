"""Decode, then redact, or refuse: a session saved in any Unicode encoding is imported
exactly as its UTF-8 twin (same bytes out, UTF-8, nothing planted survives); compressed,
archived and NUL-padded files are refused with their reason and nothing of them written,
and the corpus readers refuse them for the same reason."""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import zipfile
from pathlib import Path

import pytest

from contextecho.__main__ import main
from tests.sessions.conftest import every_file, import_tree
from contextecho.sessions import SessionFormatError, load_session

HOME = "/Users/qwrtzplant"
API_KEY = "sk-proj-PlAnTeD0123456789AbCdEfGhIjKlMnOp"
EMAIL = "jane.planted@example.org"
NEEDLES = (API_KEY, EMAIL, "qwrtzplant", "PlAnTeD0123456789")


def claude_session(cc) -> list[dict]:
    """A small Claude Code session in its real shape: a user turn, thinking, tool calls
    and results, a final answer; the home path, an API key and an email planted."""
    cwd = f"{HOME}/src/app"
    return [cc.user(f"the API test fails, mail {EMAIL} when it is green", cwd=cwd),
            cc.assistant("m1", cc.thinking("check the environment first"), cwd=cwd),
            cc.assistant("m1", cc.tool("t1", "Bash", command=f"cat {HOME}/src/app/.env"), cwd=cwd),
            cc.result("t1", f"OPENAI_API_KEY={API_KEY}\nDEBUG=1", cwd=cwd),
            cc.assistant("m2", cc.tool("t2", "Read", file_path=f"{HOME}/src/app/tests/test_api.py"), cwd=cwd),
            cc.result("t2", [{"type": "text", "text": "def test_api():\n    assert ping() == 'pong ☕'"}], cwd=cwd),
            cc.assistant("m3", cc.text("Fixed: the key now comes from the environment. 😀"), cwd=cwd)]


def session_text(cc) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in claude_session(cc))


ENCODINGS = {  # name: how the text becomes bytes
    "utf-8": lambda t: t.encode("utf-8"),
    "utf-8-bom": lambda t: t.encode("utf-8-sig"),
    "utf-16-le-bom": lambda t: b"\xff\xfe" + t.encode("utf-16-le"),
    "utf-16-be-bom": lambda t: b"\xfe\xff" + t.encode("utf-16-be"),
    "utf-16-le": lambda t: t.encode("utf-16-le"),
    "utf-16-be": lambda t: t.encode("utf-16-be"),
    "utf-32-le-bom": lambda t: b"\xff\xfe\x00\x00" + t.encode("utf-32-le"),
    "utf-32-be-bom": lambda t: b"\x00\x00\xfe\xff" + t.encode("utf-32-be"),
    "utf-32-le": lambda t: t.encode("utf-32-le"),
    "utf-32-be": lambda t: t.encode("utf-32-be"),
}


def import_into(tmp_path: Path, capsys, name: str, files: dict[str, bytes]) -> tuple[int, Path, str, str]:
    """Lay ``files`` out as a Claude Code projects folder and import it: (rc, dest, out, err)."""
    return import_tree(tmp_path / name / "claude", tmp_path / name / "out", capsys, files)


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_each_encoding_is_imported_as_its_utf8_twin(tmp_path, cc, capsys, encoding):
    text = session_text(cc)
    rc, dest, out, err = import_into(tmp_path, capsys, "wide", {"-Users-qwrtzplant-src-app/s1.jsonl": ENCODINGS[encoding](text)})
    assert rc == 0 and "imported 1 transcript file(s)" in out and "NOT imported" not in err
    assert every_file(dest) == ["claude_code/-Users-<USER_1>-src-app/s1.jsonl"]
    data = (dest / every_file(dest)[0]).read_bytes()
    data.decode("utf-8")  # strict: UTF-8, whatever came in
    assert b"\x00" not in data and not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"))
    for needle in NEEDLES:  # as written, and as `tr -d '\0'` of a wide copy would give it back
        assert needle.encode() not in data and needle.encode() not in data.replace(b"\x00", b"")
    assert "☕" in data.decode() and "😀" in data.decode()
    # byte for byte what the UTF-8 file gives
    rc8, dest8, _, _ = import_into(tmp_path, capsys, "utf8", {"-Users-qwrtzplant-src-app/s1.jsonl": text.encode()})
    assert rc8 == 0 and (dest8 / every_file(dest8)[0]).read_bytes() == data
    # and still the same session
    copy_ = load_session(dest / every_file(dest)[0])
    assert copy_.n_agent_steps == load_session(dest8 / every_file(dest8)[0]).n_agent_steps == 3


def _zip(text: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("s.jsonl", text)
    return buf.getvalue()


REFUSED = {  # name: (bytes from the session text, what the report says)
    "gzip": (lambda t: gzip.compress(t.encode()), "gzip-compressed: decompress it first (gunzip)"),
    "bzip2": (lambda t: bz2.compress(t.encode()), "bzip2-compressed: decompress it first (bunzip2)"),
    "xz": (lambda t: lzma.compress(t.encode()), "xz-compressed: decompress it first (unxz)"),
    "zip": (_zip, "a zip archive: extract it first (unzip)"),
    "nul-padded": (lambda t: t.encode() + b"\x00" * 65536, "line 8: binary file (NUL-padded"),
    "nul-padded-far": (lambda t: t.encode() * 40 + b"\x00" * 512, "line 281: binary file (NUL-padded"),
    "nul-inside": (lambda t: t.encode()[:300] + b"\x00" + t.encode()[300:], "line 1: binary file (NUL byte)"),
    "utf-16-nul-padded": (lambda t: t.encode("utf-16") + b"\x00" * 4096, "line 8: binary file (NUL-padded"),
}


@pytest.mark.parametrize("kind", list(REFUSED))
def test_compressed_and_binary_files_are_refused_and_nothing_is_written(tmp_path, cc, capsys, kind):
    text = session_text(cc)
    make, reason = REFUSED[kind]
    rc, dest, out, err = import_into(tmp_path, capsys, kind, {"-Users-qwrtzplant-src-app/bad.jsonl": make(text),
                                                      "-Users-qwrtzplant-src-app/good.jsonl": text.encode()})
    assert rc == 1 and "imported 1 transcript file(s)" in out
    assert f"NOT imported claude_code/-Users-<USER_1>-src-app/bad.jsonl: {reason}" in err
    assert every_file(dest) == ["claude_code/-Users-<USER_1>-src-app/good.jsonl"]  # no copy, no temporary file
    assert "qwrtzplant" not in out + err
    # the corpus readers refuse the same file for the same reason (one detection)
    bad = tmp_path / kind / "claude" / "-Users-qwrtzplant-src-app" / "bad.jsonl"
    with pytest.raises(SessionFormatError) as exc:
        load_session(bad)
    said = f"line {exc.value.line}: {exc.value.reason}" if exc.value.line else exc.value.reason
    assert said.startswith(reason)


def test_dry_run_decodes_and_refuses_alike_and_writes_nothing(tmp_path, cc, capsys):
    text = session_text(cc)
    claude = tmp_path / "claude" / "-Users-qwrtzplant-src-app"
    claude.mkdir(parents=True)
    (claude / "wide.jsonl").write_bytes(text.encode("utf-16"))
    (claude / "packed.jsonl").write_bytes(gzip.compress(text.encode()))
    dest = tmp_path / "out"
    rc = main(["import-sessions", "--claude-dir", str(tmp_path / "claude"), "--codex-dir", str(tmp_path / "none"),
               "--dest", str(dest), "--dry-run"])
    printed = capsys.readouterr()
    assert rc == 1 and "would import 1 transcript file(s)" in printed.out
    assert f"would write {dest}/claude_code/-Users-<USER_1>-src-app/wide.jsonl" in printed.out
    assert "packed.jsonl: gzip-compressed" in printed.err and not dest.exists()
