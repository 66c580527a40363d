"""The released dataset: download (huggingface_hub mocked, never the network), linking a local
copy, verification against every checksum-list form, counts, the receipt, the command."""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import httpx2
import huggingface_hub
import pytest
from huggingface_hub.errors import OfflineModeIsEnabled

from contextecho.cli import released as cli
from contextecho.echo.reference import release_fetch as rf
from contextecho.echo.reference.release_fetch import (ReleaseError, ReleaseUnreachable, count_release,
                                                      download_release, is_checksum_list, link_release,
                                                      make_receipt, read_receipt, receipt_path, verify_release)

FILES = {
    "results/probes_at_crosscompaction/claude-sonnet-4-5/P1/claude_session/C01.json": '{"score": 3}',
    "results/probes_at_crosscompaction/claude-sonnet-4-5/P1/filler/C01.json": '{"score": 2}',
    "results/drift_onset/claude-haiku-4-5/T0005/filler/C01_v00.json": '{"score": 1}',
    "data/sessions/panel.jsonl": '{"type": "user"}\n',
    "data/sessions/chainassemble.jsonl": '{"type": "user"}\n',
    "README.md": "# the dataset card\n",
}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def tree(root: Path, files: dict[str, str] = FILES) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def sums(files: dict[str, str] = FILES, *, skip=()) -> str:
    return "".join(f"{sha(text)}  {rel}\n" for rel, text in files.items() if rel not in skip)


def test_sha256sums_verifies_every_file(tmp_path):
    root = tree(tmp_path / "rel")
    (root / "SHA256SUMS").write_text("# made by sha256sum\n" + sums())
    result = verify_release(root)
    assert result.status == "verified" and result.verified == len(FILES) == result.files
    assert result.lists == ("SHA256SUMS",) and not (result.mismatched or result.missing or result.uncovered)


def test_mismatch_missing_and_uncovered_files_are_reported(tmp_path):
    root = tree(tmp_path / "rel")
    listed = sums(skip={"README.md"}) + f"{sha('gone')}  results/e/gone.json\n"
    (root / "SHA256SUMS").write_text(listed)
    (root / "results/drift_onset/claude-haiku-4-5/T0005/filler/C01_v00.json").write_text('{"score": 0}')
    result = verify_release(root)
    assert result.status == "failed"
    [bad] = result.mismatched
    assert bad.path.endswith("C01_v00.json") and bad.expected == sha('{"score": 1}') and bad.listed_in == "SHA256SUMS"
    assert result.missing == ("results/e/gone.json",) and result.uncovered == ("README.md",)
    assert result.verified == len(FILES) - 2
    text = "\n".join(result.lines())
    assert "sha256 mismatch: 1" in text and "listed but absent: 1" in text and "in no checksum list" in text


def test_uncovered_files_alone_make_it_incomplete(tmp_path):
    root = tree(tmp_path / "rel")
    (root / "SHA256SUMS").write_text(sums(skip={"README.md"}))
    assert verify_release(root).status == "incomplete"


def test_no_checksum_list_is_unverifiable_and_says_so(tmp_path):
    result = verify_release(tree(tmp_path / "rel"))
    assert result.status == "unverifiable" and result.verified == 0 and result.files == len(FILES)
    assert "ships no checksum list" in result.lines()[0]


def test_bsd_lines_sidecars_and_nested_lists_resolve_relative_to_their_folder(tmp_path):
    root = tree(tmp_path / "rel")
    cells = {k: v for k, v in FILES.items() if k.startswith("results/")}
    (root / "results" / "checksums.txt").write_text(
        "".join(f"SHA256 ({k.removeprefix('results/')}) = {sha(v)}\n" for k, v in cells.items()))
    (root / "data/sessions/panel.jsonl.sha256").write_text(sha(FILES["data/sessions/panel.jsonl"]) + "\n")
    (root / "data/sessions/chainassemble.jsonl.sha256").write_text(
        f"{sha(FILES['data/sessions/chainassemble.jsonl'])} *chainassemble.jsonl\n")
    (root / "README.md.sha256").write_text(sha("tampered") + "\n")
    result = verify_release(root)
    assert result.verified == len(FILES) - 1 and [m.path for m in result.mismatched] == ["README.md"]
    assert set(result.lists) == {"results/checksums.txt", "data/sessions/panel.jsonl.sha256",
                                 "data/sessions/chainassemble.jsonl.sha256", "README.md.sha256"}


