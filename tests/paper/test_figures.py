"""The paper's figures: each draws what it is handed (counted through the Axes' artists)
and, where an estimate is missing, says why inside the image."""
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import seaborn.objects as so
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.text import Text

from contextecho.paper import figures

NAN = float("nan")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(fig) -> str:
    """Every text the figure shows (labels, ticks, notes, legends), one per line."""
    return "\n".join(t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text())


def flat(text: str) -> str:
    return " ".join(text.split())


def segments(ax) -> list:
    return [s for c in ax.collections if isinstance(c, LineCollection) for s in c.get_segments()]


def points(ax) -> np.ndarray:
    offsets = [c.get_offsets() for c in ax.collections if isinstance(c, PathCollection)]
    return np.concatenate(offsets) if offsets else np.empty((0, 2))


def gaps(**rows) -> pd.DataFrame:
    return pd.DataFrame({"target": ["anthropic/claude-sonnet-4-5", "openai/gpt-4o", "hosted_vllm/Qwen/Qwen2.5-7B"],
                         "estimate": [0.31, NAN, -0.12], "ci_low": [0.10, NAN, -0.40], "ci_high": [0.52, NAN, 0.20],
                         "note": ["", "not estimable: arm 'filler' has no valid verdict", ""], **rows})


def test_the_style_is_seaborns_theme_for_both_interfaces():
    figures.style()
    assert matplotlib.rcParams["savefig.dpi"] == figures.RC["savefig.dpi"]
    assert matplotlib.rcParams["axes.spines.right"] is False
    assert so.Plot.config.theme["axes.facecolor"] == matplotlib.rcParams["axes.facecolor"] == "white"


def test_a_model_string_is_labelled_by_its_model_name():
    assert figures.shown("hosted_vllm/Qwen/Qwen2.5-7B-Instruct") == "Qwen2.5-7B-Instruct"
    assert figures.shown("tfidf") == "tfidf" and figures.shown("C:Orderliness") == "C:Orderliness"


def test_forest_draws_one_interval_and_point_per_estimate_and_says_why_one_is_missing():
    fig = figures.forest(gaps(), label="target", xlabel="drift gap", reason="unused")
    ax = fig.axes[0]
    assert sorted(tuple(map(tuple, s)) for s in segments(ax)) == [((-0.4, 2.0), (0.2, 2.0)), ((0.1, 0.0), (0.52, 0.0))]
    assert sorted(points(ax)[:, 0]) == [-0.12, 0.31]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["claude-sonnet-4-5", "gpt-4o", "Qwen2.5-7B"]
    assert ax.get_xlabel() == "drift gap"
    assert "not estimable: arm 'filler' has no valid verdict" in flat(texts(fig))
    assert any(line.get_xdata()[0] == 0 for line in ax.lines)  # the zero line


def test_a_forest_without_rows_says_its_reason():
    for empty in (gaps().iloc[:0], pd.DataFrame()):
        fig = figures.forest(empty, label="target", xlabel="drift gap", reason="no headline probe was judged")
        assert "not estimable (no headline probe was judged)" in flat(texts(fig))
        assert not segments(fig.axes[0]) and not len(points(fig.axes[0]))


def test_forest_dodges_by_hue_and_notes_a_point_without_interval():
    frame = pd.DataFrame({"target": ["local/smollm2-135m"] * 2 + ["openai/gpt-4o"] * 2,
                          "analysis": ["complete case", "intention to treat"] * 2,
                          "delta": [0.05, 0.02, NAN, 0.10], "ci_low": [-0.02, -0.03, NAN, NAN],
                          "ci_high": [0.10, 0.08, NAN, NAN],
                          "note": ["", "", "not estimable: no cutpoint", "no interval: one cut"]})
    fig = figures.forest(frame, label="target", estimate="delta", hue="analysis", xlabel="Δ M2", reason="unused")
    ax = fig.axes[0]
    assert len(segments(ax)) == 2 and len(points(ax)) == 3
    ys = sorted(points(ax)[:, 1])
    assert ys[0] < 0 < ys[1] < 1 < ys[2]  # the two analyses of a target either side of its row
    shown = flat(texts(fig))
    assert "complete case: not estimable: no cutpoint" in shown
    assert "gpt-4o · intention to treat: no interval: one cut" in shown
    assert {"complete case", "intention to treat"} <= set(texts(fig).splitlines())


