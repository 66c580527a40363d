"""Instruction override: does the context before a direct format instruction change compliance with it?

The harness's two instruction-override designs (``reference`` protocol; the arms, prefixes
and requests are :mod:`contextecho.echo.reference.override`):

* **e11, four context arms**: at cut points of a real Claude Code session (e07's
  ``select_cutpoints``, then the runner's ``PROBE_CUT_INDICES``), each target is given the
  arm's context (``scratch`` none, ``filler3K`` the filler template, ``gpt5_3K`` a GPT-5
  transcript's last 3,000 characters, ``recent3K`` the session's own last 3,000), the
  session's immediate context, then one of four direct instructions, S1 (one word, yes or
  no), S2 (one line of bash, no preamble), S3 (one sentence, no action) and S4 (exact JSON),
  each scored by its e11 rule (0/1 compliance).
* **e12, prefix length**: the same cut points, the session's last ``L`` characters for each
  length ``L`` against a filler of the same length, under S2 and S3.

Each target is asked as the harness's runner for it asked (its rule set,
:mod:`contextecho.echo.reference.s2_requests`): e11 Anthropic targets through ``run.py``'s
``TargetClient``, any other through ``run_xtarget.py``'s own call; e12 through its
``TargetClient``. Every stressor is reported on its own, never pooled: compliance per target,
arm and stressor (:func:`compliance`), and per target, length, arm and stressor
(:func:`length_compliance`). A lost cell (a failed call) counts as asked, never as compliant
or not.

    from contextecho.experiments import instruction_override as io
    result = io.run(io.Parameters(targets=("anthropic/claude-sonnet-4-6",)))

The harness's GPT-5 transcript is not released, so the ``gpt5_3K`` arm is left out of the
default ``arms``; asked for, it reads ``gpt5_transcript`` (a file in the harness's record
shape, :mod:`contextecho.echo.reference.gpt5_source`) or, without one, the longest openly
licensed Codex CLI session in that shape (:func:`~contextecho.echo.reference.
continuation.codex_records`, our documented extension, not the harness's source).

The defaults are sized for the embedded model (one cut point per design, the three
arms with a source, lengths of 1,000 and 3,000 characters, 48 answer tokens); ``PAPER_SCALE``
is the harness's design (its ten cut points, four arms, four lengths and its runners' budgets,
``max_tokens`` 0).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from ..echo.protocols import protocol_of
from ..echo.reference.continuation import (N_CUTPOINTS, SKIP_INITIAL, CutpointSelection, codex_records,
                                           immediate_context, select_cutpoints)
from ..echo.reference.gpt5_source import extract_gpt5_recent3k, read_gpt5_transcript
from ..echo.reference.override import (E11_ARMS, E11_LABELS, E11_PROBE_CUT_INDICES, E12_ARMS, E12_PROBE_LENGTHS,
                                       E12_STRESSORS, compliance as stressor_compliance, e11_contexts, e12_contexts,
                                       probe_cuts)
from ..echo.reference.requests import override_request, stressor_text
from ..echo.reference.s2_requests import S2_REQUESTS, S2Requests, override_rules
from ..echo.reference.transcript import Row, read_rows
from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.llm import LOCAL_MODEL
from ..engine.model_request import ModelRequest
from ..engine.record import EMPTY_RESPONSE, NO_CONTENT, CallRecord
from ..paper.declared import Declared
from ..paper.formats import COUNT, MODEL, PERCENT, TEXT, WHOLE
from ..paper import figures
from ..paper.sentences import PAPER_SCALE_SET
from ..paper.show import Result, SavedFigure
from ..paper.tables import Column, Table
from ..paper.variables import Variable
from ..sessions.selection import corpus_rows, session_file
from . import spine
from .parameter_sets import ServingParameters
from .parameters import NON_NEGATIVE, POSITIVE, Models, NonEmpty, OneOf
from .protocol_record import differences_from
from .spine import Run, Stage

NAME = "instruction_override"
TITLE = "Instruction override: compliance with a direct format instruction under four contexts and five lengths"
E11, E12 = "e11", "e12"
#: The e11 arm whose source (the harness's GPT-5 transcript) the release does not hold.
GPT5_ARM = "gpt5_3K"
#: The e11 arms asked by default: those whose context the release (or the corpus) gives.
SOURCED_ARMS = tuple(a for a in E11_ARMS if a != GPT5_ARM)
#: The harness's own settings (its targets; its cut indices and lengths are the defaults).
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-6", "mistral/mistral-small-latest",
                           "together_ai/moonshotai/Kimi-K2.6"),
               "length_targets": ("anthropic/claude-sonnet-4-6", "anthropic/claude-sonnet-4-5",
                                  "anthropic/claude-opus-4-1", "anthropic/claude-haiku-4-5"),
               "arms": E11_ARMS, "cut_indices": E11_PROBE_CUT_INDICES, "length_cut_indices": E11_PROBE_CUT_INDICES,
               "lengths": E12_PROBE_LENGTHS, "max_tokens": 0}
#: Answers without text that the harness's client may give as the reply ``""``.
EMPTY_ANSWERS = (EMPTY_RESPONSE, NO_CONTENT)


@dataclass(frozen=True)
class Parameters(ServingParameters):
    designs: tuple[str, ...] = (E11, E12)
    targets: tuple[str, ...] = (LOCAL_MODEL,)
    length_targets: tuple[str, ...] = (LOCAL_MODEL,)
    session: str = ""
    gpt5_transcript: str = ""
    arms: tuple[str, ...] = SOURCED_ARMS
    cut_indices: tuple[int, ...] = (0,)
    length_cut_indices: tuple[int, ...] = (0,)
    lengths: tuple[int, ...] = (1000, 3000)
    max_tokens: int = 48
    protocol: str = "reference"
    output_dir: str = ""

    HELP = {**ServingParameters.HELP,
            "designs": "which designs run: e11 (the context arms) and e12 (the prefix lengths)",
            "targets": "LiteLLM model strings asked the context arms (e11)",
            "length_targets": "LiteLLM model strings asked the prefix lengths (e12)",
            "session": "the Claude Code session of the cut points (corpus file; default: the longest openly "
                       "licensed one with 125 candidate turns)",
            "gpt5_transcript": "a transcript in the harness's GPT-5 record shape for the gpt5_3K arm (default: "
                               "the longest openly licensed Codex CLI session in that shape)",
            "arms": "the e11 context arms: scratch, filler3K, gpt5_3K (its GPT-5 source is not released: "
                    "see gpt5_transcript), recent3K",
            "cut_indices": "which of the 25 cut points the arms are asked at (the harness's 10: "
                           "0,3,6,9,12,15,18,21,24,2)",
            "length_cut_indices": "which of the 25 cut points the lengths are asked at (the harness's 10)",
            "lengths": "prefix lengths in characters (the harness's 3000, 30000, 100000, 200000)",
            "max_tokens": "the target's answer budget (0: each runner's own, e11 512 and e12 1024)",
            "protocol": "reference (the harness's designs; these exist under it alone)",
            "output_dir": "default paper/_generated/instruction_override"}
    RANGES = {**ServingParameters.RANGES, "designs": (NonEmpty(), OneOf((E11, E12), "design")),
              "targets": (NonEmpty(), Models()), "length_targets": (NonEmpty(), Models()),
              "arms": (NonEmpty(), OneOf(E11_ARMS, "e11 arm")),
              "cut_indices": (NonEmpty(), NON_NEGATIVE), "length_cut_indices": (NonEmpty(), NON_NEGATIVE),
              "lengths": (NonEmpty(), POSITIVE), "max_tokens": NON_NEGATIVE, "protocol": OneOf(("reference",), "protocol")}


# ---------------------------------------------------------------- the cells
@dataclass(frozen=True)
class OverrideCell:
    """One request of either design: the target, the rule set it is asked by, the cut (its
    number in the 25 and its line), the arm, the prefix length (e12; None for e11), the
    stressor label, the arm's context length, and the request."""

    design: str
    target: str
    rules: str
    cut: int
    cut_index: int
    arm: str
    length: int | None
    stressor: str
    context_chars: int
    request: ModelRequest


