"""The deployment cost in tool use: does a Claude-flavoured prefix change the next tool call?

At cutpoints of real Claude Code sessions (assistant turns with exactly one tool call,
chosen by the harness's stride rule), each target is asked for its next single tool call
under four prefixes: ``scratch`` (the immediate context alone), ``recent3K`` (the session's
own last 3,000 characters), ``filler3K`` (a template of the same length) and ``gpt5_3K`` (a
GPT-flavoured real prefix of the same length: the tail of a Codex CLI session on another
task). Its call is scored against the call the session really made: M1 = the tool
matches, M2 = Jaccard similarity of the arguments where it does. The paper's F5 contrast is
Δ M2 = recent3K − gpt5_3K, paired over cutpoints: complete case (both arms returned a call
of the right tool) beside intention-to-treat (a missing call scores 0), with the harness's
paired sign-flip p (20,000 resamples, seed 42), the attrition of every arm, and same-task /
cross-task strata. How each protocol builds the arms and the requests, and where the paper
and the harness's code differ: :mod:`contextecho.echo.continuation`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..echo.continuation import ARMS, CONTRASTS, RUNNER, Cut, GptSource, gpt_source
from ..echo.protocols import protocol_of
from ..echo.reference import continuation as e07
from ..echo.reference.texts import ACKNOWLEDGEMENT, COMMIT, FILLER_TEMPLATE
from ..echo.reference.transcript import HarnessSession, read_rows, read_session
from ..engine.cache import CallCache
from ..engine.calls import generate
from ..engine.hashing import content_hash
from ..engine.llm import LOCAL_MODEL, is_in_process
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COUNT, FLAG, MODEL, P_VALUE, PERCENT, SIMILARITY, TEXT, estimate, interval, not_estimable
from ..paper.tables import Column, Table
from ..paper.variables import NO_ESTIMATE, Variable
from ..paper.sentences import CAPABLE_TARGET, PAPER_SCALE_SET, measures_nothing, reason_of
from ..paper.show import Result, SavedFigure
from ..sessions.redaction import Redactor
from ..sessions.selection import corpus_rows, session_file
from ..stats.bootstrap import bootstrap_mean
from ..stats.errors import StatsInputError
from ..stats.paired import harness_paired_cuts
from ..stats.permutation import harness_sign_flip_p, harness_sign_flip_summary
from . import spine
from .parameter_sets import PROTOCOL_NAMES, ServingParameters
from .protocol_record import PROTOCOL, differences_from, divergence_variables
from .parameters import NON_NEGATIVE, POSITIVE, RESAMPLES, Models, NonEmpty, Temperature, count
from .spine import Run, Stage

TITLE = "The deployment cost in tool use: the next tool call under four prefixes"
#: The paper's three continuation targets (Sonnet 4.6 on the Anthropic path; Mistral Small and
#: Kimi K2.6 on the OpenAI-compatible path), 25 cutpoints of one session.
PAPER_SCALE = {"targets": ("anthropic/claude-sonnet-4-6", "mistral/mistral-small-latest",
                           "together_ai/moonshotai/Kimi-K2.6"),
               "n_sessions": 1, "n_cutpoints": 25, "skip_initial": 100, "max_tokens": 4096,
               "n_resamples": 20_000, "resample_seed": 42, "protocol": "reference"}
#: The harness's default resamples for the primary contrast (``paired_permutation``'s 10,000).
HARNESS_DEFAULT_RESAMPLES = 10_000
ANALYSES = (("complete_case", None), ("itt", 0.0))
BOOTSTRAP_RESAMPLES = 2000
PRIMARY = CONTRASTS[0]


@dataclass(frozen=True)
class Parameters(ServingParameters):
    targets: tuple[str, ...] = (LOCAL_MODEL,)
    n_sessions: int = 1
    n_cutpoints: int = 2
    skip_initial: int = e07.SKIP_INITIAL
    gpt_session: str = ""
    max_tokens: int = 32
    temperature: float = 0.0
    n_resamples: int = 20_000
    resample_seed: int = 42
    protocol: str = "reference"
    output_dir: str = ""

    HELP = {**ServingParameters.HELP, "targets": "LiteLLM model strings",
            "n_sessions": "longest openly licensed Claude Code sessions with enough cutpoints (0 for all)",
            "n_cutpoints": "cutpoints per session, by the harness's stride (its 25 at paper scale)",
            "skip_initial": "candidate turns skipped at the start of a session (the harness's 100)",
            "gpt_session": "the Codex CLI session of the GPT-flavoured prefix (corpus file; default: the "
                           "longest openly licensed one)",
            "max_tokens": "the call's budget (the harness's 4,096; a call of the embedded model is short)",
            "temperature": "the target's sampling temperature (0: greedy)",
            "n_resamples": "sign-flip resamples (the appendix's 20,000)",
            "resample_seed": "seed of the sign-flip draws and the bootstrap (the harness's 42)",
            "protocol": "reference (the harness's e07 as it ran) or contextecho (leak-free cut, one request form)",
            "output_dir": "default paper/_generated/continuation"}
    # Per protocol (contextecho.experiments.parameters: PROTOCOL_HELP and IGNORED).
    IGNORED = {"temperature": {"reference": "the harness's per-provider rule, no temperature for Anthropic, "
                                            "0 elsewhere"}}
    RANGES = {**ServingParameters.RANGES, "targets": (NonEmpty(), Models()), "n_sessions": count(zero="all"),
              "n_cutpoints": count(), "skip_initial": NON_NEGATIVE, "max_tokens": POSITIVE,
              "temperature": Temperature(("targets",)), "n_resamples": RESAMPLES,
              "resample_seed": NON_NEGATIVE, "protocol": PROTOCOL_NAMES}


# ---------------------------------------------------------------- sessions and cutpoints
def claude_sessions(p: Parameters) -> list[HarnessSession]:
    """The longest openly licensed Claude Code sessions that hold ``skip_initial +
    n_cutpoints`` candidate turns, read once as rows (``n_sessions`` of them; 0: all)."""
    chosen = []
    for row in corpus_rows(formats=("claude_code",)):
        session = read_session(session_file(row["file"]))
        if len(e07.candidates(session.rows)) >= p.skip_initial + p.n_cutpoints:
            chosen.append(session)
        if p.n_sessions and len(chosen) == p.n_sessions:
            break
    if not chosen:
        raise RuntimeError(f"no Claude Code session in the corpus has {p.skip_initial} + {p.n_cutpoints} "
                           "turns with exactly one tool call; lower skip_initial or n_cutpoints")
    return chosen


def gpt_file(p: Parameters) -> Path:
    """The Codex CLI session of the GPT-flavoured prefix."""
    if p.gpt_session:
        return session_file(p.gpt_session)
    rows = corpus_rows(formats=("codex_cli",))
    if not rows:
        raise RuntimeError("no openly licensed Codex CLI session in the corpus for the GPT-flavoured prefix")
    return session_file(rows[0]["file"])


# ---------------------------------------------------------------- what the manuscript reads
#: Per analysis of the primary contrast (all cutpoints), its per-target variables: pairs, Δ M2,
#: sign-flip p, 95% interval.
ANALYSIS_KEYS = {"complete_case": ("cc_n_{target}", "cc_delta_{target}", "cc_p_{target}", "cc_ci_{target}"),
                 "itt": ("itt_n_{target}", "itt_delta_{target}", "itt_p_{target}", "itt_ci_{target}")}
#: How the manuscript's table names each analysis (its columns: the abbreviation).
ANALYSIS_NAMES = {"complete_case": "complete case", "itt": "intention to treat"}
_ABBREVIATIONS = {"complete_case": "CC", "itt": "ITT"}
_ARM = Column("Arm", TEXT, "arm", widest="filler3K")


def _analysis_columns(analysis: str) -> tuple[Column, ...]:
    name = _ABBREVIATIONS[analysis]
    return (Column(f"{name} pairs", COUNT, f"{analysis}_n"),
            Column(f"{name} Δ M2 [95% CI]", estimate(SIMILARITY),
                   (f"{analysis}_delta", f"{analysis}_ci_low", f"{analysis}_ci_high")),
            Column(f"{name} p", P_VALUE, f"{analysis}_p"))


MANUSCRIPT = PROTOCOL + Declared(
    variables=(
        *(Variable(template, kind) for keys in ANALYSIS_KEYS.values()
          for template, kind in zip(keys, (COUNT, SIMILARITY, P_VALUE, interval(SIMILARITY)))),
        Variable("attrition_{arm}_pct_{target}", PERCENT, arm=ARMS), Variable("prose_{arm}_{target}", COUNT, arm=ARMS),
        Variable("target", TEXT), Variable("targets", TEXT), Variable("n_sessions", COUNT),
        Variable("n_cutpoints", COUNT), Variable("n_per_session", COUNT), Variable("skip_initial", COUNT),
        Variable("gpt_task", TEXT), Variable("n_same_task", COUNT), Variable("n_cross_task", COUNT),
        Variable("n_outside_schema", COUNT), Variable("announced_recent_pct", PERCENT),
        Variable("announced_scratch_pct", PERCENT), Variable("n_calls", COUNT), Variable("n_failed", COUNT),
        Variable("n_cached", COUNT), Variable("max_tokens", COUNT), Variable("n_resamples", COUNT),
        Variable("finding", TEXT)),
    tables=(
        Table("cutpoints", "Cutpoints and their ground truth", (
            Column("Session", TEXT, "session", widest="S12"), Column("Cut", COUNT, "cut"),
            Column("Turn", COUNT, "cut_index"), Column("Boundary", COUNT, "boundary"),
            Column("Ground-truth tool", TEXT, "ground_truth", widest="NotebookEdit"),
            Column("In schema", FLAG, "in_schema"), Column("Task", TEXT, "task", widest="debugging"),
            Column("GPT task", TEXT, "gpt_task", widest="debugging"),
            Column("Stratum", TEXT, "stratum", widest="cross_task"), Column("Stride", COUNT, "stride"),
            Column("Candidates", COUNT, "candidates"),
            *(Column(f"Announced, {arm}", FLAG, f"announced_{arm}") for arm in ARMS)), index=2),
        Table("attrition", "Attrition per arm", (
            Column("Target", MODEL, "target"), _ARM, Column("Cuts", COUNT, "cuts"),
            Column("Generated", COUNT, "generated"), Column("Calls", COUNT, "calls"),
            Column("Right tool", COUNT, "right_tool"), Column("M2 defined", COUNT, "m2_defined"),
            Column("Prose", COUNT, "prose"), Column("Failed", COUNT, "failed"),
            Column("Announced", COUNT, "announced"), Column("Attrition", PERCENT, "attrition_pct")), index=2),
        Table("contrasts", "Argument fidelity: paired contrasts of M2", (
            Column("Target", MODEL, "target"),
            Column("Contrast", TEXT, "comparison", widest="recent3K − gpt5_3K, cross_task"),
            *_analysis_columns("complete_case"), *_analysis_columns("itt")), index=2),
    ))


def side_by_side(contrasts: pd.DataFrame) -> pd.DataFrame:
    """The contrasts (:func:`contrast_rows`) one row per target, contrast and stratum, the
    complete case beside intention to treat (``<analysis>_n``, ``_delta``, ``_ci_low``,
    ``_ci_high``, ``_p``), each analysis's note said with its name."""
    keys = ["target", "contrast", "stratum"]
    if not len(contrasts):
        return pd.DataFrame(columns=[*keys, "comparison", "note"])
    parts = [contrasts[contrasts["analysis"] == analysis].set_index(keys)[["n", "delta", "ci_low", "ci_high", "p"]]
             .add_prefix(f"{analysis}_") for analysis in ANALYSIS_NAMES]
    wide = pd.concat(parts, axis=1)
    said = contrasts.assign(said=[f"{ANALYSIS_NAMES[a]}: {n}" if n else "" for a, n in
                                  zip(contrasts["analysis"], contrasts["note"])])
    wide["note"] = said.groupby(keys, sort=False)["said"].agg(lambda n: "; ".join(x for x in n if x))
    wide = wide.reset_index()
    wide.insert(1, "comparison", [c if s == "all" else f"{c}, {s}" for c, s in zip(wide["contrast"], wide["stratum"])])
    return wide