def test_forest_panels_share_rows_and_an_empty_panel_says_why():
    frame = gaps().assign(surface="probe surface")
    fig = figures.forest(frame, label="target", panel="surface", panels=("probe surface", "contract surface"),
                         xlabel="", reason="no contract was asked")
    probe, contract = fig.axes
    assert (probe.get_xlabel(), contract.get_xlabel()) == ("probe surface", "contract surface")
    assert len(segments(probe)) == 2 and not segments(contract)
    assert [t.get_text() for t in probe.get_yticklabels()] == ["claude-sonnet-4-5", "gpt-4o", "Qwen2.5-7B"]
    assert "not estimable (no contract was asked)" in flat(texts(fig))


def test_a_hue_level_keeps_its_colour_in_every_panel_and_one_legend_names_them():
    frame = pd.DataFrame({"intervention": ["a_anchor", "a_anchor", "a_anchor"], "target": ["x/one", "x/two", "x/two"],
                          "surface": ["probe", "probe", "contract"], "estimate": [0.1, 0.2, 5.0],
                          "ci_low": [0.0, 0.1, 2.0], "ci_high": [0.2, 0.3, 8.0]})
    fig = figures.forest(frame, label="intervention", hue="target", panel="surface", xlabel="", reason="unused")
    probe, contract = fig.axes

    def colour(ax, x):
        for c in ax.collections:
            if isinstance(c, PathCollection):
                for offset, face in zip(c.get_offsets(), c.get_facecolors()):
                    if offset[0] == x:
                        return tuple(face)
    assert colour(probe, 0.2) == colour(contract, 5.0) != colour(probe, 0.1)  # "two" alike in both panels
    assert not fig.legends and [t.get_text() for t in contract.get_legend().get_texts()] == ["one", "two"]


def test_a_figure_refuses_two_rows_for_one_point_and_names_a_missing_column():
    with pytest.raises(ValueError, match="two rows for one point"):
        figures.forest(pd.concat([gaps(), gaps()]), label="target", xlabel="", reason="")
    with pytest.raises(ValueError, match="no column 'ci_low'"):
        figures.forest(gaps().drop(columns="ci_low"), label="target", xlabel="", reason="")


def trajectory_frame() -> pd.DataFrame:
    return pd.DataFrame([{"target": t, "position": p, "arm": arm, "mean": m}
                         for t in ("local/smollm2-135m", "fake/echo") for p in (5, 10, 20)
                         for arm, m in (("real", 1.0 + p / 20), ("filler", 2.0))])


def data_lines(ax) -> list:
    return [line for line in ax.lines if len(line.get_xdata()) > 2 or line.get_marker() not in (None, "None", "")]


def test_trajectory_draws_one_line_per_target_and_arm_real_solid_filler_dashed():
    fig = figures.trajectory(trajectory_frame(), x="position", y="mean", hue="target", style="arm",
                             style_order=("real", "filler"), xlabel="snapshot position", ylabel="mean score",
                             reason="unused")
    ax = fig.axes[0]
    lines = [line for line in ax.lines if len(line.get_xdata()) == 3]
    assert len(lines) == 4
    styles = {(tuple(line.get_ydata()) == (2.0, 2.0, 2.0), line.get_linestyle()) for line in lines}
    assert styles == {(False, "-"), (True, "--")}  # real solid, filler dashed
    assert {"smollm2-135m", "echo", "real", "filler"} <= set(texts(fig).splitlines())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5", "10", "20"]


def test_trajectory_intervals_and_a_step_without_an_estimate():
    curve = pd.DataFrame({"target": ["local/smollm2-135m"] * 4, "step": [1, 5, 25, 125], "gap": [0.1, 0.3, NAN, 0.5],
                          "ci_low": [-0.1, 0.1, NAN, 0.2], "ci_high": [0.3, 0.5, NAN, 0.8],
                          "note": ["", "", "not estimable: no session reaches step 25", ""]})
    fig = figures.trajectory(curve, x="step", y="gap", hue="target", interval=("ci_low", "ci_high"), levels=(0,),
                             logx=True, xlabel="agent step", ylabel="gap", reason="unused")
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1 and len(bars[0].lines[2][0].get_segments()) == 3
    assert ax.get_xscale() == "log"
    assert "smollm2-135m · 25: not estimable: no session reaches step 25" in flat(texts(fig))
    empty = figures.trajectory(curve.assign(gap=NAN), x="step", y="gap", hue="target", interval=("ci_low", "ci_high"),
                               xlabel="agent step", ylabel="gap", reason="no step has valid verdicts in both arms")
    assert "not estimable (no step has valid verdicts in both arms)" in flat(texts(empty))
    assert not [c for c in empty.axes[0].containers if isinstance(c, ErrorbarContainer)]


