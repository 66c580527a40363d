"""Run-level conformance of the ``a_anchor`` family: the harness's e04 A-anchor runners
replayed through our anchored cells (:mod:`contextecho.experiments.anchor_designs`).

A case lists its harness runners in order (``harness_driver``). Each one
(:data:`~contextecho.echo.reference.anchor_runners.ANCHOR_RUNNERS`: the anchored e04 runners
and their no-anchor S2 baseline, e08) is one grid per (anchor, target) in the runner's loop
order, the runner's arms at its positions with the anchor as the grid's intervention, judged
by the case's judge where the runner judges. Requests are compared as everywhere
(:func:`.replay.compare_requests`); the cells here (their files carry the anchor's folder
name: :func:`cell_identity`); the tables by :func:`compare_tables`. A runner outside that
table is reported not expressible.

A case whose runners (outside plotting and analysis) are all another family module's
(:data:`DELEGATES`: ``anchor_trajectory``'s ``RUNNERS``) is run by that module whole.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..echo.protocols import protocol_of
from ..echo.reference.transcript import DEFAULT_WINDOW
from ..echo.reference.released import identify
from ..echo.reference.anchor_runners import NO_ANCHOR, S2_ITEMS, AnchorRunner, anchor_runner, harness_arm
from ..stats.session_validation import HARNESS_ARMS
from ..experiments import panel, spine
from ..echo.reference import anchors, plot_inputs
from ..experiments.anchor_designs import (anchored_cells, decay_curve, decay_printout, saved_lines, size_means,
                                          stressor_forest_printout, stressor_forest_rows, trajectory_report,
                                          variant_results)
from ..experiments.protocol_record import protocol_record
from ..sessions.positions import Position
from . import anchor_trajectory
from .cells import compare_cell_fields
from .case import REFERENCE, ROOT, TOLERANCE, CaseResult, FixtureError, decode
from .replay import Replay, compare_requests, key_fields, litellm_model, replay_environment

FamilyRun = Callable[[dict, Path, Replay, CaseResult, Sequence[dict], Path], None]


@dataclass(frozen=True)
class Delegate:
    """Another family module that runs a whole case when it runs every one of its runners."""

    runners: Sequence[str]
    run: FamilyRun


#: Filled by one line per module after merging, e.g.
#: ``DELEGATES.append(Delegate(anchor_trajectory.RUNNERS, anchor_trajectory.run))``.
DELEGATES: list[Delegate] = [Delegate(anchor_trajectory.RUNNERS, anchor_trajectory.run)]

TABLE_DRIVERS = ("plotting/", "analysis/")


def _runners(case: dict) -> list[str]:
    return [d["runner"] for d in case["harness_driver"] if not d["runner"].startswith(TABLE_DRIVERS)]


def delegate_of(case: dict) -> Delegate | None:
    runners = _runners(case)
    return next((d for d in DELEGATES if runners and all(r in d.runners for r in runners)), None)


@dataclass
class Anchored:
    """One of our anchored grids standing in for one (runner, anchor, target) of the harness."""

    runner: str
    anchor: str
    frame: pd.DataFrame
    target_safe: str


def _targets(case: dict, driver: dict, spec: AnchorRunner) -> list[tuple[str, str]]:
    """``(model string, target_safe)`` of the targets one anchored driver ran."""
    env = driver.get("env") or {}
    named = list(case["inputs"].get("targets") or []) + list(case["inputs"].get("size_targets") or [])
    if spec.model_env and env.get(spec.model_env):
        model = env[spec.model_env]
        provider = spec.provider or env.get("PROVIDER")
        if not provider:
            raise FixtureError(f"case {case['id']}", f"{driver['runner']} needs env PROVIDER")
        return [(litellm_model(provider, model), env.get("TARGET_SAFE", model))]
    subs = (driver.get("substitutions") or {}).get("TARGETS")
    if subs:
        return [(litellm_model(spec.provider or next(t["provider"] for t in named if t["model"] == model), model), safe)
                for model, safe in subs]
    return [(litellm_model(t["provider"], t["model"]), t["target_safe"]) for t in named]


def _positions(case: dict, driver: dict, spec: AnchorRunner) -> list[Position]:
    subs = driver.get("substitutions") or {}
    listed = subs.get("POSITIONS") or [[p["turn"], p["label"]] for p in case["inputs"].get("positions", [])]
    chosen = [Position(int(turn), label, "case") for turn, label in listed]
    wanted = subs.get("PILOT_POSITIONS") or subs.get("ALL_POSITIONS")
    if spec.position:
        wanted = [spec.position]
    return [p for p in chosen if wanted is None or p.label in wanted]


def _items(case: dict, spec: AnchorRunner) -> list[str]:
    inputs = case["inputs"]
    if spec.items == S2_ITEMS:
        return [f"S2#{int(i[4:]) + 1:02d}" for i in inputs.get("items", [])] or ["S2"]
    return list(inputs["probes"])


def _parameters(targets: Sequence[str], judge: str | None, case: dict, workdir: Path) -> panel.Parameters:
    return panel.Parameters(
        targets=tuple(targets), judges=(judge or targets[0],),
        window=int(case["inputs"].get("max_chars", DEFAULT_WINDOW)), max_tokens=panel.PAPER_SCALE["max_tokens"],
        stressor_max_tokens=panel.PAPER_SCALE["stressor_max_tokens"],
        judge_max_tokens=panel.PAPER_SCALE["judge_max_tokens"], protocol="reference", output_dir=str(workdir),
        n_resamples=10_000, resample_seed=42, concurrency=1)


def drive_anchored(case: dict, driver: dict, session, replay: Replay, workdir: Path) -> list[Anchored]:
    """One harness runner of the family: a grid per (anchor, target) in its loop order."""
    runner = driver["runner"]
    spec = anchor_runner(runner)
    judge = case_judge(case, runner) if spec.items != S2_ITEMS else None
    out = []
    fields = key_fields(case, "target")
    for anchor in spec.anchors(driver.get("env") or {}):
        for model, safe in _targets(case, driver, spec):
            params = _parameters([model], judge, case, workdir / f"{len(list(workdir.glob('*'))):03d}")
            proto = protocol_of(params)
            models = params.targets + params.judge_models()
            run = spine.start("a_anchor", params, models=models, protocol=proto, record=protocol_record(proto, params),
                              sessions=lambda: [session],
                              transport=replace(params.transport(models), base_delay_s=0.0, max_delay_s=0.0,
                                                client=replay))
            cells = anchored_cells(proto, params, "a_anchor", session, _positions(case, driver, spec),
                                   _items(case, spec), anchor, redact=False, arms=spec.arms)
            for cell in cells:
                values = {"target": safe, "position": cell.position, "turn": cell.step,
                          "arm": _arm(anchor, cell.arm), "item": _item_name(cell.item.id), "replicate": cell.replicate}
                replay.identities[cell.request.key] = ("target", {f: values[f] for f in fields if f in values})
            if judge:
                replay.judge_calls.update({m: "judge" for m in params.judge_models()})
            frame = spine.run_grid(run, cells, judges=[judge] if judge else [],
                                   judge_max_tokens=params.judge_max_tokens, redact=False)
            out.append(Anchored(runner, anchor, frame, safe))
    return out


def _arm(anchor: str, arm: str) -> str:
    """The harness's name of a cell's folder: the anchor's, or without one the arm's."""
    return HARNESS_ARMS[arm] if anchor == NO_ANCHOR else harness_arm(anchor)


def case_judge(case: dict, runner: str) -> str | None:
    """The judge (LiteLLM model string) the case names for ``runner``, else the case's judge."""
    named = [r["judge"] for r in case["inputs"].get("runs", []) if r.get("runner") == runner and r.get("judge")]
    judge = named[0] if named else case["inputs"].get("judge")
    return litellm_model(judge["provider"], judge["model"]) if judge else None


