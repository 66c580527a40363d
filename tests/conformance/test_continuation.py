"""The continuation (e07) fixture runner: the shared fixtures pass, and the runner can fail.

The shared fixtures are read at run time from ``shared/reference/contextecho/continuation``
(skipped, or failed under CI, when absent); the other cases are written by hand here.
"""
from __future__ import annotations

import hashlib
import json
import re

import pytest

from contextecho.conformance.case import FixtureError
from contextecho.conformance.continuation import CHECKERS, FAMILIES, ReferencedSessions, harness_lines
from contextecho.conformance.driver import CONTINUATION, check, kind_of
from contextecho.engine.paths import shared_dir

SHARED_CONTINUATION = shared_dir() / "reference" / "contextecho" / "continuation"
IMPLEMENTED = {"cutpoints": 21, "prefixes": 225, "prefix_edge_cases": 45, "gpt5_prefix": 42, "jaccard": 78,
               "requests": 378, "scoring": 137, "analysis": 12}


@pytest.fixture(scope="module")
def shared_folder(missing_shared_data):
    if not (SHARED_CONTINUATION / "cutpoints.jsonl").is_file():
        missing_shared_data(f"continuation fixtures not found at {SHARED_CONTINUATION}")
    return SHARED_CONTINUATION


@pytest.fixture(scope="module")
def shared_results(shared_folder):
    return {r.family: r for r in check(shared_folder, families=list(IMPLEMENTED), kind=CONTINUATION)}


@pytest.mark.corpus
@pytest.mark.parametrize("family, n_cases", IMPLEMENTED.items())
def test_every_shared_case_passes(shared_results, family, n_cases):
    result = shared_results[family]
    failed = [(c.case_id, c.error, [d.describe() for d in c.checks[:3]]) for c in result.cases if not c.passed]
    assert not failed, failed[:5]
    assert not result.missing and result.ok and len(result.cases) == n_cases


def write_jsonl(path, cases):
    path.write_text("".join((c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)) + "\n" for c in cases),
                    encoding="utf-8")


def shared_cases(folder, family):
    return [json.loads(line) for line in (folder / FAMILIES[family]).read_text(encoding="utf-8")
            .split("\n") if line.strip()]


def failures(results, family):
    result = next(r for r in results if r.family == family)
    return {c.case_id: c for c in result.cases if not c.passed}


@pytest.mark.corpus
def test_tampered_expected_values_fail(shared_folder, tmp_path):
    jaccard = shared_cases(shared_folder, "jaccard")[:3]
    jaccard[1]["expected"]["value"] = 0.5
    cutpoints = shared_cases(shared_folder, "cutpoints")[:1]
    cutpoints[0]["expected"]["CUTPOINTS_json"]["cutpoints"][3]["preceding_user_msg_idx"] += 1
    prefixes = shared_cases(shared_folder, "prefixes")
    digested = next(c for c in prefixes if isinstance(c["expected"]["recent3K"], dict))
    digested["expected"]["recent3K"]["head"] = "X" + digested["expected"]["recent3K"]["head"][1:]
    full = next(c for c in prefixes if isinstance(c["expected"]["recent3K"], str))
    full["expected"]["scratch_user_msg_sections"] = full["expected"]["scratch_user_msg_sections"][:1]
    full["expected"]["gpt5_3K"]["sha256"] = "0" * 64
    edges = shared_cases(shared_folder, "prefix_edge_cases")[:1]
    edges[0]["expected"]["recent3K_len"] += 1
    gpt5 = [c for c in shared_cases(shared_folder, "gpt5_prefix") if c["kind"] == "_flatten_content"][:1]
    gpt5[0]["expected"]["output"] += "!"
    write_jsonl(tmp_path / "jaccard.jsonl", jaccard)
    write_jsonl(tmp_path / "cutpoints.jsonl", cutpoints)
    write_jsonl(tmp_path / "prefixes.jsonl", [digested, full])
    write_jsonl(tmp_path / "prefix_edge_cases.jsonl", edges)
    write_jsonl(tmp_path / "gpt5_prefix.jsonl", gpt5)

    results = check(tmp_path, families=list(IMPLEMENTED), kind=CONTINUATION)
    assert set(failures(results, "jaccard")) == {jaccard[1]["id"]}
    assert [d.field for d in failures(results, "jaccard")[jaccard[1]["id"]].checks] == ["expected.value"]
    assert [d.field for d in failures(results, "cutpoints")[cutpoints[0]["id"]].checks] == [
        "expected.CUTPOINTS_json.cutpoints[3].preceding_user_msg_idx"]
    prefix_failures = failures(results, "prefixes")
    assert [d.field for d in prefix_failures[digested["id"]].checks] == ["expected.recent3K.head"]
    assert sorted(d.field for d in prefix_failures[full["id"]].checks) == [
        "expected.gpt5_3K.sha256", "expected.scratch_user_msg_sections"]
    assert [d.field for d in failures(results, "prefix_edge_cases")[edges[0]["id"]].checks] == [
        "expected.recent3K_len"]
    assert [d.field for d in failures(results, "gpt5_prefix")[gpt5[0]["id"]].checks] == ["expected.output"]