def test_trajectory_panels_titles_reference_levels_and_a_baseline():
    summary = pd.DataFrame([{"arm": "checkpoint", "checkpoint": k, "facet": f, "retention": 0.1 * k}
                            for k in (1, 2) for f in ("O", "C")])
    fig = figures.trajectory(summary, x="checkpoint", y="retention", hue="facet", hue_order=("C", "O"), panel="arm",
                             titles={"checkpoint": "session prefix", "filler": "filler prefix"}, levels=(0.0, 1.0),
                             xlabel="checkpoint", ylabel="R", reason="no session has R")
    session, filler = fig.axes
    assert (session.get_title(), filler.get_title()) == ("session prefix", "filler prefix")
    assert len([line for line in session.lines if len(line.get_xdata()) == 2 and line.get_linestyle() == "-"]) == 2
    assert {tuple(line.get_ydata()) for line in session.lines if line.get_linestyle() == "--"} == {(0.0, 0.0), (1.0, 1.0)}
    assert "not estimable (no session has R)" in flat(texts(fig))  # the filler prefix was not asked
    decay = pd.DataFrame({"target": ["local/smollm2-135m"] * 3, "distance": [0, 4, 8], "mean_score": [1.5, 1.7, 2.0]})
    fig = figures.trajectory(decay, x="distance", y="mean_score", hue="target", xlabel="distance", ylabel="score",
                             baseline=pd.DataFrame({"target": ["local/smollm2-135m"], "mean_score": [1.2]}),
                             baseline_label="no intervention", reason="unused")
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines if tuple(line.get_ydata()) == (1.2, 1.2)] == ["no intervention"]
    assert "no intervention" in texts(fig).splitlines()


def test_before_after_draws_each_unit_and_the_mean():
    events = pd.DataFrame({"unit": ["a", "b", "c"], "pre": [0.1, 0.3, -0.2], "post": [0.2, NAN, 0.0]})
    mean = pd.DataFrame({"pre": [-0.05], "post": [0.1]})
    fig = figures.before_after(events, mean, before="pre", after="post", unit="unit", labels=("before", "after"),
                               ylabel="gap", reason="unused")
    ax = fig.axes[0]
    pairs = sorted(tuple(line.get_ydata()) for line in ax.lines if line.get_linestyle() == "-")
    assert pairs == [(-0.2, 0.0), (-0.05, 0.1), (0.1, 0.2)]  # the complete units and the mean
    assert [t.get_text() for t in ax.get_xticklabels()] == ["before", "after"] and "mean" in texts(fig).splitlines()
    none = figures.before_after(events.assign(post=NAN), None, before="pre", after="post", unit="unit",
                                labels=("before", "after"), ylabel="gap", reason="no event has both sides")
    assert "not estimable (no event has both sides)" in flat(texts(none))


def test_fingerprint_places_every_answer_and_labels_the_variance():
    frame = pd.DataFrame({"PC1": np.arange(6.0), "PC2": np.arange(6.0)[::-1], "arm": ["real", "filler"] * 3})
    fig = figures.fingerprint(frame, (0.413, 0.221), reason="unused")
    ax = fig.axes[0]
    assert len(points(ax)) == 6
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("PC1 (41% of variance)", "PC2 (22% of variance)")
    assert {"real", "filler"} <= set(texts(fig).splitlines())
    empty = figures.fingerprint(pd.DataFrame(), None, reason="2 answered probe(s); two components need three")
    assert "not estimable (2 answered probes; two components need three)" in flat(texts(empty))