def _cell(design: str, target: str, rules: S2Requests, number: int, cut_index: int, arm: str, length: int | None,
          stressor: str, context: str | None, user_prior: str, tag: dict[str, str],
          max_tokens: int | None = None) -> OverrideCell:
    target_request = override_request(context, user_prior, stressor_text(stressor), max_tokens or rules.max_tokens)
    cell_tag = {**tag, "design": design, "cut_index": str(cut_index), "arm": arm,
                **({"length": str(length)} if length is not None else {})}
    request = ModelRequest(target, rules.messages(target, target_request),
                           rules.params(target, target_request.max_tokens), tag=cell_tag)
    return OverrideCell(design, target, rules.name, number, cut_index, arm, length, stressor,
                        len(context or ""), request)


def e11_cells(rows: Sequence[Row], selection: CutpointSelection, indices: Sequence[int], targets: Sequence[str],
              gpt5_context: str, *, tag: dict[str, str], rules: Callable[[str], S2Requests] = override_rules,
              arms: Sequence[str] = E11_ARMS, stressors: Sequence[str] = E11_LABELS,
              max_tokens: int | None = None) -> list[OverrideCell]:
    """e11's cells, in its runners' order: target, cut, arm, stressor (``rules``: each
    target's rule set; the harness's runner for it by default; ``max_tokens``: the answer
    budget, the rule set's own when None or 0)."""
    cuts = probe_cuts(selection, indices)
    out = []
    for target in targets:
        own = rules(target)
        for cut_number, cut in zip(indices, cuts):
            contexts = e11_contexts(rows, cut.cut_index, gpt5_context)
            user_prior = immediate_context(rows, cut.cut_index)
            out += [_cell(E11, target, own, cut_number, cut.cut_index, arm, None, stressor, contexts[arm],
                          user_prior, tag, max_tokens) for arm in arms for stressor in stressors]
    return out


