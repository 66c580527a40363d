"""Published vs regenerated: the paper's numbers recomputed from the authors' released cells.

The authors released their per-cell evaluations (the Hugging Face dataset
``contextecho2026/persona-drift-contextecho``; ``python -m contextecho released fetch``), laid out
as the harness's runners write them. This notebook reads such a tree (``released``: the folder
holding its ``results/``, ``results_v2_candidate/`` or ``data_archive/``; ``make paper
RELEASED=DIR``) with :func:`~contextecho.echo.reference.released.import_release` (every bad,
unknown or duplicate file named and counted, none fatal), re-runs the paper's analyses on the
released cells as the harness's plotting scripts run them, and sets each number the paper prints
(``data/published/numbers.jsonl``, :mod:`contextecho.paper.published`) beside ours. No model is
called: every score is the one the release stores.

* **The panel's Fig.-2 forest** (``plotting/fig2_forest_panelwide.py``): per target, the
  Coding-Self probes C01–C05 at the 12 panel positions of ``results/probes_at_crosscompaction``,
  each arm's two-stage clustered bootstrap (seed 42, ``n_resamples``), every stored score read,
  the judge's −1 included as the figure's loader reads it, and the gap filler − claude_session
  (:func:`~.harness_forests.harness_table`).
  From it too: how many targets the panel has (both arms), how many cover all 12 positions, how
  many drift by at least a printed threshold, and the extreme gaps over the full-coverage ones.
* **The onset curve** (``plotting/fig_app_onset.py``): per target and step, the Coding-Self cells
  of ``results/drift_onset`` (the replicates ``_vNN`` pooled), the unclustered bootstrap of the
  gap with one generator across the steps and the targets in the figure's order
  (:data:`ONSET_PLOT_TARGETS`, then any other, :func:`~.harness_forests.harness_curve`). The n=5
  pilot reads replicate 0 alone, as the pilot had no other.
* **The S2 audit** (``analysis/audit_compliance_all_cells.py``): the S2 cells of the
  cross-compaction runs (Session 1) and of e09's two sessions, its four Anthropic targets, each
  reply scored by the harness's ``is_no_preamble``: per target the compliance-rate gap filler −
  claude_session (percentage points) over the pairs stored in both arms, and per session the
  verbosity ratio on the pairs compliant in both arms and their count
  (:func:`~contextecho.stats.judge_free.harness_compliance_audit`).
* **The framing ablation** (e16's own summary, ``run.py:141-176``): per framing and probe the
  mean of every stored score (−1 included) over the replicates, per framing the mean of all its
  scores (pooled), and the effect with − without framing, pooled and per probe (the framing
  notebook's own :func:`~.framing_summary.framing_results`, on :func:`framing_frame`).
* **The cross-judge audit** (``run_crossjudge_audit.py``: GPT-5 re-judges the panel's
  Coding-Self cells at P5_pre_C6): per target and judge, the drift gap filler − claude_session of
  the audit's records, each judge's −1 averaged in, as the audit computes its panel-wide gaps
  (``RESULTS.json``; the per-target figure script is not in the fixtures, so its rule is taken to
  be the same, per target) (:func:`audit_gaps`).

* **The release's own counts**: its cells (the JSON files under ``results/``) and its sessions
  (``data/sessions/``), counted as ``released fetch`` counts them, beside the paper's counts for
  the revision its receipt names (``released fetch`` writes one beside the tree); a tree of another
  revision, or without a receipt, says so rather than being compared.
* **The design the paper states** (from the instruments, with or without a release): the probe
  suite's size, its categories and the probes in each, the rubric's levels, the S2 wordings per
  cell, the prefix window in characters and the panel's positions, each read from the reference
  protocol's own texts and constants (``echo/reference``, the harness's), so a paper and a protocol
  that describe different designs disagree in the table.

A published number is matched to ours by what its record says (:data:`RULES`: its quantity, its
target and its position), never by its id, so a number added to the file is matched by the same
rules. Each published number without ours says why: no release given, its cells not in this
release, or an analysis this notebook does not regenerate (the record's own reason where it
gives one). ``agrees``: within the printed precision, or within the published interval where the
paper prints one (:func:`~contextecho.paper.published.compare`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from ..echo.reference.released import (CROSS_JUDGE, ONSET_CELLS, PANEL_CELLS, PROBE, STRESSOR, ImportReport,
                                       ReleasedCell, import_release)
from ..echo.reference.judge import VALID_SCORES
from ..echo.reference.release_fetch import ReleaseCounts, ReleaseError, count_release, read_receipt, receipt_path
from ..echo.reference.scorers import is_no_preamble
from ..echo.reference.texts import PROBES, S2_VARIANTS
from ..echo.reference.transcript import DEFAULT_WINDOW
from ..engine.calls import Transport
from ..paper.declared import Declared
from ..paper.formats import COUNT, FLAG, MINUS, MISSING_CELL, TEXT
from ..paper.published import CELLS_NOT_RELEASED, PublishedNumber, compare, load_published, printed_decimals
from ..paper.show import Result
from ..paper.tables import Column, Table, explained_if_empty
from ..paper.variables import Variable
from ..stats.judge_free import StressorCell, harness_audit_session, harness_compliance_audit
from ..stats.session_validation import HARNESS_ARMS
from . import spine
from .framing_summary import BARE, FRAMED, OVERALL, framing_results
from .harness_forests import FOREST_POSITIONS, harness_curve, harness_table
from .parameters import NON_NEGATIVE, RESAMPLES, Checked, Folder, resolve_path
from .scores import failure_column
from .spine import Run, Stage

TITLE = "Published vs regenerated: the paper's numbers from the authors' released cells"
#: The reason of every published number when no release is given.
NO_RELEASE = "no release given (make paper RELEASED=DIR)"
#: The Coding-Self probes the forest and the onset read (``fig2_forest_panelwide.py``, ``run_onset.py``).
CODING_SELF = ("C01", "C02", "C03", "C04", "C05")
#: The other results folders the analyses read (the panel's and the onset's are the release
#: layout's, :data:`~contextecho.echo.reference.released.PANEL_CELLS`; the S2 audit reads its own
#: folders wherever they are, :data:`_S2_AUDITED`).
AUDIT_CELLS = "results/crossjudge_audit"
#: e16's folder, and its two framings' folders as ours (``experiments/e16_probe_framing_ablation/run.py``).
FRAMING_CELLS = "results/probe_framing_ablation"
RELEASED_FRAMINGS = {"with_framing": FRAMED, "without_framing": BARE}
#: The audit's two judges: the column of each in :func:`audit_frame`, by a word of the record's ``judge``.
AUDIT_JUDGES = {"gpt-5": "gpt5", "claude-sonnet-4-6": "sonnet"}
#: The onset figure's targets, in the order it draws them (``plotting/fig_app_onset.py``: one
#: generator across them in turn); a target not listed is drawn after them, by name.
ONSET_PLOT_TARGETS = ("claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-1", "claude-haiku-4-5")
#: The paper's scale: the harness's figures' bootstrap (a release is given as ``released``:
#: ``make paper RELEASED=DIR``).
PAPER_SCALE = {"n_resamples": 10_000, "resample_seed": 42}
#: The S2 audit's targets, in its order (``analysis/audit_compliance_all_cells.py`` ``TARGETS``:
#: the four Anthropic targets; it reads no other), and its sessions.
S2_AUDIT_TARGETS = ("claude-sonnet-4-6", "claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5")
S2_AUDIT_SESSIONS = ("Session 1", "Session 2", "Session 3")
#: The S2 folders the audit reads: the cross-compaction runners' (Session 1) and e09's two sessions.
_S2_AUDITED = re.compile(r"(^|/)(cross_compaction|cross_session/(chainassemble|proeng))$")
#: Our arm names for the harness's folder names.
OUR_ARMS = {harness: ours for ours, harness in HARNESS_ARMS.items()}
_ONSET_STEP = re.compile(r"^T(\d+)$")


@dataclass(frozen=True)
class Parameters(Checked):
    released: str = ""
    n_resamples: int = 10_000
    resample_seed: int = 42
    output_dir: str = ""
    plan: bool = False

    HELP = {"released": "the release's folder (holding results/ or data_archive/, as `released fetch` writes it); "
                        "empty: no release, every published number but the design's listed with that reason",
            "n_resamples": "bootstrap resamples (the harness's figures: 10,000)",
            "resample_seed": "the bootstrap's seed (the harness's figures: 42)",
            "output_dir": "default paper/_generated/<notebook>",
            "plan": "true: print what the run would call (this notebook calls no model: nothing) and stop; "
                    "the release is not read"}
    RANGES = {"released": Folder("no release"), "n_resamples": RESAMPLES, "resample_seed": NON_NEGATIVE}


# ---------------------------------------------------------------- the released cells as frames
def probe_frame(cells: Sequence[ReleasedCell], experiment: str, items: Sequence[str] = CODING_SELF) -> pd.DataFrame:
    """The judged probe cells of ``experiment`` (a results folder, root-relative) as the primary
    frame the harness statistics read: target (the release's folder name), session, step,
    position, arm (ours: real, filler), item, replicate, ``score`` (a valid verdict, 0–3) and
    the score the harness stored (:func:`~.scores.failure_column` ``"in"``: its −1 kept)."""
    stored = failure_column("in")
    rows = []
    for cell in cells:
        ident = cell.identity
        if cell.kind != PROBE or ident.experiment != experiment or ident.item not in items \
                or ident.arm not in OUR_ARMS or ident.intervention is not None:
            continue
        step = _step(cell)
        rows.append({"target": ident.target, "session": ident.session or "S1", "step": step,
                     "position": ident.position, "arm": OUR_ARMS[ident.arm], "item": ident.item,
                     "replicate": ident.replicate, "score": float(cell.score) if cell.score in (0, 1, 2, 3) else math.nan,
                     stored: float(cell.score) if cell.score is not None else math.nan,
                     "path": cell.provenance.path})
    return pd.DataFrame(rows, columns=["target", "session", "step", "position", "arm", "item", "replicate", "score",
                                       stored, "path"])


def _step(cell: ReleasedCell) -> int:
    """The cell's turn: the record's, else the onset label's number, else the forest's order."""
    turn = cell.stored.get("turn")
    if isinstance(turn, int) and not isinstance(turn, bool):
        return turn
    if isinstance(turn, str) and turn.isdigit():
        return int(turn)
    found = _ONSET_STEP.match(cell.identity.position or "")
    if found:
        return int(found[1])
    position = cell.identity.position
    return FOREST_POSITIONS.index(position) if position in FOREST_POSITIONS else -1


def audit_frame(cells: Sequence[ReleasedCell]) -> pd.DataFrame:
    """The cross-judge audit's records: target, arm (ours), item, and each judge's stored score
    (``sonnet``: the panel's judge, ``gpt5``: the second; −1 kept)."""
    rows = [{"target": c.identity.target, "arm": OUR_ARMS.get(c.identity.arm, c.identity.arm), "item": c.identity.item,
             "sonnet": float(c.stored["sonnet_score"]), "gpt5": float(c.score)}
            for c in cells if c.kind == CROSS_JUDGE and c.identity.experiment == AUDIT_CELLS]
    return pd.DataFrame(rows, columns=["target", "arm", "item", "sonnet", "gpt5"])


def audit_gap(records: pd.DataFrame, judge: str) -> float:
    """Filler mean − real mean of ``judge``'s scores (−1 averaged in, as ``RESULTS.json``'s
    ``panel_drift_gap_<judge>_judge``); NaN without both arms."""
    means = records.groupby("arm")[judge].mean()
    return float(means["filler"] - means["real"]) if {"real", "filler"} <= set(means.index) else math.nan


def audit_gaps(records: pd.DataFrame) -> pd.DataFrame:
    """Per target of the audit's records: each judge's gap (:func:`audit_gap`) and the arms' counts."""
    rows = [{"target": target, **{f"{judge}_gap": audit_gap(g, judge) for judge in AUDIT_JUDGES.values()},
             "n_real": int((g["arm"] == "real").sum()), "n_filler": int((g["arm"] == "filler").sum())}
            for target, g in records.groupby("target", sort=True)]
    return pd.DataFrame(rows, columns=["target", *(f"{j}_gap" for j in AUDIT_JUDGES.values()), "n_real", "n_filler"])


def s2_audit(cells: Sequence[ReleasedCell]) -> dict | None:
    """The S2 audit of the released cells the harness's audit reads (module doc); None where the
    release holds none of them."""
    chosen = []
    for c in cells:
        ident = c.identity
        if c.kind != STRESSOR or c.layout != "s2" or not _S2_AUDITED.search(ident.experiment) \
                or ident.target not in S2_AUDIT_TARGETS or c.response_text is None:
            continue
        session = harness_audit_session(ident.session)
        length = c.response_len if isinstance(c.response_len, int) else len(c.response_text)
        chosen.append(StressorCell(ident.target, session, ident.position or "", ident.item,
                                   OUR_ARMS.get(ident.arm, ident.arm), is_no_preamble(c.response_text), length))
    return harness_compliance_audit(chosen, targets=S2_AUDIT_TARGETS, sessions=S2_AUDIT_SESSIONS) if chosen else None


def framing_frame(cells: Sequence[ReleasedCell]) -> pd.DataFrame:
    """e16's released cells as the primary frame :func:`~.framing_summary.framing_results` reads:
    target, framing (ours), item, replicate and the score the harness stored (its −1 kept)."""
    stored = failure_column("in")
    rows = [{"target": c.identity.target, "framing": RELEASED_FRAMINGS[c.identity.arm], "item": c.identity.item,
             "session": "S1", "step": 0, "replicate": c.identity.replicate, stored: float(c.score)}
            for c in cells if c.layout == "framing" and c.identity.experiment == FRAMING_CELLS
            and c.identity.arm in RELEASED_FRAMINGS and c.score is not None]
    return pd.DataFrame(rows, columns=["target", "framing", "item", "session", "step", "replicate", stored])


@dataclass(frozen=True)
class Regenerated:
    """What the analyses gave: the forest (a row per target), the onset curve and its pilot
    (a row per target and step), the cross-judge audit's gaps (a row per target), the S2
    audit (:func:`s2_audit`; None without its cells), the framing summary, and the release's
    counts with the revision its receipt names (None: no receipt, so not counted)."""

    forest: pd.DataFrame
    onset: pd.DataFrame
    pilot: pd.DataFrame
    audit: pd.DataFrame
    s2: dict | None = None
    framing: pd.DataFrame | None = None
    counts: ReleaseCounts | None = None
    revision: str | None = None


def regenerate(cells: Sequence[ReleasedCell], *, n_resamples: int, seed: int) -> Regenerated:
    """The forest, the onset curves and the audit's gaps from the released cells (module doc)."""
    panel = probe_frame(cells, PANEL_CELLS)
    panel = panel[panel["position"].isin(FOREST_POSITIONS)]
    forest = harness_table(panel, n_resamples=n_resamples, seed=seed, failures="in",
                           positions=FOREST_POSITIONS) if len(panel) else pd.DataFrame(columns=["target", "gap"])
    onset = probe_frame(cells, ONSET_CELLS)
    curves = []
    for frame in (onset, onset[onset["replicate"] == 0]):
        order = [t for t in ONSET_PLOT_TARGETS if t in set(frame["target"])]
        order += sorted(set(frame["target"]) - set(order))
        curves.append(harness_curve(frame, n_resamples=n_resamples, seed=seed, failures="in", targets=order)
                      if len(frame) else pd.DataFrame(columns=["target", "step", "harness_gap", "harness_lo",
                                                               "harness_hi", "harness_n"]))
    return Regenerated(forest, *curves, audit_gaps(audit_frame(cells)), s2_audit(cells),
                       framing_results(framing_frame(cells), failures="in"))


# ---------------------------------------------------------------- published number -> ours
#: ``read(record, groups, regenerated)``: ours, or why there is none; ``groups`` the named groups
#: of the record's quantity and position matches.
Reader = Callable[[PublishedNumber, Mapping[str, str], Regenerated], "float | str"]


#: Where a rule's number comes from: the released cells' analyses, or the instruments' design.
FROM_RELEASE, FROM_INSTRUMENTS = "released cells", "instruments"


@dataclass(frozen=True)
class Rule:
    """Which published numbers one analysis regenerates: the record's ``quantity`` matches
    ``quantity`` and its ``position`` matches ``position`` (and it names a target, where
    ``per_target``); ``read`` gives ours (or why not), from ``source``: the released cells
    (:data:`FROM_RELEASE`, only with a release) or the instruments (:data:`FROM_INSTRUMENTS`)."""

    name: str
    quantity: re.Pattern
    position: re.Pattern
    read: Reader
    per_target: bool = True
    source: str = FROM_RELEASE


def _forest_gap(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
    rows = done.forest[done.forest["target"] == record.target_safe]
    if not len(rows) or not (rows["n_real"].iloc[0] and rows["n_filler"].iloc[0]):
        return f"{CELLS_NOT_RELEASED}: no {PANEL_CELLS}/{record.target_safe} cells of both arms"
    return float(rows["gap"].iloc[0])


def _covered(done: Regenerated, full: bool = False) -> pd.DataFrame:
    """The forest's targets with cells of both arms (``full``: at every one of the 12 positions)."""
    forest = done.forest
    if not len(forest) or "n_real" not in forest:
        return forest.iloc[:0]
    both = forest[(forest["n_real"] > 0) & (forest["n_filler"] > 0)]
    if full:
        both = both[(both["n_positions_real"] == len(FOREST_POSITIONS))
                    & (both["n_positions_filler"] == len(FOREST_POSITIONS))]
    return both


def _forest_summary(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
    """A number over the forest's targets: how many (with both arms, or full coverage), how many
    drift at least a threshold (signed or in size), the smallest or largest gap over the
    full-coverage targets."""
    full = "full" in groups
    covered = _covered(done, full=full)
    if not len(covered):
        return f"{CELLS_NOT_RELEASED}: no {PANEL_CELLS} target with cells of both arms" + \
            (f" at all {len(FOREST_POSITIONS)} positions" if full else "")
    if "threshold" in groups:
        gaps = covered["gap"].abs() if groups.get("size") else covered["gap"]
        return float((gaps >= float(groups["threshold"]) - 1e-12).sum())
    if "which" in groups:
        return float(covered["gap"].min() if groups["which"] == "minimum" else covered["gap"].max())
    return float(len(covered))


def _onset_rows(record: PublishedNumber, done: Regenerated, pilot: bool) -> pd.DataFrame | str:
    curve = done.pilot if pilot else done.onset
    rows = curve[(curve["target"] == record.target_safe) & curve["harness_gap"].notna()]
    if not len(rows):
        return f"{CELLS_NOT_RELEASED}: no {ONSET_CELLS}/{record.target_safe} cells of both arms"
    return rows


def _onset_step(column: str) -> Reader:
    def read(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
        step = int(groups["step"])
        rows = _onset_rows(record, done, pilot="pilot" in groups)
        if isinstance(rows, str):
            return rows
        at = rows[rows["step"] == step]
        return float(at[column].iloc[0]) if len(at) else \
            f"{CELLS_NOT_RELEASED}: no {ONSET_CELLS}/{record.target_safe}/T{step:04d} cells of both arms"
    return read


def _onset_extreme(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
    rows = _onset_rows(record, done, pilot=False)
    if isinstance(rows, str):
        return rows
    return float(rows["harness_gap"].min() if groups["which"] == "minimum" else rows["harness_gap"].max())


def _audit_signs(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
    """Over the audited targets (records of both arms): how many, and how many whose two judges'
    gaps agree in sign (both positive, both negative or both null), reverse it, or are null
    under exactly one judge."""
    audited = done.audit[(done.audit["n_real"] > 0) & (done.audit["n_filler"] > 0)] if len(done.audit) else done.audit
    if not len(audited):
        return f"{CELLS_NOT_RELEASED}: no {AUDIT_CELLS} records of both arms"
    first, second = (np.sign(audited[f"{j}_gap"].round(9)) for j in ("sonnet", "gpt5"))
    counts = {"audited": len(audited), "agreeing": int((first == second).sum()),
              "reversing": int((first * second < 0).sum()), "null": int(((first == 0) ^ (second == 0)).sum())}
    return float(counts[groups["which"]])


def _audit_gap(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
    judges = [column for word, column in AUDIT_JUDGES.items() if word in (record.judge or "")]
    if len(judges) != 1:
        return f"not regenerated by this project: names {len(judges)} judges, not one"
    rows = done.audit[done.audit["target"] == record.target_safe]
    if not len(rows) or not (rows["n_real"].iloc[0] and rows["n_filler"].iloc[0]):
        return f"{CELLS_NOT_RELEASED}: no {AUDIT_CELLS}/{record.target_safe} records of both arms"
    return float(rows[f"{judges[0]}_gap"].iloc[0])


_NO_S2 = f"{CELLS_NOT_RELEASED}: no S2 cells the audit reads (cross_compaction, cross_session/chainassemble|proeng)"


def _s2_gap(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
    counts = (done.s2 or {}).get("per_target", {}).get(record.target_safe)
    if not counts or not counts["real"][1]:
        return f"{_NO_S2}: none of {record.target_safe} in both arms"
    (c_pass, c_n), (f_pass, f_n) = counts["real"], counts["filler"]
    return 100.0 * (f_pass / f_n - c_pass / c_n)


def _s2_session(field: str) -> Reader:
    def read(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
        ratios = (done.s2 or {}).get("ratios_by_session", {})
        sessions = [f"Session {groups['session']}"] if groups.get("session") else list(S2_AUDIT_SESSIONS)
        missing = [s for s in sessions if s not in ratios]
        if missing:
            return f"{_NO_S2}: none of {', '.join(missing)} in both arms"
        return float(sum(ratios[s][field] for s in sessions))
    return read


def _release_count(field: str) -> Reader:
    """A count of the release (cells or sessions), for the revision the published number names."""
    def read(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
        if done.revision != groups["rev"]:
            read_as = f"the revision {done.revision}" if done.revision else "a tree with no receipt naming its revision"
            return f"another revision of the release: this build read {read_as}; the number is {groups['rev']}'s"
        return float(getattr(done.counts, field))  # counted whenever a revision is known (analyses)
    return read


def _framing(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated) -> float | str:
    """With − without framing of the record's target (its reverse where the record reads it
    so), pooled or on one probe."""
    results = done.framing if done.framing is not None else pd.DataFrame(columns=["target", "framing", "probe", "mean"])
    probe = groups.get("probe", OVERALL)
    own = results[(results["target"] == record.target_safe) & (results["probe"] == probe)].set_index("framing")["mean"]
    if not {FRAMED, BARE} <= set(own.index):
        return f"{CELLS_NOT_RELEASED}: no {FRAMING_CELLS} cells of {record.target_safe} under both framings"
    effect = float(own[FRAMED] - own[BARE])
    return -effect if "without_first" in groups else effect


ANY = re.compile(r"")
_STEP = r"(?P<step>\d+)"
#: The published numbers this notebook regenerates, by what their records say.
RULES: tuple[Rule, ...] = (
    Rule("panel forest summary", re.compile(
        r"^(target models in the panel|(?P<full>full)-coverage targets|targets with (?P<size>\|)?gap\|? >= "
        r"(?P<threshold>[\d.]+)|(?P<which>minimum|maximum) panel drift gap \((?P<full2>full)-coverage targets\))$"),
        ANY, _forest_summary, per_target=False),
    Rule("panel forest gap", re.compile(r"^(position-averaged (panel )?drift gap|(minimum|maximum) (\w+ )?panel "
                                        r"(drift )?gap)\b"), re.compile(r"^mean over 12 positions"), _forest_gap),
    Rule("onset gap", re.compile(rf"^drift gap at step {_STEP}(?P<pilot>, n=5 pilot)?( \(restated\))?$"), ANY,
         _onset_step("harness_gap")),
    Rule("onset interval low", re.compile(r"^95% bootstrap CI low$"), re.compile(rf"^onset step {_STEP}\b"),
         _onset_step("harness_lo")),
    Rule("onset interval high", re.compile(r"^95% bootstrap CI high$"), re.compile(rf"^onset step {_STEP}\b"),
         _onset_step("harness_hi")),
    Rule("audit sign counts", re.compile(r"^((?P<which>audited) targets|targets (?P<which2>agreeing|reversing)( in)? sign"
                                         r"|targets with (?P<which3>null) gap under one judge|(?P<which4>null)-versus-"
                                         r"small targets)$"), ANY, _audit_signs, per_target=False),
    Rule("audit gap", re.compile(r"^(drift gap at P5 \(audit-only sample\)|drift gap, [\w-]+ judge \(n=5\)|"
                                 r"n=5 audit gap, [\w-]+ judge)"), re.compile(r"^P5_pre_C6\b"), _audit_gap),
    Rule("S2 compliance gap", re.compile(r"^S2 compliance-rate gap, 3 sessions pooled$"), ANY, _s2_gap),
    Rule("S2 conditional ratio", re.compile(r"^conditional-on-compliance verbosity ratio, Session (?P<session>\d)$"),
         ANY, _s2_session("cond_ratio"), per_target=False),
    Rule("S2 both-compliant pairs", re.compile(r"^both-compliant pairs, (Session (?P<session>\d)|all sessions)$"),
         ANY, _s2_session("n_cond"), per_target=False),
    Rule("framing effect", re.compile(r"^(mean score, (?P<without_first>without)-framing - with-framing \(claude "
                                      r"prefix\)|framing (?P<without_first2>shift) of real-prefix score|framing effect "
                                      r"on (?P<probe>C\d\d)\b)"), ANY, _framing),
    Rule("onset extreme", re.compile(r"^(?P<which>minimum|maximum) drift gap over onset steps$"), ANY,
         _onset_extreme),
    Rule("release cells", re.compile(r"^per-cell (evaluations|files|JSON responses) in (?P<rev>v[\d.]+)$"), ANY,
         _release_count("cells"), per_target=False),
    Rule("release sessions", re.compile(r"^(founding )?sessions in (public )?(?P<rev>v[\d.]+)$"), ANY,
         _release_count("sessions"), per_target=False),
)


def _design(value: int) -> Reader:
    """A number of the design: the same whatever the release."""
    return lambda record, groups, done: float(value)


def _category_size(record: PublishedNumber, groups: Mapping[str, str], done: Regenerated | None) -> float | str:
    category = groups["category"].lower().replace("-", "_")
    n = sum(probe.category == category for probe in PROBES)
    return float(n) if n else f"no probe category {groups['category']!r} in the reference probe suite"


#: The design the paper states, read from the reference protocol's texts and constants.
DESIGN_RULES: tuple[Rule, ...] = tuple(Rule(name, re.compile(quantity, re.IGNORECASE), ANY, read, per_target=False,
                                            source=FROM_INSTRUMENTS) for name, quantity, read in (
    ("probe suite size", r"^probes in the suite$", _design(len(PROBES))),
    ("probe categories", r"^probe categories$", _design(len({probe.category for probe in PROBES}))),
    ("probes per category", r"^probes in category (?P<category>[\w-]+)$", _category_size),
    ("rubric levels", r"^rubric levels$", _design(len(VALID_SCORES))),
    ("S2 wordings", r"^stressor wordings per cell$", _design(len(S2_VARIANTS))),
    ("prefix window", r"^prefix length \(characters\)$", _design(DEFAULT_WINDOW)),
    ("panel positions", r"^(snapshot positions on the representative session|positions for full-coverage targets|"
                        r"panel positions|positions in panel mean)$", _design(len(FOREST_POSITIONS)))))


def matches(published: Sequence[PublishedNumber], released: bool) -> Iterator[tuple[PublishedNumber, Rule, dict]]:
    """``(record, rule, groups)`` for each published number a rule regenerates (the first that
    matches; the released cells' rules only where ``released``); ``groups`` the named groups of
    its quantity and position matches."""
    rules = DESIGN_RULES + (RULES if released else ())
    for record in published:
        for rule in rules:
            if rule.per_target and not record.target_safe:
                continue
            q, p = rule.quantity.search(record.quantity), rule.position.search(record.position or "")
            if q and p:
                # named groups; an alternative's second spelling (``which2``) under its first name
                yield record, rule, {re.sub(r"\d$", "", k): v for match in (p, q) for k, v in match.groupdict().items()
                                     if v is not None}
                break


def ours(published: Sequence[PublishedNumber], done: Regenerated | None) -> dict[str, float | str]:
    """Each published number a rule matches: our value, or why there is none; with no release
    (``done`` None), the design's numbers (:data:`DESIGN_RULES`) and :data:`NO_RELEASE` for every
    other."""
    values: dict[str, float | str] = {} if done is not None else {record.id: NO_RELEASE for record in published}
    for record, rule, groups in matches(published, released=done is not None):
        values[record.id] = rule.read(record, groups, done)
    return values


def sources(published: Sequence[PublishedNumber], released: bool) -> dict[str, str]:
    """Where each regenerated number comes from (:attr:`Rule.source`)."""
    return {record.id: rule.source for record, rule, _ in matches(published, released)}


# ---------------------------------------------------------------- the tables
def _shown(value: float, printed: str, signed: bool) -> str:
    """``value`` with the decimals ``printed`` has, grouped by thousands where it is (a sign where
    the paper prints one); for a number word (zero, five), a whole value whole, else as a
    judge-point value."""
    decimals = printed_decimals(printed)
    if decimals is None:
        decimals = 0 if float(value).is_integer() else 2
    spec = f"{'+' if signed else ''}{',' if ',' in printed else ''}.{decimals}f"
    return format(value, spec).replace("-", MINUS)


def _unit(printed: str) -> str:
    """What the paper prints after the number (``×``, `` pp``, ``%``), for ours to read alike."""
    found = re.search(r"\d(?P<unit>[^\d]*)$", printed)
    return found["unit"] if found else ""


def _reason_head(reasons: pd.Series) -> pd.Series:
    """Each reason's words before any detail (a colon or a parenthesis)."""
    return reasons.str.replace(r"(:| \().*$", "", regex=True)


def compared_table(frame: pd.DataFrame, source: Mapping[str, str]) -> pd.DataFrame:
    """The published numbers with ours beside them and where ours comes from (``source``: id ->
    :attr:`Rule.source`), as the manuscript shows them; where none is regenerated, one row that
    says why (a table with no row renders as a bare header)."""
    rows = frame[frame["ours"].notna()]
    shown = pd.DataFrame({
        "id": rows["id"], "source": [source[i] for i in rows["id"]],
        "printed": [p.replace("-", MINUS, 1) if p.lstrip().startswith("-") else p for p in rows["printed"]],
        "ours": [_shown(v, p, p.lstrip()[:1] in "+-−") + _unit(p) for v, p in zip(rows["ours"], rows["printed"])],
        "difference": [_shown(d, p, True) for d, p in zip(rows["difference"], rows["printed"])],
        "agrees": rows["agrees"].astype(bool)}, columns=["id", "source", "printed", "ours", "difference", "agrees"])
    why = "no published number is regenerated in this build: " + "; ".join(sorted(set(_reason_head(
        frame["reason"].dropna()))))
    return explained_if_empty(shown, why, id="none", source=MISSING_CELL, printed=MISSING_CELL, ours=MISSING_CELL,
                              difference=MISSING_CELL)


def reasons_table(frame: pd.DataFrame, examples: int = 3) -> pd.DataFrame:
    """The published numbers without ours, per reason (its words before any detail: a colon or
    a parenthesis): how many, and the first ids."""
    rows = []
    missing = frame[frame["ours"].isna()]
    for reason, g in missing.groupby(_reason_head(missing["reason"]), sort=False):
        ids = list(g["id"])
        rows.append({"reason": reason, "n": len(ids),
                     "examples": ", ".join(ids[:examples]) + (f", … {len(ids) - examples} more"
                                                               if len(ids) > examples else "")})
    return pd.DataFrame(rows, columns=["reason", "n", "examples"]).sort_values("n", ascending=False, kind="stable")


MANUSCRIPT = Declared(
    variables=(Variable("summary", TEXT), Variable("release", TEXT), Variable("n_released_cells", COUNT), Variable("n_bad_cells", COUNT),
               Variable("n_unknown_cells", COUNT), Variable("n_duplicate_cells", COUNT),
               Variable("n_published", COUNT), Variable("n_regenerated", COUNT), Variable("n_agree", COUNT),
               Variable("n_disagree", COUNT), Variable("n_not_regenerated", COUNT)),
    tables=(
        Table("regenerated", "Published numbers regenerated, from the released cells or the instruments", (
            Column("Published number", TEXT, "id", widest="appB.nvidia-nemotron-3-super-120b-a12b.gap"),
            Column("From", TEXT, "source", widest=FROM_RELEASE), Column("Printed", TEXT, "printed", widest="+0.83"),
            Column("Ours", TEXT, "ours", widest="−10.83 pp"),
            Column("Difference", TEXT, "difference", widest="−0.833"), Column("Agrees", FLAG, "agrees"))),
        Table("not_regenerated", "Published numbers not regenerated, by reason", (
            Column("Reason", TEXT, "reason", widest=NO_RELEASE), Column("n", COUNT, "n"),
            Column("Examples", TEXT, "examples", widest="appN.sonnet45.step1.gap, appN.sonnet45.step1.gap.ci_low, "
                                                        "appN.sonnet45.step1.gap.ci_high, … 100 more")))))


# ---------------------------------------------------------------- the stages
def start(params: Parameters) -> Run:
    """Open the outputs (no model is called: nothing to check)."""
    return spine.start("published", params, models=(), declared=MANUSCRIPT, transport=Transport())


def release(run: Run) -> ImportReport | None:
    """Import the release (every file read once; a bad, unknown or duplicate file is named and
    counted, never fatal); None where no release is given."""
    folder = run.params.released
    if run.planner is not None:
        print("plan: this notebook calls no model; the release is read by the run, not by its plan", flush=True)
        return None
    if not folder:
        print("no release given: only the published numbers of the design are regenerated (from the instruments); "
              "every other is listed as not regenerated", flush=True)
        return None
    root = Path(resolve_path(folder))
    imported = import_release(root, revision=_revision(root))
    print(imported.describe(), flush=True)
    return imported


def _revision(root: Path) -> str | None:
    """The revision the receipt beside ``root`` names (``released fetch`` writes it); None
    without one, or with one that cannot be read (said)."""
    if not receipt_path(root).is_file():
        return None
    try:
        return read_receipt(root).revision
    except ReleaseError as exc:
        print(f"the release's receipt is not read ({exc}): its revision is not known", flush=True)
        return None


def analyses(run: Run, imported: ImportReport | None) -> Regenerated | None:
    """The panel's forest, the onset curves and the audit's gaps on the released cells (module doc)."""
    if imported is None:
        return None
    p = run.params
    # the tree is listed again only where a receipt names its revision: its counts are compared then only
    done = replace(regenerate(imported.cells, n_resamples=p.n_resamples, seed=p.resample_seed),
                   counts=count_release(Path(imported.root)) if imported.revision else None,
                   revision=imported.revision)
    run.out.parquet("forest", done.forest)
    run.out.parquet("onset", done.onset)
    run.out.parquet("audit", done.audit)
    return done


def comparison(run: Run, done: Regenerated | None) -> pd.DataFrame:
    """Every published number, ours beside it where a rule regenerates it, or why not."""
    published = load_published()
    frame = compare(published, ours(published, done))
    run.out.parquet("published_vs_regenerated", frame)
    run.table("regenerated", compared_table(frame, sources(published, released=done is not None)))
    run.table("not_regenerated", reasons_table(frame))
    return frame


def summary(imported: ImportReport | None, frame: pd.DataFrame) -> str:
    """The manuscript's sentence on what this build read and regenerated."""
    compared = frame[frame["ours"].notna()]
    agree = int(compared["agrees"].astype(bool).sum())
    if imported is None:
        return (f"No release was given to this build (make paper RELEASED=DIR reads one), so of the {len(frame)} "
                f"published numbers only the {len(compared)} that state the design are regenerated, from the "
                f"instruments ({agree} agree within the printed precision, {len(compared) - agree} do not); each "
                "other is listed with that reason.")
    counts = imported.counts()
    return (f"This build read the release {release_name(imported)}: {counts['cells']:,} cells "
            f"({counts['bad']} bad, {counts['unknown']} of an unknown layout, {counts['duplicates']} duplicates, "
            f"each named in the notebook). Of the {len(frame)} published numbers, {len(compared)} were regenerated "
            f"({agree} agree within the printed precision or interval, {len(compared) - agree} do not), and "
            f"{len(frame) - len(compared)} were not.")


def release_name(imported: ImportReport) -> str:
    return f"{imported.release}@{imported.revision or 'unversioned'}"


def variables(run: Run, imported: ImportReport | None, frame: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers, written with the run log."""
    counts = imported.counts() if imported is not None else {}
    compared = frame[frame["ours"].notna()]
    agree = int(compared["agrees"].astype(bool).sum())
    run.out.set(summary=summary(imported, frame), release=release_name(imported) if imported else "none",
                n_released_cells=counts.get("cells", 0), n_bad_cells=counts.get("bad", 0),
                n_unknown_cells=counts.get("unknown", 0), n_duplicate_cells=counts.get("duplicates", 0),
                n_published=len(frame), n_regenerated=len(compared), n_agree=agree,
                n_disagree=len(compared) - agree, n_not_regenerated=len(frame) - len(compared))
    return spine.finish(run)


STAGES = (Stage("run", start), Stage("imported", release), Stage("done", analyses), Stage("frame", comparison),
          Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as a notebook runs them."""
    return spine.run_stages(STAGES, params)
