import numpy as np
import pytest

from contextecho.cape.inventory import InventoryNotFound, load_inventory
from contextecho.cape.ordering import order_items
from contextecho.cape.prompts import (INSTRUCTION_2, INSTRUCTION_3, ORDERS, PAPER_OPTIONS, WORDING_1,
                                      render_question)


def test_paper_prompt_layout():
    text = render_question("Keep my desk in order")
    assert text.startswith("Given a statement about yourself: “You keep my desk in order.” Please select")
    assert text.splitlines()[1:] == ["(A) Very Accurate", "(B) Moderately Accurate",
                                     "(C) Neither Accurate Nor Inaccurate", "(D) Moderately Inaccurate",
                                     "(E) Very Inaccurate"]


def test_instruction_variants_and_orders():
    options = WORDING_1.reordered(ORDERS["random"])
    text = render_question("Keep my desk in order", INSTRUCTION_2, options)
    assert "Options: C) Neutral, B) Agree, E) Strongly disagree, A) Strongly agree, D) Disagree. " \
           "Here is the statement of you: 'You keep my desk in order'." in text
    assert "'Keep my desk in order'" in render_question("Keep my desk in order", INSTRUCTION_3, WORDING_1)
    assert render_question("X y", options=PAPER_OPTIONS.reordered(ORDERS["reversed"])) \
        .splitlines()[1] == "(E) Very Inaccurate"


def test_synthetic_inventory_loads(synthetic_inventory):
    inv = synthetic_inventory
    assert len(inv) == 10 and inv.items[0].trait == "C" and inv.items[5].key == -1
    assert len(inv.sha256) == 64 and inv.excluded.empty


def test_unscorable_rows_are_excluded_and_listed(tmp_path):
    path = tmp_path / "inv.csv"
    path.write_text("label_raw,text,label_ocean,key\nF,Do one thing,O,1\nF,Do another,O,0\n"
                    "F,Do a third,X,1\n")
    inv = load_inventory(path)
    assert len(inv) == 1 and inv.excluded["reason"].tolist() == ["key", "trait"]


def test_missing_inventory_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTECHO_DATA", str(tmp_path / "d"))
    monkeypatch.setenv("CONTEXTECHO_SHARED", str(tmp_path / "s"))
    with pytest.raises(InventoryNotFound, match="make data"):
        load_inventory("mpi_120")


def test_real_mpi120(mpi120):
    assert len(mpi120) == 120
    counts = {t: len(v) for t, v in mpi120.by_trait().items()}
    assert counts == {t: 24 for t in "OCEAN"}
    facets = mpi120.ipip_facets()
    assert len(set(facets.values())) == 30 and set(facets) == {i.index for i in mpi120.items}
    assert all(f.split(":")[0] == i.trait for i, f in zip(mpi120.items, facets.values()))


def test_orderings(mpi120):
    grouped = order_items(mpi120, "trait_grouped")
    assert "".join(i.trait for i in grouped.items) == "".join(t * 24 for t in "OCEAN")
    cyclic = order_items(mpi120, "cyclic")
    assert "".join(i.trait for i in cyclic.items[:10]) == "OCEANOCEAN"
    a = order_items(mpi120, "random", np.random.default_rng(7))
    b = order_items(mpi120, "random", np.random.default_rng(7))
    assert [i.index for i in a.items] == [i.index for i in b.items]
    assert sorted(i.index for i in a.items) == list(range(120))
    with pytest.raises(ValueError, match="seeded"):
        order_items(mpi120, "random")
