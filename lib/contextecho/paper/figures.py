"""Every figure of the paper, drawn with seaborn in one style (:func:`style`).

An experiment hands a figure function the numbers to show (a frame of estimates and their
95% intervals, of means, of coordinates) and saves the figure it returns through
:meth:`~contextecho.experiments.spine.Run.figure`; a figure function draws and never
estimates (a frame with two rows for one point is refused, not averaged).

A figure whose estimate is missing says so inside the image: a frame with nothing to draw
gives axes that carry ``not estimable (<reason>)``, the reason the experiment passes; a
row whose estimate is missing carries its own ``note`` at its place (a forest) or in a
note under the axes (the other figures). Category labels that are model strings
(``provider/model``) are shown by their model name alone.

The figures: :func:`forest` (estimates with intervals, one row per label), :func:`trajectory`
(lines over positions, steps or checkpoints), :func:`before_after` (paired before/after
values and their mean), :func:`fingerprint` (two principal components), :func:`bars`
(grouped bars with a reference line) and :func:`agreement` (a confusion heat map beside a
forest).
"""
from __future__ import annotations

import functools
import textwrap
import warnings
from typing import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import seaborn.objects as so
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .formats import model_name, not_estimable

#: The PDF page's text width in inches (Quarto's Typst article: US letter, 1.25 in margins). A
#: figure is drawn at most this wide, so the page prints it at its size and its 7-point labels
#: at 7 points; a wider one is scaled down to the text width, its labels with it.
TEXT_WIDTH = 6.0
#: seaborn's theme for the paper: its arguments to ``seaborn.set_theme``.
THEME = {"context": "paper", "style": "whitegrid", "palette": "colorblind"}
#: The matplotlib settings on top of the theme: sizes, resolution, layout.
RC = {"figure.dpi": 110, "savefig.dpi": 200, "font.size": 8, "axes.labelsize": 8, "axes.titlesize": 8,
      "xtick.labelsize": 7, "ytick.labelsize": 7, "legend.fontsize": 7, "legend.title_fontsize": 7,
      "axes.spines.top": False, "axes.spines.right": False, "figure.figsize": (TEXT_WIDTH, 3.6),
      "savefig.bbox": "tight",
      # long tick labels of one panel must not run into the next
      "figure.constrained_layout.use": True}
#: Reference lines (zero, chance, the bounds of a scale).
REFERENCE = {"color": "0.35", "lw": 0.9, "ls": "--", "zorder": 1}
#: Text that stands in for a missing estimate.
MISSING = {"color": "0.25", "fontsize": 7}
#: Behind a note written over the axes, so that grid lines do not cross it.
BACKING = {"facecolor": "white", "edgecolor": "none", "pad": 1.5}
#: Characters per line of a reason written inside a figure.
WRAP = 70
#: Distinct notes written under a figure's axes (the rest are counted).
MAX_NOTES = 4
#: The share of a forest row that the points of its ``hue`` levels spread over.
DODGE_WIDTH = 0.4


@functools.cache
def style() -> None:
    """Set the paper's one figure style, once per process: seaborn's :data:`THEME` with
    :data:`RC`, for seaborn's functions and its objects interface alike, on the
    non-interactive backend (a notebook shows the saved PNG). Every figure function sets
    it before it draws."""
    matplotlib.use("Agg", force=False)
    sns.set_theme(**THEME, rc=RC)
    so.Plot.config.theme.update(matplotlib.rcParams)


def shown(value) -> str:
    """A category as a figure labels it: a model string by its model name
    (``hosted_vllm/Qwen/Qwen2.5-7B-Instruct`` -> ``Qwen2.5-7B-Instruct``), anything else as is."""
    text = str(value)
    return model_name(text) if "/" in text else text


def _words(value) -> str:
    """A category as a bar chart labels it: :func:`shown`, with spaces for underscores (``tool use``)."""
    return shown(value).replace("_", " ")