# ---------------------------------------------------------------- the stages (one notebook cell each)
def start(params: Parameters) -> Run:
    """Open the outputs, check that every target can be called (before any call), and pick
    the Claude Code sessions the cutpoints come from."""
    proto = protocol_of(params)
    record = {"protocol": proto.name, "protocol_version": f"e07-{COMMIT[:7]}",
              "protocol_sha256": content_hash([e07.SYSTEM_PROMPT, ACKNOWLEDGEMENT, e07.TOOLS, FILLER_TEMPLATE, proto.name]),
              "differs": differences_from(params, PAPER_SCALE)}
    return spine.start("continuation", params, models=params.targets, protocol=proto, record=record,
                       sessions=lambda: claude_sessions(params), declared=MANUSCRIPT)


@dataclass(frozen=True)
class Cuts:
    """The cutpoints of a run as the cells are built from them: the cuts as an in-process
    model is sent them and, where a target is not in-process, as redacted; the GPT source."""

    local: tuple[Cut, ...]
    redacted: tuple[Cut, ...]
    gpt: GptSource
    gpt_file: Path
    strides: dict[str, tuple[int, int]]  # session id -> (stride, candidates)

    def for_target(self, target: str) -> tuple[Cut, ...]:
        return self.local if is_in_process(target) else self.redacted  # what leaves the process is redacted