@pytest.mark.parametrize("manifest", [
    {"files": [{"path": k, "sha256": sha(v), "bytes": len(v)} for k, v in FILES.items()]},
    {k: sha(v) for k, v in FILES.items()},
    {k: {"sha256": f"sha256:{sha(v)}"} for k, v in FILES.items()},
    {"@context": {"cr": "http://mlcommons.org/croissant/"}, "name": "persona-drift",
     "distribution": [{"@type": "cr:FileObject", "name": k.split("/")[-1], "contentUrl": k, "sha256": sha(v)}
                      for k, v in FILES.items()]},
])
def test_json_manifests_in_their_common_shapes(tmp_path, manifest):
    root = tree(tmp_path / "rel")
    (root / "MANIFEST.json").write_text(json.dumps(manifest))
    result = verify_release(root)
    assert result.status == "verified" and result.verified == len(FILES), result.lines()


def test_a_manifest_without_checksums_checks_presence_only(tmp_path):
    root = tree(tmp_path / "rel")
    (root / "results" / "MANIFEST.json").write_text(json.dumps(
        {"files": [{"path": k.removeprefix("results/")} for k in FILES if k.startswith("results/")]
         + [{"path": "e/absent.json"}]}))
    result = verify_release(root)
    assert result.status == "unverifiable" and result.missing == ("results/e/absent.json",)
    assert len(result.unchecked_listed) == 3


def test_csv_manifests_and_unreadable_lines(tmp_path):
    root = tree(tmp_path / "rel")
    rows = "".join(f"{k},{sha(v)}\n" for k, v in FILES.items())
    (root / "manifest.csv").write_text("path,sha256\n" + rows + "../outside.json," + "0" * 64 + "\nx.json,zz\n")
    (root / "SHA256SUMS").write_text("not a checksum line\n")
    result = verify_release(root)
    assert result.status == "verified" and result.lists == ("manifest.csv",)
    assert any("manifest.csv:" in u and "outside the tree" in u for u in result.unreadable)
    assert any("'zz' is not a sha256" in u for u in result.unreadable)
    assert any(u.startswith("SHA256SUMS:1: not a sha256 line") for u in result.unreadable)


def test_checksum_list_names():
    for name in ("SHA256SUMS", "sha256sums.txt", "checksums.json", "MANIFEST", "MANIFEST.json", "manifest_v2.csv",
                 "cells.tar.gz.sha256", "croissant.json"):
        assert is_checksum_list(name), name
    for name in ("C01.json", "RESULTS.json", "README.md", "panel.jsonl", "manifest.py"):
        assert not is_checksum_list(name), name


def test_counts_cells_sessions_and_archives(tmp_path):
    root = tree(tmp_path / "rel")
    (root / "results" / "MANIFEST.json").write_text("{}")
    (root / "data_archive.tar.gz").write_bytes(b"\0")
    (root / "data/sessions/.DS_Store").write_text("")
    counts = count_release(root)
    assert counts.cells == 3 and counts.sessions == 2 and counts.archives == ("data_archive.tar.gz",)
    assert counts.cells_by_experiment == {"drift_onset": 1, "probes_at_crosscompaction": 2}


def test_receipt_round_trips_beside_the_tree(tmp_path):
    root = tree(tmp_path / "v1.0")
    (root / "SHA256SUMS").write_text(sums())
    receipt = make_receipt(root, revision="v1.0", commit="abc123", source="huggingface.co",
                           expected={"cells": 41921, "sessions": 3})
    assert receipt_path(root) == tmp_path / "v1.0.receipt.json"
    back = read_receipt(root)
    assert back == receipt and back.verification.status == "verified"
    lines = back.count_lines()
    assert lines[0].endswith("(but the paper states 41,921 for v1.0)") and "states 3 for" in lines[1]
    with pytest.raises(ReleaseError, match="no receipt"):
        read_receipt(tmp_path / "v2.0")
    (tmp_path / "bad.receipt.json").write_text("{}")
    with pytest.raises(ReleaseError, match="bad.receipt.json: not a release receipt"):
        read_receipt(tmp_path / "bad")


def test_link_release(tmp_path):
    source = tree(tmp_path / "copy")
    dest = tmp_path / "data" / "released" / "v1.0"
    assert link_release(source, dest) == source.resolve() and dest.is_symlink()
    assert link_release(source, dest) == source.resolve()  # the same link again: nothing to do
    with pytest.raises(ReleaseError, match="already exists and is not"):
        link_release(tree(tmp_path / "other"), dest)
    with pytest.raises(ReleaseError, match="not a folder"):
        link_release(tmp_path / "nowhere", tmp_path / "d2")


# --- download, huggingface_hub mocked ---------------------------------------------------------

class FakeApi:
    def __init__(self, error: Exception | None = None):
        self.error = error

    def dataset_info(self, repo, *, revision, timeout):
        assert timeout <= 10
        if self.error:
            raise self.error
        return argparse.Namespace(sha="c0ffee" * 6 + "abcd")


