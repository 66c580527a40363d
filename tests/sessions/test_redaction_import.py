"""import-sessions never stops half way: a file that fails verification is reported (its
redacted path, the classes and counts, never the strings) and skipped; the others are
imported; the exit status says some were skipped."""
from __future__ import annotations

import json

from contextecho.__main__ import main
from contextecho.sessions import redaction
from contextecho.cli.import_sessions import redact_transcript

SECRET_MAIL = "leak.me.planted@example.org"


def _sessions(tmp_path, cc, cx, write):
    claude = tmp_path / "claude"
    write(claude / "-Users-qwrtz-app" / "good.jsonl",
          [cc.user("deploy with DB_PASSWORD=x to db.prod.acme-corp.com:5432"), cc.assistant("a", cc.text("ok"))])
    write(claude / "-Users-qwrtz-app" / "bad.jsonl",
          [cc.user(f"mail {SECRET_MAIL} please"), cc.assistant("a", cc.text("ok"))])
    codex = tmp_path / "codex"
    write(codex / "2026" / "01" / "01" / "rollout-1.jsonl", [cx.meta(), *cx.turn("fix /home/qwrtz/x", "fixed", "c1")])
    return claude, codex


def test_a_file_that_fails_verification_is_reported_and_skipped(tmp_path, cc, cx, write, capsys, monkeypatch):
    real_apply = redaction.Redactor.apply

    def faulty_apply(self, text):  # a redaction bug that lets one address through
        return text if SECRET_MAIL in text else real_apply(self, text)

    monkeypatch.setattr(redaction.Redactor, "apply", faulty_apply)
    claude, codex = _sessions(tmp_path, cc, cx, write)
    dest = tmp_path / "out"
    rc = main(["import-sessions", "--claude-dir", str(claude), "--codex-dir", str(codex), "--dest", str(dest)])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "imported 2 transcript file(s)" in out
    written = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*.jsonl"))
    assert written == ["claude_code/-Users-<USER_1>-app/good.jsonl", "codex_cli/2026/01/01/rollout-1.jsonl"]
    assert "NOT imported claude_code/-Users-<USER_1>-app/bad.jsonl" in err
    assert "1 EMAIL" in err and "skipped 1 file(s)" in err
    assert SECRET_MAIL not in out + err and "qwrtz" not in out + err  # never the secret, nor the user


def test_every_file_imports_when_all_verify(tmp_path, cc, cx, write, capsys):
    claude, codex = _sessions(tmp_path, cc, cx, write)
    dest = tmp_path / "out"
    rc = main(["import-sessions", "--claude-dir", str(claude), "--codex-dir", str(codex), "--dest", str(dest)])
    out, err = capsys.readouterr()
    assert rc == 0 and "imported 3 transcript file(s)" in out and "NOT imported" not in err
    blob = "".join(p.read_text() for p in dest.rglob("*.jsonl"))
    for secret in ("qwrtz", SECRET_MAIL, "DB_PASSWORD=x", "db.prod.acme-corp.com", "5432"):
        assert secret not in blob, secret


def test_object_keys_are_redacted_like_values_and_keep_the_record(cc, write, tmp_path):
    record = cc.user("hi")
    record["snapshot"] = {"trackedFileBackups": {"/Users/qwrtz/app/a.py": {"v": 1}, "/Users/qwrtz/app/b.py": {"v": 2},
                                                 "jane.planted@example.org": {"v": 3}}}
    record["env"] = {"DB_PASSWORD": "x", "API_TOKEN": "ab12", "HOME": "/home/qwrtz", "max_tokens": "300"}
    text = json.dumps(record)
    out, rel = redact_transcript(text, "-Users-qwrtz-app/s.jsonl", {})
    clean = json.loads(out)
    keys = list(clean["snapshot"]["trackedFileBackups"])
    assert keys == ["/Users/<USER_1>/app/a.py", "/Users/<USER_1>/app/b.py", "<EMAIL_1>"]
    assert clean["env"]["DB_PASSWORD"].startswith("<SECRET_") and clean["env"]["API_TOKEN"].startswith("<SECRET_")
    assert clean["env"]["max_tokens"] == "300" and clean["env"]["HOME"] == "/home/<USER_1>"
    assert rel == "-Users-<USER_1>-app/s.jsonl"
    assert "qwrtz" not in out and "jane.planted" not in out


def test_keys_that_become_equal_are_kept_apart():
    r = redaction.Redactor({"USER": ["qwrtz", "zxcvb"]})
    obj = {"/home/qwrtz/a": 1, "/home/zxcvb/a": 2, "<USER_1>": 3}
    r.discover_object(obj)
    out = r.apply_object(obj)
    assert len(out) == 3 and sorted(out.values()) == [1, 2, 3]


def test_files_that_cannot_be_read_are_reported_without_opening_them(tmp_path, cc, cx, write, capsys):
    """A FIFO named like a transcript would block a plain read forever; a dangling link has
    nothing behind it: both are named (redacted) and skipped, the rest imported, exit 1."""
    import os

    claude, codex = _sessions(tmp_path, cc, cx, write)
    (claude / "-Users-qwrtz-app" / "bad.jsonl").unlink()
    os.mkfifo(claude / "-Users-qwrtz-app" / "pipe.jsonl")
    (codex / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    dest = tmp_path / "out"
    rc = main(["import-sessions", "--claude-dir", str(claude), "--codex-dir", str(codex), "--dest", str(dest)])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "imported 2 transcript file(s)" in out
    assert "NOT imported claude_code/-Users-<USER_1>-app/pipe.jsonl: is a FIFO" in err
    assert "NOT imported codex_cli/gone.jsonl: dangling symlink" in err
    assert "qwrtz" not in err