def _item_name(item: str) -> str:
    return f"S2_v{int(item[3:]) - 1:02d}" if item.startswith("S2#") else item


# ---------------------------------------------------------------- cells
#: The layouts of the anchored runners' cells and of e08's baseline beside them
#: (:mod:`~contextecho.echo.reference.released`).
ANCHORED_LAYOUTS = ("s2", "anchor_variant", "a_stressor", "placement", "anchor_size", "anchor_decay")


def cell_identity(path: str, record: Mapping[str, Any]) -> tuple | None:
    """An anchored cell file as (target, position or None, harness arm, item); None for another file."""
    found = identify(path, record)
    if found is None or found[0] not in ANCHORED_LAYOUTS:
        return None
    i = found[1]
    return i.target, i.position, i.arm, i.item


def _ours(anchored: Sequence[Anchored]) -> dict[tuple, dict]:
    rows: dict[tuple, dict] = {}
    for a in anchored:
        frame = a.frame[a.frame["judge_model"].notna()] if a.frame["judge_model"].notna().any() else a.frame
        for row in frame.to_dict("records"):
            ident = (a.target_safe, row["position"], _arm(a.anchor, row["arm"]), _item_name(row["item"]))
            row["response"] = row["response"] if isinstance(row["response"], str) else None
            rows[ident] = row
            rows[(ident[0], None, ident[2], ident[3])] = row
    return rows