def build_cuts(run: Run) -> Cuts:
    """Cutpoints of every session of the run (the harness's stride rule), and their arms
    under the run's protocol (pure: the same every time it is called)."""
    p = run.params
    rules = run.protocol.continuation
    source = gpt_file(p)
    gpt = gpt_source(source.stem, read_rows(source))
    redacting = not all(is_in_process(t) for t in p.targets)
    local, redacted, strides = [], [], {}
    for session in run.sessions:
        selection = e07.select_cutpoints(session.rows, p.n_cutpoints, p.skip_initial)
        strides[session.session_id] = (selection.stride, selection.n_total_candidates)
        redactor, gpt_redactor = Redactor(), Redactor()
        for number, cutpoint in enumerate(selection.cutpoints):
            local.append(rules.cut(session.session_id, session.rows, cutpoint, number, gpt))
            if redacting:
                redacted.append(rules.cut(session.session_id, session.rows, cutpoint, number, gpt,
                                          redactor=redactor, gpt_redactor=gpt_redactor))
    return Cuts(tuple(local), tuple(redacted), gpt, source, strides)


def cutpoints(run: Run) -> pd.DataFrame:
    """The cutpoints of each session by the harness's stride rule, with the ground-truth
    tool, where the prefix ends (``boundary``: under ``contextecho`` before the call's own
    API response), the task kind and stratum, and which arms show text of the ground
    truth's own response (its announcement of the call)."""
    cuts = build_cuts(run)
    schema = {t["name"] for t in e07.TOOLS}
    table = pd.DataFrame([{"session": run.labels[cut.session], "cut": cut.number, "cut_index": cut.index,
                           "boundary": cut.boundary, "ground_truth": cut.tool, "in_schema": cut.tool in schema,
                           "task": cut.kind, "gpt_task": cuts.gpt.kind, "stratum": cut.stratum,
                           "stride": cuts.strides[cut.session][0], "candidates": cuts.strides[cut.session][1],
                           **{f"announced_{arm}": cut.announced[arm] for arm in ARMS}} for cut in cuts.local])
    run.out.parquet("cutpoints", table)
    return run.table("cutpoints", table)


