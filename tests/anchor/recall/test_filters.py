import pytest

from contextecho.anchor.recall.filters import HARD, INVALID, MAIN, calibrate_recall, filter_counts, validate_with_history
from contextecho.anchor.recall.filters import blind_filter
from contextecho.anchor.recall.items import RecallItem


def item(k: int, answer: int) -> RecallItem:
    return RecallItem(id=f"f/{k}", session_id="s", family="f", question="q?",
                      options=("w", "x", "y", "z"), answer=answer, option_steps=(1, 2, 3, 4),
                      source_steps=(1,), decision_step=5)


ITEMS = [item(0, 0), item(1, 1), item(2, 2)]


def test_validation_needs_min_agree_evaluators_recovering_the_answer():
    answers = {"m1": ["A", "B", "A"], "m2": [0, "The answer is B.", None],
               "m3": ["A", "C", "garbled"], "m4": ["B", "B", "C"]}
    result = validate_with_history(ITEMS, answers, min_agree=3)
    assert result.recovered == {"f/0": 3, "f/1": 3, "f/2": 1}
    assert [i.id for i in result.kept] == ["f/0", "f/1"]
    assert [i.id for i in result.discarded] == ["f/2"]
    assert result.n_unreadable == 2  # None and "garbled"


@pytest.mark.parametrize("answers, min_agree, message", [
    ({}, 1, "at least one evaluator"), ({"m": ["A", "B", "C"]}, 2, "min_agree=2"),
    ({"m": ["A"]}, 1, "1 answers for 3 items")])
def test_validation_rejects_bad_shapes(answers, min_agree, message):
    with pytest.raises(ValueError, match=message):
        validate_with_history(ITEMS, answers, min_agree=min_agree)


def test_calibration_verdicts_by_hand():
    runs = [["A", "A", None], ["A", "C", None], ["A", "A", "C"], ["A", "B", None], ["B", "D", None]]
    out = {c.item.id: c for c in calibrate_recall(ITEMS, runs)}
    assert out["f/0"].verdict == MAIN and out["f/0"].modal_share == 0.8 and out["f/0"].accuracy == 0.8
    assert out["f/1"].verdict == HARD and out["f/1"].modal_share == 0.4 and out["f/1"].accuracy == 0.2
    assert out["f/2"].verdict == INVALID and out["f/2"].n_readable == 1 and out["f/2"].accuracy == 1 / 5


def test_a_stably_wrong_item_is_main_and_the_threshold_is_inclusive():
    out = calibrate_recall([item(0, 0)], [["B"], ["B"], ["B"], ["B"], ["A"]])
    assert out[0].verdict == MAIN and out[0].accuracy == 0.2
    assert calibrate_recall([item(0, 0)], [["B"], ["B"], ["B"], ["A"], ["A"]])[0].verdict == HARD


def test_filter_counts_add_up():
    blind = blind_filter(ITEMS, ["A", "garbled", None])
    validation = validate_with_history(list(blind.kept), {"m": ["B", "A"]}, min_agree=1)
    calibration = calibrate_recall(list(validation.kept), [["B"]] * 5)
    rows = {r["step"]: r for r in filter_counts(blind, validation, calibration)}
    assert rows["blind filter"]["kept"] == 2 and rows["blind filter"]["discarded"] == 1
    assert rows["with-history validation"]["kept"] == 1
    assert rows["calibration: main"]["kept"] == 1
    for r in rows.values():
        assert r["kept"] + r["discarded"] == r["in"]
