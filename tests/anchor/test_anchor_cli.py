import json
import shutil
from pathlib import Path

import pytest

from contextecho.__main__ import main

FIXTURE = Path(__file__).parents[1] / "fixtures" / "anchor_bank" / "ca_forge_tidyfeed__updated"


def score(tmp_path, *args: str) -> int:
    return main(["anchor-score", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), *args])


def outputs(tmp_path, bank_id: str = FIXTURE.name) -> dict:
    folder = tmp_path / "out" / bank_id
    return {p.name: (p.read_text() if p.suffix == ".jsonl" else json.loads(p.read_text()))
            for p in folder.iterdir()}


def test_scores_a_bank_end_to_end(tmp_path, capsys):
    assert score(tmp_path, "--bank", str(FIXTURE), "--model", "fake/echo") == 0
    files = outputs(tmp_path)
    assert set(files) == {"per_item.jsonl", "summary.json", "run_manifest.json"}
    assert files["summary.json"]["n_items"] == 7 and len(files["per_item.jsonl"].splitlines()) == 7
    assert files["run_manifest.json"]["status"] == "complete"
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{FIXTURE.name}: accuracy ") and "model fake/echo, condition causal" in line


def test_options_reach_the_run(tmp_path):
    assert score(tmp_path, "--bank", str(FIXTURE), "--model", "fake/echo", "--condition", "none",
                 "--limit", "100", "--temperature", "0.5", "--max-tokens", "8") == 0
    manifest = outputs(tmp_path)["run_manifest.json"]
    assert manifest["context_policy"]["condition"] == "none" and manifest["context_policy"]["limit_chars"] == 100
    assert manifest["parameters"]["params"] == {"temperature": 0.5, "max_tokens": 8}
    assert score(tmp_path, "--bank", str(FIXTURE), "--model", "fake/echo", "--limit", "0") == 0
    assert outputs(tmp_path)["run_manifest.json"]["context_policy"]["limit_chars"] is None


def test_a_release_root_scores_every_bank(tmp_path, capsys):
    for name in ("alpha", "beta"):
        shutil.copytree(FIXTURE, tmp_path / "release" / "data" / "examples" / name)
    assert score(tmp_path, "--bank", str(tmp_path / "release"), "--model", "fake/echo") == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["alpha", "beta"]
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


def test_provider_errors_exit_nonzero_unless_allowed(tmp_path, capsys):
    assert score(tmp_path, "--bank", str(FIXTURE), "--model", "fake/auth") == 1
    files = outputs(tmp_path)
    assert files["run_manifest.json"]["status"] == "failed" and "summary.json" not in files
    assert "FAILED, 7 of 7 calls failed (AuthenticationError 7)" in capsys.readouterr().out
    assert score(tmp_path, "--bank", str(FIXTURE), "--model", "fake/auth", "--allow-errors") == 0
    summary = outputs(tmp_path)["summary.json"]
    assert (summary["n_errors"], summary["n_scored"], summary["accuracy"]) == (7, 0, None)
    assert "accuracy n/a (0/0; unparsed 0, errors 7" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--model", "fake/echo"], "items.jsonl:1: not JSON"),
    (["--model", "nonsense-model-xyz"], "LiteLLM cannot route model 'nonsense-model-xyz'"),
])
def test_bad_input_exits_2_with_a_clear_message(tmp_path, capsys, args, message):
    bank = Path(shutil.copytree(FIXTURE, tmp_path / "bank"))
    if "fake/echo" in args:
        (bank / "items.jsonl").write_text("{oops\n")
    assert score(tmp_path, "--bank", str(bank), *args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_two_banks_with_one_id_are_refused(tmp_path, capsys):
    assert score(tmp_path, "--bank", str(FIXTURE), "--bank", str(FIXTURE), "--model", "fake/echo") == 2
    assert "share an id" in capsys.readouterr().err


def test_bad_arguments_are_refused_by_the_parser(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        score(tmp_path, "--bank", str(FIXTURE), "--model", "fake/echo", "--limit", "-5")
    assert exit_.value.code == 2 and "must be at least 0" in capsys.readouterr().err
