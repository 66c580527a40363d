import math

import pytest

from contextecho.cape.parsing import CONFLICT, EMPTY, ERROR, UNRECOGNISED, item_score, parse_answer
from contextecho.cape.prompts import PAPER_OPTIONS, WORDING_1, WORDING_2


@pytest.mark.parametrize("text", ["(B)", "B)", "B. Moderately Accurate", "B", "b", "(b)", "b)",
                                  " B.", "B: Moderately Accurate", "(B) Moderately Accurate.",
                                  "**B**", "B Moderately Accurate", "Moderately Accurate",
                                  "moderately accurate.", "'B'"])
def test_accepted_forms(text):
    parsed = parse_answer(text, PAPER_OPTIONS)
    assert parsed.valid and parsed.letter == "B"


@pytest.mark.parametrize("text, status", [
    ("", EMPTY), ("   \n", EMPTY), (None, ERROR),
    ("I would choose B", UNRECOGNISED), ("a good question", UNRECOGNISED),
    ("A person like me", UNRECOGNISED), ("Sure!", UNRECOGNISED), ("F)", UNRECOGNISED),
    ("Accurate", UNRECOGNISED), ("B. Very Inaccurate", CONFLICT), ("(A) Very Inaccurate", CONFLICT),
])
def test_garbage_is_invalid(text, status):
    parsed = parse_answer(text, PAPER_OPTIONS)
    assert not parsed.valid and parsed.letter is None and parsed.status == status


def test_wordings_follow_the_option_set_asked():
    assert parse_answer("Strongly disagree", WORDING_1).letter == "E"
    assert parse_answer("Agree", WORDING_1).letter == "B"
    assert parse_answer("Partially Misaligned", WORDING_2).letter == "D"
    assert parse_answer("Agree", PAPER_OPTIONS).status == UNRECOGNISED


def test_scoring_and_reverse_keying():
    assert [item_score(x, 1) for x in "ABCDE"] == [5, 4, 3, 2, 1]
    assert [item_score(x, -1) for x in "ABCDE"] == [1, 2, 3, 4, 5]
    assert math.isnan(item_score(None, 1))
    with pytest.raises(ValueError):
        item_score("A", 0)
