"""Sentences generated from the numbers, the claims the prose makes about them, and the
rendered tables' missing values: what ``paper-check`` reads."""
import pandas as pd
import pytest

from contextecho.paper import claims
from contextecho.paper.formats import not_estimable
from contextecho.paper.sentences import estimates, joined, listing, measures_nothing, reason_of
from contextecho.paper.formats import COEFFICIENT, COUNT, MODEL
from contextecho.paper.tables import Column, Table, explained_if_empty, unexplained_missing


def test_a_degenerate_estimate_is_one_plain_sentence_with_its_reason_and_fix():
    assert measures_nothing("the contrast", "every pair differs by 0", "a capable target") == (
        "On this build the contrast measures nothing: every pair differs by 0; a capable target would make it a "
        "measurement.")
    with pytest.raises(ValueError, match="needs why"):
        measures_nothing("the contrast", " ", "a capable target")


def test_a_reason_is_read_back_named_once_and_never_nested():
    why = not_estimable("the arm was not asked (arms parameter)")
    assert why == "not estimable (the arm was not asked, arms parameter)"  # its own parentheses flattened
    assert reason_of(why) == "the arm was not asked, arms parameter" and reason_of("0.36") is None
    one = not_estimable("no valid verdict")
    assert listing([("O", "1.00"), ("E", one), ("C", "0.00"), ("N", one)]) == (
        "1.00 (O) and 0.00 (C); E and N not estimable: no valid verdict")
    assert joined(["a"]) == "a" and joined(["a", "b", "c"]) == "a, b and c" and joined([]) == ""


def test_estimates_with_their_intervals_name_each_reason_once():
    few = not_estimable("bootstrap by 'item' needs at least 2 units")
    # an estimate and its interval that share a reason: the reason once, not twice
    assert estimates([("the discrete verdicts", few, few), ("expected scores", "0.00", "[−0.01, 0.01]")]) == (
        "0.00, 95% CI [−0.01, 0.01], under expected scores; "
        "not estimable under the discrete verdicts: bootstrap by 'item' needs at least 2 units")
    assert estimates([("a", few, few), ("b", few, few)]) == (
        "not estimable under a and b: bootstrap by 'item' needs at least 2 units")
    assert estimates([("a", "0.36", few)]) == "0.36 under a, without an interval: bootstrap by 'item' needs at least 2 units"
    assert "(" not in estimates([("a", few, few)])  # never a reason inside parentheses


@pytest.mark.parametrize(("condition", "expected"), [
    ("abs(p.gap) < 0.4", True), ("p.gap > 0.5", False), ("low(p.ci) > 0 and high(p.ci) < 1", True),
    ("p.est < 0.5 or p.n >= 10", True), ("p.pct == 41.7", True), ("p.protocol == 'reference'", True),
    ("p.missing is not estimable", True), ("p.gap is not estimable", False), ("low(p.est) == 0.12", True),
])
def test_a_claim_reads_numbers_intervals_percentages_and_missing_values(condition, expected):
    variables = {"p": {"gap": "−0.36", "ci": "[0.12, 0.83]", "est": "0.36 [0.12, 0.83]", "n": 2, "pct": "41.7%",
                       "protocol": "reference", "missing": not_estimable("no unit")}}
    assert claims.holds(condition, variables) is expected


def test_a_claim_that_cannot_be_read_says_why():
    with pytest.raises(claims.ClaimError, match="'p.nope' is not generated"):
        claims.holds("p.nope > 1", {"p": {}})
    with pytest.raises(claims.ClaimError, match="no comparison"):
        claims.holds("p.gap", {"p": {"gap": 1}})
    assert claims.check("f:1", 'x [y]{claim="p.gap > 1"}', {"p": {"gap": "0.5"}})[0].startswith(
        "f:1: claim 'p.gap > 1' is false")


def test_a_split_table_is_joined_by_row_before_its_missing_values_are_judged():
    split = ("| Target | Session | Pairs |\n|:--|:--|--:|\n| t^a^ | S1 | 1 |\n| t | S2 | 1 |\n\n*T (continued)*\n\n"
             "| Target | Session | Cond. |\n|:--|:--|--:|\n| t^a^ | S1 | — |\n| t | S2 | — |\n\n^a^ Why.\n")
    assert unexplained_missing(split) == ["column 'Cond.' is all '—' and no footnote says why on every row"]
    assert unexplained_missing(split.replace("| t | S2", "| t^a^ | S2")) == []
    assert unexplained_missing("| A | B |\n|:--|:--|\n| — | — |\n") == []  # text columns name a row


def test_a_bare_header_is_refused_and_an_empty_table_is_one_row_that_says_why():
    table = Table("t", "T", (Column("Judge A", MODEL, "judge_a"), Column("Turns", COUNT, "n_turns"),
                             Column("κ", COEFFICIENT, "kappa")))
    empty = pd.DataFrame(columns=["judge_a", "n_turns", "kappa"])
    assert unexplained_missing(table.render(empty)) == [
        "the table has a header and no row: write one row whose footnote says why it is empty"]
    shown = explained_if_empty(empty, "one judge: no pair of judges to compare", judge_a="m/one")
    rendered = table.render(shown)
    assert unexplained_missing(rendered) == [] and "one judge: no pair of judges to compare" in rendered.lower()
    assert "| one^a^ | — | — |" in rendered  # the model named without its provider, the footnote marked
    full = pd.DataFrame({"judge_a": ["a"], "n_turns": [3], "kappa": [0.5]})
    assert explained_if_empty(full, "unused") is full
