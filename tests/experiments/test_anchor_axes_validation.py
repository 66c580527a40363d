"""The anchor notebook's validation raters and the validation sentence (pure functions: no
model, no corpus)."""
import pandas as pd
import pytest

from contextecho.anchor.axes.rubric import AXES
from contextecho.experiments.anchor import MANUSCRIPT, STRATA_WORDS, validation_sentence
from contextecho.experiments.anchor_axes import validation_raters
from contextecho.paper.outputs import manuscript_value


def test_three_judges_at_their_own_parameters_or_three_replicates_of_the_primary():
    judges = validation_raters(("j/a",), ("anthropic/claude-sonnet-4-5", "openai/gpt-4.1", "gemini/gemini-2.5-flash"),
                               sample_temperature=1.0, max_tokens=400)
    assert [r.label for r in judges] == [r.model for r in judges] and not any(r.is_replicate for r in judges)
    assert judges[2].params == {"temperature": 0.0, "max_tokens": 16384} and {r.replicate for r in judges} == {0}
    replicates = validation_raters(("local/smollm2-135m", "j/b"), (), sample_temperature=0.8, max_tokens=8)
    assert [(r.label, r.model, r.params["temperature"], r.replicate) for r in replicates] == [
        ("replicate 0 (greedy)", "local/smollm2-135m", 0, 0), ("replicate 1 (T=0.8)", "local/smollm2-135m", 0.8, 1),
        ("replicate 2 (T=0.8)", "local/smollm2-135m", 0.8, 2)]
    with pytest.raises(ValueError, match="majority of three"):
        validation_raters(("j/a",), ("j/a", "j/b"), sample_temperature=1.0, max_tokens=8)


def written(kappas, all_held=0.75, sample=0.5):
    raw = {"axes_validation_turns": 6, "axes_validation_population": 12, "axes_validation_per_stratum": 1,
           "axes_validation_strata": 6, "axes_validation_stratified_by": STRATA_WORDS["source_checkpoint"],
           "axes_validation_all_held": all_held,
           "axes_validation_all_held_sample": sample,
           **{f"axes_validation_kappa_{a}": k for a, k in zip(AXES, kappas)}}
    template = {k: (k if not k.startswith("axes_validation_kappa_") else "axes_validation_kappa_{axis}") for k in raw}
    return {k: manuscript_value(MANUSCRIPT.variable(template[k]), v, "every verdict is one category") for k, v in raw.items()}


def test_the_sentence_gives_the_reweighted_share_and_each_estimable_kappa():
    row = pd.Series({"n_turns": 6, "n_decided": 4, "n_held": 2})
    said = validation_sentence(written([0.5, None, 0.25, 1.0]), row, replicates=False)
    assert said == ("The validation sample holds 6 of the 12 judged turns (up to 1 per stratum of turn source × checkpoint; "
                    "6 strata). The majority of the three judges held all four axes on 2 of 4 decided turns (0.50); "
                    "reweighted by each stratum's share of the judged turns the share is 0.75. Fleiss' κ among the "
                    "three judges was 0.50 (role), 0.25 (values) and 1.00 (style); on boundaries it is not estimable.")


def test_a_share_that_does_not_vary_or_kappas_that_do_not_exist_say_so():
    row = pd.Series({"n_turns": 6, "n_decided": 5, "n_held": 0})
    said = validation_sentence(written([None] * 4, 0.0, 0.0), row, replicates=True)
    assert ("On this build the validation sample's majority-of-three share of turns holding all four axes measures "
            "nothing: none of the 5 decided turns held all four, so the share does not vary between turns") in said
    assert said.endswith("Agreement among the three replicates is not estimable on any axis: every verdict is one "
                         "category.")
    undecided = validation_sentence(written([None] * 4, None, None), pd.Series({"n_turns": 6, "n_decided": 0,
                                                                                 "n_held": 0}), True)
    assert "none of the 6 sampled turns has a majority verdict on every axis nor a majority deviation" in undecided


def test_every_row_of_the_validation_table_says_why_it_has_no_kappa():
    from contextecho.anchor.axes.validation import ALL_FOUR
    from contextecho.experiments.anchor import validation_table

    rates = pd.DataFrame({"axis": [*AXES, ALL_FOUR], "reweighted_rate": [0.5, float("nan"), 0.0, 1.0, 0.0]})
    per_axis = pd.DataFrame({"axis": list(AXES), "fleiss_kappa": [0.4, None, None, None], "n_all_valid": [3, 0, 2, 2],
                             "note": ["", "no turn has a valid verdict from every rater", "every verdict is one category",
                                      "every verdict is one category"]})
    table = validation_table(rates, per_axis).set_index("axis")
    assert table.loc[AXES[0], "note"] == ""
    assert table.loc[AXES[1], "note"] == ("no sampled turn has a majority verdict; "
                                          "Fleiss' κ: no turn has a valid verdict from every rater")
    assert table.loc[ALL_FOUR, "note"] == "Fleiss' κ: the raters' agreement is measured per axis"
    assert (table.loc[table["fleiss_kappa"].isna(), "note"] != "").all()
