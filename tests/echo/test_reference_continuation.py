"""The e07 continuation rules: cut points, recent3K, the scratch turn, gpt5_3K, scoring.

Expected values are written by hand from the rules in
``shared/reference/contextecho/continuation/README.md``; the instrument constants are
compared with that folder's ``constants.json`` (read at run time, never copied).
"""
from __future__ import annotations

import hashlib
import json

import pytest

from contextecho.echo.reference.continuation import (
    N_CUTPOINTS, SCRATCH_CUE, SELECTION_METHOD, SKIP_INITIAL, SYSTEM_PROMPT, TARGET_CHARS, TOOLS, Cutpoint,
    CutpointSelection, TooFewCutpoints, argument_tokens, candidates, codex_records, context_sections,
    flatten_content, gpt5_prefix, immediate_context, jaccard_args, openai_tools, parse_arguments, recent_prefix,
    score_call, select_cutpoints)
from contextecho.echo.reference.filler import make_filler
from contextecho.echo.reference.texts import ACKNOWLEDGEMENT, FILLER_TEMPLATE
from contextecho.echo.reference.transcript import read_rows
from contextecho.engine.paths import shared_dir

CONTINUATION = shared_dir() / "reference" / "contextecho" / "continuation"


def user(content):
    return {"type": "user", "message": {"role": "user", "content": content}}


def assistant(content):
    return {"type": "assistant", "message": {"role": "assistant", "content": content}}


def tool_use(name, args=None, **extra):
    block = {"type": "tool_use", "id": "t", "name": name, **extra}
    if args is not None:
        block["input"] = args
    return block


def result(content):
    return user([{"type": "tool_result", "tool_use_id": "t", "content": content}])


def text(t):
    return {"type": "text", "text": t}


# ---------------------------------------------------------------- constants