def test_download_resolves_the_commit_then_snapshots_it(tmp_path, monkeypatch):
    seen = {}

    def snapshot(repo, **kw):
        seen.update(kw, repo=repo)
        tree(Path(kw["local_dir"]))
        return str(kw["local_dir"])

    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: FakeApi())
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    commit = download_release("v1.0", tmp_path / "v1.0")
    assert commit == "c0ffee" * 6 + "abcd"
    assert seen == {"repo": rf.RELEASE_REPO, "repo_type": "dataset", "revision": commit,
                    "local_dir": tmp_path / "v1.0", "etag_timeout": rf.CONNECT_TIMEOUT_S}


@pytest.mark.parametrize("error", [httpx2.ConnectError("[Errno -2] Name or service not known"),
                                   httpx2.ConnectTimeout("timed out"), OfflineModeIsEnabled("offline")])
def test_unreachable_hub_fails_at_once(tmp_path, monkeypatch, error):
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: FakeApi(error))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: pytest.fail("no download"))
    with pytest.raises(ReleaseUnreachable):
        download_release("v1.0", tmp_path / "v1.0")


def test_offline_mode_makes_no_request(tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub, "is_offline_mode", lambda: True)
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: pytest.fail("no request"))
    with pytest.raises(ReleaseUnreachable, match="HF_HUB_OFFLINE"):
        download_release("v1.0", tmp_path / "v1.0")


def test_download_never_writes_into_a_linked_copy(tmp_path):
    dest = tmp_path / "v1.0"
    dest.symlink_to(tree(tmp_path / "copy"))
    with pytest.raises(ReleaseError, match="links to a local copy"):
        download_release("v1.0", dest)


# --- the command --------------------------------------------------------------------------------

def command(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="contextecho released")
    cli.configure(parser)
    return cli.run(parser.parse_args(list(argv)))


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTECHO_DATA", str(tmp_path / "data"))
    (tmp_path / "data" / "published").mkdir(parents=True)
    (tmp_path / "data" / "published" / "numbers.jsonl").write_text(
        (Path(__file__).parents[2] / "data" / "published" / "numbers.jsonl").read_text())
    return tmp_path / "data"


def test_fetch_offline_exits_2_with_the_way_out(data, monkeypatch, capsys):
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: FakeApi(httpx2.ConnectError("Name or service not known")))
    assert command("fetch") == 2
    err = capsys.readouterr().err
    assert "huggingface.co cannot be reached from this machine; fetch on a connected machine and pass --from DIR" in err
    assert not (data / "released" / "v1.0.receipt.json").exists()


def test_fetch_from_a_local_copy_links_verifies_and_writes_the_receipt(data, tmp_path, capsys):
    source = tree(tmp_path / "copy")
    (source / "SHA256SUMS").write_text(sums())
    assert command("fetch", "--from", str(source)) == 0
    out = capsys.readouterr().out
    assert (data / "released" / "v1.0").resolve() == source.resolve()
    receipt = json.loads((data / "released" / "v1.0.receipt.json").read_text())
    assert receipt["source"] == str(source.resolve()) and receipt["commit"] is None
    assert receipt["counts"]["cells"] == 3 and receipt["expected"] == {"cells": 41921, "sessions": 3}
    assert "verified: 6 of 6 files" in out and "(but the paper states 41,921 for v1.0)" in out
    assert command("status") == 0 and "verified: 6 of 6 files" in capsys.readouterr().out


def test_fetch_from_a_folder_that_is_no_release_exits_2(data, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert command("fetch", "--from", str(tmp_path / "empty")) == 2
    assert "holds neither results/ nor data/" in capsys.readouterr().err
    assert not (data / "released" / "v1.0").exists() and not (data / "released" / "v1.0.receipt.json").exists()


def test_fetch_exits_1_when_a_file_fails_its_checksum(data, tmp_path, capsys):
    source = tree(tmp_path / "copy")
    (source / "SHA256SUMS").write_text(sums().replace(sha(FILES["README.md"]), sha("other")))
    assert command("fetch", "--from", str(source), "--revision", "v2.0", "--dir", str(tmp_path / "here")) == 1
    assert "sha256 mismatch: 1" in capsys.readouterr().out
    assert command("status", "--dir", str(tmp_path / "here")) == 0


def test_status_without_a_receipt(data, capsys):
    assert command("status") == 2 and "no receipt" in capsys.readouterr().err


def test_every_option_has_help():
    parser = argparse.ArgumentParser()
    cli.configure(parser)
    actions = [a for sub in parser._subparsers._group_actions for p in sub.choices.values() for a in p._actions]
    assert actions and all(a.help for a in actions), [a.dest for a in actions if not a.help]