def grid(run: Run, cutpoints: pd.DataFrame) -> pd.DataFrame:
    """Every target asked for its next tool call at every cutpoint under the four arms
    (LiteLLM ``tools``; cached by request, tool schemas included), each answer read and
    scored: the first call's tool and arguments, M1 and M2; an answer without a call is
    attrition, a failed call is counted and never scored."""
    p = run.params
    rules = run.protocol.continuation
    cuts = build_cuts(run)
    jobs = []
    for target in p.targets:
        for cut in cuts.for_target(target):
            for arm in ARMS:
                jobs.append((target, cut, arm, rules.request(target, cut, arm, max_tokens=p.max_tokens,
                                                             temperature=p.temperature)))
    with CallCache() as cache:
        result = generate([j[3] for j in jobs], cache=cache, transport=run.transport, progress=True,
                          name="continuation:targets")
    run.batch("continuation:targets", result.counts())
    rows = []
    for (target, cut, arm, request), record in zip(jobs, result.records):
        outcome = rules.outcome(record, cut, target)
        rows.append({"target": target, "session": run.labels[cut.session], "cut": cut.number,
                     "cut_index": cut.index, "arm": arm, "key": request.key, "status": record.status,
                     "error_type": record.error_type, "finish_reason": record.finish_reason,
                     "generated": outcome.generated, "tool": outcome.tool, "called": outcome.tool is not None,
                     "match": outcome.match, "similarity": outcome.similarity, "raised": ": ".join(outcome.raised) if outcome.raised else None,
                     "ground_truth": cut.tool, "stratum": cut.stratum, "announced": cut.announced[arm],
                     "redacted": cut.redacted, "prompt_tokens": record.prompt_tokens,
                     "completion_tokens": record.completion_tokens})
    frame = pd.DataFrame(rows)
    frame = _runner_losses(frame)
    run.out.parquet("cells", frame)
    return frame


