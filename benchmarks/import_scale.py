"""Import at scale: ``import-sessions`` on a folder of many small sessions, malformed files
and one huge line, and on the largest Claude Code file of the corpus.

Builds, in a temporary folder (removed afterwards unless ``--keep``): ``--sessions`` tiny
Claude Code and Codex CLI sessions (default 5,000, half of each; a few records each, with a
home path, an address and a host to redact), 43 malformed files (empty, truncated, not JSON,
NUL bytes, compressed, archives, invalid UTF-8, lone surrogates, nested too deep, a
dangling link ...) and one file holding a single line of ``--line-mb`` MB (default 200).
Each import runs in a fresh interpreter, whose wall time and peak resident memory
(``ru_maxrss``, the interpreter and its imports included) are measured:

* the whole folder: every file must be imported or skipped with its reason (one file's
  failure is its own skip), and the run must end;
* the one-line file alone (it is refused past ``MAX_LINE_BYTES`` without being held);
* the largest Claude Code file of ``data/corpus`` (redaction, verification and writing).

Last lines::

    RESULT import_folder_s=<s> files=<n> imported=<n> skipped=<n> peak_mib=<MiB> target=<=60
    RESULT import_long_line_s=<s> line_mb=<MB> peak_mib=<MiB>
    RESULT import_largest_claude_code_s=<s> mb=<MB> target=<=5

    .venv/bin/python benchmarks/import_scale.py [--sessions N] [--line-mb MB] [--keep DIR]
"""
from __future__ import annotations

import argparse
import bz2
import gzip
import io
import json
import lzma
import os
import random
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"
sys.path.insert(0, str(LIB))

from _common import corpus_root  # noqa: E402

TARGET_FOLDER_S, TARGET_LARGEST_S = 60, 5
N_MALFORMED = 43

# One import in a fresh interpreter: its exit status, wall time, peak memory, what it printed.
_RUN = """
import io, json, resource, sys, time
from contextlib import redirect_stderr, redirect_stdout
from contextecho.__main__ import main
out, err = io.StringIO(), io.StringIO()
start = time.perf_counter()
with redirect_stdout(out), redirect_stderr(err):
    rc = main(sys.argv[1:])
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rc": rc, "wall": wall, "peak_mib": peak, "out": out.getvalue(), "err": err.getvalue()}))
"""


def import_run(claude: Path, codex: Path, dest: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(LIB)}
    proc = subprocess.run([sys.executable, "-c", _RUN, "import-sessions", "--claude-dir", str(claude),
                           "--codex-dir", str(codex), "--dest", str(dest)],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cc(kind: str, i: int, j: int, **body) -> dict:
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": f"/Users/bench{i % 7}/src/app",
            "sessionId": f"s{i}", "version": "2.1.0", "gitBranch": "main", "type": kind,
            "uuid": f"00000000-0000-4000-8000-{i:06d}{j:06d}", "timestamp": f"2026-01-01T00:{j:02d}:00.000Z", **body}


