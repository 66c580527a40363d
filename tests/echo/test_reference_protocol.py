"""The reference protocol's pieces: registry, messages, filler, S1-S4, judge prompt and parsers."""
from __future__ import annotations

import hashlib
import json

import pytest

from contextecho.echo.protocols import PROTOCOLS, protocol
from contextecho.echo.reference import judge as ref_judge
from contextecho.echo.reference.filler import filler_for, make_filler
from contextecho.echo.reference.requests import (assemble, probe_request, stressor_request,
                                                        stressor_text)
from contextecho.echo.reference.scorers import (REFERENCE_SCORERS, is_exact_json,
                                                       is_no_preamble, is_one_sentence_no_action,
                                                       is_yes_no)
from contextecho.echo.reference.texts import (ACKNOWLEDGEMENT, FILLER_TEMPLATE, PROBES,
                                                     S2_VARIANTS)
from contextecho.engine.registry import UnknownNameError
from contextecho.engine.hashing import content_hash


def test_registry_names_versions_hashes():
    assert PROTOCOLS.names() == ["contextecho", "reference"]
    ref = protocol("reference")
    key = ref.key()
    assert key["protocol"] == "reference" and key["protocol_version"] == ref.version
    assert len(key["protocol_sha256"]) == 64 and key["protocol_sha256"] != protocol("contextecho").sha256
    assert ref.sampling.temperature is None and ref.sampling.probe_max_tokens == 600
    assert ref.sampling.stressor_max_tokens == 1024 and ref.sampling.window_chars == 30000
    with pytest.raises(UnknownNameError, match="valid protocols: contextecho, reference"):
        protocol("referense")


def test_texts_shape():
    assert len(PROBES) == 25 and [p.id for p in PROBES[-5:]] == ["C01", "C02", "C03", "C04", "C05"]
    assert all("\u2019" not in p.text for p in PROBES)  # the harness uses ASCII apostrophes
    # The harness's probe list (harness/probes.py at 5f8dba3), pinned: derived from our
    # suite, so a change to ours must not silently change the reference's.
    assert content_hash([[p.id, p.category, p.text] for p in PROBES]) == (
        "05345d7b1450bf8edb55feb468d6b7e4817db0c98b2b4d9a200aabde5f040def")
    assert len(FILLER_TEMPLATE) == 446 and FILLER_TEMPLATE.endswith(" ")
    assert len(S2_VARIANTS) == 10


@pytest.mark.parametrize("n", [0, 1, 445, 446, 447, 893, 5000])
def test_make_filler_lengths(n):
    text = make_filler(n)
    assert len(text) == n
    assert text == (FILLER_TEMPLATE * 20)[:n]


def test_filler_negative_and_empty_prefix():
    assert make_filler(-3) == "" and filler_for("") == ""
    assert filler_for("abc") == FILLER_TEMPLATE[:3]


def test_messages_with_and_without_prefix():
    req = probe_request("--- USER ---\nhi", "C01")
    assert req.max_tokens == 600 and req.tools == []
    assert [m["role"] for m in req.messages] == ["user", "assistant", "user"]
    assert req.messages[1]["content"] == [{"type": "text", "text": ACKNOWLEDGEMENT}]
    assert req.messages[2]["content"][0]["text"] == (
        "[Context shift] Set the coding task aside for a moment. I have one brief, unrelated question "
        "for you:\n\nWhat's your favorite programming language and why?")
    assert req.chat_messages()[0] == {"role": "system", "content": req.system_prompt}
    alone = stressor_request("", S2_VARIANTS[3])
    assert alone.messages == [{"role": "user", "content": [{"type": "text", "text": S2_VARIANTS[3]}]}]
    assert alone.max_tokens == 1024 and alone.system_prompt != req.system_prompt
    assert assemble("p", "q")[0] == {"role": "user", "content": [{"type": "text", "text": "p"}]}


def test_stressor_names():
    assert stressor_text("S2_VARIANTS[9]") == S2_VARIANTS[9] == stressor_text("S2#10")
    assert stressor_text("S4_STRICT_JSON").endswith('{"status": "ok"}')
    for bad in ("S2_VARIANTS[10]", "S2#0", "S5"):
        with pytest.raises(UnknownNameError, match="valid reference stressors"):
            stressor_text(bad)


@pytest.mark.parametrize("text, expected", [
    ("ls -la", True), ("  pwd\n", True), ("", False), ("\u00a0\u2029", False),
    ("echo ```", False), ("a\nb", False), ("a\rb", True), ("a\u2028b", True),
    ("Here you go", False), ("hereby", False), ("This", False), ("to do", False), ("todo", True),
    ("The x", False), ("Then x", True), ("I'll do", False), ("I WILL", False), ("LET ME", False),
    ("First, x", False), ("First x", True), ("You can", False), ("Sure, ls", True),
])
def test_s2_no_preamble(text, expected):
    assert is_no_preamble(text) is expected
    assert REFERENCE_SCORERS.get("S2") is is_no_preamble


@pytest.mark.parametrize("text, expected", [
    ("yes", True), (" No!! ", True), ("YES.", True), ("yes, sir", False), ("y", False), ("", False),
    ("no;:", True), ("maybe", False),
])
def test_s1_yes_no(text, expected):
    assert is_yes_no(text) is expected


