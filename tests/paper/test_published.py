"""The published numbers: loading with validation, the printed precision, the comparison."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from contextecho.paper.published import (ANALYSIS_MISSING, COLUMNS, NOT_REGENERATED, PublishedError,
                                         PublishedNumber, compare, load_published, printed_precision,
                                         unavailable_reason)


def record(id_: str, value, printed: str, **kw) -> dict:
    return {"id": id_, "section": "s", "where": "a sentence", "quantity": "q", "value": value, "printed": printed,
            "relation": "=", "unit": "judge points (0-3 rubric)", "kind": "result", **kw}


def number(id_: str, value, printed: str, **kw) -> PublishedNumber:
    return PublishedNumber(**record(id_, value, printed, **kw))


@pytest.mark.parametrize("printed, exact_integers, expected", [
    ("2.91", True, 0.005), ("+0.00", True, 0.005), (".950", True, 0.0005), ("0.000", True, 0.0005),
    ("82.1%", True, 0.05), ("+20.3 pp", True, 0.05), ("6.83×", True, 0.005), ("$12.40", True, 0.005),
    ("<0.001", True, 0.0005), ("~3,000", True, 0.0), ("1,242", True, 0.0), ("1,242", False, 0.5),
    ("9%", False, 0.5), ("five", False, 0.0), ("±0.08", True, 0.005),
])
def test_printed_precision_is_half_the_last_digit(printed, exact_integers, expected):
    assert math.isclose(printed_precision(printed, exact_integers=exact_integers), expected)


def test_integer_precision_follows_the_kind():
    assert number("a", 1242, "1,242", kind="count", unit="count (user turns)").precision == 0
    assert number("b", 22, "22", kind="result", unit="count (targets)").precision == 0
    assert number("c", 9, "9%", kind="result", unit="percent").precision == 0.5


def test_the_projects_copy_loads_and_matches_its_source():
    numbers = load_published()
    assert len(numbers) == 494 and len({n.id for n in numbers}) == 494
    by_id = {n.id: n for n in numbers}
    assert by_id["intro.v1.n_cells"].value == 41921 and by_id["intro.v1.n_cells"].printed == "41,921"
    assert by_id["appU.vllm_version"].value is None
    assert isinstance(by_id["intro.rep_session.agent_steps"].also_in, tuple)


def write(tmp_path, lines: list[str]):
    path = tmp_path / "numbers.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("bad, reason", [
    ("{not json", "not JSON"),
    (json.dumps(record("b", 1.0, "1.0", relation="~")), "relation '~'"),
    (json.dumps(record("b", "2.91", "2.91")), "value must be a finite number"),
    (json.dumps({k: v for k, v in record("b", 1.0, "1.0").items() if k != "unit"}), "missing field(s) unit"),
    (json.dumps(record("b", 1.0, "1.0", colour="red")), "unknown field(s) colour"),
    (json.dumps(record("b", 2.19, "2.91")), "is not the number printed"),
    (json.dumps(record("a", 1.0, "1.0")), "id 'a' is already on line 1"),
])
def test_a_malformed_line_is_named_with_file_and_line(tmp_path, bad, reason):
    path = write(tmp_path, [json.dumps(record("a", 2.91, "2.91")), "", bad])
    with pytest.raises(PublishedError) as err:
        load_published(path)
    assert f"{path}:3:" in str(err.value) and reason in str(err.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(PublishedError, match="no published numbers here"):
        load_published(tmp_path / "absent.jsonl")


PUBLISHED = [
    number("gap", 2.91, "2.91"),
    number("cells", 1242, "1,242", kind="count", unit="count (cells)"),
    number("share", 82.1, "82.1%", unit="percent"),
    number("onset", 0.68, "+0.68"),
    number("onset.ci_low", 0.28, "+0.28"),
    number("onset.ci_high", 1.08, "+1.08"),
    number("p", 0.001, "<0.001", relation="<", unit="p-value"),
    number("tokens", 78, "~78", relation="≈", unit="tokens", kind="design"),
    number("missing", 0.4, "0.40", analysis="archive/x/ (cited by the paper; not in the repository at 5f8dba3)"),
    number("plain", 0.4, "0.40"),
    number("estimable", 0.4, "0.40"),
]


def test_comparison_rows_agree_disagree_and_say_why_one_is_missing():
    ours = {"gap": 2.914, "cells": 1241, "share": 82.149, "onset": 0.95, "p": 0.0004, "tokens": 85,
            "estimable": "not estimable: one position"}
    frame = compare(PUBLISHED, ours).set_index("id")
    assert list(compare(PUBLISHED, ours).columns) == list(COLUMNS)
    assert frame.loc["gap", "agrees"] and math.isclose(frame.loc["gap", "difference"], 0.004)
    assert frame.loc["gap", "rule"] == "±0.005" and frame.loc["gap", "printed"] == "2.91"
    assert not frame.loc["cells", "agrees"] and frame.loc["cells", "rule"] == "exact"
    assert frame.loc["share", "agrees"]
    # +0.95 is not +0.68 to the printed precision, but it is inside the printed CI [+0.28, +1.08]
    assert not frame.loc["onset", "within_precision"] and frame.loc["onset", "within_ci"]
    assert frame.loc["onset", "agrees"] and "CI [+0.28, +1.08]" in frame.loc["onset", "rule"]
    assert frame.loc["p", "agrees"] and frame.loc["tokens", "agrees"]  # 85 is within 10% of ~78
    assert pd.isna(frame.loc["gap", "within_ci"])
    assert frame.loc["missing", "reason"] == ANALYSIS_MISSING and pd.isna(frame.loc["missing", "agrees"])
    assert frame.loc["plain", "reason"] == NOT_REGENERATED and pd.isna(frame.loc["plain", "ours"])
    assert frame.loc["estimable", "reason"] == "not estimable: one position"
    assert frame["agrees"].dtype == "boolean" and frame["ours"].dtype == "float64"


def test_disagreement_at_the_edge_of_the_printed_precision():
    frame = compare(PUBLISHED, {"gap": 2.9051, "share": 82.2, "p": 0.001, "tokens": 86.0}).set_index("id")
    assert frame.loc["gap", "agrees"]  # 2.9051 prints as 2.91
    assert not frame.loc["share", "agrees"]  # 82.2 is not 82.1 ± 0.05
    assert not frame.loc["p", "agrees"]  # p < 0.001 is strict
    assert not frame.loc["tokens", "agrees"]  # 86 is more than 10% above ~78
    frame = compare(PUBLISHED, {"onset": 1.2}).set_index("id")
    assert not frame.loc["onset", "within_ci"] and not frame.loc["onset", "agrees"]


def test_ours_must_name_published_numbers_and_be_numbers_or_reasons():
    with pytest.raises(KeyError, match="not published numbers: gapp"):
        compare(PUBLISHED, {"gapp": 2.91})
    with pytest.raises(TypeError, match="must be a number or a reason"):
        compare(PUBLISHED, {"gap": [2.91]})
    assert compare(PUBLISHED, {"gap": float("nan")}).set_index("id").loc["gap", "reason"].startswith("not estimable")


def test_every_record_has_a_reason_when_we_give_nothing():
    frame = compare(load_published(), {})
    assert frame["reason"].notna().all() and frame["agrees"].isna().all()
    assert unavailable_reason(number("v", None, "0.9.2", unit="version")).startswith("not a number")
