"""``contextecho conformance DIR``: hand-written fixture folders, and the shared fixtures."""
from __future__ import annotations

import json
import shutil

import pytest

from contextecho.__main__ import main
from contextecho.conformance.driver import check
from contextecho.conformance.functions import FAMILIES
from contextecho.echo.reference.texts import ACKNOWLEDGEMENT, FILLER_TEMPLATE, S2_VARIANTS
from contextecho.engine.paths import shared_dir

SHARED_FIXTURES = shared_dir() / "reference" / "contextecho" / "fixtures"


def write_jsonl(path, cases):
    path.write_text("".join((c if isinstance(c, str) else json.dumps(c)) + "\n" for c in cases),
                    encoding="utf-8")


def hand_fixtures(folder, corpus):
    """A fixture folder whose expected values are written by hand from PROTOCOL.md."""
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / FAMILIES["filler"], [
        {"id": "f5", "inputs": {"target_chars": 5}, "output": "The f", "output_len": 5},
        {"id": "f447", "inputs": {"target_chars": 447}, "output_len": 447,
         "output": FILLER_TEMPLATE + "T"},
    ])
    write_jsonl(folder / FAMILIES["s2"], [
        {"id": "s-1", "input": "ls", "expected_is_no_preamble": True,
         "other_stressor_scorers": {"S1_is_yes_no": False, "S3_is_one_sentence_no_action": True,
                                    "S4_is_exact_json": False}},
        {"id": "s-2", "input": "Here: yes", "expected_is_no_preamble": False},
    ])
    write_jsonl(folder / FAMILIES["judge"], [
        {"id": "j-1", "input": 'x {"score": 2.0}',
         "expected_harness_judge__parse_judge": {"score": 2, "label": "", "reason": ""},
         "variant_e02_b3_parse_judge": {"score": 2.0, "label": None}},
        {"id": "j-2", "input": '{"score": []}', "expected_harness_judge__parse_judge": {"raises": "TypeError"}},
    ])
    session = corpus / "proj" / "s.jsonl"
    session.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(session, [
        {"type": "user", "message": {"content": "fix it"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "on it"}]}},
    ])
    prefix = "--- USER ---\nfix it\n\n--- ASSISTANT ---\non it"
    write_jsonl(folder / FAMILIES["prefix"], [
        {"id": "p-1", "experiment": "e15_probe_panel",
         "inputs": {"session": "proj/s.jsonl", "target_turn": 2, "max_chars": 30000},
         "outputs": {"prefix": prefix, "prefix_len": len(prefix), "max_tokens": 600,
                     "filler_arm_len": len(prefix)},
         "meta": {"resolved_end_line": 1, "session_total_turns": 2, "free_note": "ignored"}},
        {"id": "p-2", "experiment": "e08_cross_compaction_s2",
         "inputs": {"session": "proj/s.jsonl", "target_turn": 1, "max_chars": 9,
                    "stressor": "S2_VARIANTS[0]"},
         "outputs": {"max_tokens": 1024, "tools": [],
                     # the window keeps the last 9 characters of "--- USER ---\nfix it"
                     "messages": [
                         {"role": "user", "content": [{"type": "text", "text": "--\nfix it"}]},
                         {"role": "assistant", "content": [{"type": "text", "text": ACKNOWLEDGEMENT}]},
                         {"role": "user", "content": [{"type": "text", "text": S2_VARIANTS[0]}]}]}},
    ])
    return folder


def test_hand_fixtures_pass_and_missing_family_fails(tmp_path, capsys):
    folder = hand_fixtures(tmp_path / "fx", tmp_path / "corpus")
    results = {f.family: f for f in check(folder, tmp_path / "corpus")}
    for family in ("prefix", "filler", "s2", "judge"):
        assert results[family].ok, [(c.case_id, c.error, [d.describe() for d in c.checks])
                                    for c in results[family].cases if not c.passed]
    assert results["stats"].missing and not results["stats"].ok
    code = main(["conformance", str(folder), "--corpus", str(tmp_path / "corpus")])
    out = capsys.readouterr().out
    assert code == 1
    assert "stats   MISSING" in out and "filler  ok       2 passed, 0 failed" in out
    assert "missing families: stats" in out
    assert main(["conformance", str(folder), "--corpus", str(tmp_path / "corpus"),
                 "--family", "filler", "--family", "judge"]) == 0