@pytest.fixture(scope="module")
def constants(missing_shared_data):
    path = CONTINUATION / "constants.json"
    if not path.is_file():
        missing_shared_data(f"continuation constants not found at {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def test_instrument_constants_equal_the_harness(constants):
    assert SYSTEM_PROMPT == constants["SYSTEM_PROMPT"]
    assert TOOLS == constants["TOOLS"]
    canonical = json.dumps(TOOLS, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode("utf-8")).hexdigest() == constants["TOOLS_canonical_sha256"]
    assert openai_tools(TOOLS) == constants["openai_tools_as_sent"]
    assert (N_CUTPOINTS, SKIP_INITIAL) == (constants["N_CUTPOINTS"], constants["SKIP_INITIAL"])
    for key in ("gpt5_TARGET_CHARS", "xtarget_TARGET_CHARS", "extract_recent3K_default_target_chars"):
        assert TARGET_CHARS == constants[key]
    # the e07 acknowledgement and filler are the ones the probe runners use
    assert ACKNOWLEDGEMENT == constants["ACK_MESSAGE"]
    assert FILLER_TEMPLATE == constants["FILLER_TEMPLATE"]
    assert len(FILLER_TEMPLATE) == constants["FILLER_TEMPLATE_len"]


def test_selection_method_is_the_written_one(missing_shared_data):
    path = CONTINUATION / "cutpoints.jsonl"
    if not path.is_file():
        missing_shared_data(f"no cutpoints fixtures at {path}")
    written = {json.loads(line)["expected"].get("CUTPOINTS_json", {}).get("selection_method")
               for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    assert written - {None} == {SELECTION_METHOD}


def test_openai_tools_by_hand():
    tool = {"name": "X", "description": "d", "input_schema": {"type": "object", "properties": {}}}
    assert openai_tools([tool]) == [{"type": "function", "function": {
        "name": "X", "description": "d", "parameters": {"type": "object", "properties": {}}}}]
    assert [t["function"]["name"] for t in openai_tools(TOOLS)] == [
        "Bash", "Read", "Edit", "Write", "WebFetch", "TaskUpdate", "Grep", "Glob"]


# ---------------------------------------------------------------- cut points

def session_rows(tmp_path, lines) -> list:
    path = tmp_path / "s.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return read_rows(path)


def test_candidates_rules_and_line_numbers(tmp_path):
    rows = session_rows(tmp_path, [
        assistant([tool_use("Bash", {"command": "early"})]),   # 0 no user before: not a candidate
        "{not json",                                            # 1 bad line, still a line
        user("go"),                                             # 2 user
        assistant([text("thinking aloud")]),                    # 3 no tool_use
        assistant([tool_use("Read", {"file_path": "/a"})]),     # 4 candidate, last user 2
        result("ok"),                                           # 5 a tool result is a user record
        assistant([tool_use("Bash", {"command": "a"}), tool_use("Bash", {"command": "b"})]),  # 6 two calls
        assistant([tool_use("", {"x": 1})]),                    # 7 empty name
        assistant([text("t"), tool_use("Grep")]),               # 8 candidate, no input -> None
        {"type": "system"},                                     # 9
        assistant("plain string content"),                      # 10 no blocks
        assistant([tool_use("Edit", {"k": "v"})]),              # 11 candidate, last user 5
    ])
    assert rows[1] is None
    assert candidates(rows) == [Cutpoint(4, "Read", {"file_path": "/a"}, 2),
                                Cutpoint(8, "Grep", None, 5),
                                Cutpoint(11, "Edit", {"k": "v"}, 5)]


def many(n_candidates: int) -> list:
    rows = [user("start")]
    for i in range(n_candidates):
        rows += [assistant([tool_use("Bash", {"command": f"c{i}"})]), result(f"r{i}")]
    return rows  # candidate i sits at line 2*i + 1, after the user record at line 2*i


def test_stride_selection_by_hand():
    rows = many(13)
    selection = select_cutpoints(rows, n=3, skip=2)        # eligible = candidates 2..12 (11), stride 3
    assert (selection.n_total_candidates, selection.skip_initial, selection.stride) == (13, 2, 3)
    assert [c.cut_index for c in selection.cutpoints] == [5, 11, 17]  # candidates 2, 5, 8
    assert selection.as_json() == {
        "n_cutpoints": 3, "n_total_candidates": 13, "skip_initial": 2, "stride": 3,
        "selection_method": SELECTION_METHOD,
        "cutpoints": [
            {"cut_index": 5, "ground_truth_tool": "Bash", "ground_truth_args": {"command": "c2"},
             "preceding_user_msg_idx": 4},
            {"cut_index": 11, "ground_truth_tool": "Bash", "ground_truth_args": {"command": "c5"},
             "preceding_user_msg_idx": 10},
            {"cut_index": 17, "ground_truth_tool": "Bash", "ground_truth_args": {"command": "c8"},
             "preceding_user_msg_idx": 16}]}
    assert isinstance(selection, CutpointSelection)


def test_exactly_enough_gives_stride_one():
    selection = select_cutpoints(many(5), n=5, skip=0)
    assert selection.stride == 1 and [c.cut_index for c in selection.cutpoints] == [1, 3, 5, 7, 9]


def test_too_few_cutpoints_message():
    with pytest.raises(TooFewCutpoints) as caught:
        select_cutpoints(many(4), n=3, skip=2)
    assert str(caught.value) == "Only 2 eligible candidates after skipping first 2; need 3"
    assert isinstance(caught.value, ValueError)
    with pytest.raises(TooFewCutpoints, match=r"^Only 0 eligible candidates after skipping first 100; need 25$"):
        select_cutpoints(many(30))
    with pytest.raises(ValueError, match="n >= 1"):
        select_cutpoints(many(3), n=0)


# ---------------------------------------------------------------- recent3K

def test_recent_prefix_cut_at_zero_and_one():
    rows = [user("hello"), assistant([tool_use("Read", {"file_path": "/x"})])]
    assert recent_prefix(rows, 0) == ""
    assert recent_prefix(rows, 1) == "--- USER ---\nhello"


def test_recent_prefix_rendering():
    rows = [
        user("fix it"),
        None,                                                   # bad line
        {"type": "progress", "message": {"content": "skipped"}},
        assistant([text("looking"), {"type": "thinking", "thinking": "hidden"},
                   tool_use("Bash", {"command": "ls é"})]),
        result([{"type": "text", "text": "a"}, "junk", {"type": "image"}, {"type": "text", "text": "b"}]),
        user([text("   ")]),                                    # blank rendering: dropped
        assistant([tool_use("Grep")]),                          # the cut
    ]
    assert recent_prefix(rows, 6) == (
        "--- USER ---\nfix it\n\n"
        "--- ASSISTANT ---\nlooking\n[tool_use Bash: {\"command\": \"ls \\u00e9\"}]\n\n"
        "--- USER ---\n[tool_result: ab]")


def test_recent_prefix_payload_cut_and_tail_window():
    long_input = {"command": "x" * 300}
    rendered = "[tool_use Bash: " + json.dumps(long_input)[:200] + "]"
    rows = [user("u" * 10), assistant([tool_use("Bash", long_input)]), assistant([text("end")])]
    full = "--- USER ---\n" + "u" * 10 + "\n\n--- ASSISTANT ---\n" + rendered + "\n\n--- ASSISTANT ---\nend"
    assert recent_prefix(rows, 3) == full
    assert recent_prefix(rows, 3, target_chars=50) == full[-50:]


def test_recent_prefix_stops_after_twice_the_target():
    # texts of 4 characters; target 5 -> the walk stops once 10 characters were collected
    rows = [user("aaaa"), user("bbbb"), user("cccc"), user("dddd"), assistant([tool_use("Bash")])]
    # collected: dddd (4), cccc (8), bbbb (12 >= 10: stop) -> aaaa never read
    blocks = "--- USER ---\nbbbb\n\n--- USER ---\ncccc\n\n--- USER ---\ndddd"
    assert recent_prefix(rows, 4, target_chars=5) == blocks[-5:]
    assert recent_prefix(rows, 4, target_chars=100) == "--- USER ---\naaaa\n\n" + blocks


def test_recent_prefix_past_the_end_raises_like_the_harness():
    rows = [user("a"), user("b")]
    assert recent_prefix(rows, 2) == "--- USER ---\na\n\n--- USER ---\nb"  # cut = len(rows): fine
    with pytest.raises(IndexError, match="^list index out of range$"):
        recent_prefix(rows, 3)
    with pytest.raises(IndexError, match="^list index out of range$"):
        immediate_context(rows, 3)


# ---------------------------------------------------------------- scratch turn

def test_immediate_context_sections_and_order():
    rows = [
        user("please fix the test"),
        assistant([text("old reasoning")]),
        result("old result"),
        assistant([text("  "), text("I will run the tests"), tool_use("Bash", {"command": "pytest"})]),
        result([{"type": "text", "text": "1 failed"}]),
        assistant([tool_use("Edit", {})]),                       # the cut
    ]
    assert context_sections(rows, 5) == [("[Your last reasoning]", "I will run the tests"),
                                         ("[Most recent tool result]", "1 failed")]
    # the walk stops once a result and a reasoning are found: the user text is never reached
    assert immediate_context(rows, 5) == (
        "[Your last reasoning]\nI will run the tests\n\n[Most recent tool result]\n1 failed\n\n" + SCRATCH_CUE)
    assert immediate_context(rows, 1) == "[Most recent user instruction]\nplease fix the test\n\n" + SCRATCH_CUE


def test_immediate_context_at_zero_is_the_cue_alone():
    assert immediate_context([user("x")], 0) == SCRATCH_CUE
    assert context_sections([], 0) == []


def test_empty_tool_result_hides_older_ones_and_does_not_stop_the_walk():
    rows = [user([text("do it")]), result("older result"), assistant([text("why")]), result(""),
            assistant([tool_use("Bash")])]
    assert immediate_context(rows, 4) == (
        "[Most recent user instruction]\ndo it\n\n[Your last reasoning]\nwhy\n\n" + SCRATCH_CUE)


def test_immediate_context_limits_and_user_text_in_a_result_record():
    rows = [user([{"type": "tool_result", "content": "r" * 1600}, text("u" * 1200)]),
            assistant("string content is not reasoning"),
            assistant([text("a" * 1100)])]
    assert context_sections(rows, 3) == [("[Most recent user instruction]", "u" * 1000),
                                         ("[Your last reasoning]", "a" * 1000),
                                         ("[Most recent tool result]", "r" * 1500)]


def test_immediate_context_window_is_199_rows():
    def rows_with_result_at(distance):
        rows = [result("far result")] + [{"type": "progress"}] * (distance - 1)
        return rows + [assistant([text("near")])]     # the cut is len(rows)
    found = rows_with_result_at(198)                  # result at offset 199
    assert context_sections(found, len(found)) == [("[Your last reasoning]", "near"),
                                                   ("[Most recent tool result]", "far result")]
    missed = rows_with_result_at(199)                 # result at offset 200: outside
    assert context_sections(missed, len(missed)) == [("[Your last reasoning]", "near")]


# ---------------------------------------------------------------- the e07 filler

def test_e07_filler_lengths():
    assert make_filler(TARGET_CHARS) == (FILLER_TEMPLATE * 7)[:3000]
    assert make_filler(0) == ""


# ---------------------------------------------------------------- gpt5_3K

def test_flatten_content_by_hand():
    assert flatten_content("as is") == "as is"
    assert flatten_content(None) == "" and flatten_content(7) == ""
    assert flatten_content([text(""), {"type": "text"}, "str", 5, {"type": "image"}]) == ""
    assert flatten_content([tool_use("apply", {"p": "a'b", "n": None, "l": [1, "x"]})]) == (
        "[tool_use apply: p=\"a'b\", n=None, l=[1, 'x']]")
    assert flatten_content([tool_use("shell", ["ls"]), {"type": "tool_use"}]) == "[tool_use shell]\n[tool_use : ]"
    assert flatten_content([{"type": "tool_result", "content": "z" * 400}]) == "[tool_result: " + "z" * 300 + "]"
    assert flatten_content([{"type": "tool_result", "content": [{"text": "p"}, {"type": "text", "text": "q"}]},
                            {"type": "tool_result", "content": None}]) == "[tool_result: pq]\n[tool_result: None]"


def test_gpt5_prefix_roles_lines_and_tail():
    records = [{"role": "system", "content": "dropped"}, {"content": "no role"},
               {"role": "user", "content": "hi"}, {"role": "developer", "content": "dropped"},
               {"role": "tool_result", "content": [{"type": "tool_result", "content": "out"}]},
               {"role": "assistant", "content": "  "},
               '{"role": "assistant", "content": "bye"}\n']           # a line of the file
    full = "--- USER ---\nhi\n\n--- TOOL_RESULT ---\n[tool_result: out]\n\n--- ASSISTANT ---\nbye"
    assert gpt5_prefix(records) == full
    assert gpt5_prefix(records, target_chars=10) == full[-10:]


def test_gpt5_prefix_bad_line_raises_like_the_harness():
    with pytest.raises(json.JSONDecodeError) as caught:
        gpt5_prefix(['{"role": "user", "content": "ok"}', "{not json"])
    assert str(caught.value) == "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    with pytest.raises(AttributeError):
        gpt5_prefix(["[1, 2]"])


CODEX = [
    {"type": "session_meta", "payload": {"id": "s"}},
    {"type": "response_item", "payload": {"type": "message", "role": "developer",
                                          "content": [{"type": "input_text", "text": "rules"}]}},
    {"type": "response_item", "payload": {"type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": "fix"},
                                                      {"type": "input_image", "image_url": "x"}]}},
    {"type": "response_item", "payload": {"type": "reasoning", "summary": []}},
    {"type": "event_msg", "payload": {"type": "agent_message", "message": "dropped"}},
    {"type": "turn_context", "payload": {}},
    {"type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                          "arguments": "{\"command\": \"ls\"}", "call_id": "c1"}},
    {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "o" * 310}},
    {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{bad"}},
    {"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "input": "*** P"}},
    {"type": "response_item", "payload": {"type": "custom_tool_call_output", "output": "done"}},
    None,
    {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                          "content": [{"type": "output_text", "text": "fixed"}]}},
]


def test_codex_records_variants():
    blocks = codex_records(CODEX, "blocks")
    assert blocks == [
        {"role": "developer", "content": [text("rules")]},
        {"role": "user", "content": [text("fix")]},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "shell", "input": {"command": "ls"}}]},
        {"role": "tool_result", "content": [{"type": "tool_result", "content": "o" * 310}]},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "shell", "input": {"arguments": "{bad"}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "apply_patch", "input": {"input": "*** P"}}]},
        {"role": "tool_result", "content": [{"type": "tool_result", "content": "done"}]},
        {"role": "assistant", "content": [text("fixed")]},
    ]
    strings = codex_records(CODEX, "string")
    assert strings[3] == {"role": "tool_result", "content": "o" * 310}
    assert gpt5_prefix(blocks) == (
        "--- USER ---\nfix\n\n--- ASSISTANT ---\n[tool_use shell: command='ls']\n\n"
        "--- TOOL_RESULT ---\n[tool_result: " + "o" * 300 + "]\n\n"
        "--- ASSISTANT ---\n[tool_use shell: arguments='{bad']\n\n"
        "--- ASSISTANT ---\n[tool_use apply_patch: input='*** P']\n\n"
        "--- TOOL_RESULT ---\n[tool_result: done]\n\n--- ASSISTANT ---\nfixed")
    assert "--- TOOL_RESULT ---\n" + "o" * 310 + "\n\n" in gpt5_prefix(strings)   # variant B: uncut
    with pytest.raises(ValueError):
        codex_records(CODEX, "other")


