"""Tool calls through the engine: the request key, the stored record (Parquet, journal, old
shards), the call site, the fake ``tool-call`` behaviour; the embedded model answering
``tools`` / ``tool_choice``; llama-cpp-python's server answering them over HTTP."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, ModelResponse

from contextecho.engine import llm
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import ModelConfigError, Transport, _record_from_response, generate
from contextecho.engine.endpoints import Endpoint
from contextecho.engine.local_model import (LocalChatModel, ToolUse, UnsupportedParameterError, read_call,
                                            shared_model, tool_text, tool_use)
from contextecho.engine.model_request import ModelRequest
from contextecho.engine.record import EMPTY_RESPONSE, ERROR, NO_CONTENT, OK, SCHEMA, CallRecord, tool_calls_json


def tool(name: str, description: str = "", **properties: str) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {p: {"type": t} for p, t in properties.items()},
                       "required": list(properties)}}}


TOOLS = [tool("Read", "Read a file from disk.", file_path="string"),
         tool("Bash", "Run a shell command.", command="string")]
SESSION = [{"role": "system", "content": "You are a coding assistant."},
           {"role": "user", "content": "Show me what is in setup.py."}]
MALFORMED = '{"file_path": "a.py"'  # a JSON argument string that does not parse


def ask(model: str, text: str, **params) -> ModelRequest:
    return ModelRequest(model, [SESSION[0], {"role": "user", "content": text}], params)


# ---------------------------------------------------------------- the request key
def test_a_different_tool_schema_or_choice_is_a_different_request():
    base = ask("fake/tool-call", "go", tools=TOOLS, tool_choice="auto")
    assert ask("fake/tool-call", "go", tools=TOOLS, tool_choice="auto").key == base.key
    other_schema = [TOOLS[0], tool("Bash", "Run a shell command.", command="string", timeout="integer")]
    other_text = [TOOLS[0], tool("Bash", "Run one shell command.", command="string")]
    keys = {base.key,
            ask("fake/tool-call", "go", tools=other_schema, tool_choice="auto").key,
            ask("fake/tool-call", "go", tools=other_text, tool_choice="auto").key,
            ask("fake/tool-call", "go", tools=TOOLS, tool_choice="required").key,
            ask("fake/tool-call", "go", tools=TOOLS[::-1], tool_choice="auto").key,
            ask("fake/tool-call", "go").key}
    assert len(keys) == 6


# ---------------------------------------------------------------- the record
CALLS = [{"id": "call_0", "name": "Read", "arguments": MALFORMED}, {"id": None, "name": "Bash", "arguments": "{}"}]
#: CALLS as canonical JSON, written by hand (sorted keys, no spaces, the argument string escaped).
CALLS_JSON = ('[{"arguments":"{\\"file_path\\": \\"a.py\\"","id":"call_0","name":"Read"},'
              '{"arguments":"{}","id":null,"name":"Bash"}]')


def called(key: str = "k" * 64, text: str = "") -> CallRecord:
    return CallRecord(key, "fake/tool-call", "{}", OK, text, "tool_calls", attempts=1, created_at="t",
                      tool_calls=CALLS_JSON)


def test_tool_calls_are_read_from_litellm_objects_and_plain_dicts_arguments_verbatim():
    objects = Message(content=None, tool_calls=[
        ChatCompletionMessageToolCall(id="call_0", type="function", function=Function(name="Read", arguments=MALFORMED)),
        ChatCompletionMessageToolCall(id="call_1", type="function", function=Function(name="Bash", arguments="{}"))])
    dicts = {"content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "Read", "arguments": MALFORMED}},
        {"type": "function", "function": {"name": "Bash", "arguments": {}}}]}  # an object, as LiteLLM reads it
    assert tool_calls_json(dicts) == CALLS_JSON  # no id: null (LiteLLM's objects make one up)
    assert tool_calls_json(objects) == CALLS_JSON.replace('"id":null', '"id":"call_1"')
    assert tool_calls_json(Message(content="hi")) is None and tool_calls_json({"tool_calls": []}) is None
    with pytest.raises(TypeError, match="tool call 0"):
        tool_calls_json({"tool_calls": [{"function": {"name": None, "arguments": "{}"}}]})


def test_a_record_with_tool_calls_decodes_them_and_is_no_blank_answer():
    record = called()
    assert record.calls == CALLS and record.calls[0]["arguments"] == MALFORMED
    assert not record.blank and called(text="  \n").blank is False
    plain = CallRecord("k" * 64, "m", "{}", OK, "  \n")
    assert plain.blank and plain.calls == [] and plain.as_empty_response().error_type == EMPTY_RESPONSE
    assert "tool_calls" in SCHEMA.names


def test_tool_calls_survive_the_journal_and_the_parquet_shard(tmp_path):
    record = called()
    writer = CallCache(tmp_path)
    writer.put(record)
    from_journal = CallCache(tmp_path, read_only=True)  # reads the live writer's journal
    assert from_journal.lookup(record.key) == record
    shard = writer.flush()
    writer.close()
    assert pq.read_table(shard).column("tool_calls").to_pylist() == [CALLS_JSON]
    with CallCache(tmp_path) as from_shard:
        stored = from_shard.lookup(record.key)
    assert stored == record and stored.calls[0]["arguments"] == MALFORMED and stored.ok


def test_a_shard_written_before_tool_calls_existed_still_loads(tmp_path):
    answer = CallRecord("a" * 64, "fake/echo", "{}", OK, "ls -la", "stop", attempts=1, created_at="t")
    blank = CallRecord("b" * 64, "fake/echo", "{}", OK, " ", "stop", attempts=1, created_at="t")
    old = pa.schema([f for f in SCHEMA if f.name != "tool_calls"])
    rows = [{k: v for k, v in r.to_row().items() if k != "tool_calls"} for r in (answer, blank)]
    (tmp_path / "records").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=old), tmp_path / "records" / "old.parquet")
    with CallCache(tmp_path) as cache:
        assert cache.report.bad_shards == []
        assert cache.lookup(answer.key) == answer and cache.lookup(answer.key).calls == []
        assert cache.lookup(blank.key) is None and cache.last_error(blank.key).error_type == EMPTY_RESPONSE
        cache.put(called("c" * 64))  # new shards carry the column beside the old one
        cache.flush()
    with CallCache(tmp_path) as again:
        assert again.lookup("c" * 64).calls == CALLS and again.lookup(answer.key).tool_calls is None


# ---------------------------------------------------------------- the call site
def response(content, tool_calls=None, finish="tool_calls") -> ModelResponse:
    message = Message(content=content, tool_calls=tool_calls)
    return ModelResponse(choices=[Choices(index=0, message=message, finish_reason=finish)])


def test_the_call_site_stores_tool_calls_without_content_as_an_answer():
    request = ask("fake/tool-call", "go", tools=TOOLS)
    calls = [ChatCompletionMessageToolCall(id="call_9", type="function",
                                           function=Function(name="Read", arguments=MALFORMED))]
    record = _record_from_response(request, response(None, calls), 1, 0.5)
    assert record.ok and record.response_text == "" and record.finish_reason == "tool_calls"
    assert record.calls == [{"id": "call_9", "name": "Read", "arguments": MALFORMED}]
    both = _record_from_response(request, response("Reading it.", calls), 1, 0.5)
    assert both.ok and both.response_text == "Reading it." and len(both.calls) == 1
    # neither text nor calls: the null message it always was
    empty = _record_from_response(request, response(None, None, "stop"), 1, 0.5)
    assert empty.status == ERROR and empty.error_type == NO_CONTENT and empty.tool_calls is None
    # a text answer has no calls
    text = _record_from_response(request, response("plain", None, "stop"), 1, 0.5)
    assert text.ok and text.tool_calls is None and text.calls == []


# ---------------------------------------------------------------- the fake provider
def test_the_fake_tool_call_behaviour_through_generate_and_the_cache(tmp_path):
    fake = llm.ensure_providers() and llm.registered_providers()["fake"]
    other_schema = [TOOLS[0], tool("Bash", "Run a shell command.", command="string", timeout="integer")]
    requests = [
        ask("fake/tool-call", f"Look.\nCALL Read {MALFORMED}\nthanks", tools=TOOLS, tool_choice="auto"),
        ask("fake/tool-call", "Anything.", tools=TOOLS, tool_choice="required"),
        ask("fake/tool-call", "Anything.", tools=other_schema, tool_choice="required"),
        ask("fake/tool-call", "CALL Grep", tools=TOOLS),
        ask("fake/tool-call", "CALL Read {}", tools=TOOLS, tool_choice="none"),
        ask("fake/tool-call", "Say it in PROSE.", tools=TOOLS),
        ask("fake/tool-call", "No tools here."),
    ]
    assert requests[1].key != requests[2].key
    before = fake.calls["tool-call"]
    with CallCache(tmp_path) as cache:
        first = generate(requests, cache=cache, progress=False)
    assert first.n_errors == 0 and fake.calls["tool-call"] - before == len(requests)
    calls = [[(c["name"], c["arguments"]) for c in r.calls] for r in first.records]
    assert calls == [[("Read", MALFORMED)], [("Read", "{}")], [("Read", "{}")], [("Grep", "{}")], [], [], []]
    assert all(r.finish_reason == "tool_calls" and r.response_text == "" for r in first.records[:4])
    assert first.records[0].calls[0]["id"] == "call_0"
    assert all(r.response_text.startswith("prose:") and r.finish_reason == "stop" for r in first.records[4:])
    assert first.counts().calls == len(requests) and first.counts().computed == len(requests)

    with CallCache(tmp_path) as cache:  # from the journal turned shard: no call, the same answers
        second = generate(requests, cache=cache, progress=False)
    assert fake.calls["tool-call"] - before == len(requests) and all(second.cached)
    assert [r.tool_calls for r in second.records] == [r.tool_calls for r in first.records]
    assert second.records[0].calls[0]["arguments"] == MALFORMED
    assert second.counts().cached == len(requests)


# ---------------------------------------------------------------- the embedded model's rules
def test_the_tool_list_is_written_into_the_system_message():
    tools = [TOOLS[0], {"type": "function", "function": {"name": "Ping", "description": "Say\n  hello\tback. "}}]
    expected = ("You can call these tools:\n"
                '- Read: Read a file from disk.; parameters: {"type":"object","properties":'
                '{"file_path":{"type":"string"}},"required":["file_path"]}\n'
                "- Ping: Say hello back.; parameters: {}\n"
                'To call a tool, answer with one JSON object {"name": <tool name>, "arguments": {...}} '
                "and nothing else.")
    assert tool_text(tools) == expected
    use = ToolUse(tuple(tools), "auto")
    assert use.messages(SESSION) == [{"role": "system", "content": "You are a coding assistant.\n\n" + expected},
                                     SESSION[1]]
    assert use.messages(SESSION[1:]) == [{"role": "system", "content": expected}, SESSION[1]]
    assert use.call_messages(SESSION[1:])[-1] == {"role": "assistant", "content": '{"name": "'}
    named = ToolUse(tuple(tools), "named", "Ping")
    assert named.prefill == '{"name": "Ping", "arguments": {'
    no_description = tool_text([{"type": "function", "function": {"name": "Ls"}}]).splitlines()[1]
    assert no_description == "- Ls: parameters: {}"


@pytest.mark.parametrize("choice, expected", [
    (None, ("auto", None)), ("auto", ("auto", None)), ("required", ("required", None)),
    ("any", ("required", None)), ({"type": "function", "function": {"name": "Bash"}}, ("named", "Bash")),
])
def test_tool_choices_honoured(choice, expected):
    use = tool_use(TOOLS, choice)
    assert (use.choice, use.name) == expected and use.tools == tuple(TOOLS)


def test_no_tools_or_none_is_a_text_answer_and_anything_else_is_refused():
    assert tool_use(None, None) is None and tool_use([], None) is None and tool_use(TOOLS, "none") is None
    for choice in ("sometimes", {"type": "function", "function": {"name": "Grep"}}, {"type": "tool"}, 3):
        with pytest.raises(UnsupportedParameterError, match="tool_choice"):
            tool_use(TOOLS, choice)
    with pytest.raises(UnsupportedParameterError, match="needs tools"):
        tool_use(None, "required")
    with pytest.raises(UnsupportedParameterError, match=r"tools\[1\]"):
        tool_use([TOOLS[0], {"type": "function", "function": {"description": "nameless"}}], "auto")
    with pytest.raises(UnsupportedParameterError, match="list of function tools"):
        tool_use("Read", "auto")


@pytest.mark.parametrize("text, call", [
    ('{"name": "Read", "arguments": {"file_path": "a b.py", "n": [1, 2.5]}}',
     ("Read", '{"file_path":"a b.py","n":[1,2.5]}')),
    ('{"name": "Ls"}', ("Ls", "{}")),
    ('{"name": "Ls", "arguments": "-la"}', ("Ls", '"-la"')),
    ('{"name": "Caf\u00e9", "arguments": {"q": "\u00e9"}}', ("Caf\u00e9", '{"q":"\u00e9"}')),
    ('{"name": 3, "arguments": {}}', None),
    ('{"name": "Read", "arguments": {"file_path": "a', None),
    ('["Read"]', None),
])
def test_a_call_is_read_from_the_finished_object(text, call):
    assert read_call(text) == call


# ---------------------------------------------------------------- the embedded model
EIGHT = [tool(name, description, **{argument: "string"}) for name, description, argument in [
    ("Read", "Read a file from disk.", "file_path"), ("Bash", "Run a shell command.", "command"),
    ("Edit", "Replace text in a file.", "file_path"), ("Grep", "Search file contents.", "pattern"),
    ("Glob", "Find files by name.", "pattern"), ("Write", "Write a file.", "file_path"),
    ("WebFetch", "Fetch a URL.", "url"), ("TodoWrite", "Update the todo list.", "todos")]]
GREEDY = {"temperature": 0, "max_tokens": 48}
OPENS_A_CALL = '{"name": "Read"'  # greedy, the embedded model answers it with "{": a call under "auto"


def local(text: str = "Show me what is in setup.py.", **params) -> ModelRequest:
    return ModelRequest(llm.LOCAL_MODEL, [SESSION[0], {"role": "user", "content": text}],
                        {**GREEDY, "tools": EIGHT, **params})


@pytest.mark.embedded
def test_required_and_named_tool_choices_answer_one_call(tmp_path):
    named = {"type": "function", "function": {"name": "Bash"}}
    requests = [local(tool_choice="required"), local(tool_choice="any"), local(tool_choice=named),
                local("List the files.", tool_choice=named)]
    result = generate(requests, cache=CallCache(tmp_path), progress=False)
    assert result.n_errors == 0, [r.error_message for r in result.records]
    for record in result.records:
        assert record.finish_reason == "tool_calls" and record.response_text == ""
        (call,) = record.calls
        assert call["id"] == "call_0" and isinstance(call["name"], str)
        json.loads(call["arguments"])  # the arguments are valid JSON
    assert result.records[0].tool_calls == result.records[1].tool_calls  # "any" is "required"
    assert [r.calls[0]["name"] for r in result.records[2:]] == ["Bash", "Bash"]


@pytest.mark.embedded
def test_none_is_text_and_auto_is_a_call_or_text(tmp_path):
    plain = ModelRequest(llm.LOCAL_MODEL, local().messages, GREEDY)
    texts = (OPENS_A_CALL, "Show me what is in setup.py.", "Who are you?", "Run the tests with pytest.",
             "Fix the typo in README.md.")
    requests = [local(tool_choice="none"), plain] + [local(text) for text in texts]
    result = generate(requests, cache=CallCache(tmp_path), progress=False)
    assert result.n_errors == 0, [r.error_message for r in result.records]
    none, without = result.records[:2]
    # "none": the tools are not shown, the answer is what the same request without tools answers
    assert none.calls == [] and none.response_text.strip() and none.finish_reason in ("stop", "length")
    assert (none.response_text, none.prompt_tokens) == (without.response_text, without.prompt_tokens)
    for record in result.records[2:]:  # auto: calls XOR text, each as the record says
        assert bool(record.calls) != bool(record.response_text.strip()), record
        assert (record.finish_reason == "tool_calls") == bool(record.calls)
        assert record.prompt_tokens > without.prompt_tokens + 100  # the tool list is in the prompt
    # a user message that starts the object: the model's first token opens one, the answer is a call
    opened = result.records[2]
    assert opened.ok and opened.response_text == "" and [c["name"] for c in opened.calls] == ["Read"]
    print("auto:", [(r.calls[0]["name"], r.calls[0]["arguments"]) if r.calls else r.response_text[:40]
                    for r in result.records[2:]])


@pytest.mark.embedded
def test_greedy_tool_calls_are_repeatable_and_reuse_the_system_segment():
    messages = local().messages
    params = [{"temperature": 0, "max_tokens": 24, "tools": EIGHT, "tool_choice": choice}
              for choice in ("required", "auto")]
    opened = local(OPENS_A_CALL).messages  # "auto" that turns into a call
    cold = LocalChatModel(reuse_prefix=False)  # every prompt evaluated from scratch
    fresh = [cold.complete(messages, p) for p in params] + [cold.complete(opened, params[1])]
    shared = LocalChatModel()
    again = [shared.complete(messages, p) for p in params] + [shared.complete(opened, params[1])]
    again += [shared.complete(messages, p) for p in params] + [shared.complete(opened, params[1])]

    def answer(c):
        return c.text, c.tool_calls, c.finish_reason, c.prompt_tokens, c.completion_tokens

    assert [answer(a) for a in again] == [answer(f) for f in fresh + fresh]
    assert len(fresh[0].tool_calls) == 1 and len(fresh[2].tool_calls) == 1
    # the system message with the tool list is the first segment: built once, then restored
    # at every evaluation: a call's prompt is evaluated once (its name and then its arguments
    # decoded on from it), a call after "auto" twice, text once: 1 + 7
    assert shared.stats["prefix_misses"] == 1 and shared.stats["prefix_hits"] == 7
    assert all(a.prefix_reused for a in again[1:])


@pytest.mark.embedded
def test_tool_values_not_honoured_are_refused_before_any_compute(tmp_path):
    model = shared_model()
    with pytest.raises(UnsupportedParameterError, match="tool_choice 'sometimes'"):
        model.complete(local().messages, {**GREEDY, "tools": EIGHT, "tool_choice": "sometimes"})
    for bad in ("sometimes", {"type": "function", "function": {"name": "Deploy"}}):
        with pytest.raises(ModelConfigError, match="tool_choice"):
            generate([local(tool_choice=bad)], cache=CallCache(tmp_path), progress=False)
    assert len(CallCache(tmp_path)) == 0 and CallCache(tmp_path).n_errors == 0
    # tools beside a prefilled turn or token probabilities: refused, as a bad request
    refused = generate([local(logprobs=True)], cache=CallCache(tmp_path), progress=False).records[0]
    assert not refused.ok and refused.error_type == "BadRequestError" and "logprobs" in refused.error_message


@pytest.mark.embedded
def test_the_tool_list_counts_toward_the_context(tmp_path):
    model = shared_model()
    messages = local().messages
    bare = model.check_fits(messages, 16)
    with_tools = model.check_fits(messages, 16, tools=EIGHT, tool_choice="auto")
    text_tokens = len(model._tokens(tool_text(EIGHT)))
    assert with_tools >= bare + text_tokens
    fits_bare = {"temperature": 0, "max_tokens": model.n_ctx - bare - 2}
    generate_it = [ModelRequest(llm.LOCAL_MODEL, messages, {**fits_bare, "tools": EIGHT})]
    with pytest.raises(ModelConfigError, match="exceeds the 8192-token context"):
        generate(generate_it, cache=CallCache(tmp_path), progress=False)
    assert len(CallCache(tmp_path)) == 0


# ---------------------------------------------------------------- the llama.cpp server
@pytest.mark.embedded
@pytest.mark.server
def test_the_server_answers_tool_calls_through_litellm(tmp_path):
    from contextecho.engine.local_model import MODEL_NAME
    from contextecho.engine.local_server import TOOL_CHAT_FORMAT, serve_local_model

    with serve_local_model(chat_format=TOOL_CHAT_FORMAT, log_dir=tmp_path / "server") as server:
        transport = Transport(endpoints=(Endpoint("hosted_vllm/*", server.api_base),),
                              max_attempts=2, base_delay_s=0.01, max_delay_s=0.02)
        served = f"hosted_vllm/{MODEL_NAME}"  # the name the server answers to
        named = {"type": "function", "function": {"name": "Bash"}}
        requests = [ModelRequest(served, local().messages, {**GREEDY, "tools": EIGHT, "tool_choice": choice})
                    for choice in ("auto", named, "required")]
        result = generate(requests, cache=CallCache(tmp_path / "cache"), transport=transport, progress=False)
    auto, by_name, required = result.records
    assert auto.ok and bool(auto.calls) != bool(auto.response_text.strip())
    assert all(c["name"] in [t["function"]["name"] for t in EIGHT] for c in auto.calls)
    assert by_name.ok and by_name.finish_reason == "tool_calls" and by_name.response_text == ""
    assert [c["name"] for c in by_name.calls] == ["Bash"] and isinstance(json.loads(by_name.calls[0]["arguments"]), dict)
    # "required" is not supported by the handler: HTTP 500, retried, stored as a server error
    assert not required.ok and required.error_type == "InternalServerError" and required.attempts == 2


@pytest.mark.embedded
def test_a_required_call_names_one_of_the_offered_tools():
    """The name is decoded among the offered tools' names, as a server's grammar restricts it
    (a 135M model left free writes names no tool has); greedy and sampled alike."""
    offered = {t["function"]["name"] for t in EIGHT}
    model = LocalChatModel()
    for temperature, seed in ((0, 0), (1.0, 1), (1.0, 2), (1.5, 3)):
        done = model.complete(local().messages, {"temperature": temperature, "seed": seed, "max_tokens": 24,
                                                 "tools": EIGHT, "tool_choice": "required"})
        assert len(done.tool_calls) == 1 and done.tool_calls[0][0] in offered
        assert done.text.startswith('{"name": "' + done.tool_calls[0][0] + '", "arguments": {')
