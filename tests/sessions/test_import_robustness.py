"""Imports that never abort: one file's failure is that file's skip, with its reason; lone
surrogates are replaced, deep nesting is refused, no temporary or half file is ever left
(Ctrl-C included), and memory stays bounded for huge files."""
from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from contextecho.__main__ import main
from tests.sessions.conftest import every_file, import_tree
from contextecho.cli import import_sessions
from contextecho.sessions import encoding, redaction
from contextecho.sessions.jsonl import MAX_DEPTH, read_jsonl
from contextecho.sessions.model import Skip

pytestmark = pytest.mark.timeout(120)

PROJECT = "-Users-qwrtz-app"
SHOWN = "claude_code/-Users-<USER_1>-app"


def lines(cc, *extra: str) -> bytes:
    recs = [cc.user("fix /Users/qwrtz/app/x.py", cwd="/Users/qwrtz/app"), cc.assistant("a", cc.text("ok"))]
    return ("".join(json.dumps(r) + "\n" for r in recs) + "".join(e + "\n" for e in extra)).encode()


def run_import(tmp_path: Path, capsys, files: dict[str, bytes]) -> tuple[int, Path, str, str]:
    """Import ``files`` (names in one project folder): (rc, dest, out, err)."""
    return import_tree(tmp_path / "claude", tmp_path / "out", capsys,
                       {f"{PROJECT}/{name}": data for name, data in files.items()})


def import_traced(tmp_path: Path, capsys) -> tuple[int, Path, str, int]:
    """Import what is already laid out under ``tmp_path/claude`` while tracemalloc watches:
    (rc, dest, stderr, peak bytes traced)."""
    tracemalloc.start()
    try:
        rc, dest, _, err = run_import(tmp_path, capsys, {})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return rc, dest, err, peak


def _deep(n: int) -> str:
    return '{"type": "user", "message": {"content": ' + "[" * n + "]" * n + "}}"


def test_bad_files_among_good_ones_are_skipped_with_their_reasons(tmp_path, cc, capsys, monkeypatch):
    real_apply = redaction.Redactor.apply_object

    def failing(self, obj):  # redaction bugs, each named by a marker in the record
        text = json.dumps(obj)
        for marker, exc in (("BOOM-RECURSION", RecursionError("deep")),
                            ("BOOM-ENCODE", UnicodeEncodeError("utf-8", "x\ud83d", 1, 2, "surrogates not allowed")),
                            ("BOOM-KEYERROR", KeyError("jane.secret@example.org"))):
            if marker in text:
                raise exc
        return real_apply(self, obj)

    monkeypatch.setattr(redaction.Redactor, "apply_object", failing)
    files = {"a-good.jsonl": lines(cc),
             "b-deep.jsonl": lines(cc, _deep(100_000)),
             "c-deep-orjson.jsonl": lines(cc, _deep(MAX_DEPTH + 10)),
             "d-recursion.jsonl": lines(cc, json.dumps(cc.user("BOOM-RECURSION"))),
             "e-encode.jsonl": lines(cc, json.dumps(cc.user("BOOM-ENCODE"))),
             "f-keyerror.jsonl": lines(cc, json.dumps(cc.user("BOOM-KEYERROR"))),
             "g-surrogate.jsonl": lines(cc, '{"type": "user", "message": {"content": "3 passed \\ud83d"}}'),
             "h-binary.jsonl": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
             "i-good.jsonl": lines(cc)}
    rc, dest, out, err = run_import(tmp_path, capsys, files)
    assert rc == 1 and "imported 3 transcript file(s)" in out
    assert every_file(dest) == [f"{SHOWN}/{n}" for n in ("a-good.jsonl", "g-surrogate.jsonl", "i-good.jsonl")]
    reasons = {line.split(": ", 1)[0].rsplit("/", 1)[-1]: line.split(": ", 1)[1]
               for line in err.splitlines() if line.startswith("NOT imported")}
    assert reasons == {
        "b-deep.jsonl": f"line 3: JSON nested deeper than {MAX_DEPTH} levels (refused); skipped",
        "c-deep-orjson.jsonl": f"line 3: JSON nested deeper than {MAX_DEPTH} levels (refused); skipped",
        "d-recursion.jsonl": "failed (RecursionError; the message is not shown, it could quote the file); skipped",
        "e-encode.jsonl": "failed (UnicodeEncodeError; the message is not shown, it could quote the file); skipped",
        "f-keyerror.jsonl": "failed (KeyError; the message is not shown, it could quote the file); skipped",
        "h-binary.jsonl": "line 3: binary file (NUL byte), not a JSONL transcript; skipped"}
    assert "skipped 6 file(s)" in err and "jane.secret" not in err and "qwrtz" not in out + err


