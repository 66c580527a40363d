"""The two readings of the GPT-5 source transcript (e03 A1 and e07/e11 gpt5_3K), by hand."""
import json

from contextecho.echo.reference.gpt5_source import (
    extract_gpt5_recent3k, extract_gpt5_verbatim, flatten_a1_content, flatten_gpt5_arm_content,
    read_gpt5_transcript)

RECORDS = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the parser."},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "c0", "name": "bash", "input": {"cmd": "ls", "n": 2, "ok": True}}]},
    {"role": "tool_result", "content": [
        {"type": "tool_result", "tool_use_id": "c0",
         "content": [{"type": "text", "text": "a.py"}, {"type": "image"}, "raw"]}]},
    {"role": "assistant", "content": "   "},
    {"role": "assistant", "content": [{"type": "text", "text": ""}, {"type": "other"}]},
    {"role": "tool_result", "content": [{"type": "tool_result", "content": "x" * 400}]},
    {"role": "assistant", "content": [{"type": "tool_use", "name": "run", "input": "go"}, 7]},
    {"role": "note", "content": "dropped"},
    {"role": "user"},
]

A1 = ("[user]: Fix the parser.\n\n"
      "[assistant]: Looking. <tool_use bash(cmd='ls', n=2, ok=True)>\n\n"
      "[tool_result]: <tool_result: a.py {'type': 'image'} raw>\n\n"
      f"[tool_result]: <tool_result: {'x' * 400}>\n\n"
      "[assistant]: <tool_use run(go)>")

ARM = ("--- USER ---\nFix the parser.\n\n"
       "--- ASSISTANT ---\nLooking.\n[tool_use bash: cmd='ls', n=2, ok=True]\n\n"
       "--- TOOL_RESULT ---\n[tool_result: a.py]\n\n"
       f"--- TOOL_RESULT ---\n[tool_result: {'x' * 300}]\n\n"
       "--- ASSISTANT ---\n[tool_use run]")


def test_a1_reading_by_hand():
    assert extract_gpt5_verbatim(RECORDS, 10_000) == A1
    assert extract_gpt5_verbatim(RECORDS, 20) == A1[-20:]
    assert extract_gpt5_verbatim(RECORDS) == A1  # shorter than 28 000: all of it


def test_gpt5_arm_reading_by_hand():
    assert extract_gpt5_recent3k(RECORDS, 10_000) == ARM
    assert extract_gpt5_recent3k(RECORDS) == ARM[-3000:]


def test_flatteners_on_scalars_and_odd_results():
    for flatten in (flatten_a1_content, flatten_gpt5_arm_content):
        assert flatten("plain") == "plain"
        assert flatten(None) == "" and flatten(3) == ""
    assert flatten_a1_content([{"type": "tool_result", "content": None}]) == "<tool_result: None>"
    assert flatten_gpt5_arm_content([{"type": "tool_result", "content": None}]) == "[tool_result: None]"
    assert flatten_a1_content([{"type": "tool_use"}]) == "<tool_use ()>"
    assert flatten_gpt5_arm_content([{"type": "tool_use"}]) == "[tool_use : ]"


def test_read_transcript(tmp_path):
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    assert read_gpt5_transcript(path) == RECORDS