@pytest.mark.corpus
def test_tampered_requests_scores_and_analyses_fail(shared_folder, tmp_path):
    requests = shared_cases(shared_folder, "requests")
    anthropic = next(c for c in requests if c["expected"]["sdk_call"].startswith("anthropic"))
    anthropic["expected"]["kwargs"]["max_tokens"] = 4095
    mistral = next(c for c in requests if c["inputs"]["target_dir"].startswith("mistral")
                   and isinstance(c["expected"]["kwargs"]["tools"], list))
    mistral["expected"]["kwargs"]["tool_choice"] = "required"
    mistral["expected"]["kwargs"]["tools"][2]["function"]["name"] = "Editor"
    scoring = shared_cases(shared_folder, "scoring")[:2]
    scoring[0]["expected"]["anthropic"]["M2"] = 0.5
    scoring[1]["expected"]["openai_compat"]["runner_metrics"]["run_arm_filler3K"]["metrics"]["filler3K_tool"] = "Read"
    analysis = shared_cases(shared_folder, "analysis")[2:3]
    analysis[0]["expected"]["contrasts"]["recent3K-gpt5_3K"]["itt_zero_fill"]["p_sign_flip_20000_seed42"] = 0.5
    write_jsonl(tmp_path / "requests.jsonl", [anthropic, mistral])
    write_jsonl(tmp_path / "scoring.jsonl", scoring)
    write_jsonl(tmp_path / "analysis.jsonl", analysis)
    results = check(tmp_path, families=["requests", "scoring", "analysis"], kind=CONTINUATION)
    assert [d.field for d in failures(results, "requests")[anthropic["id"]].checks] == ["expected.kwargs.max_tokens"]
    assert sorted(d.field for d in failures(results, "requests")[mistral["id"]].checks) == [
        "expected.kwargs.tool_choice", "expected.kwargs.tools[2].function.name"]
    assert [d.field for d in failures(results, "scoring")[scoring[0]["id"]].checks] == ["expected.anthropic.M2"]
    assert [d.field for d in failures(results, "scoring")[scoring[1]["id"]].checks] == [
        "expected.openai_compat.runner_metrics.run_arm_filler3K.metrics.filler3K_tool"]
    assert [d.field for d in failures(results, "analysis")[analysis[0]["id"]].checks] == [
        "expected.contrasts.recent3K-gpt5_3K.itt_zero_fill.p_sign_flip_20000_seed42"]