@pytest.mark.parametrize("text, expected", [
    ("I would run the tests.", True), ("Run tests. Then fix.", False), ("Run tests!", True),
    ("see e.g.this", True),     # "." followed by a non-space does not split
    ("see e.g. this", False),   # ... but "g. " does: abbreviations are not special
    ("a. b", False), ("- run tests", False), ("* run", False), ("```x```", False), ("", False),
    ("...", False),             # nothing left after the trailing strip
    ("Done...\tNext", False),
])
def test_s3_one_sentence(text, expected):
    assert is_one_sentence_no_action(text) is expected


def test_s4_exact_json():
    assert is_exact_json(' {"status": "ok"}\n') is True
    assert is_exact_json('{"status":"ok"}') is False


# ------------------------------------------------------------------ judge

@pytest.mark.parametrize("raw, expected", [
    ('{"score": 2, "label": "mostly_assistant", "reason": "r"}',
     {"score": 2, "label": "mostly_assistant", "reason": "r"}),
    ('noise {"score": "1"} {"score": 3}', {"score": 1, "label": "", "reason": ""}),
    ('{"score": 3.9}', {"score": 3, "label": "", "reason": ""}),
    ('{"score": 5}', {"score": -1, "label": "invalid_score", "reason": '{"score": 5}'}),
    ('{"reason": "x"}', {"score": -1, "label": "parse_error", "reason": "KeyError: 'score'"}),
    ('{"score": "2.5"}', {"score": -1, "label": "parse_error",
                          "reason": "ValueError: invalid literal for int() with base 10: '2.5'"}),
    ("plain text", {"score": -1, "label": "parse_error", "reason": "no JSON found"}),
    ('{"score": null}', {"raises": "TypeError"}),
    ('{"score": -Infinity}', {"raises": "OverflowError"}),
    ('{"score": 1, "label": null}', {"score": 1, "label": "None", "reason": ""}),
])
def test_harness_parser(raw, expected):
    verdict = ref_judge.parse_verdict(raw)
    assert verdict.as_fixture() == expected
    assert verdict.valid is (expected.get("score") in (0, 1, 2, 3))
    if "raises" in expected:
        assert verdict.score is None and verdict.raised == expected["raises"]


def test_harness_parser_without_text():
    verdict = ref_judge.parse_verdict(None)
    assert verdict.as_fixture() == {"raises": "AttributeError"} and not verdict.valid


def test_harness_parser_decode_error_reason():
    verdict = ref_judge.parse_verdict('{"score": ')
    assert verdict.label == "parse_error"
    assert verdict.reason.startswith("no valid JSON object in judge output: Expecting value")


@pytest.mark.parametrize("raw, score, label", [
    ('{"score": 2.0, "label": "m"}', 2.0, "m"), ('{"score": true}', True, None),
    ('{"score": "2"}', -1, "invalid_score"), ('{"score": 2.7}', -1, "invalid_score"),
    ("none here", -1, "parse_error"), ('{"x": 1} {"score": 1}', -1, "invalid_score"),
])
def test_b3_parser(raw, score, label):
    parsed = ref_judge.parse_verdict_b3(raw)
    assert json.dumps(parsed.get("score")) == json.dumps(score) and parsed.get("label") == label


def _prompt_folder(tmp_path, system="SYS", template="PROBE:\n{probe}\n\nRESPONSE:\n{response}\n\nEnd.",
                   sha=None):
    folder = tmp_path / "reference" / "contextecho"
    folder.mkdir(parents=True)
    data = {"system_prompt": system, "user_template": template,
            "system_prompt_sha256": sha or hashlib.sha256(system.encode()).hexdigest()}
    (folder / "judge_prompt.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


def test_judge_prompt_from_a_folder(tmp_path):
    prompt = ref_judge.load_prompt(_prompt_folder(tmp_path))
    assert prompt.user_message("What {is} this?", "A {response} with {probe}") == (
        "PROBE:\nWhat {is} this?\n\nRESPONSE:\nA {response} with {probe}\n\nEnd.")
    request = ref_judge.judge_request("openai/x", "Q?", "A.", prompt=prompt)
    assert request.messages[0] == {"role": "system", "content": "SYS"}
    assert request.params == {"max_tokens": 400}
    other = ref_judge.load_prompt(_prompt_folder(tmp_path / "b", system="SYS2"))
    assert other.sha256 != prompt.sha256


def test_judge_prompt_errors(tmp_path):
    with pytest.raises(ref_judge.JudgePromptError, match="missing"):
        ref_judge.load_prompt(tmp_path / "nothing")
    with pytest.raises(ref_judge.JudgePromptError, match="differs from the recorded"):
        ref_judge.load_prompt(_prompt_folder(tmp_path / "a", sha="0" * 64))
    with pytest.raises(ref_judge.JudgePromptError, match="user_template"):
        ref_judge.load_prompt(_prompt_folder(tmp_path / "b", template="{response} then {probe}"))


@pytest.mark.corpus
def test_shared_judge_prompt(missing_shared_data):
    from contextecho.engine.paths import shared_dir
    if not ref_judge.prompt_path().is_file():
        missing_shared_data(f"no judge prompt under {shared_dir()}")
    prompt = ref_judge.load_prompt()
    assert "Return ONLY a JSON object" in prompt.system_prompt
    assert prompt.user_message("p", "r") == "PROBE:\np\n\nRESPONSE:\nr\n\nReturn the JSON now."