def _check(frame: pd.DataFrame, columns: Sequence[str | None], figure: str) -> None:
    """Refuse a frame without the columns a figure reads (a frame without rows has nothing to
    read: it may come without columns, built from no rows)."""
    if frame.empty and not len(frame.columns):
        return
    missing = [c for c in columns if c is not None and c not in frame.columns]
    if missing:
        raise ValueError(f"figure {figure}: the frame has no column {missing[0]!r} "
                         f"(it has {', '.join(map(str, frame.columns)) or 'none'})")


def _one_per(frame: pd.DataFrame, keys: Sequence[str | None], figure: str) -> None:
    """Refuse a frame with two rows for one point: a figure draws numbers, it never averages them."""
    keys = [k for k in keys if k is not None]
    if frame.empty:
        return
    twice = frame[frame.duplicated(keys, keep=False)]
    if len(twice):
        where = ", ".join(f"{k}={twice.iloc[0][k]!r}" for k in keys)
        raise ValueError(f"figure {figure}: two rows for one point ({where}); "
                         "hand one value per point (the experiment aggregates, the figure draws)")


def _missing(ax, reason: str) -> None:
    """Say inside ``ax`` that its estimate is missing, and why."""
    ax.text(0.5, 0.5, textwrap.fill(not_estimable(reason), WRAP // 2 if ax.get_position().width < 0.45 else WRAP),
            transform=ax.transAxes, ha="center", va="center", **MISSING)
    ax.set_xticks([])
    if len(ax.get_shared_y_axes().get_siblings(ax)) == 1:  # a shared axis keeps the rows of its neighbours
        ax.set_yticks([])
    ax.grid(False)


def _characters(ax, fontsize: float = MISSING["fontsize"]) -> int:
    """How many characters of text at ``fontsize`` points a line as wide as ``ax`` holds (at most
    :data:`WRAP`; a character about 0.55 of its size wide)."""
    inches = ax.get_position().width * ax.figure.get_figwidth()
    return max(20, min(WRAP, int(inches * 72 / (fontsize * 0.55))))


def _subplots(*args, **kwargs):
    """``plt.subplots`` in the paper's style."""
    style()
    return plt.subplots(*args, **kwargs)


def _nothing(reason: str, *, figsize: tuple[float, float] | None = None, xlabel: str = "",
             ylabel: str = "") -> Figure:
    """A figure with nothing to draw: its axes say so, and why."""
    fig, ax = _subplots(figsize=figsize)
    _missing(ax, reason)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig


def _footnote(fig: Figure, notes: Sequence[tuple[str, str]]) -> None:
    """Under the axes, the points a figure could not draw and why (``(where, note)``
    pairs): one line per distinct note, naming the first few points it holds for."""
    where: dict[str, list[str]] = {}
    for place, note in notes:
        where.setdefault(note, []).append(place)
    lines = [f"{places[0]}: {note}" if len(places) == 1 else
             f"{note}: {'; '.join(places[:3])}" + (f" and {len(places) - 3} more" if len(places) > 3 else "")
             for note, places in where.items()]
    if lines:
        text = "\n".join(textwrap.fill(line, WRAP + 40) for line in lines[:MAX_NOTES])
        if len(lines) > MAX_NOTES:
            text += f"\n… and {len(lines) - MAX_NOTES} more notes (see the table)"
        fig.supxlabel(text, x=0.0, ha="left", **MISSING)


def _notes(frame: pd.DataFrame, value: str, keys: Sequence[str | None], missing: str = "no value") \
        -> list[tuple[str, str]]:
    """``(<keys>, <note>)`` for every row whose ``value`` is missing (``missing`` where it has no note)."""
    keys = [k for k in keys if k is not None]
    out = []
    for _, row in frame[frame[value].isna()].iterrows():
        note = str(row["note"]).strip() if "note" in frame and pd.notna(row["note"]) else ""
        out.append((" · ".join(shown(row[k]) for k in keys), note or missing))
    return out


def _readable(frame: pd.DataFrame, *columns: str | None) -> pd.DataFrame:
    out = frame.copy()
    for column in columns:
        if column is not None:
            out[column] = out[column].map(shown)
    return out


# ------------------------------------------------------------------------------ forest
def _forest_on(ax, rows: pd.DataFrame, *, label: str, order: list[str], estimate: str, hue: str | None,
               palette: dict, reason: str) -> list[tuple[str, str]]:
    """One forest on ``ax``: a point and a 95% interval per row (dodged by ``hue``, coloured
    by ``palette``); a row with no estimate at all carries its notes at its place. Returns
    the notes for under the axes: points drawn without an interval, and the missing
    ``hue`` levels of a row that has a point."""
    if rows.empty:
        _missing(ax, reason)
        return []
    drawn = rows.dropna(subset=[estimate]).assign(_width=DODGE_WIDTH)
    if len(drawn):
        plot = so.Plot(drawn, x=estimate, y=label, color=hue).scale(
            y=so.Nominal(order=order), color=so.Nominal(list(palette.values()), order=list(palette)))
        dodge = (so.Dodge(),) if hue else ()
        with warnings.catch_warnings():  # seaborn 0.13 passes pandas 3 a keyword it deprecates; harmless
            warnings.filterwarnings("ignore", message="The copy keyword is deprecated", module="seaborn")
            (plot.add(so.Range(), *dodge, xmin="ci_low", xmax="ci_high", width="_width")
             .add(so.Dot(pointsize=5), *dodge, width="_width").on(ax).plot())
        ax.figure.legends.clear()  # seaborn's figure legend; the hue's goes beside the axes (_hue_legend)
    else:
        ax.set_xticks([])
    ax.axvline(0, **REFERENCE)
    ax.set_yticks(range(len(order)), order)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_ylabel("")
    lost = rows[rows[estimate].isna()]
    empty = lost[~lost[label].isin(set(drawn[label]))]
    for position, g in empty.groupby(label, sort=False):
        said = [(f"{h}: " if hue else "") + (str(n).strip() if pd.notna(n) and str(n).strip() else "no estimate")
                for h, n in zip(g[hue] if hue else [None] * len(g), g["note"] if "note" in g else [None] * len(g))]
        ax.text(0.01, order.index(position), textwrap.fill("; ".join(said), _characters(ax)),
                transform=ax.get_yaxis_transform(),
                ha="left", va="center", bbox=BACKING, **MISSING)
    no_interval = drawn[drawn[["ci_low", "ci_high"]].isna().any(axis=1)]
    return (_notes(no_interval.assign(**{estimate: np.nan}), estimate, [label, hue], "no interval")
            + _notes(lost[lost[label].isin(set(drawn[label]))], estimate, [label, hue], "no estimate"))


def forest(frame: pd.DataFrame, *, label: str, xlabel: str, reason: str, estimate: str = "estimate",
           hue: str | None = None, panel: str | None = None, panels: Sequence[str] = ()) -> Figure:
    """Estimates with their 95% intervals (``estimate``, ``ci_low``, ``ci_high``), one row
    per ``label`` top to bottom in the frame's order, dodged by ``hue``, a dashed line at
    zero. With ``panel``, one forest per panel value side by side (``panels`` first, in
    their order, then any other), sharing the rows, each panel's value its x label;
    otherwise ``xlabel``. A row without an estimate shows its ``note``; a forest without
    rows says ``reason``."""
    _check(frame, [label, estimate, "ci_low", "ci_high", hue, panel], "forest")
    rows = _readable(frame, label, hue) if len(frame) else frame
    _one_per(rows, [label, hue, panel], "forest")  # as labelled: two models of one name are two rows
    order = list(dict.fromkeys(rows[label])) if len(rows) else []
    palette = _palette(rows[hue] if hue and len(rows) else ())
    names = list(dict.fromkeys([*panels, *(rows[panel] if panel and len(rows) else ())])) if panel else [xlabel]
    names = names or [xlabel]
    tall = 1.1 + 0.42 * max(1, len(order)) * (1.4 if hue else 1.0)
    fig, axes = _subplots(1, len(names), figsize=(TEXT_WIDTH, tall), sharey=True,
                          squeeze=False)
    notes: list[tuple[str, str]] = []
    for ax, name in zip(axes[0], names):
        part = rows[rows[panel] == name] if panel and len(rows) else rows
        notes += _forest_on(ax, part, label=label, order=order, estimate=estimate, hue=hue, palette=palette,
                            reason=reason)
        ax.set_xlabel(textwrap.fill(name, _characters(ax, RC["axes.labelsize"])))
    _hue_legend(axes[0][-1], palette)
    _footnote(fig, notes)
    return fig


def _palette(levels) -> dict:
    """A colour for each level, in order of appearance (one mapping for every panel of a figure)."""
    levels = list(dict.fromkeys(levels))
    return dict(zip(levels, sns.color_palette(n_colors=max(1, len(levels)))))


def _hue_legend(ax, palette: dict) -> None:
    """A point of each ``hue`` level's colour, beside ``ax``."""
    if palette:
        handles = [Line2D([], [], color=color, marker="o", label=level) for level, color in palette.items()]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


# -------------------------------------------------------------------------- trajectory
def trajectory(frame: pd.DataFrame, *, x: str, y: str, hue: str, xlabel: str, ylabel: str, reason: str,
               order: Sequence[str] | None = None, hue_order: Sequence[str] | None = None, style: str | None = None, style_order: Sequence[str] | None = None, panel: str | None = None,
               titles: dict | None = None,
               interval: tuple[str, str] | None = None, levels: Sequence[float] = (),
               ylim: tuple[float, float] | None = None, logx: bool = False,
               baseline: pd.DataFrame | None = None, baseline_label: str = "") -> Figure:
    """One line per ``hue`` (in ``hue_order``, then any other) and ``style`` (solid for the
    first level of ``style_order``, dashed for the next) of ``y`` against ``x``, one value
    per point as given. A numeric ``x`` is drawn at its values; labels (positions of a
    session) in ``order`` (their order in the session), then in order of appearance, one
    tick each, never sorted as text. With ``interval`` (two columns)
    each point's 95% interval; ``levels``: dashed reference lines; ``panel``: one panel per
    value side by side (``titles`` names them); ``baseline`` (``hue`` and ``y`` columns):
    a dashed horizontal line per ``hue`` in its colour, labelled ``baseline_label``. Points
    without a value are listed under the axes with their ``note``; nothing to draw says
    ``reason``."""
    lo, hi = interval or (None, None)
    _check(frame, [x, y, hue, style, panel, lo, hi], "trajectory")
    if frame.empty:
        return _nothing(reason, xlabel=xlabel, ylabel=ylabel)
    rows = _readable(frame, hue)
    _one_per(rows, [x, hue, style, panel], "trajectory")
    labels = None if pd.api.types.is_numeric_dtype(rows[x]) else list(dict.fromkeys([*(order or ()), *rows[x]]))
    at = x if labels is None else "_at"  # where a point is drawn: a label at its place in the order
    if labels is not None:
        rows[at] = rows[x].map({label: number for number, label in enumerate(labels)})
    if panel:
        rows[panel] = rows[panel].map(lambda v: (titles or {}).get(v, v))
    panels = list(dict.fromkeys([*((titles or {}).values() if panel else ()), *(rows[panel] if panel else [None])]))
    fig, axes = _subplots(1, len(panels), figsize=(TEXT_WIDTH, 3.0) if panel else None, sharey=True, squeeze=False)
    palette = _palette([*(shown(h) for h in hue_order or ()), *rows[hue]])
    hues = list(palette)
    styles = list(dict.fromkeys([*(style_order or ()), *rows[style]])) if style else None
    drawn_any = False
    for k, (ax, name) in enumerate(zip(axes[0], panels)):
        part = rows[rows[panel] == name] if panel else rows
        drawn = part.dropna(subset=[y]).sort_values(at)
        if drawn.empty:
            _missing(ax, reason)
        else:
            drawn_any = True
            marks = {"style": style, "style_order": styles, "markers": True, "dashes": True} if style else \
                {"marker": "o"}
            sns.lineplot(drawn, x=at, y=y, hue=hue, hue_order=hues, palette=palette, estimator=None, errorbar=None,
                         legend=k == len(panels) - 1, ax=ax, **marks)
            if interval:
                for level, g in drawn.dropna(subset=[lo, hi]).groupby(hue, sort=False):
                    ax.errorbar(g[at], g[y], yerr=[g[y] - g[lo], g[hi] - g[y]], fmt="none", capsize=2.5,
                                ecolor=palette[level], elinewidth=1)
            for value in levels:
                ax.axhline(value, **REFERENCE)
            if baseline is not None and len(baseline):
                shown_baseline = _readable(baseline, hue)
                for level, value in zip(shown_baseline[hue], shown_baseline[y]):
                    ax.axhline(value, color=palette.get(level, "0.3"), ls="--", lw=1.2,
                               label=f"{baseline_label} · {level}" if len(hues) > 1 else baseline_label)
            if logx:
                ax.set_xscale("log")
            if labels is not None:
                ax.set_xticks(range(len(labels)), labels)
            else:
                _whole_ticks(ax, rows[x])
        ax.set_title(name if panel else "")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel if k == 0 else "")
        if ylim:
            ax.set_ylim(*ylim)
    if drawn_any:
        last = axes[0][-1]
        handles, labels = last.get_legend_handles_labels()
        if handles:
            last.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if not drawn_any:  # the reason says that nothing is drawn; the notes, where there are any, say why
        rows = rows[rows["note"].fillna("").astype(str).str.strip() != ""] if "note" in rows else rows.iloc[:0]
    _footnote(fig, _notes(rows, y, [panel, hue, style, x]))
    return fig