@pytest.mark.corpus
def test_an_expected_field_without_a_rule_fails(shared_folder, tmp_path):
    case = shared_cases(shared_folder, "jaccard")[0]
    case["expected"]["something_new"] = 1
    prefix = shared_cases(shared_folder, "prefixes")[0]
    prefix["expected"]["filler3K_xtarget"]["rule"] = "make_filler(2999)"
    write_jsonl(tmp_path / "jaccard.jsonl", [case])
    write_jsonl(tmp_path / "prefixes.jsonl", [prefix])
    results = check(tmp_path, families=["jaccard", "prefixes"], kind=CONTINUATION)
    [difference] = failures(results, "jaccard")[case["id"]].checks
    assert difference.field == "expected.something_new" and "no rule" in str(difference.actual)
    [difference] = failures(results, "prefixes")[prefix["id"]].checks
    assert difference.field == "expected.filler3K_xtarget.rule"


def test_missing_families_and_placeholders(tmp_path):
    write_jsonl(tmp_path / "jaccard.jsonl", [
        {"id": "j", "inputs": {"a": {"k": "v"}, "b": {"k": "v", "l": [1]}},
         "expected": {"value": 0.5, "tokens_a": ["k=v"], "tokens_b": ["k=v", "l[0]=1"], "symmetric": True}},
        {"id": "raise", "inputs": {"a": [1], "b": {}},
         "expected": {"raises": "AttributeError", "message": "'list' object has no attribute 'items'"}},
        {"id": "repr", "inputs": {"py_repr_a": "{'a': inf, 't': ('x', 1)}", "b": {"a": "inf"}},
         "expected": {"value": 0.5, "tokens_a": ["a=inf", "t=('x', 1)"]}},
        "{broken",
    ])
    write_jsonl(tmp_path / "scoring.jsonl", [{"id": "s", "inputs": {}, "expected": {}}])
    results = {r.family: r for r in check(tmp_path, kind=CONTINUATION)}
    assert list(results) == list(FAMILIES)
    assert results["cutpoints"].missing and not results["cutpoints"].ok and not results["cutpoints"].cases
    assert not results["jaccard"].missing
    assert [c.passed for c in results["jaccard"].cases] == [True, True, True, False]
    assert "jaccard.jsonl:4" in results["jaccard"].cases[3].error
    [empty] = results["scoring"].cases
    assert "expected names no path" in empty.error and not empty.passed
    assert set(CHECKERS) == set(FAMILIES)
    assert kind_of(tmp_path) != CONTINUATION
    with pytest.raises(ValueError, match="unknown continuation families"):
        check(tmp_path, families=["nope"], kind=CONTINUATION)


def user(content):
    return {"type": "user", "message": {"role": "user", "content": content}}