def e12_cells(rows: Sequence[Row], selection: CutpointSelection, indices: Sequence[int], lengths: Sequence[int],
              targets: Sequence[str], *, tag: dict[str, str], rules: S2Requests = S2_REQUESTS.get(E12),
              stressors: Sequence[str] = E12_STRESSORS, max_tokens: int | None = None) -> list[OverrideCell]:
    """e12's cells, in its runners' order: target, cut, length, stressor, arm (``max_tokens``:
    as for :func:`e11_cells`)."""
    cuts = probe_cuts(selection, indices)
    out = []
    for target in targets:
        for cut_number, cut in zip(indices, cuts):
            user_prior = immediate_context(rows, cut.cut_index)
            for length in lengths:
                contexts = e12_contexts(rows, cut.cut_index, length)
                out += [_cell(E12, target, rules, cut_number, cut.cut_index, arm, length, stressor, contexts[arm],
                              user_prior, tag, max_tokens) for stressor in stressors for arm in E12_ARMS]
    return out


def reply(record: CallRecord, cell: OverrideCell) -> str | None:
    """The reply as the cell's runner reads it; None where the cell is lost (a failed call,
    or an empty answer its client raises on)."""
    rules = S2_REQUESTS.get(cell.rules)
    if record.ok:
        return rules.read(record.response_text or "")
    if record.error_type in EMPTY_ANSWERS and rules.keeps_empty(cell.target):
        return rules.read("")
    return None


def ask(cells: Sequence[OverrideCell], *, transport: Transport, name: str) -> pd.DataFrame:
    """Ask every cell (one round, through the call cache) and score each reply: one row per
    cell, ``stored`` false (and no reply, length or compliance) where the cell is lost."""
    with CallCache() as cache:
        result = generate([c.request for c in cells], cache=cache, transport=transport, progress=False, name=name)
    rows = []
    for cell, record in zip(cells, result.records):
        text = reply(record, cell)
        rows.append({"design": cell.design, "target": cell.target, "rules": cell.rules, "cut": cell.cut,
                     "cut_index": cell.cut_index, "length": cell.length, "arm": cell.arm, "stressor": cell.stressor,
                     "context_chars": cell.context_chars, "key": cell.request.key, "status": record.status,
                     "error_type": record.error_type, "stored": text is not None, "response_text": text,
                     "response_len": len(text) if text is not None else None,
                     "compliance": stressor_compliance(cell.stressor, text) if text is not None else None,
                     "prompt_tokens": record.prompt_tokens, "completion_tokens": record.completion_tokens})
    frame = pd.DataFrame(rows)
    frame.attrs["counts"] = result.counts()
    return frame