def compare_anchored_cells(case: dict, anchored: Sequence[Anchored], report: CaseResult,
                           declared: Sequence[dict]) -> None:
    """The cells: stored (and only those), their texts, lengths and verdicts; an expected
    cell of a layout this module does not read fails."""
    ours = _ours(anchored)
    missing, compared = [], []
    n = 0
    for cell in case["expected"].get("cells", []):
        ident = cell_identity(cell["path"], cell["record"])
        if ident is None:
            report.add("cells", cell["path"], False, "a cell of the family's runners", None, declared,
                       note="unknown cell layout")
            continue
        n += 1
        row = ours.get(ident)
        if row is None or row["response"] is None:
            missing.append(list(ident))
            continue
        actual = {"response_text": row["response"], "response_len": len(row["response"])}
        if row.get("item_kind") == "probe":
            score = row.get(REFERENCE.stored_score)
            actual.update(score=None if score is None or score != score else int(score),
                          label=row.get("reference_label"), reason=row.get("reference_reason"))
        compared.append((ident, cell["record"], actual))
    report.add("cells", "anchored.stored", not missing, n, n - len(missing), declared,
               note=f"missing or failed: {missing[:10]}" if missing else f"{n} cells")
    compare_cell_fields(report, compared, ("response_text", "response_len", "score", "label", "reason"), declared,
                        prefix="anchored.")
    expected = {cell_identity(c["path"], c["record"]) for c in case["expected"].get("cells", [])} - {None}
    lost = [k for a in anchored for k, row in _ours([a]).items() if k[1] is not None
            and k not in expected and (k[0], None, k[2], k[3]) not in expected and _contributes(row)]
    report.add("cells", "anchored.lost_cells_contribute_nothing", not lost, [], lost[:10], declared)


def _contributes(row: Mapping[str, Any]) -> bool:
    if row.get("item_kind") == "probe":
        score = row.get(REFERENCE.stored_score)
        return score is not None and score == score
    return row.get("verdict_status") == "ok"


# ---------------------------------------------------------------- a case
def run(case: dict, corpus: Path, replay: Replay, report: CaseResult, declared: Sequence[dict], workdir: Path) -> None:
    """Run the case's harness runners through our code, in order, and compare (module doc)."""
    delegate = delegate_of(case)
    if delegate is not None:
        delegate.run(case, corpus, replay, report, declared, workdir)
        return
    drivers = [d for d in case["harness_driver"] if not d["runner"].startswith(TABLE_DRIVERS)]
    ours = [d for d in drivers if anchor_runner(d["runner"]) is not None]
    for d in drivers:
        if anchor_runner(d["runner"]) is None:
            report.not_expressible("runners", d["runner"], "not a runner of the anchor family")
    models = [m for d in ours for m, _ in _targets(case, d, anchor_runner(d["runner"]))]
    anchored: list[Anchored] = []
    with replay_environment(models):  # the runners' targets named only in their environment
        session = REFERENCE.read_session(corpus / case["inputs"]["session"]) if ours else None
        for number, driver in enumerate(ours):
            anchored += drive_anchored(case, driver, session, replay, workdir / f"run{number:02d}")
    compare_requests(case, replay, report, declared)
    compare_anchored_cells(case, anchored, report, declared)
    compare_tables(case, anchored, report, declared)