def call(name, args):
    return {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": name, "input": args}]}}


def test_sessions_from_an_explicit_corpus(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "p").mkdir(parents=True)
    lines = [json.dumps(user("go")), "{not json", json.dumps(call("Read", {"file_path": "/a"})),
             json.dumps(user([{"type": "tool_result", "content": "x"}])), json.dumps(call("Bash", {"command": "ls"})),
             json.dumps(call("Grep", {"pattern": "p"}))]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    (corpus / "p" / "s.jsonl").write_bytes(data)
    ref = {"corpus": "elsewhere", "file": "p/s.jsonl", "path_from_steering_root": "nowhere/p/s.jsonl",
           "format": "claude_code", "sha256": hashlib.sha256(data).hexdigest()}
    folder = tmp_path / "fixtures"
    folder.mkdir()
    write_jsonl(folder / "cutpoints.jsonl", [
        {"id": "hand", "inputs": {"session": ref, "params": {"N_CUTPOINTS": 2, "SKIP_INITIAL": 1}},
         "expected": {"CUTPOINTS_json": {
             "n_cutpoints": 2, "n_total_candidates": 3, "skip_initial": 1, "stride": 1,
             "cutpoints": [{"cut_index": 4, "ground_truth_tool": "Bash", "ground_truth_args": {"command": "ls"},
                            "preceding_user_msg_idx": 3},
                           {"cut_index": 5, "ground_truth_tool": "Grep", "ground_truth_args": {"pattern": "p"},
                            "preceding_user_msg_idx": 3}]}},
         "candidates": {"how": "text", "n": 3, "rows_cut_index_tool_preceding_user_msg_idx": [
             [2, "Read", 0], [4, "Bash", 3], [5, "Grep", 3]]}},
        {"id": "too-few", "inputs": {"session": ref, "params": {"N_CUTPOINTS": 3, "SKIP_INITIAL": 1}},
         "expected": {"raises": "SystemExit", "message": "Only 2 eligible candidates after skipping first 1; need 3"}},
        {"id": "wrong-sha", "inputs": {"session": {**ref, "sha256": "0" * 64}}, "expected": {}},
    ])
    assert kind_of(folder) == CONTINUATION
    [result] = check(folder, corpus=corpus, families=["cutpoints"])
    assert [c.passed for c in result.cases] == [True, True, False]
    error = result.cases[2].error
    assert "cutpoints.jsonl:3" in error and "sha256 mismatch" in error and "missing" in error
    # without the corpus folder the session is not found anywhere
    [result] = check(folder, families=["cutpoints"])
    assert not any(c.passed for c in result.cases) and "p/s.jsonl" in result.cases[0].error

    sessions = ReferencedSessions(corpus)
    assert sessions.path(ref, folder / "cutpoints.jsonl", 1) == corpus / "p" / "s.jsonl"
    assert sessions.rows(ref, folder, 1)[1] is None and len(sessions.lines(ref, folder, 1)) == 6
    with pytest.raises(FixtureError, match="needs 'file' and 'sha256'"):
        sessions.path({"file": "p/s.jsonl"}, folder, 7)


@pytest.mark.corpus
def test_the_conformance_command_reads_a_continuation_folder(shared_folder, tmp_path, capsys):
    from contextecho.__main__ import main

    for family in FAMILIES:
        cases = shared_cases(shared_folder, family)[:2]
        write_jsonl(tmp_path / FAMILIES[family], cases)
    assert main(["conformance", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tool-call continuation" in out and "PASS: 16/16 cases passed" in out
    jaccard = shared_cases(shared_folder, "jaccard")[:1]
    jaccard[0]["expected"]["value"] = 0.25
    write_jsonl(tmp_path / "jaccard.jsonl", jaccard)
    (tmp_path / "analysis.jsonl").unlink()
    assert main(["conformance", str(tmp_path), "--family", "jaccard", "--family", "analysis"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^jaccard +FAIL", out, re.M) and re.search(r"^analysis +MISSING", out, re.M)
    assert main(["conformance", str(tmp_path), "--family", "judge"]) == 2


# ---------------------------------------------------------------- transcripts read as the harness reads them
def harness_reading(path):
    """What ``extract_gpt5_recent3K`` (``run_gpt5_arm.py:78-90``) raises first reading ``path``, as
    the harness runs it (``GPT5_TRANSCRIPT.open()`` under a UTF-8 locale, ``json.loads`` on each
    line, ``.get("role")`` on what it decodes): ``{"raises", "message"}``, else None."""
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                d.get("role")
    except Exception as exc:
        return {"raises": type(exc).__name__, "message": str(exc)}
    return None


def first_raise(lines):
    try:
        for line in lines:
            json.loads(line).get("role")
    except Exception as exc:
        return {"raises": type(exc).__name__, "message": str(exc)}
    return None


#: Transcripts with a malformed line, as a case's ``raw_lines`` stores them (the lines of the file
#: the harness read, each written with a newline).
PLANTED_LINES = {
    "truncated": ['{"role": "user", "content": "ok"}', '{"role": "assistant", "content": "cut'],
    "u2028_in_a_string": ['{"role": "user", "content": "a\u2028b"}', '{"role": "user", "content": 1,'],
    "u2028_then_cut": ['{"role": "user", "content": "a\u2028b'],
    "u0085_in_a_string": ['{"role": "user", "content": "a\x85b"}', '{"role": 1'],
    "crlf": ['{"role": "user", "content": "ok"}\r', '{"role": "user", "content": 1,'],
    "cr_inside": ['{"role": "user",\r"content": "x"}'],
    "form_feed_in_a_string": ['{"role": "user", "content": "a\x0cb"}'],
    "form_feed_between": ['{"role": "user",\x0c"content": "x"}'],
    "bom": ['\ufeff{"role": "user", "content": "ok"}'],
    "leading_spaces": ['   {"role": "user", "content": "x"'],
    "not_an_object": ['{"role": "user", "content": "ok"}', '[1, 2]'],
}


def test_raw_transcript_lines_raise_the_harness_message(tmp_path):
    cases, naive, split = [], 0, 0
    for name, raw in PLANTED_LINES.items():
        file = tmp_path / f"{name}.jsonl"
        file.write_bytes("".join(line + "\n" for line in raw).encode("utf-8"))
        expected = harness_reading(file)
        assert expected is not None, name
        cases.append({"id": name, "kind": "verbatim_on_harness_shape_transcript", "inputs": {"raw_lines": raw},
                      "expected": expected})
        naive += first_raise(raw) != expected  # each stored line decoded as it is
        split += first_raise("".join(line + "\n" for line in raw).splitlines()) != expected
    assert naive and split  # those readings would fail some of these cases
    write_jsonl(tmp_path / "gpt5_prefix.jsonl", cases)
    [result] = check(tmp_path, families=["gpt5_prefix"], kind=CONTINUATION)
    assert [(c.case_id, c.passed) for c in result.cases] == [(name, True) for name in PLANTED_LINES], [
        (c.case_id, c.error, [d.describe() for d in c.checks]) for c in result.cases if not c.passed]


#: Transcript files with a malformed line, as a raw Codex CLI source would hold them.
PLANTED_FILES = {
    "crlf_then_cut": b'{"type": "session_meta"}\r\n{"type": "response_item",\r\n',
    "no_final_newline": b'{"type": "session_meta"}\n{"type": "response_item", "payload": {"x": "cut',
    "u2028": '{"type": "session_meta", "x": "a\u2028b"}\n{bad\n'.encode("utf-8"),
    "bom": '\ufeff{"type": "session_meta"}\n'.encode("utf-8"),
    "form_feed": b'{"type": "session_meta"}\x0c\n{"type": 1,',
    "cr_only": b'{"type": "session_meta"}\r{"type": [1,\r',
    "leading_spaces": b'  {"type": "session_meta"}\n  {"type"',
}


def test_raw_transcript_files_are_read_as_the_harness_reads_them(tmp_path):
    corpus, folder = tmp_path / "corpus", tmp_path / "fixtures"
    corpus.mkdir()
    folder.mkdir()
    cases = []
    for name, data in PLANTED_FILES.items():
        file = corpus / f"{name}.jsonl"
        file.write_bytes(data)
        with file.open(encoding="utf-8") as f:
            lines = list(f)
        assert harness_lines(data) == lines, name
        expected = harness_reading(file)
        assert expected is not None, name
        ref = {"corpus": "elsewhere", "file": file.name, "format": "codex_cli",
               "sha256": hashlib.sha256(data).hexdigest()}
        cases.append({"id": name, "kind": "verbatim_on_raw_codex_cli_file",
                      "inputs": {"session": ref, "file_lines": len(lines)}, "expected": expected})
    write_jsonl(folder / "gpt5_prefix.jsonl", cases)
    [result] = check(folder, corpus=corpus, families=["gpt5_prefix"], kind=CONTINUATION)
    assert [(c.case_id, c.passed) for c in result.cases] == [(name, True) for name in PLANTED_FILES], [
        (c.case_id, c.error, [d.describe() for d in c.checks]) for c in result.cases if not c.passed]