def test_lone_surrogates_are_replaced_and_imported(tmp_path, cc, capsys):
    raw = lines(cc, '{"type": "user", "message": {"content": "3 passed \\ud83d"}, "\\udc00key": "x"}') \
        + b'{"type": "user", "message": {"content": "bytes \xed\xa0\xbd too, caf\xe9"}}\n'
    rc, dest, out, err = run_import(tmp_path, capsys, {"s.jsonl": raw})
    assert rc == 0, err
    data = (dest / SHOWN / "s.jsonl").read_bytes()
    records = [json.loads(line) for line in data.decode("utf-8").splitlines()]  # strict UTF-8
    assert records[2]["message"]["content"] == "3 passed \ufffd" and records[2]["\ufffdkey"] == "x"
    assert records[3]["message"]["content"] == "bytes \ufffd\ufffd\ufffd too, caf\ufffd"


def test_a_failure_mid_write_leaves_neither_temporary_nor_half_file(tmp_path, cc, capsys, monkeypatch):
    """Verification fails in a late batch, after earlier batches were written: the
    temporary file and the folders made for it go; an earlier copy stays as it was."""
    monkeypatch.setattr(import_sessions, "BATCH_BYTES", 1)  # every line its own batch
    many = lines(cc, *[json.dumps(cc.assistant(f"m{i}", cc.text(f"step {i}"))) for i in range(20)])
    rc, dest, _, _ = run_import(tmp_path, capsys, {"s.jsonl": many})
    assert rc == 0 and every_file(dest) == [f"{SHOWN}/s.jsonl"]
    before = (dest / SHOWN / "s.jsonl").read_bytes()
    real = redaction.Redactor.survivors
    monkeypatch.setattr(redaction.Redactor, "survivors",
                        lambda self, text: ["EMAIL"] if "step 17" in text else real(self, text))
    rc, _, _, err = run_import(tmp_path, capsys, {"s.jsonl": many, "t.jsonl": many})
    assert rc == 1 and "failed verification (1 EMAIL original string(s) survive redaction)" in err
    assert every_file(dest) == [f"{SHOWN}/s.jsonl"]  # t.jsonl: no half file, no .tmp
    assert (dest / SHOWN / "s.jsonl").read_bytes() == before  # the earlier copy is untouched
    fresh = tmp_path / "fresh"
    rc = main(["import-sessions", "--claude-dir", str(tmp_path / "claude"), "--codex-dir", str(tmp_path / "x"),
               "--dest", str(fresh)])
    assert rc == 1 and not fresh.exists()  # the folders made for the failed files are gone too


def test_ctrl_c_while_writing_removes_the_temporary_file(tmp_path, cc, capsys, monkeypatch):
    monkeypatch.setattr(import_sessions, "BATCH_BYTES", 1)
    real = redaction.Redactor.apply_object

    def interrupted(self, obj):
        if "step 9" in json.dumps(obj):
            raise KeyboardInterrupt
        return real(self, obj)

    monkeypatch.setattr(redaction.Redactor, "apply_object", interrupted)
    many = lines(cc, *[json.dumps(cc.assistant(f"m{i}", cc.text(f"step {i}"))) for i in range(12)])
    written = []
    real_stage = import_sessions._Landing.stage

    def spying(self, target):  # what reached the temporary file before Ctrl-C
        cm = real_stage(self, target)
        write = cm.__enter__()
        written.append(target.with_name(f".{target.name}.{os.getpid()}.tmp"))

        class Wrapped:
            def __enter__(self):
                return write

            def __exit__(self, *exc):
                assert written[0].stat().st_size > 0  # batches before the interrupt were written
                return cm.__exit__(*exc)
        return Wrapped()

    monkeypatch.setattr(import_sessions._Landing, "stage", spying)
    rc, _, _, err = run_import(tmp_path, capsys, {"s.jsonl": many})
    assert rc == 130 and "interrupted" in err.lower(), err  # Ctrl-C: one line, exit 130
    assert written and not written[0].exists()
    assert not (tmp_path / "out").exists()  # nor the folders made for it


def test_a_huge_line_is_refused_without_being_read_whole(tmp_path, cc, capsys, monkeypatch):
    monkeypatch.setattr(encoding, "MAX_LINE_BYTES", 2**20)
    huge = '{"type": "user", "message": {"content": "' + "x" * (24 * 2**20) + '"}}'
    path = tmp_path / "claude" / PROJECT / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(lines(cc, huge, json.dumps(cc.assistant("b", cc.text("after")))))
    del huge
    rc, dest, err, peak = import_traced(tmp_path, capsys)
    assert rc == 1 and "NOT imported claude_code/-Users-<USER_1>-app/s.jsonl: line 3: line longer than 1 MiB " \
                       "(refused: no line is read whole past that)" in err
    assert not dest.exists()
    assert peak < 4 * 2**20, peak  # the 24 MiB line was never held
    raw = read_jsonl(path)  # the corpus reader skips it and names it
    assert raw.skipped == [Skip(3, "line longer than 1 MiB (not read)")] and [n for n, _ in raw.records] == [1, 2, 4]


