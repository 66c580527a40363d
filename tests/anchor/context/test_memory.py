"""Self-managed memory on hand-made sessions: chunks are the summary's blocks, the chain is
sequential and cached, bad replies keep the previous memory with their reason, and an item
reads only the memory of chunks complete before its decision step. ``fake/json`` answers
the last ``JSON <text>`` line of the chunk it is shown, so each chunk scripts its reply."""
import json

import pytest

from contextecho.anchor.context.conditions import (EMPTY_MEMORY_NOTE, SelfManaged, build_contexts, horizon)
from contextecho.anchor.context.memory import (EMPTY_MEMORY, MEMORY_INSTRUCTION, NOT_JSON, NOT_OBJECT, OVER_BUDGET,
                                               MemoryChain, memory_params, run_memories)
from contextecho.anchor.context.summary import block_request, block_transcript, history_blocks
from contextecho.anchor.context.window import causal_window
from contextecho.anchor.recall.asking import ask_requests
from contextecho.anchor.recall.families import recall_items
from contextecho.anchor.recall.items import RecallItem
from contextecho.engine import llm
from contextecho.engine.calls import Transport
from contextecho.engine.hashing import content_hash

CHUNK, RECENT, N_CHUNKS = 2, 120, 6
ONCE = Transport(max_attempts=1)


def scripted(chat, replies: dict[int, str]):
    """A chat of N_CHUNKS chunks of CHUNK steps; chunk b's last user turn says ``JSON <replies[b]>``
    (default: the object ``{"chunk": b}``)."""
    turns = []
    for step in range(1, N_CHUNKS * CHUNK + 1):
        b = (step - 1) // CHUNK
        say = f"Please do task {step} of the frobnicator."
        if step % CHUNK == 0:
            say += "\nJSON " + replies.get(b, json.dumps({"chunk": b}))
        turns += [("user", say), ("assistant", f"Did task {step}.")]
    return chat.build(turns)


def item(session, step: int) -> RecallItem:
    return RecallItem(f"custom/{step}", session.session_id, "custom", "Which task came first?",
                      ("task 1", "task 2", "task 3", "task 4"), 0, (1, 1, 1, 1), (1,), step)


def chain(model="fake/json", **kw) -> MemoryChain:
    return MemoryChain(model=model, chunk_steps=CHUNK, turn_chars=200, params=memory_params(32), **kw)


def kept(session, chain_, cache, transport=Transport()):
    return run_memories(chain_, [(session, session.step_index[-1])], cache=cache, transport=transport)


def fake_calls(behaviour: str) -> int:
    return llm.ensure_providers() and llm.registered_providers()["fake"].calls[behaviour]


def test_chunks_are_the_summary_blocks_and_read_as_the_summariser_reads_them(story):
    session = story.build()
    for steps in (1, 3, 4, 7):
        assert MemoryChain(model="fake/json", chunk_steps=steps).chunks(session) == history_blocks(session, steps)
    c = chain()
    for b in c.chunks(session):
        request = c.request(session, b, '{"a":1}')
        transcript = block_transcript(session, b, turn_chars=200)
        assert request.messages[0]["content"] == MEMORY_INSTRUCTION
        assert request.messages[1]["content"] == 'Your memory so far:\n{"a":1}\n\n' + transcript
        assert block_request(session, b, "fake/echo", params={}, turn_chars=200).messages[1]["content"] == transcript
        assert request.params["response_format"] == {"type": "json_object"} and request.params["max_tokens"] == 32


def test_the_chain_is_sequential_and_an_item_reads_no_later_chunk(chat, cache, causality):
    session = scripted(chat, {})
    memories, counts = kept(session, chain(), cache)
    updates = memories.chains[session.session_id]
    assert [u.chunk for u in updates] == list(range(N_CHUNKS)) and counts.calls == N_CHUNKS
    assert [json.loads(u.memory) for u in updates] == [{"chunk": b} for b in range(N_CHUNKS)]
    for b, u in enumerate(updates):  # chunk b was asked with the memory after chunk b-1
        previous = updates[b - 1].memory if b else EMPTY_MEMORY
        asked = chain().request(session, chain().chunks(session)[b], previous)
        assert u.request_key == asked.key and u.accepted and u.reason == ""
    condition = SelfManaged(chain(), recent_chars=RECENT).with_memories(memories)
    for t in range(1, session.n_agent_steps + 1):
        context = condition.context(session, item(session, t), redact=False)
        sent = "\n".join(m["content"] for m in context.messages)
        newest = t // CHUNK - 1  # the last chunk complete at step t
        assert context.provenance["memory_chunk"] == (newest if newest >= 0 else None)
        for b in range(N_CHUNKS):
            assert (f'{{"chunk":{b}}}' in sent) == (b == newest), (t, b)  # never a later chunk's memory
        cut = causality.cut_at(session, t)
        cut_memories, _ = kept(cut, chain(), cache)
        assert condition.with_memories(cut_memories).context(cut, item(session, t), redact=False).sha256 \
            == context.sha256