def tidy_cells(anchored: Sequence[Anchored]) -> pd.DataFrame:
    """Every stored-or-lost cell of the case's runs as the anchor tables read them
    (:mod:`contextecho.experiments.anchor_designs`): the harness's target folder names, the
    anchor as ``intervention``, one row per cell (its judge's, where judged)."""
    frames = [a.frame.assign(target=a.target_safe) for a in anchored]
    frames = [f[(f["item_kind"] != "probe") | f["judge_model"].notna()] for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["target", "position", "arm", "intervention", "item", "response", "passed", REFERENCE.stored_score])


#: The tables each analysis gives, by the first table name of its group in a case.
def compare_tables(case: dict, anchored: Sequence[Anchored], report: CaseResult,
                   declared: Sequence[dict]) -> None:
    """The tables of the case computed by our analyses (:mod:`contextecho.experiments.anchor_designs`)."""
    tables = case["expected"].get("tables") or {}
    cells = tidy_cells(anchored)
    score = REFERENCE.stored_score
    computed: set[str] = set()

    def compare(name: str, actual: Any, tolerance: float = TOLERANCE, note: str = "") -> None:
        if name in tables:
            computed.add(name)
            report.compare("tables", name, decode(tables[name]), actual, declared, tolerance, note)

    if "anchor_structures" in tables:
        computed.add("anchor_structures")
        for name, expected, actual in structure_checks(decode(tables["anchor_structures"])):
            report.compare("tables", f"anchor_structures.{name}", expected, actual, declared)
    if "anchor_variants_results" in tables:
        got = variant_results(cells)
        compare("anchor_variants_results", got["results"])
        compare("anchor_variants_loader", {"variant_lens": got["variant_lens"], "no_anchor_lens": got["no_anchor_lens"]})
        compare("anchor_variants_stdout", got["printout"] + [""] + saved_lines("anchor_variants", ROOT))
        compare("anchor_variants_return", 0)
    if "v2_full_trajectory_results" in tables:
        got = trajectory_report(cells)
        compare("v2_full_trajectory_results", got["rows"])
        compare("v2_full_trajectory_stdout", got["printout"] + [""] + saved_lines("v2_full_trajectory", ROOT))
        compare("v2_full_trajectory_return", 0)
    if "fig6_forest_rows" in tables:
        forest = stressor_forest_rows(cells)
        rows = forest["rows"]
        compare("fig6_loader", forest["loader"])
        compare("fig6_bootstrap_calls", forest["bootstrap_calls"], 0.0)
        compare("fig6_stdout", stressor_forest_printout(forest, saved_lines("fig6", ROOT)[0][len("Saved "):]))
        fields = [k for k in FIG6_FIELDS]
        expected_rows = decode(tables["fig6_forest_rows"])
        computed.add("fig6_forest_rows")
        report.compare("tables", "fig6_forest_rows.targets", [r["target"] for r in expected_rows],
                       [r["target"] for r in rows], declared)
        for e, a in zip(expected_rows, rows):
            for f in fields:
                report.compare("tables", f"fig6_forest_rows.{f}", e.get(f), a.get(f), declared,
                               0.0 if f.startswith("n_") or f.endswith(("_lo", "_hi")) else TOLERANCE, e["target"])
        compare("fig6_return", 0 if rows else 1)
    if "anchor_size_means" in tables:
        compare("anchor_size_targets", list(plot_inputs.SIZE_PLOT_TARGETS))
        means, read = size_means(cells, score)
        compare("anchor_size_means", means)
        compare("anchor_size_loader", read)
        compare("anchor_size_stdout", saved_lines("anchor_size", ROOT))
        compare("anchor_size_return", 0)
    if "anchor_decay" in tables:
        computed.add("anchor_decay")
        curve = decay_curve(cells, score)
        expected = decode(tables["anchor_decay"])
        for name in ("offsets", "means"):
            report.compare("tables", f"anchor_decay.{name}", expected[name], curve[name], declared, TOLERANCE)
        report.compare("tables", "anchor_decay.individual", sorted(map(tuple, expected["individual"])),
                       sorted(map(tuple, curve["individual"])), declared, note="as a multiset")
        compare("anchor_decay_stdout", decay_printout(curve, ROOT))
        compare("anchor_decay_return", 0)
    for name in tables:
        if name not in computed:
            report.not_expressible("tables", name, "no analysis of ours computes this table yet")