class _PlainRedactor:
    """The redactor's interface with a single rule (the user name): what is measured
    below is what the import holds, not the cost of the real rules."""

    def __init__(self, extra=None):
        self.seen = 0

    def discover_object(self, obj):
        self.seen += 1

    def discover(self, text):
        self.seen += 1

    def apply(self, text):
        return text.replace("qwrtz", "<USER_1>")

    def apply_object(self, obj):
        if isinstance(obj, str):
            return self.apply(obj)
        if isinstance(obj, list):
            return [self.apply_object(v) for v in obj]
        if isinstance(obj, dict):
            return {self.apply(k): self.apply_object(v) for k, v in obj.items()}
        return obj

    def object_survivors(self, obj):
        return []

    def survivors(self, text):
        return ["USER"] if "qwrtz" in text else []

    originals_in = survivors


def test_memory_stays_bounded_on_a_long_session(tmp_path, cc, capsys, monkeypatch):
    """50,000 lines: what is held is a batch, not the file, nor every record, nor every
    redacted copy (the whole-file import held several times the file)."""
    monkeypatch.setattr(import_sessions, "Redactor", _PlainRedactor)
    path = tmp_path / "claude" / PROJECT / "long.jsonl"
    path.parent.mkdir(parents=True)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(25_000):
            fh.write(json.dumps(cc.assistant(f"m{i}", cc.tool(f"t{i}", "Bash", command=f"pytest -k case_{i}"),
                                             cwd="/Users/qwrtz/app")) + "\n")
            fh.write(json.dumps(cc.result(f"t{i}", f"{i} passed in 0.{i % 97}s")) + "\n")
    size = path.stat().st_size
    rc, dest, err, peak = import_traced(tmp_path, capsys)
    assert rc == 0, err
    out = (dest / SHOWN / "long.jsonl").read_bytes()
    assert out.count(b"\n") == 50_000 and b"qwrtz" not in out and out.count(b"/Users/<USER_1>/app") == 25_000
    assert size > 20 * 2**20 and peak < size / 4, (peak, size)  # 256 KiB batches: about 4 MB


def test_a_session_written_to_during_the_import_is_refused(tmp_path, cc, capsys, monkeypatch):
    """Two passes over the file: lines that appear or change between them were never
    discovered, so the file is refused, not written with them."""
    path = tmp_path / "claude" / PROJECT / "live.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(lines(cc)[:-20])  # the last record is still being written
    real = import_sessions._discovered

    def then_the_session_goes_on(lines_, rel, extra):
        redactor = real(lines_, rel, extra)
        with open(path, "ab") as fh:  # completes the line, adds a record
            fh.write(lines(cc)[-20:] + json.dumps(cc.user("mail jane.later@example.org")).encode() + b"\n")
        return redactor

    monkeypatch.setattr(import_sessions, "_discovered", then_the_session_goes_on)
    rc, dest, _, err = run_import(tmp_path, capsys, {})
    assert rc == 1 and "live.jsonl: the file changed while it was being imported" in err
    assert not dest.exists()
    # a session that only grew after its last complete line is imported as far as it was read
    path.write_bytes(lines(cc))
    rc, dest, _, err = run_import(tmp_path, capsys, {})
    assert rc == 0, err
    assert (dest / SHOWN / "live.jsonl").read_bytes().count(b"\n") == 2


def test_copies_land_in_groups_and_a_copy_that_cannot_land_is_its_own_skip(tmp_path, cc, capsys, monkeypatch):
    """Seven files in groups of three: every copy lands, none is left temporary; a rename
    that fails skips that file alone, with its reason."""
    monkeypatch.setattr(import_sessions, "LAND_FILES", 3)
    flushes = []
    monkeypatch.setattr(import_sessions, "_flush", lambda paths: flushes.append(len(paths)))
    real_replace = os.replace

    def replace(src, dst):
        if Path(dst).name == "s4.jsonl":
            raise PermissionError(13, "Permission denied")
        return real_replace(src, dst)

    monkeypatch.setattr(import_sessions.os, "replace", replace)
    rc, dest, out, err = run_import(tmp_path, capsys, {f"s{i}.jsonl": lines(cc) for i in range(7)})
    assert rc == 1 and "imported 6 transcript file(s)" in out
    assert f"NOT imported {SHOWN}/s4.jsonl: cannot write it (Permission denied); skipped" in err
    assert every_file(dest) == [f"{SHOWN}/s{i}.jsonl" for i in range(7) if i != 4]  # no .tmp left
    assert flushes[::2] == [3, 3, 1]  # the temporary files of each group at once, then its folders


def test_a_base64_blob_is_one_secret_and_the_rest_is_still_read(tmp_path, cc, capsys):
    """An image pasted into a session (megabytes of base64 on one line) is replaced as one
    secret; what stands beside it is redacted as usual."""
    import base64
    import random

    blob = base64.b64encode(random.Random(43).randbytes(300_000)).decode()
    image = cc.user([{"type": "text", "text": "see /Users/qwrtz/shot.png"},
                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": blob}}])
    rc, dest, _, err = run_import(tmp_path, capsys, {"s.jsonl": lines(cc, json.dumps(image))})
    assert rc == 0, err
    data = (dest / SHOWN / "s.jsonl").read_text(encoding="utf-8")
    assert blob[:64] not in data and '"data": "<SECRET_1>"' in data and "/Users/<USER_1>/shot.png" in data
