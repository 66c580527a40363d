"""The anchor's recall tables from hand-made answers (no model)."""
import math

import pandas as pd

from contextecho.anchor.recall.items import RecallItem
from contextecho.experiments.anchor_recall import accuracy_table, condition_rows


def item(session: str, k: int, answer: int, family: str = "temporal_order") -> RecallItem:
    return RecallItem(id=f"{family}/{k}", session_id=session, family=family, question="q?",
                      options=("w", "x", "y", "z"), answer=answer, option_steps=(1, 2, 3, 4),
                      source_steps=(1,), decision_step=5)


ITEMS = [item("s1", 0, 0), item("s2", 0, 1), item("s2", 1, 2), item("s1", 0, 3, "failed_command")]
LABELS = {"s1": "S1", "s2": "S2"}


def test_rows_key_items_by_session_and_id_and_keep_failures_apart():
    answers = {("s1", "temporal_order/0"): "A", ("s2", "temporal_order/0"): None,
               ("s1", "failed_command/0"): "I am not sure"}  # s2's temporal_order/1: no context
    rows = pd.DataFrame(condition_rows(ITEMS, "long_context", answers, {("s1", "temporal_order/0")}, LABELS))
    assert rows["main"].tolist() == [True, False, False, False]  # same id in s2 is not main
    assert rows["context"].tolist() == [True, True, False, True]
    assert rows["failed"].tolist() == [False, True, False, False]
    assert rows["correct"].tolist() == [True, False, False, False]


def test_accuracy_per_family_and_set_by_hand():
    answers = {("s1", "temporal_order/0"): "A", ("s2", "temporal_order/0"): "C",
               ("s1", "failed_command/0"): "D"}
    main = {("s1", "temporal_order/0")}
    rows = pd.DataFrame(condition_rows(ITEMS, "retrieval", answers, main, LABELS)
                        + condition_rows(ITEMS, "long_context", {}, main, LABELS))
    table = accuracy_table(rows).set_index(["set", "family", "condition"])
    kept = table.loc[("blind-kept", "temporal_order", "retrieval")]
    assert (kept["n"], kept["n_no_context"], kept["accuracy"]) == (2, 1, 0.5)
    assert table.loc[("blind-kept", "failed_command", "retrieval"), "accuracy"] == 1.0
    assert table.loc[("main", "temporal_order", "retrieval"), "n"] == 1
    nothing = table.loc[("blind-kept", "temporal_order", "long_context")]
    assert nothing["n"] == 0 and nothing["n_no_context"] == 3 and math.isnan(nothing["accuracy"])
