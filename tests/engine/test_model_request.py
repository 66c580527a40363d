import hashlib
import json
import re

import pytest

from contextecho.engine.model_request import KEY_VERSION, MalformedRequestError, ModelRequest

MESSAGES = [{"role": "system", "content": "You are careful."}, {"role": "user", "content": "Who are you?"}]


def test_key_is_sha256_of_canonical_json_computed_by_hand():
    request = ModelRequest("openai/gpt-4o-mini", MESSAGES, {"temperature": 0.0, "max_tokens": 5}, replicate=2)
    payload = {"key_version": KEY_VERSION, "messages": MESSAGES, "model": "openai/gpt-4o-mini",
               "params": {"max_tokens": 5, "temperature": 0.0}, "replicate": 2}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert request.key == hashlib.sha256(text.encode()).hexdigest()


def test_key_ignores_dict_order_but_not_content():
    a = ModelRequest("m/x", MESSAGES, {"temperature": 0, "top_p": 1})
    b = ModelRequest("m/x", [dict(reversed(list(m.items()))) for m in MESSAGES], {"top_p": 1, "temperature": 0})
    assert a.key == b.key
    changed = [
        ModelRequest("m/y", MESSAGES, {"temperature": 0, "top_p": 1}),
        ModelRequest("m/x", MESSAGES[:1] + [{"role": "user", "content": "Who are you? "}], {"temperature": 0, "top_p": 1}),
        ModelRequest("m/x", MESSAGES, {"temperature": 0.5, "top_p": 1}),
        ModelRequest("m/x", MESSAGES, {"temperature": 0, "top_p": 1}, replicate=1),
    ]
    assert len({a.key, *(c.key for c in changed)}) == 5


def test_prompt_caching_markers_stay_out_of_the_key():
    marked = [MESSAGES[0] | {"content": [{"type": "text", "text": "You are careful.",
                                           "cache_control": {"type": "ephemeral"}}]}, MESSAGES[1]]
    assert ModelRequest("m/x", marked).key == ModelRequest("m/x", MESSAGES).key


@pytest.mark.parametrize("messages, fragment", [
    ("hello", "list"),
    ([], "empty"),
    ([{"role": "wizard", "content": "x"}], "messages[0] has role 'wizard'"),
    ([{"role": "user", "content": "x"}, {"role": "user", "content": 3}], "messages[1] (user) content is int"),
    ([{"role": "user", "content": "x"}, "oops"], "messages[1] is str"),
])
def test_malformed_messages_name_the_culprit(messages, fragment):
    with pytest.raises(MalformedRequestError, match=re.escape(fragment)):
        ModelRequest("m/x", messages)


def test_transport_settings_are_refused_in_params():
    with pytest.raises(MalformedRequestError, match="timeout"):
        ModelRequest("m/x", MESSAGES, {"timeout": 5})


def test_bad_model_and_replicate():
    with pytest.raises(MalformedRequestError, match="model"):
        ModelRequest("", MESSAGES)
    with pytest.raises(MalformedRequestError, match="replicate"):
        ModelRequest("m/x", MESSAGES, replicate=-1)
