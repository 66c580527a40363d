"""What every experiment shares: its parameters, which sessions, how cells are built, how
estimates become tables and manuscript variables (per target).

Counts are never capped silently: asking for more sessions than the corpus has
(``n_sessions``) or more positions than any chosen session offers (``n_positions``) is a
:class:`~contextecho.experiments.parameters.RangeError` naming the parameter and its valid
range. These ranges depend on the data, so they are checked where the run reads it: the
sessions when they are selected (at the run's start), the positions when the cells are
built, before any target is asked (a judge's calibration, which reads no session, may
come first). A session with fewer positions than asked gives all it has.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from ..cape.administer import ANSWERS
from ..cape.inventory import inventory_names
from ..engine.paths import shared_dir
from ..engine.calls import Transport, check_routes
from ..engine.endpoints import parse_endpoints
from ..echo import contracts, probes, stressors
from ..echo.protocol import Grid
from ..echo.protocols import PROTOCOLS, protocol as get_protocol
from ..echo.reference.cells import PROTOCOL as REFERENCE_PROTOCOL
from ..echo.reference.judge import JUDGE_MODEL
from ..echo.runner import SELF_JUDGE, distribution_summary, judge_model
from ..engine.token_distribution import FLAT_ENTROPY
from ..engine.llm import LOCAL_MODEL
from ..paper.outputs import not_estimable
from .parameters import (NON_NEGATIVE, POSITIVE, RESAMPLES, Checked, Endpoints, Interval, Models, NonEmpty,
                         OneOf, RangeError, Temperature, count)
from ..sessions.model import Session
from ..sessions.corpus import local_corpus, read_manifest

PROTOCOL_NAMES = OneOf(PROTOCOLS.names, "protocol")
#: The harness's primary judge (``harness/judge.py:108``; e15 ``run.py:137``, e16, e17), as the
#: paper-scale parameter sets name it: not one of their targets, so no target judges itself.
REFERENCE_JUDGE = f"anthropic/{JUDGE_MODEL}"
# The judge score an analysis runs on -> its column in run_cells' frame. Both are always
# read (distributions where the judge's provider exposes token probabilities), so every
# notebook can report the other beside the chosen one.
SCORES = {"discrete": "score", "expected": "expected_score"}


def score_column(score: str) -> str:
    """The frame column of judge score ``score`` (discrete | expected)."""
    try:
        return SCORES[score]
    except KeyError:
        raise ValueError(f"unknown score {score!r}; choose from {', '.join(SCORES)}") from None


@dataclass(frozen=True)
class ServingParameters(Checked):
    """Where the models are served and how many calls run at once: transport settings,
    in every notebook and never part of a request key (see :mod:`contextecho.engine.endpoints`)."""

    endpoints: tuple[str, ...] = ()
    concurrency: int = 1

    # (papermill cannot read a parameter line with a second equals sign, hence the words)
    HELP = {"endpoints": "models on OpenAI-compatible servers (vLLM, llama.cpp), comma-separated: "
                         "each MODEL, an equals sign, API_BASE[#KEY_ENV] (README: Using a real provider)",
            "concurrency": "calls in flight at once (1 for the embedded model; more for a server)"}
    RANGES = {"endpoints": Endpoints(), "concurrency": count()}

    def transport(self, models: Iterable[str]) -> Transport:
        """The run's Transport; every model's route and key are checked here, before any call."""
        transport = Transport(concurrency=self.concurrency, endpoints=parse_endpoints(self.endpoints))
        check_routes(models, transport)
        return transport


@dataclass(frozen=True)
class JudgedParameters(ServingParameters):
    """The parameters every judged experiment shares, with one set of defaults, so the
    notebooks ask for the same cells (and reuse each other's from the cache)."""

    targets: tuple[str, ...] = (LOCAL_MODEL,)
    judges: tuple[str, ...] = (LOCAL_MODEL,)
    window: int = 3000
    max_tokens: int = 32
    judge_max_tokens: int = 64
    temperature: float = 0.0
    n_resamples: int = 2000
    resample_seed: int = 20240601
    output_dir: str = ""
    protocol: str = "reference"
    score: str = "discrete"
    require_calibrated: bool = False

    HELP = {**ServingParameters.HELP, "targets": "LiteLLM model strings", "judges": "first is primary",
            "protocol": "instrument set: reference (the authors' harness) or contextecho (ours)",
            "score": "discrete (the parsed verdict, the paper's) or expected (Σ s·p(s) from the "
                     "judge's token probabilities; the parsed verdict where the provider has none)",
            "window": "prefix characters (the embedded model's 8k context limits it)",
            "judge_max_tokens": "the judge's budget (reference: the harness's 400 at paper scale; a JSON verdict "
                                "of about 20 tokens ends at its closing brace, one that runs on is closed within "
                                "the budget; contextecho's rubric asks for one line, Score: n)",
            "output_dir": "default paper/_generated/<notebook>",
            "require_calibrated": "stop before any target call when a judge fails its calibration "
                                  "(quadratic kappa at least 0.60, at most 10% invalid)"}
    RANGES = {**ServingParameters.RANGES, "targets": (NonEmpty(), Models()), "judges": (NonEmpty(), Models()),
              "window": POSITIVE, "max_tokens": POSITIVE, "judge_max_tokens": POSITIVE,
              "temperature": Temperature(("targets",)), "n_resamples": RESAMPLES, "resample_seed": NON_NEGATIVE,
              "protocol": PROTOCOL_NAMES, "score": OneOf(tuple(SCORES), "score")}

    def judge_models(self) -> tuple[str, ...]:
        """The model strings of the judges, in order (``self``, which the panel accepts: every
        target, :data:`~contextecho.echo.runner.SELF_JUDGE`)."""
        return tuple(dict.fromkeys(t for j in self.judges for t in (self.targets if j == SELF_JUDGE else (j,))))



# Item names a notebook parameter may list (see instruments.items.resolve_items).
PROBE_IDS = OneOf(lambda: sorted(probes.BATTERIES) + sorted(probes.BY_ID), "probe id or battery")
STRESSOR_IDS = OneOf(lambda: sorted(stressors.STRESSORS) + sorted(stressors.BY_ID), "stressor or wording id")
CONTRACT_IDS = OneOf(lambda: sorted(stressors.STRESSORS) + sorted(stressors.BY_ID) + ["hardened"]
                     + sorted(contracts.BY_ID), "stressor, wording or contract id")


# The questionnaire inventories a notebook may name, and which answer its analyses read.
INVENTORIES = OneOf(inventory_names, "inventory", files=".csv")
ANSWER_KINDS = OneOf(ANSWERS, "answer")


# Licences that allow publishing derived numbers; sources that state none are left out.
OPEN_LICENCES = ("MIT", "Apache-2.0", "BSD", "CC-BY")


FORMATS = ("claude_code", "codex_cli")


def corpus_rows(min_assistant: int = 20, min_compactions: int = 0,
                events: Sequence[str] = (), formats: Sequence[str] = FORMATS) -> list[dict]:
    """Manifest rows of usable sessions, longest first (ties by file name).

    ``events`` (``compaction``, ``microcompaction``): keep only sessions with at least one
    event of one of these types (manifest column ``n_<type>s``; absent counts as 0).
    """
    rows = [r for r in read_manifest()
            if r["format"] in formats and "/subagents/" not in r["file"]
            and r["license"].startswith(OPEN_LICENCES)
            and int(r["n_assistant_msgs"]) >= min_assistant
            and int(r["n_compactions"] or 0) >= min_compactions
            and (not events or any(int(r.get(f"n_{e}s") or 0) > 0 for e in events))]
    rows.sort(key=lambda r: (-int(r["n_assistant_msgs"]), r["file"]))
    return rows


def select_sessions(n: int, *, min_compactions: int = 0, events: Sequence[str] = (),
                    corpus: Path | None = None, protocol: str = "contextecho") -> list[Session]:
    """The ``n`` longest openly licensed sessions (0 = all), of the formats the protocol
    reads (``reference``: Claude Code), each read once the protocol's way
    (:meth:`~contextecho.echo.protocol.Protocol.read_session`; ``events``: see
    :func:`corpus_rows`)."""
    rows = corpus_rows(min_compactions=min_compactions, events=events,
                       formats=get_protocol(protocol).formats)
    if n > len(rows) > 0:
        rule = Interval(1, len(rows), zero="all", high_text="the usable sessions of the corpus for this "
                        f"selection (protocol {protocol}" + (f", events {', '.join(events)}" if events else "")
                        + (f", at least {min_compactions} compaction(s)" if min_compactions else "") + ")")
        raise RangeError("the session selection", [f"parameter 'n_sessions': {n} is out of range; "
                                                    f"valid: {rule.valid(n, None)}"])
    rows = rows if n <= 0 else rows[:n]
    if not rows:
        raise RuntimeError("no usable session in the corpus manifest")
    proto = get_protocol(protocol)
    return [proto.read_session(session_file(r["file"], corpus)) for r in rows]


def session_file(name: str, corpus: Path | None = None) -> Path:
    """``data/corpus/<name>`` (filled by `make data`), else the shared corpus beside the checkout."""
    for root in ([corpus] if corpus else [local_corpus(), shared_dir() / "corpus" / "real"]):
        if (root / name).is_file():
            return root / name
    raise FileNotFoundError(f"session {name} is in neither data/corpus nor ../shared/corpus/real; "
                            "run `make data`")


def session_labels(sessions: Sequence[Session]) -> dict[str, str]:
    """Short public labels S1..Sn for session ids (the manuscript never shows paths)."""
    return {s.session_id: f"S{i}" for i, s in enumerate(sessions, start=1)}


def build(p: JudgedParameters, experiment: str, sessions: Sequence[Session], items: Sequence[str], *,
          positions, reference_positions, k: int = 12, limit: int = 0, replicates: int = 1,
          turns: Sequence[int] = (), stressor_max_tokens: int | None = None, redact: bool = True,
          framing: str = "framed", s2_requests: str = "e08") -> list:
    """The experiment's real/filler cells under ``p.protocol`` (its
    :meth:`~contextecho.echo.protocol.Protocol.build_cells` over one
    :class:`~contextecho.echo.protocol.Grid`): ``positions`` (with ``k``) are read by
    ``contextecho`` (see :func:`~contextecho.echo.cells.build_cells`), ``reference_positions``
    (a scheme of :mod:`contextecho.echo.reference.cells`, or a mapping; ``limit``,
    ``turns``, ``s2_requests``: the harness runner whose S2 requests it sends) by
    ``reference``. ``redact=False`` (run-level conformance only, whose replay never leaves
    the process) sends a hosted target the session unredacted, as the harness does."""
    grid = Grid(tuple(items), positions=positions, reference_positions=reference_positions, k=k,
                limit=limit, replicates=replicates, turns=tuple(turns), window=p.window,
                max_tokens=p.max_tokens, stressor_max_tokens=stressor_max_tokens, temperature=p.temperature,
                redact=redact, framing=framing, s2_requests=s2_requests)
    asked = getattr(p, "n_positions", 0)  # the parameter, when it is what asks the positions
    ours = p.protocol != REFERENCE_PROTOCOL
    if ours and asked > 0 and positions == "uniform" and k == asked:
        # Uniform positions are distinct steps: a session of n agent steps offers n of them.
        _check_positions(experiment, asked, {s.session_id: s.n_agent_steps for s in sessions}, "agent steps")
    cells = get_protocol(p.protocol).build_cells(experiment, list(p.targets), sessions, grid)
    if not ours and asked > 0 and limit == asked and isinstance(reference_positions, str):
        offered = {s.session_id: 0 for s in sessions}
        for session, _ in {(c.session, c.position) for c in cells}:
            offered[session] += 1
        _check_positions(experiment, asked, offered, f"{reference_positions} positions")
    return cells


def _check_positions(experiment: str, asked: int, offered: Mapping[str, int], what: str) -> None:
    """``n_positions`` is at most what the chosen session offering most offers (``offered``:
    session id -> how many); more is a :class:`RangeError` naming the parameter and range."""
    most = max(offered.values(), default=0)
    if asked <= most:
        return
    each = ", ".join(f"S{i} {n}" for i, n in enumerate(offered.values(), start=1))
    rule = Interval(1, most, high_text=f"the most {what} a chosen session offers ({each})")
    raise RangeError(experiment, [f"parameter 'n_positions': {asked} is out of range; "
                                  f"valid: {rule.valid(asked, None)}"])


def protocol_record(p: JudgedParameters, stressor_max_tokens: int | None = None,
                    paper_scale: Mapping[str, Any] | None = None) -> dict:
    """What a run manifest says about the protocol: its key, the window and max tokens the
    run used next to the protocol's own, which of them were shortened (the embedded
    build's context and two cores cannot take the reference's 30,000 characters and
    600/1,024/400 tokens; under ``contextecho`` the window and tokens are the run's own
    parameters: nothing is shortened), and ``differs``: every parameter of the experiment's
    paper-scale set (``paper_scale``; under ``reference`` the harness's settings) whose
    value this run changed, computed from the parameters, never written by hand."""
    proto = get_protocol(p.protocol)
    used = {"window_chars": p.window, "probe_max_tokens": p.max_tokens,
            "stressor_max_tokens": stressor_max_tokens or p.max_tokens,
            "judge_max_tokens": p.judge_max_tokens,
            "temperature": p.temperature if proto.sampling.temperature is not None else "provider default"}
    return {**proto.key(), "settings": used, "protocol_settings": proto.settings(),
            "shortened": proto.shortened(used), "differs": differences_from(p, paper_scale or {})}


def differences_from(p: Any, paper_scale: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{setting, run, paper}]``: each parameter of ``paper_scale`` whose value in ``p``
    differs (sequences compared as tuples), in the set's order."""
    out = []
    for name, paper in paper_scale.items():
        ours = getattr(p, name, None)
        as_tuple = (lambda v: tuple(v) if isinstance(v, (list, tuple)) else v)
        if as_tuple(ours) != as_tuple(paper):
            out.append({"setting": name, "run": _setting_text(ours), "paper": _setting_text(paper)})
    return out


def _setting_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def protocol_variables(record: dict) -> dict:
    """Manuscript variables naming the protocol, what the run shortened, and every setting
    it changed from the paper-scale set (``protocol_divergences``, ``n_protocol_divergences``)."""
    shortened = ", ".join(f"{k} {record['settings'][k]} (protocol: {record['protocol_settings'][k]})"
                          for k in record["shortened"]) or "none"
    differs = record.get("differs", [])
    listed = "; ".join(f"{d['setting']} {d['run']} (paper scale: {d['paper']})" for d in differs) or "none"
    return {"protocol": record["protocol"], "protocol_version": record["protocol_version"],
            "protocol_sha256": record["protocol_sha256"][:12], "protocol_shortened": shortened,
            "protocol_divergences": listed, "n_protocol_divergences": len(differs)}


def markdown(frame: pd.DataFrame, floatfmt: str = ".2f") -> str:
    """A pipe table (no index) for ``{{< include >}}``."""
    shown = frame.copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = shown[column].map(lambda v: "—" if pd.isna(v) else format(v, floatfmt))
        else:
            shown[column] = shown[column].map(lambda v: "—" if v is None or (isinstance(v, float) and pd.isna(v))
                                              else str(v).replace("|", "/").replace("\n", " "))
    header = "| " + " | ".join(map(str, shown.columns)) + " |"
    align = "|" + "|".join("---:" if pd.api.types.is_numeric_dtype(frame[c]) else "---"
                           for c in frame.columns) + "|"
    body = ["| " + " | ".join(row) + " |" for row in shown.astype(str).itertuples(index=False)]
    return "\n".join([header, align, *body]) + "\n"


def target_slug(target: str) -> str:
    """A target's model string as a variable-key suffix (``local/smollm2-135m`` ->
    ``local_smollm2_135m``)."""
    return re.sub(r"[^a-z0-9]+", "_", target.lower()).strip("_")


#: Why a target has no estimate when nothing more precise is known.
NO_ESTIMATE = "no valid cell of this target to estimate it from"


def per_target(values: Mapping[str, Mapping[str, Any]], targets: Sequence[str], keys: Sequence[str] = (),
               why: Mapping[str, str] | str = NO_ESTIMATE) -> tuple[dict[str, Any], pd.DataFrame]:
    """The manuscript variables of every target: ``<key>_<target slug>`` for each of
    ``targets``, and unsuffixed for the first (the one the manuscript names as ``target``);
    a key of ``keys`` that a target has no value for is :func:`not_estimable` with ``why``
    (one reason, or one per target: :func:`reasons`). Beside them, the same values as a
    table, one row per target."""
    variables: dict[str, Any] = {}
    rows = []
    for target in targets:
        reason = why if isinstance(why, str) else why.get(target) or NO_ESTIMATE
        own = {**{k: not_estimable(reason) for k in keys}, **values.get(target, {})}
        variables.update({f"{k}_{target_slug(target)}": v for k, v in own.items()})
        if target == targets[0]:
            variables.update(own)
        rows.append({"target": target, "key suffix": target_slug(target), **own})
    return variables, pd.DataFrame(rows)


def reasons(table: pd.DataFrame, note: str = "note") -> dict[str, str]:
    """Per target, why its estimates could not be made: the ``note`` of its rows in
    ``table`` (an estimate table whose failed rows say ``not estimable: <why>``), joined."""
    if not len(table) or note not in table or "target" not in table:
        return {}
    out: dict[str, str] = {}
    for target, notes in table.groupby("target")[note]:
        said = [re.sub(r"^\s*(?:\w+ )?not estimable:\s*", "", str(n)).strip() for n in notes if str(n or "").strip()]
        if said:
            out[target] = "; ".join(dict.fromkeys(said))
    return out


def first_judge_rows(frame: pd.DataFrame, judge: str) -> pd.DataFrame:
    """The rows the primary estimates read: ``judge``'s verdicts (``self``: each target's
    own), and the results a resumed run kept (``resumed``), which stand for their cells as
    the judge that stored them judged them (:func:`.spine.run_grid`)."""
    if not len(frame):
        return frame
    judged = frame["judge_model"] == frame["target"].map(lambda t: judge_model(judge, t))
    if "resumed" in frame:
        judged |= frame["resumed"].fillna(False).astype(bool)
    return frame[judged]


def failure_column(frame: pd.DataFrame, failures: str) -> str:
    """The score column a harness statistic reads: ``score`` (valid verdicts only) or,
    with ``failures="in"``, ``reference_score`` (the harness's stored value, −1 included)."""
    if failures == "out":
        return "score"
    if failures == "in":
        if "reference_score" not in frame:
            raise ValueError("failures='in' needs the reference protocol's reference_score column")
        return "reference_score"
    raise ValueError(f"failures must be 'out' or 'in', got {failures!r}")


def ci_text(estimate: float, low: float, high: float, digits: int = 2) -> str:
    return f"{estimate:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def judge_spread(scores: "pd.Series") -> dict:
    """How concentrated a judge's valid verdicts are: the modal score and its share (%)."""
    valid = scores.dropna()
    if valid.empty:
        why = not_estimable("the judge gave no valid verdict")
        return {"judge_modal_score": why, "judge_modal_pct": why, "judge_distinct_scores": 0}
    counts = valid.value_counts()
    return {"judge_modal_score": int(counts.index[0]),
            "judge_modal_pct": round(100 * float(counts.iloc[0]) / len(valid), 1),
            "judge_distinct_scores": int(len(counts))}


def complete_units(frame: pd.DataFrame, score: str = "score") -> tuple[pd.DataFrame, int]:
    """Keep (session, position) units with a valid score in both arms; count the rest."""
    valid = frame[frame[score].notna()]
    arms = valid.groupby(["session", "position"])["arm"].nunique()
    keep = arms[arms == 2].index
    units = frame.set_index(["session", "position"]).index
    dropped = frame.groupby(["session", "position"]).ngroups - len(keep)
    return frame[units.isin(keep)], int(dropped)


def unit_gaps(frame: "pd.DataFrame", by=("target", "session", "position", "step"),
              score: str = "score") -> "pd.DataFrame":
    """Per unit (one snapshot of one session for one target): filler mean − real mean of
    the valid ``score`` values, with the number of valid cells per arm. Units lacking an
    arm get NaN."""
    valid = frame[frame[score].notna()]
    means = valid.pivot_table(index=list(by), columns="arm", values=score, aggfunc="mean")
    counts = valid.pivot_table(index=list(by), columns="arm", values=score, aggfunc="count")
    all_units = frame[list(by)].drop_duplicates().set_index(list(by)).index
    means = means.reindex(all_units)
    counts = counts.reindex(all_units).fillna(0)
    out = pd.DataFrame(index=all_units)
    for arm in ("real", "filler"):
        out[f"{arm}_mean"] = means[arm] if arm in means.columns else float("nan")
        out[f"n_{arm}"] = counts[arm].astype(int) if arm in counts.columns else 0
    out["gap"] = out["filler_mean"] - out["real_mean"]
    return out.reset_index()


def distribution_report(judged: "pd.DataFrame", primary: str) -> tuple["pd.DataFrame", dict]:
    """Per judge, how its score distributions were read (:func:`distribution_summary`:
    ok / invalid / error / discrete counts, flat ones, arg-max == parsed verdict), and
    the ``primary`` judge's numbers as manuscript variables."""
    table = distribution_summary(judged)
    chosen = table[table["judge_model"] == primary] if len(table) else table
    if chosen.empty:
        return table, {"argmax_agree_pct": not_estimable(f"no distribution of {primary} was read"), "n_flat": 0, "n_distribution_ok": 0,
                       "n_distribution_invalid": 0, "n_distribution_error": 0,
                       "n_distribution_discrete": 0, "flat_entropy_pct": round(100 * FLAT_ENTROPY)}
    first = chosen.iloc[0]
    agree = first["argmax_agree_pct"]
    return table, {"argmax_agree_pct": not_estimable(f"no cell has both a valid verdict of {primary} and a read "
                                                     "distribution") if pd.isna(agree) else float(agree),
                   "n_flat": int(first["n_flat"]), "n_distribution_ok": int(first["n_ok"]),
                   "n_distribution_invalid": int(first["n_invalid"]),
                   "n_distribution_error": int(first["n_error"]),
                   "n_distribution_discrete": int(first["n_discrete"]),
                   "flat_entropy_pct": round(100 * FLAT_ENTROPY)}