#: The fields of a Fig.-6 row compared (SPEC §5), in order.
FIG6_FIELDS = ("n_pos_cl", "n_pos_fi", "n_pos_a", "fi_c", "fi_c_lo", "fi_c_hi", "cl_c", "cl_c_lo", "cl_c_hi",
               "a_c", "a_c_lo", "a_c_hi", "cl_r", "cl_r_lo", "cl_r_hi", "a_r", "a_r_lo", "a_r_hi",
               "compliance_drop", "compliance_recovery", "length_inflation", "length_after_anchor")


def structure_checks(expected: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, expected, ours) for every anchor builder of ``anchor_structures``: our
    :mod:`~contextecho.echo.reference.anchors` records called on its placeholder inputs and
    with an empty prefix, their system prompts and the constants by the harness's names."""
    prefix, request = expected["inputs"]["prefix"], expected["inputs"]["request"]
    out = []

    def constants(group: str, values: Mapping[str, Any]) -> None:
        for name, value in values.items():
            out.append((f"{group}.constants.{name}", value, getattr(anchors, name, None)))

    def builds(name: str, anchor: anchors.Anchor, entry: Mapping[str, Any]) -> None:
        for key, given in (("with_prefix", prefix), ("empty_prefix", "")):
            if key in entry:
                out.append((f"{name}.{key}", entry[key], anchor.messages(given, request)))

    if "dual_surface_candidates" in expected:
        group = expected["dual_surface_candidates"]
        constants("dual_surface_candidates", group.get("constants", {}))
        for name, entry in group["builders"].items():
            builds(f"dual_surface_candidates.{name}", anchors.CANDIDATES.get(name), entry)
    if "anchor_variants" in expected:
        group = expected["anchor_variants"]
        constants("anchor_variants", group.get("constants", {}))
        for entry in group["variants"]:
            variant = anchors.anchor(entry["name"])
            out.append((f"anchor_variants.{entry['name']}.system_prompt", entry["system_prompt"],
                        variant.system_prompt(anchors.VARIANTS_SYSTEM_PROMPT)))
            builds(f"anchor_variants.{entry['name']}", variant, entry)
    if "placement_ablation" in expected:
        group = expected["placement_ablation"]
        out.append(("placement_ablation.SYSTEM_PROMPT_V3", group["SYSTEM_PROMPT_V3"], anchors.SYSTEM_PROMPT_V3))
        builds("placement_ablation", anchors.PLACEMENT, group)
    if "anchor_size_sweep" in expected:
        group = expected["anchor_size_sweep"]
        constants("anchor_size_sweep", group.get("constants", {}))
        for size, entry in group["builders"].items():
            builds(f"anchor_size_sweep.{size}", anchors.size_anchor(size), entry)
    if "anchor_decay" in expected:
        group = expected["anchor_decay"]
        for name in ("GENERIC_USER_TURNS", "GENERIC_ASSISTANT_TURNS"):
            out.append((f"anchor_decay.{name}", group[name], list(getattr(anchors, name))))
        for n, messages in group["builds"].items():
            out.append((f"anchor_decay.N{n}", messages, anchors.decay_anchor(int(n)).messages(prefix, request)))
        if "empty_prefix_n1" in group:
            out.append(("anchor_decay.empty_prefix_n1", group["empty_prefix_n1"],
                        anchors.decay_anchor(1).messages("", request)))
    return out