def _whole_ticks(ax, values: pd.Series) -> None:
    """Ticks at each of a few whole-number ``values`` (steps, checkpoints, distances), in plain numbers."""
    ticks = np.sort(pd.to_numeric(values, errors="coerce").dropna().unique())
    if 0 < len(ticks) <= 12 and np.allclose(ticks, np.round(ticks)):
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


# ------------------------------------------------------------------------ before/after
def before_after(events: pd.DataFrame, mean: pd.DataFrame | None, *, before: str, after: str, unit: str,
                 labels: tuple[str, str], ylabel: str, reason: str) -> Figure:
    """Paired values: one grey line per ``unit`` from its ``before`` to its ``after`` value,
    and ``mean`` (one row, the same two columns) as a black line; a dashed line at zero.
    ``labels`` names the two sides. No complete pair says ``reason``."""
    _check(events, [before, after, unit], "before_after")
    _one_per(events, [unit], "before_after")
    complete = events.dropna(subset=[before, after]) if len(events) else events
    if complete.empty:
        return _nothing(reason, figsize=(5.0, 3.4), ylabel=ylabel)
    fig, ax = _subplots(figsize=(5.0, 3.4))
    long = complete.melt(id_vars=[unit], value_vars=[before, after], var_name="side", value_name="value")
    long["side"] = long["side"].map({before: 0, after: 1})
    sns.lineplot(long, x="side", y="value", units=unit, estimator=None, errorbar=None, color="0.55",
                 marker="o", alpha=0.7, lw=1, ax=ax)
    if mean is not None and len(mean):
        _check(mean, [before, after], "before_after (mean)")
        sns.lineplot(x=[0, 1], y=[mean[before].iloc[0], mean[after].iloc[0]], color="black", marker="s", lw=2.5,
                     label="mean", ax=ax)
    ax.axhline(0, **REFERENCE)
    ax.set_xticks([0, 1], labels)
    ax.set_xlim(-0.3, 1.3)
    ax.set_xlabel("")
    ax.set_ylabel(ylabel)
    return fig