def _rates(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group: cells asked, stored, compliant, compliance (% of stored) and the mean reply
    length; groups in the frame's order."""
    if not len(frame):
        return pd.DataFrame(columns=[*by, "asked", "stored", "compliant", "compliance_pct", "mean_len"])
    rows = []
    for keys, g in frame.groupby(by, sort=False, dropna=False):
        kept = g[g["stored"]]
        rows.append({**dict(zip(by, keys)), "asked": len(g), "stored": len(kept),
                     "compliant": int(kept["compliance"].sum()),
                     "compliance_pct": 100.0 * kept["compliance"].mean() if len(kept) else float("nan"),
                     "mean_len": kept["response_len"].mean() if len(kept) else float("nan")})
    return pd.DataFrame(rows)


def arm_compliance(frame: pd.DataFrame) -> pd.DataFrame:
    """e11: compliance per target, arm and stressor (each stressor on its own)."""
    return _rates(frame[frame["design"] == E11] if len(frame) else frame, ["target", "arm", "stressor"])


def length_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """e12: compliance per target, prefix length, arm and stressor (each stressor on its own)."""
    return _rates(frame[frame["design"] == E12] if len(frame) else frame, ["target", "length", "arm", "stressor"])


# ---------------------------------------------------------------- what the manuscript reads
_RATE_COLUMNS = (Column("Stressor", TEXT, "stressor", widest="S4_STRICT_JSON"), Column("Asked", COUNT, "asked"),
                 Column("Stored", COUNT, "stored"), Column("Compliant", COUNT, "compliant"),
                 Column("Compliance", PERCENT, "compliance_pct"), Column("Mean length", WHOLE, "mean_len"))
MANUSCRIPT = Declared(
    variables=(Variable("targets", TEXT), Variable("length_targets", TEXT), Variable("arms", TEXT),
               Variable("lengths", TEXT), Variable("max_tokens", TEXT), Variable("n_cuts", COUNT),
               Variable("n_length_cuts", COUNT), Variable("n_cells", COUNT), Variable("n_lost", COUNT),
               Variable("reading", TEXT)),
    tables=(
        Table("override_compliance", "Compliance per context arm and stressor (e11)", (
            Column("Target", MODEL, "target"), Column("Arm", TEXT, "arm", widest="recent3K"), *_RATE_COLUMNS),
            index=3),
        Table("length_compliance", "Compliance per prefix length, arm and stressor (e12)", (
            Column("Target", MODEL, "target"), Column("Length", COUNT, "length"),
            Column("Arm", TEXT, "arm", widest="claude_session"), *_RATE_COLUMNS), index=4)))


# ---------------------------------------------------------------- the stages (one notebook cell each)
def _session(p: Parameters) -> Path:
    if p.session:
        return session_file(p.session) if not Path(p.session).is_file() else Path(p.session)
    for row in corpus_rows(formats=("claude_code",)):
        path = session_file(row["file"])
        try:
            select_cutpoints(read_rows(path))
        except ValueError:
            continue
        return path
    raise RuntimeError(f"no Claude Code session in the corpus has {SKIP_INITIAL} + {N_CUTPOINTS} turns with "
                       "exactly one tool call")


def gpt5_context(p: Parameters) -> str:
    """The gpt5_3K arm's context: the GPT-5 transcript's last 3,000 characters (module doc)."""
    if p.gpt5_transcript:
        return extract_gpt5_recent3k(read_gpt5_transcript(p.gpt5_transcript))
    rows = corpus_rows(formats=("codex_cli",))
    if not rows:
        raise RuntimeError("no openly licensed Codex CLI session in the corpus for the gpt5_3K arm")
    return extract_gpt5_recent3k(codex_records(read_rows(session_file(rows[0]["file"]))))


@dataclass(frozen=True)
class Cuts:
    """The session's rows and its 25 cut points."""

    session: Path
    rows: tuple[Row, ...]
    selection: CutpointSelection


def start(params: Parameters) -> Run:
    """Open the outputs and check that every target can be called (before any call)."""
    proto = protocol_of(params)
    models = (params.targets if E11 in params.designs else ()) + \
        (params.length_targets if E12 in params.designs else ())
    return spine.start(NAME, params, models=tuple(dict.fromkeys(models)),
                       protocol=proto, record={**proto.key(), "differs": differences_from(params, PAPER_SCALE)},
                       declared=MANUSCRIPT)


def cutpoints(run: Run) -> Cuts:
    """The session's cut points by e07's stride rule (``select_cutpoints``)."""
    path = _session(run.params)
    rows = read_rows(path)
    return Cuts(path, tuple(rows), select_cutpoints(rows))


def build(run: Run, cuts: Cuts) -> list[OverrideCell]:
    """Both designs' cells: the arms (e11) for ``targets``, the lengths (e12) for
    ``length_targets``, each target asked by its harness runner's rule set."""
    p: Parameters = run.params
    tag = run.protocol.key()
    cells = []
    if E11 in p.designs:
        source = gpt5_context(p) if GPT5_ARM in p.arms else ""
        cells += e11_cells(cuts.rows, cuts.selection, p.cut_indices, p.targets, source, tag=tag, arms=p.arms,
                           max_tokens=p.max_tokens)
    if E12 in p.designs:
        cells += e12_cells(cuts.rows, cuts.selection, p.length_cut_indices, p.lengths, p.length_targets, tag=tag,
                           max_tokens=p.max_tokens)
    return cells


def grid(run: Run, cuts: Cuts) -> pd.DataFrame:
    """Both designs' cells (:func:`build`) asked and scored (``results/cells.parquet``)."""
    frame = ask(build(run, cuts), transport=run.transport, name=f"{NAME}:targets")
    run.batch(f"{NAME}:targets", frame.attrs.pop("counts"))
    run.out.parquet("cells", frame)
    return frame


def compliance(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """e11: compliance (%) per target, context arm and stressor."""
    return run.table("override_compliance", arm_compliance(frame))


def compliance_figure(run: Run, compliance: pd.DataFrame) -> SavedFigure:
    """e11: compliance (%) per stressor under each context arm (one panel per target when
    several), each stressor on its own."""
    shown = compliance.assign(stressor_target=compliance["stressor"] if len(run.params.targets) < 2 else
                              compliance["stressor"] + " · " + compliance["target"].map(figures.shown)) \
        if len(compliance) else \
        pd.DataFrame(columns=["stressor_target", "compliance_pct", "arm"])
    return run.figure("override_compliance", figures.bars(
        shown, x="stressor_target", y="compliance_pct", hue="arm", hue_order=run.params.arms, xlabel="stressor",
        ylabel="compliance (%)", ylim=(0, 105), reason="no e11 cell was asked or stored"))


def length_compliance(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """e12: compliance (%) per target, prefix length, arm and stressor."""
    return run.table("length_compliance", length_rates(frame))


def length_figure(run: Run, length_compliance: pd.DataFrame) -> SavedFigure:
    """e12: compliance (%) against the prefix length, one line per stressor, solid for the
    session's own prefix and dashed for the filler (one panel per target)."""
    rates = length_compliance if len(length_compliance) else \
        pd.DataFrame(columns=["target", "length", "arm", "stressor", "compliance_pct"])
    return run.figure("length_compliance", figures.trajectory(
        rates, x="length", y="compliance_pct", hue="stressor", style="arm", style_order=E12_ARMS, panel="target",
        xlabel="prefix length (characters)", ylabel="compliance (%)", ylim=(-5, 105), logx=True,
        reason="no e12 cell was asked or stored"))


def variables(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """The run's counts, written with the run log."""
    p: Parameters = run.params
    budget = f"{p.max_tokens} (both designs)" if p.max_tokens else \
        f"the runners' own ({S2_REQUESTS.get(E11).max_tokens} e11, {S2_REQUESTS.get(E12).max_tokens} e12)"
    run.out.set(targets=", ".join(p.targets) if E11 in p.designs else "none (e11 not run)",
                length_targets=", ".join(p.length_targets) if E12 in p.designs else "none (e12 not run)",
                arms=", ".join(p.arms),
                lengths=" / ".join(f"{n:,}" for n in p.lengths), max_tokens=budget, n_cuts=len(p.cut_indices),
                n_length_cuts=len(p.length_cut_indices), n_cells=len(frame),
                n_lost=int((~frame["stored"]).sum()) if len(frame) else 0,
                reading=reading(len(p.cut_indices), len(p.length_cut_indices), p.lengths))
    return spine.finish(run)


#: The shortest prefix of the harness's e12 lengths that the embedded model's context cannot hold.
PROVIDER_LENGTH = 30_000


def reading(n_cuts: int, n_length_cuts: int, lengths: Sequence[int]) -> str:
    """What the rates of this run can say: with one cut point, each is one cell's 0 or 100%;
    lengths short of :data:`PROVIDER_LENGTH` leave out the harness's long prefixes."""
    said = ("With one cut point each rate is one cell's 0 or 100%, so the tables show that the designs run end to "
            "end, not a compliance rate" if max(n_cuts, n_length_cuts) <= 1 else
            f"Each e11 rate is over {n_cuts} cut points and each e12 rate over {n_length_cuts}")
    if lengths and max(lengths) < PROVIDER_LENGTH:
        said += (f"; the lengths stop at {max(lengths):,} characters, and the harness's 30,000 to 200,000 need a "
                 f"provider model ({PAPER_SCALE_SET})")
    return said + "."


STAGES = (Stage("run", start), Stage("cuts", cutpoints), Stage("frame", grid), Stage("compliance", compliance),
          Stage("compliance_figure", compliance_figure), Stage("length_compliance", length_compliance),
          Stage("length_figure", length_figure), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