def tiny_claude(i: int) -> str:
    records = [
        _cc("user", i, 0, message={"role": "user", "content": f"fix test_{i} and mail dev{i}@acme-corp.com"}),
        _cc("assistant", i, 1, message={"id": f"m{i}", "role": "assistant", "model": "claude-x", "content": [
            {"type": "text", "text": "Looking into it."},
            {"type": "tool_use", "id": f"t{i}", "name": "Bash",
             "input": {"command": f"pytest -k case_{i} && ssh ops@build-{i % 50}.acme-corp.com uptime"}}]}),
        _cc("user", i, 2, message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i % 9 + 1} passed in 0.{i % 97}s"}]}),
        _cc("assistant", i, 3, message={"id": f"n{i}", "role": "assistant", "model": "claude-x",
                                        "content": [{"type": "text", "text": "Fixed; the tests pass."}]}),
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def tiny_codex(i: int) -> str:
    stamp = "2026-01-01T00:00:00.000Z"
    records = [
        {"timestamp": stamp, "type": "session_meta", "payload": {"id": f"c{i}", "cwd": f"/home/bench{i % 5}/app",
                                                                 "originator": "codex_cli_rs", "cli_version": "0.1"}},
        {"timestamp": stamp, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"rename the flag in module_{i}"}]}},
        {"timestamp": stamp, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": f"call_{i}",
            "arguments": json.dumps({"command": ["bash", "-lc", f"rg flag_{i} src/"]})}},
        {"timestamp": stamp, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": f"call_{i}", "output": f"src/mod_{i}.py:12: flag_{i} = 1"}},
        {"timestamp": stamp, "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Renamed."}]}},
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def malformed(rng: random.Random) -> list[tuple[str, bytes]]:
    """(name, bytes) of 43 files an import must skip (or read) one by one."""
    good = tiny_claude(0).encode()
    line = good.split(b"\n")[0]
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("s.jsonl", good)
    files = [
        ("empty", b""), ("blank", b"\n \n\t\n"), ("truncated", good + line[:40]), ("not-json", b"not json\nat all\n"),
        ("nul-byte", line + b"\n\x00\x00\x00\n"), ("nul-padded", good + b"\x00" * 4096),
        ("gzip", gzip.compress(good)), ("bzip2", bz2.compress(good)), ("xz", lzma.compress(good)),
        ("zstd-magic", b"\x28\xb5\x2f\xfd" + good), ("lz4-magic", b"\x04\x22\x4d\x18" + good),
        ("zip", zipped.getvalue()), ("7z-magic", b"7z\xbc\xaf\x27\x1c" + good),
        ("invalid-utf8", b'{"type": "user", "message": {"content": "caf\xe9 \xff\xfe"}}\n'),
        ("lone-surrogate", b'{"type": "user", "message": {"content": "\\ud83d cut"}}\n'),
        ("deep-array", b"[" * 5000 + b"]" * 5000 + b"\n"),
        ("deep-object", b'{"a":' * 400 + b"1" + b"}" * 400 + b"\n"),
        ("array-lines", b"[1, 2, 3]\n[4]\n"), ("number-lines", b"42\n3.5\n"),
        ("huge-int", b'{"n": 1' + b"0" * 6000 + b"}\n"), ("nan", b'{"a": NaN, "b": Infinity}\n'),
        ("cr-only", line + b"\r" + line + b"\r"), ("crlf", good.replace(b"\n", b"\r\n")),
        ("utf8-bom", b"\xef\xbb\xbf" + good), ("utf16-le", b"\xff\xfe" + good.decode().encode("utf-16-le")),
        ("utf16-be-no-bom", good.decode().encode("utf-16-be")), ("utf32-le", good.decode().encode("utf-32")),
        ("latin1", "caf\xe9 na\xefve\n".encode("latin-1")), ("random-bytes", rng.randbytes(4096)),
        ("png", b"\x89PNG\r\n\x1a\n" + rng.randbytes(512)), ("pdf", b"%PDF-1.7\n" + rng.randbytes(512)),
        ("control-chars", b'{"a": "x\ty\x01z"}\n'), ("trailing-garbage", line + b" xyz\n"),
        ("duplicate-keys", b'{"type": "user", "type": "assistant", "message": {}}\n'),
        ("long-key", b'{"' + b"k" * 100_000 + b'": 1}\n'), ("message-string", b'{"type": "user", "message": "hi"}\n'),
        ("content-number", b'{"type": "assistant", "message": {"content": 5}}\n'),
        ("payload-list", b'{"type": "response_item", "payload": [1, 2]}\n'),
        ("unterminated-1mb", b'{"a": "' + b"x" * 1_000_000 + b"\n"),
        ("mixed", line + b"\n{oops\n" + line + b"\n"), ("bom-then-garbage", b"\xef\xbb\xbf\x00garbage"),
        ("only-brackets", b"}{][\n"),
    ]
    files.append(("dangling-link", b""))  # made a dangling symlink below
    assert len(files) == N_MALFORMED, len(files)
    return files