def _runner_losses(frame: pd.DataFrame) -> pd.DataFrame:
    """A cut one arm's scoring raised at is lost for every arm of that arm's runner (the
    harness writes no metrics file there; only under ``reference`` does scoring raise)."""
    if not len(frame) or not frame["raised"].notna().any():
        return frame
    frame = frame.copy()
    runner = frame["arm"].map(RUNNER)
    lost = frame.loc[frame["raised"].notna()].assign(runner=runner)[["target", "session", "cut", "runner"]]
    keys = set(map(tuple, lost.to_numpy()))
    hit = [k in keys for k in zip(frame["target"], frame["session"], frame["cut"], runner)]
    frame.loc[hit, "generated"] = False
    return frame


def attrition(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """Per target and arm: cutpoints, answers generated, calls emitted, calls of the
    ground-truth tool (M2 defined), answers in prose (no call), failed calls, and the cuts
    whose prompt shows the ground truth's own announcement."""
    rows = []
    for (target, arm), g in frame.groupby(["target", "arm"], sort=False):
        ok = g[g["status"] == "ok"]
        rows.append({"target": target, "arm": arm, "cuts": len(g), "generated": int(g["generated"].sum()),
                     "calls": int(g["called"].sum()), "right_tool": int(g["match"].sum()),
                     "m2_defined": int(g["similarity"].notna().sum()),
                     "prose": int((ok["called"] == False).sum()),  # noqa: E712 (a column of booleans)
                     "failed": int((g["status"] != "ok").sum()), "announced": int(g["announced"].sum()),
                     "attrition_pct": 100.0 * (1 - g["similarity"].notna().mean())})
    table = pd.DataFrame(rows)
    run.out.parquet("attrition", table)
    return run.table("attrition", table)


def _arm_values(frame: pd.DataFrame, arm: str, by: str = "session_cut") -> dict[Any, float | None]:
    """``(session, cut)`` (``by="cut"``: the cut number alone, within one session) → M2 over
    the cuts the arm was generated at (None: no similarity)."""
    g = frame[(frame["arm"] == arm) & frame["generated"]]
    keys = zip(g["session"], g["cut"]) if by == "session_cut" else (int(c) for c in g["cut"])
    return {k: (None if pd.isna(v) else float(v)) for k, v in zip(keys, g["similarity"])}


def _json_number(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _harness_contrast(g: pd.DataFrame, a: str, b: str, *, n_resamples: int, seed: int) -> dict[str, Any]:
    out = {}
    for analysis, fill in (("complete_case", None), ("itt_zero_fill", 0.0)):
        cuts, deltas = harness_paired_cuts(_arm_values(g, a, by="cut"), _arm_values(g, b, by="cut"), fill=fill)
        s = harness_sign_flip_summary(deltas, n_resamples=n_resamples, seed=seed)
        out[analysis] = {"cuts": cuts, "deltas": deltas, "n": s["n"], "delta_mean": _json_number(s["delta_mean"]),
                         f"p_sign_flip_{n_resamples}_seed{seed}": _json_number(s["p"]),
                         "n_nonzero": s["n_nonzero"], "n_positive": s["n_positive"], "n_negative": s["n_negative"],
                         "exact_sign_flip_p_fixture_writer": _json_number(s["exact_p"])}
        if (a, b) == PRIMARY:
            out[analysis][f"p_sign_flip_harness_default_{HARNESS_DEFAULT_RESAMPLES}_seed{seed}"] = _json_number(
                harness_sign_flip_p(deltas, n_resamples=HARNESS_DEFAULT_RESAMPLES, seed=seed)[1]) if deltas else None
    return out


def harness_analysis(frame: pd.DataFrame, *, n_resamples: int = 20_000, seed: int = 42) -> dict[str, Any]:
    """One target's cells of one session in the shape of the harness's metrics analysis
    (the paper's Δ, ITT and strata around its ``paired_permutation``,
    :func:`~contextecho.stats.permutation.harness_sign_flip_summary`): per arm the counts of answers generated, calls
    emitted, calls of the ground-truth tool and similarities defined; per contrast the
    complete-case and ITT pairs with their sign-flip summaries; the primary contrast per
    stratum (where the cells carry one)."""
    counts = {}
    for arm in ARMS:
        g = frame[(frame["arm"] == arm) & frame["generated"]]
        counts[arm] = {"n_generated": len(g), "n_tool_call_emitted": int(g["called"].sum()),
                       "n_tool_matches_ground_truth": int(g["match"].sum()),
                       "n_M2_not_None": int(g["similarity"].notna().sum())}
    out: dict[str, Any] = {"counts": counts, "contrasts": {
        f"{a}-{b}": _harness_contrast(frame, a, b, n_resamples=n_resamples, seed=seed) for a, b in CONTRASTS}}
    labelled = frame[frame["stratum"].notna()] if "stratum" in frame else frame.iloc[0:0]
    if len(labelled):
        out[f"strata_{PRIMARY[0]}-{PRIMARY[1]}"] = {
            str(stratum): _harness_contrast(g, *PRIMARY, n_resamples=n_resamples, seed=seed)
            for stratum, g in labelled.groupby("stratum")}
    return out


def contrast_rows(frame: pd.DataFrame, *, n_resamples: int, seed: int, stratum: str = "all") -> list[dict[str, Any]]:
    """One row per target, contrast and analysis (complete case, ITT): the paired Δ M2 with
    its 95% interval (percentile bootstrap of the mean over the cuts, clustered by session
    when they come from several) and the harness's sign-flip p."""
    rows = []
    for target, g in frame.groupby("target", sort=False):
        for a, b in CONTRASTS:
            for analysis, fill in ANALYSES:
                cuts, deltas = harness_paired_cuts(_arm_values(g, a), _arm_values(g, b), fill=fill)
                s = harness_sign_flip_summary(deltas, n_resamples=n_resamples, seed=seed)
                row = {"target": target, "contrast": f"{a} − {b}", "analysis": analysis, "stratum": stratum,
                       "n": s["n"], "delta": s["delta_mean"], "ci_low": math.nan, "ci_high": math.nan,
                       "p": s["p"], "exact_p": s["exact_p"], "positive": s["n_positive"],
                       "negative": s["n_negative"], "note": ""}
                if (a, b) == PRIMARY:
                    row["p_harness_default"] = harness_sign_flip_p(deltas, n_resamples=HARNESS_DEFAULT_RESAMPLES,
                                                                   seed=seed)[1] if deltas else math.nan
                sessions = [c[0] for c in cuts]
                try:  # cuts of one session resampled alone; of several, clustered by session
                    est = bootstrap_mean(deltas, clusters=sessions if len(set(sessions)) > 1 else None,
                                         n_resamples=BOOTSTRAP_RESAMPLES, seed=seed)
                    row.update(ci_low=est.ci_low, ci_high=est.ci_high)
                except StatsInputError as exc:
                    row["note"] = f"not estimable: {exc}" if not deltas else f"no interval: {exc}"
                if not deltas:
                    row["note"] = f"not estimable: no cutpoint where both {a} and {b} " + (
                        "returned a call of the ground-truth tool" if fill is None else "were answered")
                elif not any(deltas):
                    row["note"] = "; ".join(filter(None, [row["note"], f"no spread: {a} and {b} score the same M2 "
                                                          f"at each of the {len(deltas)} cutpoint(s)"]))
                rows.append(row)
    return rows


def contrasts(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """Δ M2 per target for each contrast (recent3K − gpt5_3K first, the paper's F5),
    complete case beside intention-to-treat, with the interval and the sign-flip p; then
    the primary contrast within the same-task and cross-task strata. Beside it, per target
    and session, the harness's own analysis shape (``results/harness_analysis.parquet``:
    :func:`harness_analysis`, what the conformance checks against the fixtures)."""
    p = run.params
    rows = contrast_rows(frame, n_resamples=p.n_resamples, seed=p.resample_seed)
    for stratum, g in frame.groupby("stratum"):
        rows += [r for r in contrast_rows(g, n_resamples=p.n_resamples, seed=p.resample_seed, stratum=stratum)
                 if r["contrast"] == f"{PRIMARY[0]} − {PRIMARY[1]}"]
    table = pd.DataFrame(rows)
    run.out.parquet("contrasts", table)
    run.out.parquet("harness_analysis", pd.DataFrame(  # the harness's metrics analysis, per target and session
        [{"target": t, "session": s, "analysis": harness_analysis(g, n_resamples=p.n_resamples, seed=p.resample_seed)}
         for (t, s), g in frame.groupby(["target", "session"], sort=False)], columns=["target", "session", "analysis"]))
    run.table("contrasts", side_by_side(table))
    return table


def contrast_figure(run: Run, contrasts: pd.DataFrame) -> SavedFigure:
    """Δ M2 (recent3K − gpt5_3K) per target, complete case and intention-to-treat, with
    95% intervals; a target without an estimate says why."""
    shown = contrasts[(contrasts["stratum"] == "all") & (contrasts["contrast"] == f"{PRIMARY[0]} − {PRIMARY[1]}")] \
        if len(contrasts) else contrasts
    if len(shown):
        shown = shown.assign(analysis=shown["analysis"].map({"complete_case": "complete case",
                                                             "itt": "intention to treat"}))
    return run.figure("continuation", figures.forest(
        shown, label="target", estimate="delta", hue="analysis",
        xlabel=f"Δ M2, {PRIMARY[0]} − {PRIMARY[1]} (argument similarity)",
        reason="no target was asked at a cutpoint"))


def finding(target_rows: pd.DataFrame, written: dict[str, Any], n_cutpoints: int, target: str) -> str:
    """The section's sentence for the first target, ``target``: Δ M2 of the primary contrast, complete case
    and intention to treat (``target_rows``: its two rows of :func:`contrast_rows`, stratum all;
    ``written``: the manuscript's values of them); where neither can say anything (no complete
    case, or no spread, and the intention to treat without spread), the plain sentence that
    the contrast measures nothing, why, and what would fix it."""
    a, b = PRIMARY
    rows = {r["analysis"]: r for _, r in target_rows.iterrows()}
    cc, itt = rows.get("complete_case"), rows.get("itt")
    if cc is None or itt is None:
        return f"For {target} Δ M2 ({a} − {b}) was not asked: no cutpoint was asked under both arms."

    def flat_spread(r) -> bool:
        return int(r["n"]) > 0 and int(r["positive"]) == 0 and int(r["negative"]) == 0

    def estimate(prefix: str, label: str) -> str:
        ci, p_value = written[f"{prefix}_ci"], written[f"{prefix}_p"]
        interval = f"95% CI {ci}" if reason_of(ci) is None else f"without an interval: {reason_of(ci)}"
        return f"{written[f'{prefix}_delta']} ({interval}; {label} = {p_value})"

    if int(cc["n"]) == 0:
        complete = (f"at none of the {n_cutpoints} cutpoints did both {a} and {b} return a call of the ground-truth "
                    "tool, so there is no complete case")
    elif flat_spread(cc):
        complete = f"at each of the {int(cc['n'])} complete-case cutpoints both arms scored the same M2"
    else:
        complete = (f"over the {int(cc['n'])} cutpoints where both arms returned a call of the right tool "
                    f"(complete case) Δ M2 ({a} − {b}) is {estimate('cc', 'sign-flip p')}")
    if int(itt["n"]) == 0:
        treated = "no cutpoint was answered under both arms to score with a missing call counted 0"
    elif flat_spread(itt):
        treated = (f"with a missing or unparseable call scored 0 (intention to treat) the arms score the same M2 "
                   f"at each of the {int(itt['n'])} cutpoints, so Δ is 0 with no spread")
    else:
        treated = (f"scoring a missing or unparseable call 0 over {int(itt['n'])} cutpoints (intention to treat) "
                   f"gives {estimate('itt', 'p')}")
    if (int(cc["n"]) == 0 or flat_spread(cc)) and (int(itt["n"]) == 0 or flat_spread(itt)):
        return measures_nothing(f"the tool-use contrast ({a} − {b}) of {target}", f"{complete}, and {treated}",
                                f"{CAPABLE_TARGET} and {PAPER_SCALE_SET} ({PAPER_SCALE['n_cutpoints']} cutpoints)")
    return f"For {target}, {complete}; {treated}."


def variables(run: Run, cutpoints: pd.DataFrame, frame: pd.DataFrame, attrition: pd.DataFrame,
              contrasts: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's numbers (per-target ones keyed ``<key>_<target>``, the first
    target's also unsuffixed), written with the run log."""
    p = run.params
    counts = run.log.batches.get("continuation:targets")
    primary = contrasts[(contrasts["contrast"] == f"{PRIMARY[0]} − {PRIMARY[1]}")]
    values: dict[str, dict[str, Any]] = {}
    for target in p.targets:
        own = values.setdefault(target, {})
        for analysis, (n, delta, p_value, ci) in ANALYSIS_KEYS.items():
            row = primary[(primary["target"] == target) & (primary["analysis"] == analysis)
                          & (primary["stratum"] == "all")]
            if not len(row):
                continue
            r = row.iloc[0]
            own[n] = r["n"]  # the pairs, also when there are none
            if pd.isna(r["delta"]):
                continue
            own[delta], own[p_value] = r["delta"], r["p"]
            own[ci] = (r["ci_low"], r["ci_high"]) if pd.notna(r["ci_low"]) else \
                not_estimable(r["note"].replace("no interval: ", "") or "no interval")
    why = {t: "; ".join(dict.fromkeys(str(n).replace("not estimable: ", "") for n in
                                      primary[(primary["target"] == t) & (primary["stratum"] == "all")]["note"]
                                      if str(n).startswith("not estimable"))) or NO_ESTIMATE
           for t in p.targets}
    run.out.per_target([key for keys in ANALYSIS_KEYS.values() for key in keys], values, p.targets, why)
    for arm in ARMS:
        own = {t: attrition[(attrition["target"] == t) & (attrition["arm"] == arm)] for t in p.targets}
        run.out.per_target(("attrition_{arm}_pct_{target}", "prose_{arm}_{target}"),
                           {t: {"attrition_{arm}_pct_{target}": g["attrition_pct"].iloc[0],
                                "prose_{arm}_{target}": g["prose"].iloc[0]} for t, g in own.items() if len(g)},
                           p.targets, f"no cutpoint of this target was asked under {arm}", arm=arm)
    announced = {arm: 100.0 * float(cutpoints[f"announced_{arm}"].mean()) if len(cutpoints) else math.nan
                 for arm in ARMS}
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), protocol=p.protocol,
                n_sessions=len(run.sessions), n_cutpoints=int(len(cutpoints)), n_per_session=p.n_cutpoints,
                skip_initial=p.skip_initial,
                gpt_task=str(cutpoints["gpt_task"].iloc[0]) if len(cutpoints) else not_estimable("no cutpoint"),
                n_same_task=int((cutpoints["stratum"] == "same_task").sum()),
                n_cross_task=int((cutpoints["stratum"] == "cross_task").sum()),
                n_outside_schema=int((~cutpoints["in_schema"]).sum()),
                announced_recent_pct=announced["recent3K"] if len(cutpoints) else not_estimable("no cutpoint"),
                announced_scratch_pct=announced["scratch"] if len(cutpoints) else not_estimable("no cutpoint"),
                n_calls=counts.calls if counts else 0, n_failed=counts.failed if counts else 0,
                n_cached=counts.cached if counts else 0, max_tokens=p.max_tokens, n_resamples=p.n_resamples,
                **divergence_variables(run.log.about["protocol"]["differs"]))
    first = primary[(primary["target"] == p.targets[0]) & (primary["stratum"] == "all")] if len(primary) else primary
    run.out.set(finding=finding(first, run.out.variables, int(len(cutpoints)), p.targets[0]))
    return spine.finish(run)


STAGES = (Stage("run", start), Stage("cutpoints", cutpoints), Stage("frame", grid),
          Stage("attrition", attrition), Stage("contrasts", contrasts), Stage("figure", contrast_figure),
          Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
