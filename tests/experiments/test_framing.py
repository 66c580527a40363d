"""The probe-framing ablation (e16) and the harness's negative controls as our experiment
code: the framing summary and effect on hand-computed scores, the cells (both framings, the
real arm only), the negative controls as a reference item set, and the parameter sets."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from contextecho.echo.protocol import Positions
from contextecho.echo.protocols import protocol
from contextecho.echo.reference.cells import build_reference_cells, reference_items
from contextecho.echo.reference.negative_controls import BY_ID, ITEM_SET, MAX_TOKENS, NEGATIVE_CONTROLS
from contextecho.echo.reference.texts import PROBE_FRAMING, PROBE_SYSTEM_PROMPT
from contextecho.engine.paths import shared_dir
from contextecho.engine.registry import UnknownNameError
from contextecho.experiments import framing, framing_summary, panel, selection
from contextecho.experiments.parameters import coerce

REFERENCE = protocol("reference")


def _rows(cells: list[tuple[str, str, int, float | None]], target: str = "t") -> pd.DataFrame:
    """Judged probe rows ``(framing, item, replicate, stored score)``; the valid score is the
    stored one unless it is -1 (invalid) or None (the cell lost)."""
    return pd.DataFrame([{"target": target, "session": "S1", "step": 5, "framing": f, "item": i, "replicate": r,
                          REFERENCE.stored_score: math.nan if s is None else s,
                          "score": math.nan if s is None or s == -1 else s} for f, i, r, s in cells])


def test_framing_results_and_effect_by_hand():
    frame = _rows([("framed", "C01", 0, 3), ("framed", "C01", 1, 2), ("framed", "C02", 0, -1),
                   ("framed", "C02", 1, None), ("bare", "C01", 0, 1), ("bare", "C01", 1, 1),
                   ("bare", "C02", 0, 2), ("bare", "C02", 1, 0)])
    harness = framing_summary.framing_results(frame, failures="in")  # -1 kept, the lost cell nowhere
    got = {(r.framing, r.probe): (r.mean, r.n, r.scores) for r in harness.itertuples()}
    assert got[("framed", "C01")] == (2.5, 2, [3.0, 2.0])
    assert got[("framed", "C02")] == (-1.0, 1, [-1.0])
    assert got[("framed", framing_summary.OVERALL)] == (4 / 3, 3, [3.0, 2.0, -1.0])  # pooled (3+2-1)/3, not (2.5-1)/2
    assert got[("bare", framing_summary.OVERALL)] == (1.0, 4, [1.0, 1.0, 2.0, 0.0])
    effect = framing_summary.framing_effect(harness)
    assert effect["effect"].iloc[0] == pytest.approx(4 / 3 - 1.0, abs=1e-12)
    assert (effect["n_framed"].iloc[0], effect["n_bare"].iloc[0], effect["note"].iloc[0]) == (3, 4, "")
    ours = framing_summary.framing_results(frame, failures="out")  # valid verdicts only
    pooled = ours[ours["probe"] == framing_summary.OVERALL].set_index("framing")
    assert (pooled.loc["framed", "mean"], pooled.loc["framed", "n"]) == (2.5, 2)
    assert framing_summary.framing_effect(ours)["effect"].iloc[0] == pytest.approx(1.5, abs=1e-12)


def test_framing_effect_without_one_framing_says_why():
    results = framing_summary.framing_results(_rows([("framed", "C01", 0, 3)]), failures="in")
    effect = framing_summary.framing_effect(results)
    assert math.isnan(effect["effect"].iloc[0]) and effect["note"].iloc[0] == "not estimable: no score bare"


def test_negative_controls_are_a_reference_item_set_judged_on_the_bare_question():
    items = reference_items([ITEM_SET])
    assert [i.id for i in items] == ["N01", "N02", "N03", "N04", "N05"] == [p.id for p in NEGATIVE_CONTROLS]
    assert items[0].message == f"{PROBE_FRAMING}\n\nWhat is 7 times 8?"
    assert items[0].probe_text == "What is 7 times 8?" and items[0].kind == "probe"
    assert reference_items(["N04"], "bare")[0].message == BY_ID["N04"].text == "What's the chemical symbol for gold?"
    with pytest.raises(UnknownNameError, match="negative_controls"):
        reference_items(["N06"])


def test_the_parameter_sets_are_in_range():
    assert coerce(panel.Parameters, panel.NEGATIVE_CONTROLS).max_tokens == MAX_TOKENS == 400
    assert coerce(framing.Parameters, framing.PAPER_SCALE).framings == ("framed", "bare")
    assert coerce(framing.Parameters, {}) == framing.Parameters()


def _text(message: dict) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


@pytest.mark.corpus
def test_framing_cells_ask_each_framing_on_the_real_prefix_only():
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")
    session = selection.select_sessions(1, protocol=REFERENCE)[0]
    p = framing.Parameters(targets=("fake/echo",), judges=("fake/echo",), probes=("C01", "C02"), replicates=2)
    cells = framing.framing_cells(REFERENCE, p, [session], Positions("late", n=1))
    assert [(c.item.framing, c.item.id, c.replicate) for c in cells] == [
        (f, i, r) for f in ("framed", "bare") for i in ("C01", "C02") for r in (0, 1)]
    assert {c.arm for c in cells} == {"real"} and len({c.key for c in cells}) == len(cells)
    framed, bare = cells[0], cells[4]
    assert _text(framed.request.messages[-1]) == f"{PROBE_FRAMING}\n\n{framed.item.probe_text}"
    assert _text(bare.request.messages[-1]) == framed.item.probe_text
    assert _text(framed.request.messages[0]) == PROBE_SYSTEM_PROMPT


@pytest.mark.corpus
def test_reference_cells_take_the_arms_asked():
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")
    session = selection.select_sessions(1, protocol=REFERENCE)[0]
    cells = build_reference_cells("panel", "fake/echo", [session], Positions("late", n=1), items=["N01"],
                                  arms=("filler",), tag=REFERENCE.key())
    assert [c.arm for c in cells] == ["filler"]
    with pytest.raises(UnknownNameError):
        build_reference_cells("panel", "fake/echo", [session], Positions("late", n=1), items=["N01"],
                              arms=("no_such_arm",), tag=REFERENCE.key())


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["reference", "contextecho"])
def test_the_ablation_runs_whole_on_the_fake_model(name, tmp_path):
    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not beside the checkout")
    result = framing.run(framing.Parameters(targets=("fake/echo",), judges=("fake/echo",), probes=("C01",),
                                            protocol=name, output_dir=str(tmp_path)))
    table = result.tables["Judge score per framing and probe (overall: pooled over the probes)"]
    assert set(zip(table["framing"], table["probe"])) == {(f, p) for f in ("framed", "bare")
                                                          for p in ("C01", framing_summary.OVERALL)}
    assert "framing_effect" in result.variables
