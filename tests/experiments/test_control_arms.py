"""Our control arms (shuffled_real, unrelated_session, scratch) as a choice of the panel's grid,
under both protocols; the default grid (real, filler) is unchanged by it. These are our arms,
not the harness's: e03 A1's conditions are :mod:`contextecho.echo.reference.context_source`."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contextecho.echo.protocol import PAIRED_ARMS, Grid, Positions
from contextecho.echo.protocols import protocol as get
from contextecho.echo.reference.control_arms import CONTROL_ARMS, shuffled_blocks
from contextecho.echo.reference.transcript import Block, joined, prefix_blocks, render_prefix, turn_index
from contextecho.experiments import panel, selection
from contextecho.experiments.parameters import ParameterError
from contextecho.stats.units import complete_units

ALL = ("real", "filler", *CONTROL_ARMS)
ITEMS = ["C01", "S2#01"]


def _params(protocol: str, arms=PAIRED_ARMS, **kw) -> panel.Parameters:
    return panel.Parameters(targets=("fake/echo",), judges=("fake/echo",), protocol=protocol, n_positions=2,
                            probes=("C01",), stressors=("S2#01",), window=3000, arms=arms, **kw)


def _cells(protocol: str, sessions, arms=None):
    p = _params(protocol, arms or PAIRED_ARMS)
    kw = {} if arms is None else {"arms": arms}
    return selection.build(get(protocol), p, "panel", sessions, ITEMS, positions=Positions("panel", n=2),
                           stressor_max_tokens=p.stressor_max_tokens, **kw)


def _text(message: dict) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


# ---------------------------------------------------------------- hand-made
def test_blocks_shuffle_within_their_role_and_the_summary_stays():
    blocks = [Block("SUMMARY", "s"), Block("USER", "u1"), Block("ASSISTANT", "a1"), Block("USER", "u2"),
              Block("ASSISTANT", "a2"), Block("USER", "u3")]
    out = shuffled_blocks(blocks, np.random.default_rng(3))
    assert [b.role for b in out] == [b.role for b in blocks] and out[0] == blocks[0]
    assert sorted(b.text for b in out) == sorted(b.text for b in blocks)
    assert joined(out, 5) == joined(out, 100)[-5:]


def test_paired_units_ignore_other_arms():
    frame = pd.DataFrame({"session": ["s"] * 4, "position": ["p"] * 4, "arm": ["real", "filler", "scratch", "scratch"],
                          "score": [1.0, 2.0, 3.0, 0.0]})
    kept, dropped = complete_units(frame)
    assert list(kept["arm"]) == ["real", "filler"] and dropped == 0
    assert complete_units(frame[frame.arm != "filler"])[1] == 1


def test_the_grid_asks_real_and_filler_unless_told():
    assert Grid(("C01",), Positions()).arms == PAIRED_ARMS == panel.Parameters().arms


def test_the_panel_refuses_arms_without_the_pair_or_unknown():
    with pytest.raises(ParameterError, match="lacks 'filler'"):
        _params("reference", ("real", "scratch"))
    with pytest.raises(ParameterError, match="not a known arm"):
        _params("contextecho", ("real", "filler", "shuffled"))


# ---------------------------------------------------------------- on the corpus
@pytest.mark.corpus
@pytest.mark.parametrize("protocol", ["contextecho", "reference"])
def test_control_arms_leave_the_default_cells_unchanged(corpus_dir, protocol):
    sessions = selection.select_sessions(2, protocol=get(protocol))
    default = _cells(protocol, sessions)
    assert {c.arm for c in default} == set(PAIRED_ARMS)
    every = _cells(protocol, sessions, ALL)
    assert {c.arm for c in every} == set(ALL)
    paired = [c for c in every if c.arm in PAIRED_ARMS]
    assert [c.key for c in paired] == [c.key for c in default]  # same requests, same cache keys, same order
    assert [c.request.messages for c in paired] == [c.request.messages for c in default]


@pytest.mark.corpus
def test_reference_control_arms(corpus_dir):
    sessions = selection.select_sessions(2, protocol=get("reference"))
    cells = _cells("reference", sessions, ALL)
    assert len({c.key for c in cells}) == len(cells)  # the reference keys name session, turn and arm
    by = {(c.session, c.position, c.item.id, c.arm): c for c in cells}
    for (session, position, item, arm), cell in by.items():
        if arm not in CONTROL_ARMS:
            continue
        real = by[(session, position, item, "real")]
        messages = cell.request.messages
        assert messages[0] == real.request.messages[0] and messages[-1] == real.request.messages[-1]  # system, item
        if arm == "scratch":
            assert len(messages) == 2 and cell.prefix.n_chars == 0
            continue
        text, real_text = _text(messages[1]), _text(real.request.messages[1])
        assert messages[2] == real.request.messages[2]  # the acknowledgement
        if arm == "shuffled_real":
            assert len(text) == len(real_text)  # windowed alike: the blocks' total length is the same
            assert len(real_text) == 3000 or sorted(text) == sorted(real_text)
            assert cell.prefix.source == real.prefix.source
        else:
            assert len(text) <= len(real_text) and not cell.prefix.source.startswith(session)
    # the shuffle on the harness's own blocks: same blocks, another order, as long as the real prefix
    session = sessions[0]
    rows = list(session.rows)
    index = turn_index(rows)
    turn = max(index) // 2
    blocks = prefix_blocks(rows, index, turn)
    assert joined(blocks, 3000) == render_prefix(rows, index, turn, 3000).text


@pytest.mark.corpus
def test_unrelated_session_needs_another_session(corpus_dir):
    for protocol in ("reference", "contextecho"):
        sessions = selection.select_sessions(1, protocol=get(protocol))
        with pytest.raises(ValueError, match="unrelated_session"):
            _cells(protocol, sessions, ("real", "filler", "unrelated_session"))


@pytest.mark.corpus
@pytest.mark.parametrize("protocol", ["contextecho", "reference"])
def test_a_panel_runs_with_every_arm(corpus_dir, scripted_models, tmp_path, protocol):
    p = panel.Parameters(targets=("scripted/x",), judges=("scripted/judge",), protocol=protocol, n_positions=2,
                         probes=("C01", "C02"), stressors=("S2#01",), window=2000, n_resamples=100,
                         output_dir=str(tmp_path / "out"), arms=ALL)
    run = panel.start(p)
    frame = panel.grid(run)
    assert set(frame["arm"]) == set(ALL)
    primary = panel.headline(run, frame)
    gaps = panel.drift_gaps(run, primary)
    assert len(gaps) == 1
    panel.trajectory(run, primary)
