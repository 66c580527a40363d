"""The real corpus: every file parses and its counts match MANIFEST.csv; the committed
manifest matches the shared one; filling data/corpus verifies sha256."""
from __future__ import annotations

import csv
import urllib.parse

import pytest

from contextecho.engine.paths import REPO_ROOT
from contextecho.sessions import (load_session, positions, render_prefix, snapshot_at)
from contextecho.sessions.corpus import CorpusError, fill_corpus, sha256_file

COUNT_KEYS = ("n_user_msgs", "n_assistant_msgs", "n_tool_calls", "n_compactions")
COMMITTED = REPO_ROOT / "data" / "corpus_manifest.csv"


@pytest.mark.corpus
def test_counts_match_manifest(manifest_rows, corpus_sessions):
    mismatches = []
    for row in manifest_rows:
        if row["format"] == "other":
            continue
        s = corpus_sessions[row["file"]]
        got = {"format": s.format, **{k: getattr(s.counts, k) for k in COUNT_KEYS},
               "first_timestamp": s.first_timestamp, "last_timestamp": s.last_timestamp}
        want = {"format": row["format"], **{k: int(row[k]) for k in COUNT_KEYS},
                "first_timestamp": row["first_timestamp"], "last_timestamp": row["last_timestamp"]}
        if got != want:
            mismatches.append(f"{row['file']}: got {got}, MANIFEST says {want}")
    assert not mismatches, "\n".join(mismatches)
    assert len(corpus_sessions) == 37


@pytest.mark.corpus
def test_every_file_parses_cleanly(corpus_sessions):
    for name, s in corpus_sessions.items():
        reasons = {k.reason for k in s.report.skipped}
        if "general-tool-calls" in name:  # starts with two "// Source:" comment lines
            assert [k.line for k in s.report.skipped] == [1, 2] and reasons == {"comment line, not JSON"}
        else:
            assert s.report.complete, (name, s.report.skipped[:3])
        assert s.n_agent_steps >= 1, name


@pytest.mark.corpus
def test_snapshots_and_prefixes_across_corpus(corpus_sessions):
    n_compactions = 0
    for name, s in corpus_sessions.items():
        for c in s.compactions:
            n_compactions += 1
            post = snapshot_at(s, c.steps_before + 1)
            assert post.after_compaction, name
            assert post.entries[0].text, f"{name}: empty compaction summary"
        if s.n_agent_steps < 150:
            continue  # rendering every session is slow; the long ones exercise windowing
        for p in positions(s, "compaction") + positions(s, "uniform", k=3):
            prefix = render_prefix(snapshot_at(s, p.step))
            assert prefix.n_chars <= 30_000 and prefix.messages[-1]["role"] == "assistant"
    assert n_compactions == 16


@pytest.mark.corpus
def test_subagents_are_loaded_alongside(corpus_dir):
    s = load_session(corpus_dir / "moredip/samples/claude-code-projects/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl")
    assert len(s.subagents) == 5 and all(x.counts.n_agent_steps >= 2 for x in s.subagents)


@pytest.mark.corpus
def test_committed_manifest_matches_shared(manifest_rows):
    with open(COMMITTED, newline="", encoding="utf-8") as fh:
        committed = list(csv.DictReader(fh))
    assert len(committed) == len(manifest_rows) == 47
    for mine, theirs in zip(committed, manifest_rows):
        assert {k: mine[k] for k in theirs} == theirs
        assert mine["url"] == (f"https://raw.githubusercontent.com/{mine['source_repo']}/{mine['commit']}/"
                              f"{urllib.parse.quote(mine['source_path'])}")


def test_committed_manifest_is_self_consistent():
    with open(COMMITTED, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows, "data/corpus_manifest.csv is empty"
    for r in rows:
        assert len(r["sha256"]) == 64 and int(r["bytes"]) > 0
        assert r["url"].startswith("https://") and r["commit"] in r["url"]
        assert r["format"] in ("claude_code", "codex_cli", "other")


@pytest.mark.corpus
def test_fill_from_shared_is_verified_and_idempotent(tmp_path, corpus_dir, manifest_rows):
    rows = [r for r in manifest_rows if int(r["bytes"]) < 200_000][:6]
    dest = tmp_path / "corpus"
    first = fill_corpus(dest, rows, source=corpus_dir, allow_download=False)
    assert (first.copied, first.present) == (len(rows), 0)
    second = fill_corpus(dest, rows, source=corpus_dir, allow_download=False)
    assert (second.copied, second.present) == (0, len(rows))
    for r in rows:
        assert sha256_file(dest / r["file"]) == r["sha256"]


def _fake_corpus(tmp_path):
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "a" / "one.jsonl").write_text('{"type": "summary", "summary": "t"}\n')
    row = {"file": "a/one.jsonl", "bytes": "36", "sha256": sha256_file(src / "a" / "one.jsonl"),
           "url": (src / "a" / "one.jsonl").as_uri()}
    return src, row


def test_fill_sha_mismatch_names_the_file(tmp_path):
    src, row = _fake_corpus(tmp_path)
    bad = dict(row, sha256="0" * 64)
    with pytest.raises(CorpusError, match=r"a/one\.jsonl: sha256 mismatch"):
        fill_corpus(tmp_path / "dest", [bad], source=src)
    assert not (tmp_path / "dest" / "a" / "one.jsonl").exists()  # nothing unverified is left


def test_fill_missing_from_source(tmp_path):
    src, row = _fake_corpus(tmp_path)
    with pytest.raises(CorpusError, match=r"b\.jsonl: listed in the manifest but missing"):
        fill_corpus(tmp_path / "dest", [dict(row, file="b.jsonl")], source=src)


def test_fill_downloads_when_source_absent(tmp_path):
    # A file:// URL exercises the download path without touching the network.
    src, row = _fake_corpus(tmp_path)
    result = fill_corpus(tmp_path / "dest", [row], source=tmp_path / "absent")
    assert result.downloaded == 1 and (tmp_path / "dest" / "a" / "one.jsonl").is_file()
    with pytest.raises(CorpusError, match="downloading is disabled"):
        fill_corpus(tmp_path / "dest2", [row], source=tmp_path / "absent", allow_download=False)
