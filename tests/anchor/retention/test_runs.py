"""Where the retention questionnaire is asked, and the per-facet table from its answers; end
to end with a scripted model whose answers depend only on what it is shown, so the
retention values are known."""
import pytest

from contextecho.anchor.persona import CODING_ASSISTANT
from contextecho.anchor.retention.runs import checkpoint_steps, retention_runs, retention_table
from contextecho.cape.administer import CONTEXT_FREE, administer
from contextecho.cape.inventory import load_inventory
from contextecho.engine.cache import CallCache
from contextecho.experiments.anchor_retention import questionnaire_runs

ITEMS = [("Tidiness", "Keep my desk in order", "C", 1), ("Curiosity", "Read about planets", "O", 1),
         ("Tidiness", "Leave chores for later", "C", -1), ("Curiosity", "Avoid new food", "O", -1),
         ("Warmth", "Help people who are lost", "A", 1), ("Warmth", "Ignore requests", "A", -1)]


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "inv.csv"
    path.write_text("label_raw,text,label_ocean,key\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in ITEMS))
    return load_inventory(path)


def test_checkpoints_are_evenly_spaced_and_end_at_the_last_step():
    assert checkpoint_steps(100) == (25, 50, 75, 100)
    assert checkpoint_steps(3, 4) == (1, 2, 2, 3)
    with pytest.raises(ValueError):
        checkpoint_steps(0)


def lorem(snapshot, real):
    """A stand-in filler: the real prefix's roles and lengths, none of its text."""
    assert (real.session_id, real.step, real.window) == (snapshot.session_id, snapshot.step, 3000)
    return [{"role": m["role"], "content": "x" * len(m["content"])} for m in real.messages]


def test_runs_carry_the_card_and_the_prefix_for_each_condition(synthetic):
    session = synthetic.build()
    runs = retention_runs(CODING_ASSISTANT, [session], checkpoints=2, window=3000, n_runs=2, filler=lorem)
    by = {}
    for r in runs:
        by.setdefault(r.labels["condition"], []).append(r)
    assert [len(by[c]) for c in ("generic", "initial", "checkpoint", "filler")] == [2, 2, 4, 4]
    assert by["generic"][0].prefix == ()
    assert by["initial"][0].prefix == ({"role": "system", "content": CODING_ASSISTANT.system_prompt()},)
    real, fill = by["checkpoint"][0].prefix, by["filler"][0].prefix
    assert real[0] == fill[0] == by["initial"][0].prefix[0]
    assert sum(len(m["content"]) for m in real[1:]) == sum(len(m["content"]) for m in fill[1:])
    assert [m["role"] for m in real] == [m["role"] for m in fill]
    assert {r.labels["step"] for r in by["checkpoint"]} == set(checkpoint_steps(session.n_agent_steps, 2))
    assert len({r.run_id for r in runs}) == len(runs)
    assert [r.replicate for r in by["generic"]] == [0, 1]


def test_the_filler_arm_needs_a_filler_and_unknown_arms_are_refused(synthetic):
    session = synthetic.build()
    with pytest.raises(ValueError, match="filler arm needs"):
        retention_runs(CODING_ASSISTANT, [session])
    with pytest.raises(ValueError, match="unknown retention arm"):
        retention_runs(CODING_ASSISTANT, [session], arms=("scratch",))
    runs = retention_runs(CODING_ASSISTANT, [session], checkpoints=2, arms=("checkpoint",))
    assert {r.labels["condition"] for r in runs} == {"generic", "initial", "checkpoint"}


def test_an_undisplaced_facet_is_undefined_and_invalid_items_are_dropped(synthetic, inventory):
    import pandas as pd

    rows = []
    for condition, score in (("generic", 3.0), ("initial", 4.0), ("checkpoint", 4.0)):
        for item, (_, _, trait, _) in enumerate(ITEMS):
            value = 3.0 if (trait == "A" and condition == "initial") else score
            if condition == "checkpoint" and item == 0:
                value = float("nan")
            rows.append({"condition": condition, "session": "s" if condition == "checkpoint" else "",
                         "checkpoint": 1 if condition == "checkpoint" else 0, "step": 5,
                         "item": item, "trait": trait, "score": value})
    table = retention_table(pd.DataFrame(rows)).set_index("facet")
    assert table.loc["A", "status"] == "undefined" and pd.isna(table.loc["A", "retention"])
    assert table.loc["C", "n_dropped"] == 1 and table.loc["C", "n_items"] == 1
    assert table.loc["C", "retention"] == 1.0 and table.loc["O", "retention"] == 1.0


def test_retention_needs_both_baselines():
    import pandas as pd

    with pytest.raises(ValueError, match="generic and initial"):
        retention_table(pd.DataFrame({"condition": ["initial"], "item": [0], "trait": ["O"], "score": [3.0],
                                      "session": [""], "checkpoint": [0], "step": [0]}))


def test_retention_by_ipip_facet_groups_items_by_their_facet_label(inventory):
    import pandas as pd

    facets = inventory.ipip_facets()
    assert facets[0] == "C:Tidiness" and facets[1] == "O:Curiosity"
    rows = [{"condition": c, "session": "s" if c == "checkpoint" else "", "checkpoint": 1 if c == "checkpoint" else 0,
             "step": 3, "item": item.index, "trait": item.trait, "score": score + (item.key < 0) * offset}
            for c, score, offset in (("generic", 3.0, 0.0), ("initial", 5.0, -4.0), ("checkpoint", 4.0, -2.0))
            for item in inventory.items]
    table = retention_table(pd.DataFrame(rows), facets)
    assert set(table["facet"]) == {"C:Tidiness", "O:Curiosity", "A:Warmth"}
    assert (table["retention"] == 0.5).all()
    with pytest.raises(ValueError, match=r"no facet given for item\(s\) \[5\]"):
        retention_table(pd.DataFrame(rows), {k: v for k, v in facets.items() if k != 5})


def shown(model, messages):
    """(C) with no persona; (A) with the card alone; with a history after the card: (B) on
    a real session prefix, (C) on filler (it holds no tool calls), so R = 0.5 and 0."""
    has_card = messages[0]["role"] == "system"
    history = messages[1:-1] if has_card else messages[:-1]
    if not has_card:
        return "(C)"
    if not history:
        return "(A)"
    return "(B)" if any("[tool_call" in m["content"] for m in history) else "(C)"


def test_retention_through_the_call_site_matches_the_scripted_answers(synthetic, inventory, tmp_path, provider):
    """End to end as the anchor experiment runs it: CAPE's questionnaire asked after
    ANCHOR's prefixes, ContextEcho's filler passed in, through the one call site."""
    provider("shown", shown, tokens=(1, 1))
    session = synthetic.build()
    runs = questionnaire_runs(CODING_ASSISTANT, inventory, [session], checkpoints=2, window=3000)
    cache = CallCache(tmp_path / "cache")
    try:
        answers = administer(runs, "shown/model", setting=CONTEXT_FREE, cache=cache).answers
    finally:
        cache.close()
    table = retention_table(answers)
    assert len(table) == 2 * 2 * 3  # arms x checkpoints x facets
    assert set(table["status"]) == {"ok"}
    assert (table.loc[table["arm"] == "checkpoint", "retention"] == 0.5).all()
    assert (table.loc[table["arm"] == "filler", "retention"] == 0.0).all()
    assert (table["n_items"] == 2).all() and (table["n_dropped"] == 0).all()
    assert table["displacement"].round(6).eq(round(8 ** 0.5, 6)).all()  # (+2, -2) per facet
