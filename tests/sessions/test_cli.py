"""The three commands: corpus, data, import-sessions (run through the real dispatcher)."""
from __future__ import annotations

import json

import pytest

from contextecho.__main__ import main
from contextecho.sessions.corpus import sha256_file


def _tree(tmp_path, cc, cx, write):
    root = tmp_path / "sessions"
    write(root / "proj" / "s1.jsonl", [cc.user("go"), cc.assistant("a", cc.text("ok")),
                                       cc.assistant("a", cc.tool("t1")), cc.result("t1", "x"),
                                       cc.boundary(), cc.summary_record("S"), cc.user("more"),
                                       cc.assistant("b", cc.text("done"))])
    write(root / "proj" / "s1" / "subagents" / "agent-z.jsonl",
          [cc.user("sub", isSidechain=True, agentId="z"),
           cc.assistant("c", cc.text("sub ok"), isSidechain=True, agentId="z")])
    write(root / "codex" / "rollout-1.jsonl", [cx.meta(), *cx.turn("fix", "fixed", "c1")])
    write(root / "proj" / "notes.jsonl", [{"event": "click"}])  # a .jsonl that is no transcript
    (root / "proj" / "metadata.json").write_text("{}")  # a sidecar
    return root


JSON_KEYS = {"file", "format", "session_id", "n_user_msgs", "user_msg_classes", "n_assistant_msgs",
             "n_tool_calls", "n_compactions", "n_microcompactions", "n_agent_steps", "glued_lines",
             "session_ids", "skipped_lines"}


def test_corpus_json(tmp_path, cc, cx, write, capsys):
    root = _tree(tmp_path, cc, cx, write)
    assert main(["corpus", str(root), "--json"]) == 0
    out, err = capsys.readouterr()
    objs = [json.loads(line) for line in out.splitlines()]
    read = [o for o in objs if "error" not in o]
    assert [o["file"] for o in read] == ["codex/rollout-1.jsonl", "proj/s1.jsonl",
                                         "proj/s1/subagents/agent-z.jsonl"]
    assert all(set(o) == JSON_KEYS for o in read)
    assert read[1] == {"file": "proj/s1.jsonl", "format": "claude_code", "session_id": "sess-1",
                       "n_user_msgs": 2, "user_msg_classes": {"typed_prompt": 2},
                       "n_assistant_msgs": 2, "n_tool_calls": 1, "n_compactions": 1,
                       "n_microcompactions": 0, "n_agent_steps": 3, "glued_lines": [],
                       "session_ids": {}, "skipped_lines": []}
    assert read[0]["format"] == "codex_cli" and read[0]["n_agent_steps"] == 2
    (bad,) = [o for o in objs if "error" in o]
    assert bad["file"] == "proj/notes.jsonl" and "not a Claude Code or Codex CLI transcript" in bad["error"]
    assert "not read proj/notes.jsonl: line 1: not a Claude Code" in err
    assert "3 transcript(s) read, 1 path(s) not read" in err


def test_corpus_table(tmp_path, cc, cx, write, capsys):
    root = _tree(tmp_path, cc, cx, write)
    assert main(["corpus", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["file", "format", "steps", "user", "typed", "assistant", "tools",
                                "compactions", "micro", "span", "skipped"]
    assert lines[2].split()[:9] == ["proj/s1.jsonl", "claude_code", "3", "2", "2", "2", "1", "1", "0"]
    assert lines[-1].startswith("total (3 files)")


def test_corpus_missing_dir(tmp_path, capsys):
    assert main(["corpus", str(tmp_path / "nope")]) == 2


@pytest.mark.corpus
def test_corpus_json_on_real_corpus(corpus_dir, manifest_rows, capsys):
    assert main(["corpus", str(corpus_dir), "--json"]) == 0
    objs = {o["file"]: o for o in map(json.loads, capsys.readouterr().out.splitlines())}
    sessions = [r for r in manifest_rows if r["format"] != "other"]
    assert set(objs) == {r["file"] for r in sessions}
    for r in sessions:
        for k in ("n_user_msgs", "n_assistant_msgs", "n_tool_calls", "n_compactions"):
            assert objs[r["file"]][k] == int(r[k]), (r["file"], k)


def test_data_command(tmp_path, capsys):
    src = tmp_path / "src"
    (src / "x").mkdir(parents=True)
    (src / "x" / "f.jsonl").write_text("{}\n")
    manifest = tmp_path / "m.csv"
    manifest.write_text("file,bytes,sha256,url\n"
                        f"x/f.jsonl,3,{sha256_file(src / 'x' / 'f.jsonl')},https://example.invalid/f\n")
    args = ["data", "--manifest", str(manifest), "--dest", str(tmp_path / "d"), "--source", str(src)]
    assert main(args) == 0
    assert main(args) == 0  # idempotent
    assert "1 already present" in capsys.readouterr().out
    manifest.write_text("file,bytes,sha256,url\nx/f.jsonl,3," + "f" * 64 + ",https://example.invalid/f\n")
    (tmp_path / "d" / "x" / "f.jsonl").unlink()
    assert main(args) == 1
    assert "x/f.jsonl: sha256 mismatch" in capsys.readouterr().err


def test_import_sessions_redacts(tmp_path, cc, cx, write, capsys):
    claude = tmp_path / "home" / ".claude" / "projects"
    codex = tmp_path / "home" / ".codex" / "sessions"
    write(claude / "-Users-qwrtz-app" / "s1.jsonl",
          [cc.user("I am jane.planted@example.org", cwd="/Users/qwrtz/app"),
           cc.assistant("a", cc.tool("t1", "Bash", command="cat /Users/qwrtz/.env")),
           cc.result("t1", "OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123\nBLUEBIRD=1")],
          raw_lines=["// a comment from /Users/qwrtz"])
    write(codex / "2026" / "01" / "01" / "rollout-x.jsonl",
          [cx.meta(), cx.msg("user", "ssh deploy@10.20.30.40 and Bluebird")])
    dest = tmp_path / "own"
    rc = main(["import-sessions", "--claude-dir", str(claude), "--codex-dir", str(codex),
               "--dest", str(dest), "--redact-term", "Bluebird"])
    assert rc == 0 and "imported 2 transcript file(s)" in capsys.readouterr().out
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*.jsonl"))
    assert files == ["claude_code/-Users-<USER_1>-app/s1.jsonl",
                     "codex_cli/2026/01/01/rollout-x.jsonl"]
    blob = "".join(p.read_text() for p in dest.rglob("*.jsonl"))
    for secret in ("qwrtz", "jane.planted", "AbCdEfGhIjKlMnOp", "10.20.30.40", "Bluebird"):
        assert secret not in blob
    first = (dest / files[0]).read_text().splitlines()
    assert json.loads(first[0])["cwd"] == "/Users/<USER_1>/app"  # still valid JSONL


def test_import_sessions_dry_run_and_missing_dirs(tmp_path, capsys):
    rc = main(["import-sessions", "--claude-dir", str(tmp_path / "a"), "--codex-dir",
               str(tmp_path / "b"), "--dest", str(tmp_path / "d"), "--dry-run"])
    captured = capsys.readouterr()
    assert rc == 0 and "would import 0" in captured.out and "not found" in captured.err
    assert not (tmp_path / "d").exists()


def test_every_argument_has_help():
    import argparse

    from contextecho.cli import corpus as cli, data_corpus as corpus_cli, import_sessions as import_cli
    for module in (cli, corpus_cli, import_cli):
        parser = argparse.ArgumentParser()
        module.configure(parser)
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, (module.__name__, action.dest)