def test_bars_draw_each_value_with_the_reference_and_note_a_missing_bar():
    frame = pd.DataFrame([{"family": f, "condition": c, "accuracy": v, "note": "" if v == v else "no item had a context"}
                          for (f, c), v in zip([(f, c) for f in ("tool_use", "file_edit") for c in ("long", "rag")],
                                               (0.5, NAN, 0.75, 1.0))])
    fig = figures.bars(frame, x="family", y="accuracy", hue="condition", ylim=(0, 1), reference=(0.25, "chance (0.25)"),
                       ylabel="accuracy", reason="unused")
    ax = fig.axes[0]
    heights = sorted(p.get_height() for p in ax.patches if p.get_width() > 0 and np.isfinite(p.get_height())
                     and p.get_height() > 0)
    assert heights == [0.5, 0.75, 1.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["tool use", "file edit"]
    assert any(tuple(line.get_ydata()) == (0.25, 0.25) for line in ax.lines)
    assert "chance (0.25)" in texts(fig).splitlines()
    assert "tool use · rag: no item had a context" in flat(texts(fig))
    empty = figures.bars(frame.assign(accuracy=NAN), x="family", y="accuracy", hue="condition", ylabel="accuracy",
                         reason="no item was kept")
    assert "not estimable (no item was kept)" in flat(texts(empty))


def test_agreement_shows_the_confusion_counts_and_the_gaps_or_why_not():
    confusion = pd.DataFrame([[5, 1, 0, 0], [2, 3, 1, 0], [0, 1, 4, 2], [0, 0, 1, 3]], index=range(4), columns=range(4))
    frame = pd.DataFrame({"target": ["local/smollm2-135m"] * 2, "rater": ["local/smollm2-135m", "tfidf"],
                          "gap": [0.2, 0.1], "ci_low": [0.0, -0.1], "ci_high": [0.4, 0.3]})
    fig = figures.agreement(confusion, frame, rows_label="local/smollm2-135m", columns_label="tfidf", label="target",
                            hue="rater", estimate="gap", xlabel="drift gap", reason_confusion="", reason_gaps="")
    heat, forest = fig.axes[:2]
    assert sorted(int(t.get_text()) for t in heat.texts) == sorted(confusion.to_numpy().ravel().tolist())
    assert (heat.get_ylabel(), heat.get_xlabel()) == ("smollm2-135m", "tfidf")
    assert len(segments(forest)) == 2 and len(points(forest)) == 2
    fig = figures.agreement(None, frame.iloc[:0], rows_label="a", columns_label="", label="target", hue="rater",
                            estimate="gap", xlabel="drift gap", reason_confusion="only one rater",
                            reason_gaps="no cell was rated")
    shown = flat(texts(fig))
    assert "not estimable (only one rater)" in shown and "not estimable (no cell was rated)" in shown


def test_a_figure_saves_as_png_and_pdf(tmp_path):
    from contextecho.paper.outputs import Outputs

    out = Outputs.open("demo", tmp_path / "demo")
    png = out.figure("forest", figures.forest(gaps(), label="target", xlabel="gap", reason="unused"))
    assert png.read_bytes()[:4] == b"\x89PNG" and png.with_suffix(".pdf").read_bytes()[:4] == b"%PDF"


def test_labelled_positions_are_drawn_in_the_order_given_never_sorted_as_text():
    frame = pd.DataFrame([{"target": "x/t", "position": p, "arm": a, "mean": m} for p, m in
                          (("P0_start", 1.0), ("c1_post", 3.0), ("c1_pre", 2.0)) for a in ("real", "filler")])
    fig = figures.trajectory(frame, x="position", y="mean", hue="target", style="arm", xlabel="position",
                             ylabel="score", reason="unused", order=["P0_start", "c1_pre", "c1_post"])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["P0_start", "c1_pre", "c1_post"]
    line = next(line for line in ax.lines if len(line.get_xdata()) == 3)
    assert list(line.get_ydata()) == [1.0, 2.0, 3.0]  # each value at its position's place
    plain = figures.trajectory(frame, x="position", y="mean", hue="target", xlabel="", ylabel="", reason="unused",
                               style="arm")  # no order: the frame's, not the alphabet's
    assert [t.get_text() for t in plain.axes[0].get_xticklabels()] == ["P0_start", "c1_post", "c1_pre"]


def test_every_figure_is_drawn_no_wider_than_the_pdf_page(tmp_path):
    """A figure wider than the text width is scaled down on the PDF page, its labels with it."""
    from PIL import Image

    wide = pd.concat([gaps(surface="probe"), gaps(surface="contract")])
    drawn = {"forest panels": figures.forest(wide, label="target", panel="surface", xlabel="", reason="unused"),
             "trajectory panels": figures.trajectory(trajectory_frame().assign(panel=lambda f: f["arm"]),
                                                     x="position", y="mean", hue="target", panel="panel", xlabel="",
                                                     ylabel="", reason="unused"),
             "bars": figures.bars(pd.DataFrame({"x": ["a", "b"], "h": ["u", "u"], "y": [0.1, 0.2]}), x="x", y="y",
                                  hue="h", ylabel="y", reason="unused"),
             "agreement": figures.agreement(pd.DataFrame([[1, 2], [3, 4]]), gaps().assign(rater="r"),
                                            rows_label="a", columns_label="b", label="target", hue="rater",
                                            xlabel="gap", reason_confusion="", reason_gaps="")}
    for name, fig in drawn.items():
        fig.savefig(tmp_path / f"{name}.png")
        width = Image.open(tmp_path / f"{name}.png").size[0] / matplotlib.rcParams["savefig.dpi"]
        assert width <= figures.TEXT_WIDTH + 0.25, f"{name}: {width:.2f} in"
