"""The session model's records: Entry's own constructor keeps a frozen dataclass's contract."""
from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from contextecho.sessions.model import TEXT, TOOL_CALL, Entry


def test_entry_takes_positional_and_keyword_fields_with_their_defaults():
    e = Entry("assistant", TOOL_CALL, "{}", 7, "2026-01-01T00:00:00Z", "Bash", "c1", "m1", 3)
    assert (e.role, e.kind, e.text, e.line, e.timestamp, e.tool_name, e.call_id, e.message_id,
            e.step, e.user_turn, e.meta, e.user_class) == (
        "assistant", TOOL_CALL, "{}", 7, "2026-01-01T00:00:00Z", "Bash", "c1", "m1", 3, None, False, None)
    k = Entry(role="user", kind=TEXT, text="hi", line=1, meta=True, user_class="typed_prompt")
    assert (k.timestamp, k.step, k.user_turn, k.meta, k.user_class) == (None, None, None, True, "typed_prompt")
    with pytest.raises(TypeError):
        Entry("user", TEXT, "hi")  # line is required
    with pytest.raises(TypeError):
        Entry("user", TEXT, "hi", 1, colour="red")


def test_entry_is_frozen_comparable_and_copyable():
    e = Entry("user", TEXT, "hi", 1, user_turn=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.text = "changed"
    twin = Entry("user", TEXT, "hi", 1, None, None, None, None, None, 1)
    assert e == twin and hash(e) == hash(twin) and e != Entry("user", TEXT, "hi", 2, user_turn=1)
    assert dataclasses.replace(e, user_class="handoff").user_class == "handoff" and e.user_class is None
    assert pickle.loads(pickle.dumps(e)) == e and copy.deepcopy(e) == e
    assert [f.name for f in dataclasses.fields(Entry)][:4] == ["role", "kind", "text", "line"]
    assert repr(e).startswith("Entry(role='user', kind='text', text='hi', line=1,")