def test_a_raw_codex_file_gives_the_empty_prefix():
    assert gpt5_prefix([r for r in CODEX if r is not None]) == ""


# ---------------------------------------------------------------- scoring

def test_tokens_short_long_and_the_dropped_tail():
    assert argument_tokens({"k": "x" * 50}) == {"k=" + "x" * 50}            # 50: whole
    s = "abcdefghijklmnopqrstuvwxyz" * 2                                      # 52: 13 chunks
    assert argument_tokens({"k": s}) == {f"k~{s[i:i + 4]}" for i in range(0, 52, 4)}
    t = "abcdefghijklmnopqrstuvwxyz" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "123"  # 55: 13 chunks, "123" dropped
    assert argument_tokens({"k": t}) == {
        "k~abcd", "k~efgh", "k~ijkl", "k~mnop", "k~qrst", "k~uvwx", "k~yzAB", "k~CDEF", "k~GHIJ", "k~KLMN",
        "k~OPQR", "k~STUV", "k~WXYZ"}
    assert argument_tokens({"k": "abcd" * 13}) == {"k~abcd"}                  # repeats collapse


def test_tokens_nesting_lists_and_scalars():
    assert argument_tokens({"a": {"b": {"c": 1}}, "l": [{"k": 1}, [2], None], "t": True, "n": None}) == {
        "a.b.c=1", "l[0]={'k': 1}", "l[1]=[2]", "l[2]=None", "t=True", "n=None"}
    assert argument_tokens({"a": {}, "e": []}) == set()