@pytest.mark.parametrize("reply,reason", [("not json at all", NOT_JSON), ("[1, 2]", NOT_OBJECT),
                                          (json.dumps({"note": "x" * 80}), OVER_BUDGET)])
def test_a_bad_reply_keeps_the_previous_memory_and_says_why(chat, cache, reply, reason):
    session = scripted(chat, {2: reply})
    memories, counts = kept(session, chain(memory_chars=40), cache)
    updates = memories.chains[session.session_id]
    assert [u.accepted for u in updates] == [b != 2 for b in range(N_CHUNKS)]
    bad = updates[2]
    assert bad.reason == reason and not bad.call_failed and bad.memory == updates[1].memory
    assert bad.sha256 == updates[1].sha256 and bad.keys == ("chunk",)
    assert json.loads(updates[3].memory) == {"chunk": 3}  # the chain goes on from the kept memory
    assert counts.invalid == 1 and counts.failed == 0
    assert memories.counts == {"updates": N_CHUNKS, "accepted": N_CHUNKS - 1, f"rejected_{reason}": 1}


def test_an_empty_memory_before_the_first_chunk_and_the_records_of_a_context(chat, cache):
    session = scripted(chat, {})
    memories, _ = kept(session, chain(), cache)
    condition = SelfManaged(chain(), recent_chars=RECENT).with_memories(memories)
    early = condition.context(session, item(session, 1))
    recent = causal_window(session, 1, limit=RECENT)
    assert EMPTY_MEMORY_NOTE in early.messages[0]["content"]
    assert early.entry_ranges == ((recent.first_entry, recent.last_entry),)
    assert early.provenance["memory_chunk"] is None
    t = 2 * CHUNK + 1
    context = condition.context(session, item(session, t))
    recent = causal_window(session, t, limit=RECENT)
    update = memories.after(session.session_id, 1)
    assert context.entry_ranges == ((0, session.step_index[2 * CHUNK - 1]), (recent.first_entry, recent.last_entry))
    assert context.sha256 == content_hash(list(context.messages))
    assert context.n_chars == sum(len(m["content"]) for m in context.messages)
    assert context.provenance["memory_sha256"] == update.sha256 == content_hash({"chunk": 1})
    assert context.provenance["memory_steps"] == (1, 2 * CHUNK) and context.provenance["memory_accepted"]
    assert context.messages[0]["content"].startswith(f"Your own memory of the earlier part of this session (JSON), "
                                                     f"as you kept it:\n\n[agent steps 1-{2 * CHUNK}] " + update.memory)


def test_the_chain_is_asked_once_for_the_items_of_a_session(chat, cache):
    session = scripted(chat, {})
    items = [item(session, 5), item(session, 9)]
    before = fake_calls("json")
    first, _ = run_memories(chain(), [(session, horizon(session, items))], cache=cache)
    assert fake_calls("json") - before == 9 // CHUNK  # the chunks complete before step 9, each once
    again, counts = run_memories(chain(), [(session, horizon(session, items))], cache=cache)
    assert fake_calls("json") - before == 9 // CHUNK and counts.cached == counts.calls == 9 // CHUNK
    assert again == first
    condition = SelfManaged(chain(), recent_chars=RECENT).with_memories(first)
    requests = ask_requests(items, "fake/echo", session, condition=condition)
    assert len(requests) == 2 and '{"chunk":3}' in requests[1].messages[0]["content"]


def test_a_failed_call_ends_the_chain_and_its_items_have_no_context(story, cache):
    session = story.build()
    items = recall_items(session)
    before = fake_calls("timeout")
    memories, counts = run_memories(chain("fake/timeout"), [(session, horizon(session, items))], cache=cache,
                                    transport=ONCE)
    assert fake_calls("timeout") - before == 1 and counts.failed == 1  # no chunk after the failed one is asked
    assert memories.counts == {"updates": 1, "accepted": 0, "failed_Timeout": 1}
    out = build_contexts(SelfManaged(chain("fake/timeout"), recent_chars=RECENT).with_memories(memories),
                         session, items)
    need = {i.id for i in items if i.decision_step >= CHUNK}
    assert set(out.failed) == need and set(out.failed.values()) == {"Timeout"}
    assert out.counts["failed_Timeout"] == len(need) > 0
    never = build_contexts(SelfManaged(chain()), session, items)  # memories never kept: NotRun
    assert set(never.failed.values()) == {"NotRun"}