def build(root: Path, n_sessions: int, line_mb: int) -> tuple[Path, Path, Path, int]:
    """The folder to import (claude/ and codex/), the one-line file's own folder, and the
    number of files in the folder."""
    claude, codex, long_dir = root / "claude", root / "codex", root / "long" / "claude"
    rng = random.Random(43)
    for i in range(n_sessions):
        if i % 2:
            path = codex / "2026" / "01" / f"{i % 28 + 1:02d}" / f"rollout-2026-01-01T00-00-00-{i:08d}.jsonl"
            text = tiny_codex(i)
        else:
            path = claude / f"-Users-bench{i % 7}-src-app{i % 40}" / f"{i:08d}.jsonl"
            text = tiny_claude(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    bad = claude / "-Users-bench0-malformed"
    bad.mkdir(parents=True)
    for name, data in malformed(rng):
        if name == "dangling-link":
            (bad / f"{name}.jsonl").symlink_to(root / "nowhere.jsonl")
        else:
            (bad / f"{name}.jsonl").write_bytes(data)
    long_dir.mkdir(parents=True)
    write_long_line(long_dir / "one-line.jsonl", line_mb)
    shutil.copy(long_dir / "one-line.jsonl", bad / "one-line.jsonl")  # in the folder too
    return claude, codex, long_dir, n_sessions + N_MALFORMED + 1


def write_long_line(path: Path, mb: int) -> None:
    """One JSON record of ``mb`` MB on a single line, written a chunk at a time."""
    chunk = ("the build log says the cache is cold " * 28000)[:1 << 20]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"type": "user", "message": {"role": "user", "content": "')
        for _ in range(mb):
            fh.write(chunk)
        fh.write('"}}\n')


def largest_claude_code() -> Path | None:
    from contextecho.sessions.corpus import read_manifest

    root = corpus_root()
    if root is None:
        return None
    rows = [r for r in read_manifest() if r["format"] == "claude_code" and (root / r["file"]).is_file()]
    return root / max(rows, key=lambda r: int(r["bytes"]))["file"] if rows else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--line-mb", type=int, default=200)
    parser.add_argument("--keep", type=Path, default=None, help="build (and keep) the folder here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="import-scale-"))
    try:
        claude, codex, long_dir, n_files = build(root, args.sessions, args.line_mb)
        folder = import_run(claude, codex, root / "out")
        imported = int(folder["out"].split("imported ")[1].split()[0])
        skipped = folder["err"].count("NOT imported ")
        assert folder["rc"] in (0, 1) and imported + skipped == n_files, (folder["rc"], imported, skipped, n_files)
        assert "Traceback" not in folder["err"]
        print(f"folder: {n_files} files, {imported} imported, {skipped} skipped, "
              f"{folder['wall']:.1f} s, peak {folder['peak_mib']:.0f} MiB")
        long = import_run(long_dir, root / "no-codex", root / "out-long")
        assert long["rc"] == 1 and "NOT imported" in long["err"], long["err"]
        reason = long["err"].split("NOT imported ")[1].splitlines()[0]
        print(f"{args.line_mb} MB line: {long['wall']:.1f} s, peak {long['peak_mib']:.0f} MiB ({reason})")
        largest = largest_claude_code()
        if largest is not None:
            single = root / "largest" / "-Users-bench-largest"
            single.mkdir(parents=True)
            shutil.copy(largest, single / largest.name)
            one = import_run(single.parent, root / "no-codex", root / "out-largest")
            assert one["rc"] == 0, one["err"]
            mb = largest.stat().st_size / 1e6
            print(f"largest Claude Code file: {largest.name} {mb:.1f} MB, {one['wall']:.2f} s")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"RESULT import_folder_s={folder['wall']:.1f} files={n_files} imported={imported} skipped={skipped} "
          f"peak_mib={folder['peak_mib']:.0f} target=<={TARGET_FOLDER_S}")
    print(f"RESULT import_long_line_s={long['wall']:.1f} line_mb={args.line_mb} peak_mib={long['peak_mib']:.0f}")
    if largest is not None:
        print(f"RESULT import_largest_claude_code_s={one['wall']:.2f} mb={mb:.1f} target=<={TARGET_LARGEST_S}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
