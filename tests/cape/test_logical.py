"""CAPE's App. A on item pairs of our own: the rule that builds them (same facet; keyed alike:
similar, oppositely: contradictory), the agreement a pair is read on, and the accuracy by a
hand-computed case, a neutral answer on neither side."""
import math

import pandas as pd
import pytest

from contextecho.cape.inventory import load_inventory
from contextecho.cape.logical import CONTRADICTORY, MIDPOINT, SIMILAR, agreement, item_pairs, pair_accuracy

ITEMS = [  # (facet, text, trait, key): ours
    ("Order", "Keep things tidy", "C", 1),  # 0
    ("Order", "Put things back", "C", 1),  # 1
    ("Order", "Leave a mess", "C", -1),  # 2
    ("Calm", "Stay calm", "N", -1),  # 3: a facet of its own
]


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("label_raw,text,label_ocean,key\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in ITEMS))
    return load_inventory(path)


def test_pairs_are_two_items_of_one_facet_similar_when_keyed_alike(inventory):
    pairs = item_pairs(inventory)
    assert [(r.first, r.second, r.kind) for r in pairs.itertuples()] == [
        (0, 1, SIMILAR), (0, 2, CONTRADICTORY), (1, 2, CONTRADICTORY)]
    assert set(pairs["facet"]) == {"Order"} and set(pairs["trait"]) == {"C"}


def test_mpi120_gives_107_similar_and_73_contradictory_pairs(mpi120):
    pairs = item_pairs(mpi120)
    assert pairs["kind"].value_counts().to_dict() == {SIMILAR: 107, CONTRADICTORY: 73}
    facets = {i.index: (i.trait, i.label) for i in mpi120.items}
    assert all(facets[r.first] == facets[r.second] for r in pairs.itertuples())


def answers(rows):
    """(setting, run, item, key, agreement): the score is the agreement after the item's key."""
    return pd.DataFrame([(s, r, i, k, a if k == 1 else 6 - a) for s, r, i, k, a in rows],
                        columns=["setting", "run_id", "item", "key", "score"])


def test_a_pair_is_read_on_the_agreement_before_the_reverse_key():
    frame = answers([("context_free", "r1", 2, -1, 5.0), ("context_free", "r1", 0, 1, 5.0)])
    assert list(agreement(frame)) == [5.0, 5.0] and list(frame["score"]) == [1.0, 5.0]
    assert MIDPOINT == 3.0


def test_accuracy_by_hand(inventory):
    cf = [  # run r1: 0 and 1 agree (similar: correct); 0 and 2 both agree (contradictory: wrong); 1 and 2 wrong
        ("context_free", "r1", 0, 1, 5.0), ("context_free", "r1", 1, 1, 4.0), ("context_free", "r1", 2, -1, 4.0),
        # run r2: 0 agrees, 1 neutral (similar: neutral, not correct), 2 disagrees (0-2 correct, 1-2 neutral)
        ("context_free", "r2", 0, 1, 4.0), ("context_free", "r2", 1, 1, 3.0), ("context_free", "r2", 2, -1, 1.0)]
    cd = [("context_dependent", "r1", 0, 1, 2.0), ("context_dependent", "r1", 1, 1, 1.0),  # similar: correct
          ("context_dependent", "r1", 2, -1, float("nan"))]  # invalid: its two contradictory pairs unanswered
    table = pair_accuracy(answers(cf + cd), item_pairs(inventory)).set_index(["setting", "kind"])
    row = table.loc[("context_free", SIMILAR)]
    assert (row["n_pairs"], row["n_asked"], row["n_answered"], row["n_neutral"]) == (1, 1, 2, 1)
    assert row["accuracy"] == pytest.approx(50.0) and row["note"] == ""
    row = table.loc[("context_free", CONTRADICTORY)]
    assert (row["n_pairs"], row["n_asked"], row["n_answered"], row["n_neutral"]) == (2, 2, 4, 1)
    assert row["accuracy"] == pytest.approx(25.0)  # only 0-2 of r2
    assert table.loc[("context_dependent", SIMILAR), "accuracy"] == pytest.approx(100.0)
    row = table.loc[("context_dependent", CONTRADICTORY)]
    assert (row["n_asked"], row["n_answered"]) == (2, 0) and math.isnan(row["accuracy"])
    assert row["note"] == "not estimable: no run answered both items of a contradictory pair validly"


def test_pairs_no_run_asked_say_so(inventory):
    table = pair_accuracy(answers([("context_free", "r1", 0, 1, 5.0), ("context_free", "r1", 3, -1, 5.0)]),
                          item_pairs(inventory))
    assert list(table["setting"]) == ["context_free", "context_free"]
    assert (table["n_asked"] == 0).all() and table["accuracy"].isna().all()
    assert table["note"].str.startswith("not estimable: no run asked both items of a").all()