def test_wrong_values_malformed_lines_and_unknown_fields_fail(tmp_path, capsys):
    folder = hand_fixtures(tmp_path / "fx", tmp_path / "corpus")
    cases = [json.loads(line) for line in (folder / FAMILIES["prefix"]).read_text().splitlines()]
    cases[0]["outputs"]["prefix"] = "--- USER ---\nfix it\n\n--- ASSISTANT ---\non it now"
    cases[0]["outputs"]["brand_new_field"] = 1
    write_jsonl(folder / FAMILIES["prefix"], [cases[0], "{broken json", {"id": "no-inputs"}])
    write_jsonl(folder / FAMILIES["filler"], [{"id": "f3", "inputs": {"target_chars": 3}, "output": "Tha"}])
    code = main(["conformance", str(folder), "--corpus", str(tmp_path / "corpus"), "--family", "prefix",
                 "--family", "filler"])
    out = capsys.readouterr().out
    assert code == 1
    assert "prefix  FAIL     0 passed, 3 failed" in out
    assert "--- expected" in out and "+++ actual" in out and "-on it now" in out and "+on it" in out
    assert "outputs.brand_new_field" in out
    assert f"{folder / FAMILIES['prefix']}:2: not valid JSON" in out
    assert f"{folder / FAMILIES['prefix']}:3: missing 'inputs'" in out
    assert "case.output:\n" in out and "-Tha\n" in out and "+The\n" in out


def test_missing_session_and_unknown_stressor_fail(tmp_path):
    folder = hand_fixtures(tmp_path / "fx", tmp_path / "corpus")
    write_jsonl(folder / FAMILIES["prefix"], [
        {"id": "a", "experiment": "e15_probe_panel", "inputs": {"session": "nope.jsonl", "target_turn": 1},
         "outputs": {"max_tokens": 600}},
        {"id": "b", "experiment": "e08_cross_compaction_s2",
         "inputs": {"session": "proj/s.jsonl", "target_turn": 1, "stressor": "S9"}, "outputs": {}},
        {"id": "c", "experiment": "e99_new", "inputs": {"session": "proj/s.jsonl", "target_turn": 1},
         "outputs": {}},
        {"id": "d", "experiment": "e15_probe_panel", "inputs": {"session": "proj/odd.jsonl", "target_turn": 1},
         "outputs": {}},
        {"id": "e", "experiment": "e15_probe_panel", "inputs": {"session": "proj/s.jsonl", "target_turn": 1},
         "outputs": {"max_tokens": 600}},
    ])
    # A session the harness itself would crash on (a text block whose text is null).
    write_jsonl(tmp_path / "corpus" / "proj" / "odd.jsonl",
                [{"type": "user", "message": {"content": [{"type": "text", "text": None}]}}])
    [prefix] = check(folder, tmp_path / "corpus", ["prefix"])
    errors = {c.case_id: c.error for c in prefix.cases}
    assert "session 'nope.jsonl' not found" in errors["a"]
    assert "unknown reference stressor 'S9'" in errors["b"]
    assert "unknown experiment 'e99_new'" in errors["c"]
    assert "AttributeError" in errors["d"] and "odd" not in str(errors["e"])
    assert [c.passed for c in prefix.cases] == [False, False, False, False, True]


def test_not_a_folder(tmp_path, capsys):
    assert main(["conformance", str(tmp_path / "absent")]) == 2
    assert "is not a folder" in capsys.readouterr().out


def _shared_fixtures(missing_shared_data):
    if not (SHARED_FIXTURES / FAMILIES["prefix"]).is_file():
        missing_shared_data(f"reference fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


@pytest.mark.corpus
def test_shared_fixtures_pass_every_case(corpus_dir, missing_shared_data, capsys):
    folder = _shared_fixtures(missing_shared_data)
    code = main(["conformance", str(folder), "--corpus", str(corpus_dir)])
    out = capsys.readouterr().out
    assert code == 0, out
    for family, n in (("prefix", 124), ("filler", 14), ("s2", 151), ("judge", 56)):
        assert f"{family:7s} ok       {n} passed, 0 failed" in out
    assert "stats   ok       18 passed, 0 failed" in out


@pytest.mark.corpus
def test_shared_prefix_fixture_detects_a_changed_rule(corpus_dir, missing_shared_data, tmp_path,
                                                      monkeypatch):
    """A one-character change to a rendering rule breaks the cases that depend on it."""
    folder = _shared_fixtures(missing_shared_data)
    copy = tmp_path / "fx"
    copy.mkdir()
    shutil.copy(folder / FAMILIES["prefix"], copy / FAMILIES["prefix"])
    from contextecho.echo.reference import transcript
    monkeypatch.setattr(transcript, "PAYLOAD_CHARS", 199)
    [prefix] = check(copy, corpus_dir, ["prefix"])
    assert prefix.n_failed > 0 and prefix.n_passed > 0
