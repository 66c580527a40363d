"""The audit (``python -m contextecho audit``) on scripted models: the positions it picks,
the sessions it refuses, the plan-confirm-run flow and its flags, what it sends off the
machine, and that the plan's calls are the calls it makes."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from contextecho.__main__ import main
from contextecho.echo.protocols import protocol
from contextecho.experiments import audit, session_positions
from contextecho.experiments.parameters import ParameterError, RangeError
from tests.sessions.conftest import CC, CX, write_jsonl

EMAIL = "jane.roe@example.org"
FAST = ["-p", "n_resamples", "200"]


def claude(path: Path, rounds: int = 14, compaction_at: int | None = None, secret: str = "") -> Path:
    """A Claude Code transcript of ``rounds`` tool rounds, a compaction after round
    ``compaction_at``, ``secret`` in its first prompt."""
    sid = {"sessionId": path.stem}
    records = [CC.user(f"Fix the parser in cli.py; mail {secret} when done." if secret else "Fix the parser.", **sid)]
    for i in range(rounds):
        records += [CC.assistant(f"m{i}", CC.text(f"Step {i}: reading module {i}."), CC.tool(f"t{i}"), **sid),
                    CC.result(f"t{i}", f"src/mod{i}.py: def f{i}(): pass  # " + "x" * 40, **sid),
                    CC.assistant(f"n{i}", CC.text(f"Module {i} needs a fix."), **sid),
                    CC.user(f"Good, go on with part {i + 1}.", **sid)]
        if compaction_at == i:
            records += [{**CC.boundary(), **sid}, {**CC.summary_record("Summary: the parser is half fixed."), **sid}]
    return write_jsonl(path, records)


def codex(path: Path) -> Path:
    return write_jsonl(path, [CX.meta()] + [r for i in range(3) for r in CX.turn(f"do {i}", f"done {i}", f"c{i}")])


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "sessions"
    claude(root / "a" / "long.jsonl", rounds=16, compaction_at=8, secret=EMAIL)
    claude(root / "b" / "short.jsonl", rounds=10)
    return root


@pytest.fixture
def scripted(provider):
    from tests.conftest import scripted_reply

    return provider("scripted", scripted_reply)


def cli(*args: str) -> int:
    return main(["audit", *args])


# ---------------------------------------------------------------------------- positions
LISTED = [("D01", 10), ("D02", 20), ("P0_start", 25), ("c1_pre", 30), ("c1_post", 40), ("D05", 50),
          ("D07", 70), ("D10", 100)]


def test_quick_asks_the_start_and_the_first_compaction_else_the_middle_and_the_end():
    assert session_positions.choose_positions(LISTED, "quick", 0) == [("P0_start", 25), ("c1_pre", 30), ("c1_post", 40)]
    plain = [c for c in LISTED if not c[0].startswith("c1")]
    assert session_positions.choose_positions(plain, "quick", 0) == [("P0_start", 25), ("D05", 50), ("D10", 100)]
    assert session_positions.choose_positions(LISTED, "full", 0) == LISTED
    # n_positions: the quick choice first, then evenly along the rest; full: evenly along all
    assert session_positions.choose_positions(LISTED, "quick", 5) == [("D01", 10), ("P0_start", 25), ("c1_pre", 30),
                                                          ("c1_post", 40), ("D10", 100)]
    assert session_positions.choose_positions(LISTED, "full", 2) == [("D01", 10), ("D10", 100)]
    assert session_positions.choose_positions(LISTED[:2], "full", 5) == LISTED[:2]


def test_candidates_are_the_start_the_deciles_and_the_compactions(tmp_path):
    from contextecho.sessions.loader import load_session

    path = claude(tmp_path / "long.jsonl", rounds=60, compaction_at=8)  # turns past the harness's 100 + 100
    ours = load_session(path)
    listed = session_positions.candidates(ours, protocol("contextecho"))
    kinds = [session_positions.kind_of(label) for label, _ in listed]
    assert kinds.count("start") == 1 and kinds.count("compaction") == 2 and kinds.count("decile") >= 8
    assert [s for _, s in listed] == sorted({s for _, s in listed})  # one per step, in order
    harness = session_positions.candidates(protocol("reference").read_session(path), protocol("reference"))
    labels = dict(harness)
    assert labels["P0_start"] == 100 and labels["c1_post"] == labels["c1_pre"] + 100
    assert session_positions.choose_positions(harness, "quick", 0) == sorted(
        [(k, labels[k]) for k in ("P0_start", "c1_pre", "c1_post")], key=lambda c: c[1])


def test_placeholders_are_counted_by_class_never_kept():
    counts = audit.placeholders("mail <EMAIL_1> and <EMAIL_2>, again <EMAIL_1>; host <HOST_1>; <not one>")
    assert counts == {"EMAIL": 2, "HOST": 1}


# ----------------------------------------------------------------------------- sessions
def test_files_that_cannot_be_audited_are_named_with_their_reason(folder, tmp_path):
    codex(folder / "c" / "rollout.jsonl")
    (folder / "d").mkdir()
    (folder / "d" / "broken.jsonl").write_bytes(b"\x1f\x8b\x08 not a transcript")
    chosen = audit.choose_sessions(audit.Parameters(sessions=str(folder)))
    assert [p.name for p in chosen.files] == ["long.jsonl", "short.jsonl"]  # longest first
    reasons = dict(chosen.skipped)
    assert "reference protocol reads claude_code only" in reasons["c/rollout.jsonl"]
    assert "d/broken.jsonl" in reasons
    both = audit.choose_sessions(audit.Parameters(sessions=str(folder), protocol="contextecho"))
    assert len(both.files) == 3
    with pytest.raises(RangeError, match="n_sessions"):
        audit.choose_sessions(audit.Parameters(sessions=str(folder), n_sessions=3))
    assert len(audit.choose_sessions(audit.Parameters(sessions=str(folder), n_sessions=1)).files) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no session to audit"):
        audit.choose_sessions(audit.Parameters(sessions=str(empty)))


def test_budgets_default_to_the_protocol_or_the_embedded_build():
    reference = protocol("reference")
    hosted = audit.Parameters(targets=("openai/gpt-4o-mini",), judges=("openai/gpt-4o-mini",)).resolved(reference)
    assert (hosted.window, hosted.max_tokens, hosted.stressor_max_tokens, hosted.judge_max_tokens) == \
        (30000, 600, 1024, 400)
    embedded = audit.Parameters(targets=("openai/gpt-4o-mini",)).resolved(reference)  # the judge is the embedded model
    assert embedded.window == audit.EMBEDDED["window"] and embedded.judge_max_tokens == 32
    assert audit.Parameters(window=1200).resolved(reference).window == 1200
    with pytest.raises(ParameterError, match="size"):
        audit.Parameters(size="medium")


# ------------------------------------------------------------------------------ the flow
def planned_against_made(out: Path) -> pd.DataFrame:
    """The run's plan-against-actual table, checked: the calls of a batch that asks from the
    sessions (the targets) or from fixed texts (the calibration) are the calls planned; a
    batch built on answers (the judges) asks at most what was planned, which counted every
    answer as distinct (two answers alike are one judge request)."""
    versus = pd.read_parquet(out / "results" / "plan_vs_actual.parquet").set_index("batch")
    fixed = versus.index.str.endswith(":targets") | versus.index.str.endswith(":calibration")
    assert fixed.sum() >= 2
    for planned, made in (("planned_calls", "calls"), ("planned_to_compute", "computed")):
        assert (versus.loc[fixed, planned] == versus.loc[fixed, made]).all(), versus[[planned, made]]
        assert (versus[planned] >= versus[made]).all(), versus[[planned, made]]
    return versus


@pytest.fixture(scope="module")
def audited(tmp_path_factory, provider):
    """One audit of two sessions by scripted models (not in-process: what they are sent is
    redacted), through the command line: (its folder, what the models were sent, stdout)."""
    from tests.conftest import scripted_reply

    root = tmp_path_factory.mktemp("audited")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONTEXTECHO_CACHE", str(root / "cache"))
        mp.setenv("CONTEXTECHO_RUNS", str(root / "runs"))
        sessions = root / "sessions"
        claude(sessions / "a" / "long.jsonl", rounds=16, compaction_at=8, secret=EMAIL)
        claude(sessions / "b" / "short.jsonl", rounds=10)
        models = provider("scripted", scripted_reply)
        out = root / "out"
        capture = io.StringIO()
        with mp.context() as quiet:
            quiet.setattr("sys.stdout", capture)
            status = cli("--sessions", str(sessions), "--model", "scripted/command", "--judge", "scripted/judge",
                         "--yes", "--out", str(out), *FAST)
        assert status == 0, capture.getvalue()[-3000:]
        sent = list(models.seen)
        # A second run is answered from the cache: nothing is sent, its plan has nothing to compute.
        again = root / "again"
        with mp.context() as quiet:
            quiet.setattr("sys.stdout", io.StringIO())
            assert cli("--sessions", str(sessions), "--model", "scripted/command", "--judge", "scripted/judge",
                       "--yes", "--out", str(again), *FAST) == 0
        assert len(models.seen) == len(sent)
        yield {"out": out, "again": again, "sent": sent, "stdout": capture.getvalue()}


def test_a_run_sends_nothing_unredacted_and_calls_what_it_planned(audited):
    out = audited["out"]
    assert "audit: plan" in audited["stdout"] and "audit: report" in audited["stdout"]
    assert "S1 (long): " in audited["stdout"]  # the sessions and positions chosen
    sent = json.dumps(audited["sent"])
    assert audited["sent"] and EMAIL not in sent and "<EMAIL_" in sent
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "plan" in manifest
    versus = planned_against_made(out)
    assert versus.loc["total", "computed"] == len(audited["sent"])
    assert {"audit:panel:targets", "audit:panel:judges", "audit:a_anchor:targets", "audit:calibration"} \
        <= set(versus.index)
    again = pd.read_parquet(audited["again"] / "results" / "plan_vs_actual.parquet").set_index("batch")
    assert again.loc["total", "computed"] == 0 and again.loc["total", "calls"] == versus.loc["total", "calls"]
    redacted = pd.read_parquet(out / "results" / "redaction.parquet")
    off = redacted[redacted["where"].str.contains("sent off")]
    assert "EMAIL" in set(off["class"]) and (off["count"] > 0).all()
    cells = pd.read_parquet(out / "results" / "cells.parquet")
    assert set(cells["session"]) == {"S1", "S2"} and cells["response"].notna().all()
    gaps = pd.read_parquet(out / "results" / "drift_gaps.parquet")
    assert set(gaps["level"]) == {"position", "session", "all"} and gaps["estimate"].notna().any()
    assert (gaps["ci_low"] <= gaps["estimate"]).all() and (gaps["estimate"] <= gaps["ci_high"]).all()


def test_the_report_holds_every_section_and_figure(audited, tmp_path):
    from tests.paper.test_report import Page, check_in_chromium, decoded

    page_path = audited["out"] / "report.html"
    page = Page(page_path.read_text())
    assert page.sections == [s.id for s in audit.REPORT] + ["manifest", "data"]
    figures = [png for s in audit.REPORT for png, _ in s.figures]
    assert len(page.images) == len(figures) == 3
    assert all(decoded(src).size[0] > 200 for src, _ in page.images)
    text = page_path.read_text()
    assert "not produced" not in text and EMAIL not in text
    assert "results/cells.parquet" in text and "a_anchor/results/effects.parquet" in text
    check_in_chromium(page_path, tmp_path, [s.id for s in audit.REPORT] + ["manifest", "data"], len(figures))


def test_plan_prints_the_calls_and_stops_before_any(folder, tmp_path, scripted, capsys):
    out = tmp_path / "out"
    assert cli("--sessions", str(folder), "--model", "scripted/command", "--plan", "--out", str(out), *FAST) == 0
    shown = capsys.readouterr().out
    assert "to compute" in shown and "stopped before any call" in shown
    assert scripted.seen == [] and (out / "plan.json").is_file() and not (out / "report.html").exists()
    planned = json.loads((out / "plan.json").read_text())
    assert planned["totals"]["to_compute"] == planned["totals"]["calls"] > 0


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_run_is_confirmed_on_a_terminal_and_needs_yes_without_one(folder, tmp_path, scripted, monkeypatch,
                                                                     capsys):
    args = ["--session", str(folder / "b" / "short.jsonl"), "--model", "scripted/command", *FAST]
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert cli(*args, "--out", str(tmp_path / "a")) == 2
    assert "pass --yes" in capsys.readouterr().err and scripted.seen == []
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    assert cli(*args, "--out", str(tmp_path / "b")) == 1
    assert "not run" in capsys.readouterr().out and scripted.seen == []
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert cli(*args, "--out", str(tmp_path / "c")) == 0
    assert scripted.seen and (tmp_path / "c" / "report.html").is_file()


@pytest.mark.parametrize("args, message", [
    (["-p", "targets", "fake/echo"], "with --model, not with -p"),
    (["-p", "n_sessionz", "2"], "did you mean 'n_sessions'"),
    (["-p", "window", "-5"], "'window'"),
    (["--model", "nonexistent-provider/x"], "'targets'"),
    (["--session", "no/such/file.jsonl"], "does not exist"),
])
def test_usage_errors_exit_2_naming_what_is_wrong(args, message, folder, tmp_path, capsys):
    source = [] if "--session" in args else ["--sessions", str(folder)]
    assert cli(*source, *args, "--plan", "--out", str(tmp_path / "o")) == 2
    assert message in capsys.readouterr().err


def test_without_sessions_it_imports_your_own_redacted(tmp_path, monkeypatch, scripted, capsys):
    home = tmp_path / "claude"
    claude(home / "proj" / "s1.jsonl", rounds=12, secret=EMAIL)
    monkeypatch.setenv("CONTEXTECHO_DATA", str(tmp_path / "data"))
    assert cli("--claude-dir", str(home), "--codex-dir", str(tmp_path / "none"), "--model", "scripted/command",
               "--plan", "--out", str(tmp_path / "o"), *FAST) == 0
    imported = list((tmp_path / "data" / "own_sessions").rglob("*.jsonl"))
    assert len(imported) == 1 and EMAIL not in imported[0].read_text() and "<EMAIL_1>" in imported[0].read_text()
    assert "imported 1 transcript" in capsys.readouterr().out
    monkeypatch.setenv("CONTEXTECHO_DATA", str(tmp_path / "nothing"))
    assert cli("--claude-dir", str(tmp_path / "nobody"), "--codex-dir", str(tmp_path / "none"),
               "--plan", "--out", str(tmp_path / "p")) == 2
    assert "no session to audit" in capsys.readouterr().err


def test_a_run_that_stops_still_leaves_its_report(folder, tmp_path, scripted, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug in a stage")

    monkeypatch.setattr(audit, "gap_row", broken)
    monkeypatch.setattr(audit, "plan", lambda params: None)  # the run, not its plan, meets the bug
    out = tmp_path / "out"
    assert cli("--session", str(folder / "b" / "short.jsonl"), "--model", "scripted/command", "--yes",
               "--out", str(out), *FAST) == 1
    assert "the run stopped: RuntimeError: a bug in a stage" in capsys.readouterr().err
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    text = (out / "report.html").read_text()
    assert 'class="status-failed"' in text and "not produced" in text
    assert (out / "results" / "cells.parquet").is_file()  # what was asked before the failure is kept