# ------------------------------------------------------------------------- fingerprint
def fingerprint(frame: pd.DataFrame, explained: Sequence[float] | None, *, hue: str = "arm",
                reason: str) -> Figure:
    """Each row at its first two principal components (``PC1``, ``PC2``), colour and
    marker by ``hue``; the axis labels give each component's share of the variance
    (``explained``, fractions). No row says ``reason``."""
    _check(frame, ["PC1", "PC2", hue], "fingerprint")
    if frame.empty or explained is None:
        return _nothing(reason, figsize=(4.8, 3.8))
    fig, ax = _subplots(figsize=(4.8, 3.8))
    sns.scatterplot(_readable(frame, hue), x="PC1", y="PC2", hue=hue, style=hue, alpha=0.6, ax=ax)
    ax.set_xlabel(f"PC1 ({100 * explained[0]:.0f}% of variance)")
    ax.set_ylabel(f"PC2 ({100 * explained[1]:.0f}% of variance)")
    ax.legend(title="")
    return fig


# -------------------------------------------------------------------------------- bars
def bars(frame: pd.DataFrame, *, x: str, y: str, hue: str, ylabel: str, reason: str, xlabel: str = "",
         order: Sequence[str] | None = None, hue_order: Sequence[str] | None = None,
         ylim: tuple[float, float] | None = None, reference: tuple[float, str] | None = None) -> Figure:
    """Grouped bars: one bar per ``hue`` within each ``x``, its height ``y`` as given;
    ``reference`` (value, label): a dashed line across. Bars without a value are listed
    under the axes with their ``note``; nothing to draw says ``reason``."""
    _check(frame, [x, y, hue], "bars")
    if frame.empty or frame[y].isna().all():
        return _nothing(reason, figsize=(TEXT_WIDTH, 3.0), ylabel=ylabel)
    rows = frame.assign(**{x: frame[x].map(_words), hue: frame[hue].map(_words)})
    _one_per(rows, [x, hue], "bars")
    fig, ax = _subplots(figsize=(TEXT_WIDTH, 3.0))
    order = [_words(o) for o in order] if order is not None else list(dict.fromkeys(rows[x]))
    hue_order = [_words(h) for h in hue_order] if hue_order is not None else list(dict.fromkeys(rows[hue]))
    sns.barplot(rows, x=x, y=y, hue=hue, order=order, hue_order=hue_order, errorbar=None, ax=ax)
    if reference:
        ax.axhline(reference[0], **{**REFERENCE, "zorder": 3}, label=reference[1])
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(title="", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    _footnote(fig, _notes(rows, y, [x, hue]))
    return fig


# --------------------------------------------------------------------------- agreement
def agreement(confusion: pd.DataFrame | None, gaps: pd.DataFrame, *, rows_label: str, columns_label: str,
              label: str, hue: str, xlabel: str, reason_confusion: str, reason_gaps: str,
              estimate: str = "estimate") -> Figure:
    """Left: ``confusion`` (counts, one rater's scores as rows, the other's as columns) as
    an annotated heat map; right: a forest of ``gaps`` (rows ``label``, dodged by ``hue``).
    A side with nothing to show says its reason."""
    fig, (left, right) = _subplots(1, 2, figsize=(TEXT_WIDTH, 3.2), width_ratios=(1, 1.3))
    if confusion is None or confusion.empty or not confusion.to_numpy().sum():
        _missing(left, reason_confusion)
    else:
        sns.heatmap(confusion, annot=True, fmt="d", cmap="Greys", cbar=False, square=True, linewidths=0.5,
                    linecolor="white", ax=left, annot_kws={"fontsize": 7})
        left.set_xlabel(shown(columns_label))
        left.set_ylabel(shown(rows_label))
        left.tick_params(axis="y", rotation=0)
    _check(gaps, [label, estimate, "ci_low", "ci_high", hue], "agreement")
    rows = _readable(gaps, label, hue) if len(gaps) else gaps
    _one_per(rows, [label, hue], "agreement")
    palette = _palette(rows[hue] if len(rows) else ())
    notes = _forest_on(right, rows, label=label, order=list(dict.fromkeys(rows[label])) if len(rows) else [],
                       estimate=estimate, hue=hue, palette=palette, reason=reason_gaps)
    _hue_legend(right, palette)
    right.set_xlabel(xlabel)
    _footnote(fig, notes)
    return fig
