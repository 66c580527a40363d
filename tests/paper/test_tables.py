"""Declared tables: human headers with units, a format per column, notes as footnotes, a
width that fits the page (split into parts beyond it)."""
import numpy as np
import pandas as pd
import pytest

from contextecho.paper.formats import COUNT, MODEL, PERCENT, POINTS, P_VALUE, TEXT, estimate
from contextecho.paper.tables import COLUMNS, WIDTH, Column, Table, column_width, row_width

GAPS = Table("drift_gaps", "Drift gap per target", (
    Column("Target", MODEL, "target"), Column("Gap Δ [95% CI]", estimate(POINTS), ("estimate", "ci_low", "ci_high")),
    Column("Compliant", PERCENT, "rate"), Column("Invalid verdicts", COUNT, "n_invalid")))


def frame() -> pd.DataFrame:
    return pd.DataFrame({"target": ["local/smollm2-135m", "openai/gpt-4o", "x/y"],
                         "estimate": [0.3567, np.nan, 0.1], "ci_low": [0.12, np.nan, 0.0],
                         "ci_high": [0.83, np.nan, 0.2], "rate": [41.666, np.nan, 0.0], "n_invalid": [19.0, 2.0, 0.0],
                         "note": ["", "not estimable: arm 'filler' has no valid verdict", "no interval: one unit"]})


def test_a_table_renders_human_headers_formatted_cells_and_its_notes_as_footnotes():
    text = GAPS.render(frame())
    lines = text.splitlines()
    assert lines[0] == "| Target | Gap Δ \\[95% CI\\] | Compliant (%) | Invalid verdicts |"
    assert lines[1].startswith("|:---") and lines[1].endswith(":|")  # text aligned left, numbers right
    assert lines[2] == "| smollm2-135m | 0.36 \\[0.12, 0.83\\] | 41.7 | 19 |"
    assert lines[3] == "| gpt-4o^a^ | — | — | 2 |"  # the note is a footnote, marked on the row
    assert lines[4] == "| y^b^ | 0.10 \\[0.00, 0.20\\] | 0.0 | 0 |"
    # the notes: one paragraph, a line each (a trailing backslash breaks it), so they stay with the table
    assert text.endswith("\n^a^ Not estimable: arm 'filler' has no valid verdict\\\n^b^ No interval: one unit\n")
    assert "note" not in lines[0]


def test_one_note_is_one_footnote_and_a_table_without_notes_has_none():
    f = frame()
    f.loc[2, "note"] = f.loc[1, "note"]
    text = GAPS.render(f)
    assert text.count("^a^") == 3 and "^b^" not in text  # two marks and the footnote
    assert "^" not in GAPS.render(f.drop(columns="note"))


def test_model_names_are_short_unless_two_read_alike():
    f = frame().assign(target=["openai/gpt-4o", "openrouter/openai/gpt-4o", "x/y"])
    assert "| openai/gpt-4o |" in GAPS.render(f) and "| openrouter/openai/gpt-4o^a^ |" in GAPS.render(f)


def test_a_cell_shows_its_text_and_never_markup():
    table = Table("t", "T", (Column("Step", TEXT, "step"), Column("n", COUNT, "n")))
    text = table.render(pd.DataFrame({"step": ["a|b *c* <d> @e", "x\ny"], "n": [1, 2]}))
    assert "| a\\|b \\*c\\* \\<d\\> \\@e | 1 |" in text and "| x y | 2 |" in text


def test_a_missing_required_column_is_named_an_optional_one_is_left_out():
    with pytest.raises(ValueError, match="table 'drift_gaps': column 'Compliant' reads 'rate'"):
        GAPS.render(frame().drop(columns="rate"))
    optional = Table("t", "T", (Column("Target", MODEL, "target"), Column("Ours", PERCENT, "ours", optional=True)))
    assert optional.render(frame()).splitlines()[0] == "| Target |"
    assert GAPS.render(frame().iloc[0:0].drop(columns="rate")).count("\n") == 2  # an empty table: its header


def test_a_table_wider_than_the_page_is_split_repeating_its_index_columns():
    wide = Table("wide", "A wide table", (Column("Target", MODEL, "target"), Column("Category", TEXT, "category"),
                                          *(Column(f"Gap {i} [95% CI]", estimate(POINTS), (f"g{i}", f"l{i}", f"h{i}"))
                                            for i in range(5)), Column("p", P_VALUE, "p")), index=2)
    f = pd.DataFrame({"target": ["hosted_vllm/Qwen/Qwen2.5-7B-Instruct"], "category": ["coding_self"], "p": [0.000123],
                      **{f"{c}{i}": [-2.75] for i in range(5) for c in "glh"}, "note": ["one note"]})
    layout = wide.layout(f)
    assert len(layout.parts) > 1 and all(part[:2] == (0, 1) for part in layout.parts)
    assert sorted({i for part in layout.parts for i in part}) == list(range(8))
    assert wide.fits(f) == []
    text = wide.render(f)
    # a paragraph, not a caption: Typst drops the caption of a table without an identifier
    assert text.count("\n*A wide table (continued)*\n") == len(layout.parts) - 1
    assert "\n: " not in text
    assert text.count("\n^a^ One note") == 1 and text.count("Qwen2.5-7B-Instruct^a^") == len(layout.parts)
    for part in layout.parts:
        assert len(part) <= COLUMNS and row_width([layout.widths[i] for i in part]) <= WIDTH


def test_the_width_check_names_a_part_that_cannot_fit():
    table = Table("t", "T", (Column("Target", MODEL, "target"), Column("Why", TEXT, "why")))
    f = pd.DataFrame({"target": ["x/" + "m" * 60], "why": ["w" * 40]})
    assert table.fits(f) and "table 't' part 1: 2 columns" in table.fits(f)[0]
    # A header wraps at its words onto two lines; a text cell wraps beyond 18 characters.
    assert column_width(Column("Invalid verdicts", COUNT, "n"), ["19"]) == 8 + 2  # with room to break
    assert column_width(Column("Why", TEXT, "w"), ["a few words " * 5]) == 18
