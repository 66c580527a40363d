"""CAPE's Fig. 2 (§6.1): the few-shot ablation asks one context-dependent run per history
length and one with the full history, sets each beside the full one, draws every trajectory,
and says in one sentence what it measured (or why it measures nothing)."""
import pandas as pd

from contextecho.cape.administer import history_messages
from contextecho.experiments import cape, spine
from contextecho.paper.tables import unexplained_missing


def _run(tmp_path, inventory, **more):
    params = cape.Parameters(targets=("scripted/letters",), inventory=inventory, n_items=0, factors=("stability",),
                             output_dir=str(tmp_path / "cape"), **more)
    run = spine.start("cape", params, models=params.targets, declared=cape.MANUSCRIPT)
    return run, cape.few_shot(run)


def test_each_length_is_asked_and_set_beside_the_full_history(scripted_models, provider, inventory, tmp_path):
    run, table = _run(tmp_path, inventory, few_shots=(1, 3, 1))
    assert table["history_pairs"].tolist() == ["1", "3"]  # the full history is the reference, not a row
    asked = pd.read_parquet((tmp_path / "cape") / "results" / "few_shot.parquet")
    assert asked.groupby("history_pairs").size().to_dict() == {"1": 10, "3": 10, "full": 10}
    # each row compares the items answered validly in both runs: a TAR is the share that agree
    for row in table.itertuples():
        both = asked[asked["history_pairs"].isin([row.history_pairs, "full"])].pivot(
            index="item", columns="history_pairs", values="score").dropna()
        assert row.n_items == len(both)
        assert row.tar == 100 * (both[row.history_pairs] == both["full"]).mean()
    assert ((tmp_path / "cape") / "figures" / "few_shot.png").is_file()
    finding = run.out.variables["few_shot_finding"]
    assert finding.startswith("Against the full history's trajectory the TAR is") and "(1 pair kept)" in finding
    assert run.out.variables["few_shots"] == "1, 3"
    assert unexplained_missing(((tmp_path / "cape") / "tables" / "few_shot.md").read_text()) == []


def test_a_history_of_k_pairs_keeps_the_last_k():
    history = [(f"q{i}", f"a{i}") for i in range(5)]
    assert [m["content"] for m in history_messages(history, 2)] == ["q3", "a3", "q4", "a4"]
    assert len(history_messages(history, None)) == 10 and history_messages(history, 0) == []


def test_no_answer_read_measures_nothing_and_says_why(provider, inventory, tmp_path):
    provider("mute", lambda model, messages: "I would rather not say.")
    params = cape.Parameters(targets=("mute/x",), inventory=inventory, n_items=0, factors=("stability",),
                             few_shots=(2,), output_dir=str(tmp_path / "cape"))
    run = spine.start("cape", params, models=params.targets, declared=cape.MANUSCRIPT)
    table = cape.few_shot(run)
    assert table["tar"].isna().all() and table["note"].str.startswith("not estimable").all()
    assert run.out.variables["few_shot_finding"].startswith("On this build the few-shot ablation measures nothing")
    assert unexplained_missing(((tmp_path / "cape") / "tables" / "few_shot.md").read_text()) == []
