"""The anchor notebook's self-managed memory: its parameters, its table and what the
manuscript reads (no model)."""
import pytest

from contextecho.anchor.context.conditions import CONTEXT_CONDITIONS
from contextecho.anchor.context.memory import NOT_JSON, Memories, MemoryUpdate
from contextecho.experiments.anchor import MANUSCRIPT, PAPER_SCALE, Parameters, memory_sentence
from contextecho.experiments.anchor_recall import MEMORY_COLUMNS, memory_table
from contextecho.experiments.parameters import ParameterError


def test_the_memory_parameters_and_the_condition_by_default():
    p = Parameters()
    assert p.conditions == tuple(CONTEXT_CONDITIONS) and "self_managed" in p.conditions
    assert (p.memory_chunk_steps, p.memory_max_tokens, p.memory_chars) == (400, 48, 600)
    assert all(k in Parameters.HELP for k in ("memory_chunk_steps", "memory_max_tokens", "memory_chars"))
    # the paper's scale: the summary's blocks, and room for a whole memory in a hosted model's reply
    assert (PAPER_SCALE["memory_chunk_steps"], PAPER_SCALE["memory_max_tokens"]) == (p.summary_block_steps, 400)
    assert Parameters(**{k: PAPER_SCALE[k] for k in ("memory_chunk_steps", "memory_max_tokens")}).memory_max_tokens == 400
    assert Parameters(conditions=("self_managed",), memory_chunk_steps=5, memory_max_tokens=200,
                      memory_chars=2000).memory_chars == 2000


@pytest.mark.parametrize("field,value", [("memory_chunk_steps", 0), ("memory_max_tokens", 0), ("memory_chars", -1),
                                         ("conditions", ("self_kept",))])
def test_bad_memory_parameters_are_refused_by_name(field, value):
    with pytest.raises(ParameterError, match=f"parameter '{field}'"):
        Parameters(**{field: value})


def update(session, chunk, accepted, reason="", memory='{"a":1}'):
    return MemoryUpdate(session, chunk, 2 * chunk + 1, 2 * chunk + 2, 10 * chunk + 9, accepted, reason, False,
                        memory, len(memory), ("a",), f"sha{chunk}", f"key{chunk}")


def test_the_memory_table_has_a_row_per_session_and_chunk_saying_why_an_update_was_rejected():
    memories = Memories().extended([update("s1", 0, True), update("s2", 0, True)]).extended(
        [update("s1", 1, False, NOT_JSON)])
    table = memory_table(memories, {"s1": "S1", "s2": "S2"})
    assert list(table.columns) == MEMORY_COLUMNS
    assert table[["session", "chunk", "update"]].values.tolist() == [["S1", 0, "accepted"], ["S1", 1, NOT_JSON],
                                                                     ["S2", 0, "accepted"]]
    assert table["memory_chars"].tolist() == [7, 7, 7] and table["keys"].tolist() == [1, 1, 1]
    assert memory_table(Memories(), {}).empty and list(memory_table(Memories(), {}).columns) == MEMORY_COLUMNS
    with pytest.raises(ValueError, match="does not follow"):
        memories.extended([update("s2", 2, True)])


def test_the_manuscript_reads_the_memory_and_a_recall_column_per_condition():
    keys = {v.template for v in MANUSCRIPT.variables}
    assert {"memory_chunks", "memory_updates_accepted", "memory_chars_final", "memory_chunk_steps",
            "memory_chars"} <= keys
    per_condition = MANUSCRIPT.variable("recall_accuracy_{condition}")
    assert [per_condition.key(condition=c) for c in CONTEXT_CONDITIONS] == [
        "recall_accuracy_long_context", "recall_accuracy_hierarchical_summary", "recall_accuracy_self_managed",
        "recall_accuracy_retrieval"]
    accuracy = MANUSCRIPT.table("recall_accuracy")
    assert "self_managed" in {s for c in accuracy.columns for s in c.sources}
    assert [c.sources[0] for c in MANUSCRIPT.table("memory").columns] == [
        "target", "session", "chunk", "first_step", "last_step", "memory_chars", "keys", "update"]


def test_the_memory_sentence_counts_updates_or_says_why_there_were_none():
    written = {"memory_chunks": "4", "memory_updates_accepted": "3", "memory_chars_final": "212"}
    assert memory_sentence(written, 4, "unused") == (
        "Of its 4 updates 3 were accepted (a reply that is no JSON object, or too long, keeps the memory it had), "
        "and the final memories held at most 212 characters.")
    none = memory_sentence({**written, "memory_chunks": "0"}, 0, "no chunk of 400 agent steps was complete")
    assert none.startswith("On this build the self-managed memory measures nothing: no chunk of 400 agent steps was "
                           "complete, so the target kept none")
