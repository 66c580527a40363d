"""The CAPE notebook's stages that read only the answers it already has (Table 5, Fig. 3b,
App. A) on hand-made answers, no model: each writes its declared table (every missing cell
explained), its figure and its variables, and its sentence follows its numbers."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from contextecho.engine.llm import LOCAL_MODEL
from contextecho.experiments import cape, spine
from contextecho.paper.formats import COEFFICIENT, P_VALUE
from contextecho.paper.outputs import Outputs
from contextecho.paper.tables import unexplained_missing

NOTHING = "On this build "
ITEMS = [("Order", "Keep things tidy", "C", 1), ("Order", "Put things back", "C", 1),
         ("Order", "Leave a mess", "C", -1), ("Fancy", "Daydream a lot", "O", 1)]


@pytest.fixture
def run(tmp_path):
    """A CAPE run on an inventory of four items, opened without a model (no stage here calls one)."""
    inventory = tmp_path / "four.csv"
    inventory.write_text("label_raw,text,label_ocean,key\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in ITEMS))
    params = cape.Parameters(inventory=str(inventory), output_dir=str(tmp_path / "cape"))
    out = Outputs.open("cape", tmp_path / "cape", cape.MANUSCRIPT)
    return spine.Run("cape", params, out, log=None, transport=SimpleNamespace(planner=None))


def table(run, stem):
    return (run.out.directory / "tables" / f"{stem}.md").read_text()


def consistency(cf_tar, cd_tar, oc=0.5):
    """Table-1 rows, one per setting and factor run: TAR as given, ED from it, TC varied, OC the same."""
    rows = []
    for setting, tars in (("context_free", cf_tar), ("context_dependent", cd_tar)):
        for run_number, tar in enumerate(tars, start=1):
            rows.append({"setting": setting, "factor": "stability", "run": run_number, "tar": tar, "ed": 1 - tar,
                         "tc": tar / 2 + (0.1 if setting == "context_dependent" else 0) * run_number, "oc": oc})
    return pd.DataFrame(rows)


def test_table5_is_written_with_scipys_p_and_its_sentence(run, monkeypatch):
    cf, cd = [0.2, 0.4, 0.5, 0.7], [0.5, 0.6, 0.9, 0.8]
    monkeypatch.setattr(cape, "factor_consistency", lambda answers: consistency(cf, cd))
    frame = cape.validity(run, pd.DataFrame({"model": []}))
    written = run.out.variables
    assert written["validity_units"] == 4 and list(frame["metric"]) == ["TAR", "ED", "TC", "OC"]
    assert written["validity_p_tar"] == P_VALUE.text(stats.ttest_rel(cd, cf).pvalue)
    assert written["validity_d_tar"] == COEFFICIENT.text(np.sqrt(15) / 2)
    assert written["validity_p_oc"].startswith("not estimable (the metric is the same in both settings")
    assert written["validity_finding"].startswith(f"Paired t-test p per metric: {written['validity_p_tar']} (TAR)")
    assert "OC not estimable: the metric is the same in both settings in all 4 factor runs." in \
        written["validity_finding"]
    markdown = table(run, "table5")
    assert "Wilcoxon p" in markdown and "ANOVA p" in markdown and unexplained_missing(markdown) == []


def test_table5_with_one_factor_run_measures_nothing(run, monkeypatch):
    monkeypatch.setattr(cape, "factor_consistency", lambda answers: consistency([0.5], [0.6]))
    cape.validity(run, pd.DataFrame({"model": []}))
    assert run.out.variables["validity_finding"] == (
        NOTHING + "construct validity measures nothing: only 1 factor run has the metric in both settings, "
        "and a test needs two; more factors and runs (n_runs), or the notebook's paper-scale set would make it a "
        "measurement.")
    assert unexplained_missing(table(run, "table5")) == []


def answers(rows):
    """(setting, run, item, trait, key, agreement) -> answer rows (the score after the key)."""
    return pd.DataFrame([(s, r, i, t, k, a if k == 1 else 6 - a) for s, r, i, t, k, a in rows],
                        columns=["setting", "run_id", "item", "trait", "key", "score"]).assign(model=LOCAL_MODEL)


ANSWERS = answers([
    ("context_free", "r1", 0, "C", 1, 5.0), ("context_free", "r1", 1, "C", 1, 4.0),
    ("context_free", "r1", 2, "C", -1, 2.0), ("context_free", "r1", 3, "O", 1, 3.0),
    ("context_dependent", "r1", 0, "C", 1, 4.0), ("context_dependent", "r1", 1, "C", 1, 2.0),
    ("context_dependent", "r1", 2, "C", -1, 4.0), ("context_dependent", "r1", 3, "O", 1, np.nan)])


def test_the_profile_shift_table_figure_and_sentence(run):
    shift = cape.profile_shift_table(run, ANSWERS)
    written = run.out.variables
    # C, context-free: scores 5, 4, 4 (item 2 reverse-keyed); context-dependent: 4, 2, 2
    assert written["profile_shift_C"] == "−1.67" and written["profile_shift_pairs"] == 3
    assert written["profile_shift_O"].startswith("not estimable (no item of this trait")
    assert written["profile_shift_finding"].startswith("Context-dependent minus context-free trait mean: −1.67 (C)")
    assert unexplained_missing(table(run, "profile_shift")) == []
    figure = cape.profile_shift_figure(run, shift)
    assert figure.path.is_file() and figure.path.with_suffix(".pdf").is_file()


def test_the_logic_table_and_sentence(run):
    accuracy = cape.logical_consistency(run, ANSWERS)
    written = run.out.variables
    assert (written["logic_similar_pairs"], written["logic_contradictory_pairs"]) == (1, 2)
    # context-free: 0-1 agree (similar: correct); 0-2 and 1-2 opposite (contradictory: correct)
    # context-dependent: 0 agrees, 1 disagrees (similar: wrong); 2 agrees with 0, not with 1
    assert written["logic_similar_cf_pct"] == "100.0%" and written["logic_similar_cd_pct"] == "0.0%"
    assert written["logic_contradictory_cf_pct"] == "100.0%" and written["logic_contradictory_cd_pct"] == "50.0%"
    assert written["logic_finding"] == ("On our similar pairs the accuracy is 100.0% (context-free) and 0.0% "
                                        "(context-dependent). On our contradictory pairs the accuracy is 100.0% "
                                        "(context-free) and 50.0% (context-dependent).")
    assert list(accuracy["setting"]) == ["context-free"] * 2 + ["context-dependent"] * 2
    assert "contradictory" in table(run, "logic")


def test_logic_without_a_pair_asked_measures_nothing(run):
    cape.logical_consistency(run, ANSWERS[ANSWERS["item"].isin([0, 3])])
    finding = run.out.variables["logic_finding"]
    assert finding.startswith(NOTHING + "logical consistency measures nothing: no run asked both items of a "
                                        "similar pair")
    assert unexplained_missing(table(run, "logic")) == []