@pytest.mark.parametrize("falsy", [None, 0, [], "", False, {}])
def test_falsy_args_act_as_empty(falsy):
    assert argument_tokens(falsy) == set()
    assert jaccard_args(falsy, {}) == 1.0
    assert jaccard_args(falsy, {"a": 1}) == 0.0


@pytest.mark.parametrize("truthy, name", [([["a", 1]], "list"), ("str", "str"), (5, "int"), (True, "bool")])
def test_truthy_non_dict_args_raise(truthy, name):
    with pytest.raises(AttributeError, match=f"^'{name}' object has no attribute 'items'$"):
        jaccard_args({}, truthy)


def test_jaccard_values():
    assert jaccard_args({}, {}) == 1.0
    assert jaccard_args({"a": "x", "b": "x"}, {"a": "x"}) == 0.5
    assert jaccard_args({"a": 1}, {"a": "1"}) == 1.0 and jaccard_args({"a": 1.0}, {"a": 1}) == 0.0
    assert jaccard_args({"a": [1, 2]}, {"a": [2, 1]}) == 0.0


def test_parse_arguments():
    assert parse_arguments(None) == {} and parse_arguments("") == {}
    assert parse_arguments('{"command": "ls"}') == {"command": "ls"}
    assert parse_arguments("{oops") == {"_parse_error": True, "raw": "{oops"}
    assert parse_arguments('["ls"]') == ["ls"] and parse_arguments("null") is None and parse_arguments("0") == 0


def test_score_call():
    gt = {"command": "ls -la"}
    assert score_call(None, {}, "Bash", gt) == (False, None)
    assert score_call("Read", {"file_path": "/x"}, "Bash", gt) == (False, None)
    assert score_call("Bash", {"command": "ls -la"}, "Bash", gt) == (True, 1.0)
    assert score_call("Bash", {"command": "ls", "description": "d"}, "Bash", gt) == (True, 0.0)
    assert score_call("Bash", {}, "Bash", None) == (True, 1.0)                    # gt args None -> {}
    assert score_call("Bash", parse_arguments("{oops"), "Bash", gt) == (True, 0.0)
    assert score_call("Read", ["ls"], "Bash", gt) == (False, None)                # wrong tool: not scored
    with pytest.raises(AttributeError):
        score_call("Bash", ["ls"], "Bash", gt)
