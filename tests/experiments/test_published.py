"""The published notebook: the paper's numbers regenerated from released cells, set beside the paper's.

The analyses are checked against the harness's own outputs: each run-level case that records the
Fig.-2 forest rows or the onset rows its plotting script computed from its cells is written as a
release (the cells as the runners wrote them), read back, and re-analysed; the numbers must be the
script's. The matching of published numbers to ours is checked on hand-made records."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from contextecho.conformance.released import write_release
from contextecho.conformance.runs import known_texts, read_case, resolve_digests
from contextecho.echo.reference.released import import_release
from contextecho.engine.paths import shared_dir
from contextecho.experiments import published
from contextecho.experiments.framing_summary import OVERALL, framing_results
from contextecho.experiments.parameters import ParameterError
from contextecho.paper.published import CELLS_NOT_RELEASED, PublishedNumber, compare, load_published

CASES = shared_dir() / "reference" / "contextecho" / "runs" / "cases"


def _cases_with(table: str) -> list[Path]:
    if not CASES.is_dir():
        return []
    return [p for p in sorted(CASES.glob("*.json")) if table in (json.loads(p.read_text())["expected"].get("tables") or {})]


def _release(case_path: Path, folder: Path) -> Path:
    case = read_case(case_path)
    texts = known_texts(case)
    write_release(case, lambda value, where: resolve_digests(value, texts, where), folder)
    return folder


def _tables(case_path: Path) -> dict:
    return json.loads(case_path.read_text())["expected"]["tables"]


@pytest.mark.parametrize("case_path", _cases_with("fig2_forest_rows"), ids=lambda p: p.stem)
def test_the_forest_from_released_cells_is_the_harness_figures(case_path, tmp_path):
    expected = _tables(case_path)["fig2_forest_rows"]
    assert expected, "the case records no forest row"
    imported = import_release(_release(case_path, tmp_path / "release"))
    done = published.regenerate(imported.cells, n_resamples=10_000, seed=42)
    for row in expected:
        ours = done.forest[done.forest["target"] == row["target"]]
        assert len(ours) == 1, row["target"]
        ours = ours.iloc[0]
        for theirs, mine in (("gap", "gap"), ("cl_m", "real_mean"), ("cl_lo", "real_lo"), ("cl_hi", "real_hi"),
                             ("fi_m", "filler_mean"), ("fi_lo", "filler_lo"), ("fi_hi", "filler_hi"),
                             ("n_cl", "n_real"), ("n_fi", "n_filler")):
            assert ours[mine] == pytest.approx(row[theirs], abs=1e-9), (row["target"], theirs)


@pytest.mark.parametrize("case_path", _cases_with("onset_rows"), ids=lambda p: p.stem)
def test_the_onset_curve_from_released_cells_is_the_harness_figures(case_path, tmp_path):
    expected = _tables(case_path)["onset_rows"]
    imported = import_release(_release(case_path, tmp_path / "release"))
    done = published.regenerate(imported.cells, n_resamples=10_000, seed=42)
    compared = 0
    for target, rows in expected.items():
        for row in rows:
            ours = done.onset[(done.onset["target"] == target) & (done.onset["step"] == row["turn"])]
            if not isinstance(row["g_m"], (int, float)):  # the harness drew nothing: no cell of both arms
                assert ours["harness_gap"].isna().all()
                continue
            assert len(ours) == 1, (target, row["turn"])
            for theirs, mine in (("g_m", "harness_gap"), ("g_lo", "harness_lo"), ("g_hi", "harness_hi"),
                                 ("n", "harness_n")):
                assert ours[mine].iloc[0] == pytest.approx(row[theirs], abs=1e-9), (target, row["turn"], theirs)
            compared += 1
    assert compared


@pytest.mark.parametrize("case_path", _cases_with("results/crossjudge_audit/RESULTS.json"), ids=lambda p: p.stem)
def test_the_audit_gaps_from_released_records_are_the_audits_own(case_path, tmp_path):
    expected = _tables(case_path)["results/crossjudge_audit/RESULTS.json"]
    records = published.audit_frame(import_release(_release(case_path, tmp_path / "release")).cells)
    assert len(records)
    assert published.audit_gap(records, "sonnet") == pytest.approx(expected["panel_drift_gap_sonnet_judge"], abs=1e-12)
    assert published.audit_gap(records, "gpt5") == pytest.approx(expected["panel_drift_gap_gpt5_judge"], abs=1e-12)
    by_target = published.audit_gaps(records)
    assert set(by_target["target"]) == set(records["target"])
    one = by_target.iloc[0]
    own = records[records["target"] == one["target"]]
    hand = own[own["arm"] == "filler"]["gpt5"].mean() - own[own["arm"] == "real"]["gpt5"].mean()
    assert one["gpt5_gap"] == pytest.approx(hand)


@pytest.mark.parametrize("case_path", _cases_with("audit_compliance"), ids=lambda p: p.stem)
def test_the_s2_audit_from_released_cells_is_the_harness_audits(case_path, tmp_path):
    expected = _tables(case_path)["audit_compliance"]
    audit = published.s2_audit(import_release(_release(case_path, tmp_path / "release")).cells)
    named = {"real": "claude", "filler": "filler"}
    assert {named[a]: v for a, v in audit["overall"].items()} == expected["overall"]
    for part in ("per_target", "per_session"):
        assert {k: {named[a]: v for a, v in arms.items()} for k, arms in audit[part].items()} == expected[part], part
    for session, ratios in expected["ratios_by_session"].items():
        for name in ("raw_ratio", "n_raw", "cond_ratio", "n_cond"):
            assert audit["ratios_by_session"][session][name] == pytest.approx(ratios[name], abs=1e-12), (session, name)


@pytest.mark.parametrize("case_path", _cases_with("framing_effect"), ids=lambda p: p.stem)
def test_the_framing_summary_from_released_cells_is_e16s_own(case_path, tmp_path):
    tables = _tables(case_path)
    frame = published.framing_frame(import_release(_release(case_path, tmp_path / "release")).cells)
    means = framing_results(frame, failures="in")
    for framing, probes in tables["framing_results"].items():
        if framing.startswith("_"):
            continue
        for probe, expected in probes.items():
            got = means[(means["framing"] == published.RELEASED_FRAMINGS[framing])
                        & (means["probe"] == (OVERALL if probe == "_overall" else probe))]
            assert len(got) == 1, (framing, probe)
            assert (got["mean"].iloc[0], got["n"].iloc[0]) == (pytest.approx(expected["mean"]), expected["n"])
    target = tables["framing_results"]["_meta"]["target"]
    record = _record("e", "mean score, without-framing - with-framing (claude prefix)", 0.26, "0.26",
                     target=target, position="P5_pre_C6 (turn 8800)")
    done = published.Regenerated(*(pd.DataFrame() for _ in range(4)), framing=means)
    assert published.ours([record], done)["e"] == pytest.approx(-tables["framing_effect"])  # without − with


def _record(id_: str, quantity: str, value: float, printed: str, *, target: str | None, position: str | None,
            **more) -> PublishedNumber:
    return PublishedNumber(id=id_, section="s", where="w", quantity=quantity, value=value, printed=printed,
                           relation="=", unit="judge points (0-3 rubric)", kind="result", target_safe=target,
                           position=position, **more)


def _regenerated() -> published.Regenerated:
    forest = pd.DataFrame([{"target": "a", "gap": 0.5, "n_real": 10, "n_filler": 10},
                           {"target": "half", "gap": math.nan, "n_real": 4, "n_filler": 0}])
    onset = pd.DataFrame([{"target": "a", "step": s, "harness_gap": g, "harness_lo": g - 1, "harness_hi": g + 1,
                           "harness_n": 5} for s, g in ((1, 0.2), (5, -0.4), (25, 0.9))])
    pilot = onset.assign(harness_gap=onset["harness_gap"] + 10)
    audit = pd.DataFrame([{"target": "a", "gpt5_gap": -0.2, "sonnet_gap": 0.8, "n_real": 5, "n_filler": 5}])
    s2 = {"per_target": {"a": {"real": [2, 10], "filler": [7, 10]}, "b": {"real": [0, 0], "filler": [0, 0]}},
          "ratios_by_session": {"Session 1": {"cond_ratio": 6.0, "n_cond": 20},
                                "Session 2": {"cond_ratio": 1.5, "n_cond": 5}}}
    framing = pd.DataFrame([{"target": "a", "framing": f, "probe": p, "mean": m, "n": 10}
                            for f, p, m in (("framed", "C02", 2.2), ("bare", "C02", 2.0),
                                            ("framed", OVERALL, 1.5), ("bare", OVERALL, 1.76))])
    return published.Regenerated(forest, onset, pilot, audit, s2, framing)


def test_published_numbers_are_matched_by_what_their_records_say():
    twelve = "mean over 12 positions (P0_start..P5_pre_C6), positions weighted equally"
    records = [
        _record("x.gap", "position-averaged drift gap", 0.5, "+0.50", target="a", position=twelve),
        _record("x.min", "minimum Anthropic panel gap", 0.5, "+0.50", target="a", position=twelve),
        _record("x.lost", "position-averaged drift gap", 0.5, "+0.50", target="b", position=twelve),
        _record("x.half", "position-averaged drift gap", 0.5, "+0.50", target="half", position=twelve),
        _record("x.count", "targets with gap >= 0.30", 17, "17", target=None, position=twelve),
        _record("x.none", "model families / organizations", 10, "10", target=None, position=None),
        _record("o.s5", "drift gap at step 5", -0.4, "-0.40", target="a", position="onset step 5 (T0005)"),
        _record("o.s5.ci_low", "95% bootstrap CI low", -1.4, "-1.40", target="a", position="onset step 5 (T0005)"),
        _record("o.s5.ci_high", "95% bootstrap CI high", 0.6, "+0.60", target="a", position="onset step 5 (T0005)"),
        _record("o.s7", "drift gap at step 7", 0.0, "+0.00", target="a", position="onset step 7 (T0007)"),
        _record("o.pilot", "drift gap at step 1, n=5 pilot", 10.2, "+10.20", target="a",
                position="onset step 1 (T0001)"),
        _record("o.again", "drift gap at step 25 (restated)", 0.9, "+0.90", target="a",
                position="onset step 25 (T0025)"),
        _record("o.min", "minimum drift gap over onset steps", -0.4, "-0.40", target="a",
                position="all 8 onset steps (1..1500)"),
        _record("o.max", "maximum drift gap over onset steps", 0.9, "+0.90", target="a",
                position="all 8 onset steps (1..1500)"),
        _record("o.other", "drift gap at step 1", 0.9, "+0.90", target="z", position="onset step 1 (T0001)"),
        _record("j.sonnet", "drift gap at P5 (audit-only sample)", 0.8, "+0.80", target="a",
                position="P5_pre_C6 (turn 8800)", judge="claude-sonnet-4-6"),
        _record("j.gpt5", "n=5 audit gap, GPT-5 judge (restated)", -0.2, "-0.20", target="a", position="P5_pre_C6",
                judge="openai/gpt-5 (OpenRouter)"),
        _record("j.both", "drift gap, Sonnet judge (n=5)", 0.8, "+0.80", target="a", position="P5_pre_C6",
                judge="claude-sonnet-4-6 and openai/gpt-5 (OpenRouter)"),
        _record("j.lost", "drift gap at P5 (audit-only sample)", 0.8, "+0.80", target="z",
                position="P5_pre_C6 (turn 8800)", judge="claude-sonnet-4-6"),
        _record("f.c02", "framing effect on C02 (opposite direction)", 0.2, "+0.20", target="a",
                position="P5_pre_C6 (turn 8800)"),
        _record("f.shift", "framing shift of real-prefix score (restated)", 0.26, "0.26", target="a",
                position="P5_pre_C6 (turn 8800)"),
        _record("s.gap", "S2 compliance-rate gap, 3 sessions pooled", 50.0, "+50.0 pp", target="a",
                position="all S2 positions, 3 sessions"),
        _record("s.none", "S2 compliance-rate gap, 3 sessions pooled", 50.0, "+50.0 pp", target="b",
                position="all S2 positions, 3 sessions"),
        _record("s.r2", "conditional-on-compliance verbosity ratio, Session 2", 1.5, "1.50×", target=None,
                position=None),
        _record("s.n1", "both-compliant pairs, Session 1", 20, "20", target=None, position=None),
        _record("s.n3", "both-compliant pairs, Session 3", 20, "20", target=None, position=None),
        _record("s.all", "both-compliant pairs, all sessions", 25, "25", target=None, position=None),
    ]
    ours = published.ours(records, _regenerated())
    assert ours["x.gap"] == 0.5 and ours["x.min"] == 0.5
    assert ours["x.lost"].startswith(CELLS_NOT_RELEASED) and ours["x.half"].startswith(CELLS_NOT_RELEASED)
    assert ours["x.count"] == 1.0  # over the forest's targets with both arms: a (half has no filler cell)
    assert "x.none" not in ours  # no rule regenerates it: the record's own reason is given
    assert (ours["o.s5"], ours["o.s5.ci_low"], ours["o.s5.ci_high"]) == (-0.4, -1.4, 0.6)
    assert ours["o.s7"].startswith(CELLS_NOT_RELEASED) and "T0007" in ours["o.s7"]
    assert ours["o.pilot"] == pytest.approx(10.2) and ours["o.again"] == 0.9
    assert (ours["o.min"], ours["o.max"]) == (-0.4, 0.9)
    assert ours["o.other"].startswith(CELLS_NOT_RELEASED)
    assert (ours["j.sonnet"], ours["j.gpt5"]) == (0.8, -0.2)
    assert ours["j.both"].startswith("not regenerated") and ours["j.lost"].startswith(CELLS_NOT_RELEASED)
    assert ours["s.gap"] == pytest.approx(50.0) and ours["s.none"].startswith(CELLS_NOT_RELEASED)
    assert (ours["s.r2"], ours["s.n1"]) == (1.5, 20)
    assert ours["f.c02"] == pytest.approx(0.2) and ours["f.shift"] == pytest.approx(0.26)  # with − without; its reverse
    assert ours["s.n3"].startswith(CELLS_NOT_RELEASED) and "Session 3" in ours["s.all"]  # a session missing
    assert published.ours(records, None) == {r.id: published.NO_RELEASE for r in records}


def test_numbers_over_the_forests_targets_are_counted_by_hand():
    twelve = "mean over 12 positions (P0_start..P5_pre_C6), positions weighted equally"
    forest = pd.DataFrame([  # target, gap, arms' cell counts, arms' position counts
        {"target": t, "gap": g, "n_real": nr, "n_filler": nf, "n_positions_real": pr, "n_positions_filler": pf}
        for t, g, nr, nf, pr, pf in (("a", 0.83, 60, 60, 12, 12), ("b", -0.40, 60, 60, 12, 12),
                                     ("c", 0.30, 10, 10, 2, 2), ("d", 0.10, 60, 58, 12, 12), ("e", 0.9, 5, 0, 1, 0))])
    done = published.Regenerated(forest, *(pd.DataFrame() for _ in range(3)))
    records = [_record("n", "target models in the panel", 4, "4", target=None, position=None),
               _record("full", "full-coverage targets", 3, "3", target=None, position=None),
               _record("ge", "targets with gap >= 0.30", 2, "2", target=None, position=twelve),
               _record("abs", "targets with |gap| >= 0.30", 3, "3", target=None, position=twelve),
               _record("max", "maximum panel drift gap (full-coverage targets)", 0.83, "+0.83", target=None,
                       position=twelve),
               _record("min", "minimum panel drift gap (full-coverage targets)", -0.4, "-0.40", target="c",
                       position=twelve)]
    ours = published.ours(records, done)
    # e has no filler cell: not in the panel; c covers 2 positions: not full coverage
    assert ours == {"n": 4.0, "full": 3.0, "ge": 2.0, "abs": 3.0, "max": 0.83, "min": -0.40}
    empty = published.ours(records, published.Regenerated(*(pd.DataFrame() for _ in range(4))))
    assert all(v.startswith(CELLS_NOT_RELEASED) for v in empty.values())


def test_the_audits_sign_counts_from_the_papers_own_table_7_are_its_counts():
    """Table 7 prints both judges' gap per target; counted by the rules, they give the caption's
    and Appendix R's counts (19 audited: 13 agree in sign, one reverses, five are null under one)."""
    records = load_published()
    gaps = {r.id: r.value for r in records if r.id.startswith("tbl7.") and r.id.endswith(("gap_sonnet", "gap_gpt5"))}
    targets = sorted({i.split(".")[1] for i in gaps})
    audit = pd.DataFrame([{"target": t, "sonnet_gap": gaps[f"tbl7.{t}.gap_sonnet"], "gpt5_gap": gaps[f"tbl7.{t}.gap_gpt5"],
                           "n_real": 5, "n_filler": 5} for t in targets])
    done = published.Regenerated(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), audit)
    counted = [r for r in records if r.id in ("appR.n_audited", "tbl7.caption.n_agree", "appR.n_agree",
                                              "tbl7.caption.n_reverse", "tbl7.caption.n_null", "appR.n_null_vs_small")]
    ours = published.ours(counted, done)
    assert len(ours) == len(counted) == 6
    assert all(ours[r.id] == r.value for r in counted), {r.id: (ours[r.id], r.value) for r in counted}


def test_the_design_the_paper_states_is_read_from_the_instruments_with_or_without_a_release():
    """The probe suite, its categories, the rubric, the S2 wordings, the window and the panel's
    positions, as the paper states them (the values here are the paper's, written by hand); a
    design the instruments do not have disagrees, an unknown category says so."""
    def _design(id_: str, quantity: str, value: float, printed: str) -> PublishedNumber:
        return _record(id_, quantity, value, printed, target=None, position=None)

    records = [_design("d.n", "probes in the suite", 25, "25"), _design("d.cat", "probe categories", 5, "five"),
               _design("d.id", "probes in category Identity", 4, "4"),
               _design("d.exp", "probes in category experience", 8, "8"),
               _design("d.cs", "probes in category Coding-Self", 5, "5"),
               _design("d.rub", "rubric levels", 4, "four"), _design("d.s2", "stressor wordings per cell", 10, "10"),
               _design("d.win", "prefix length (characters)", 30000, "~30,000"),
               _design("d.pos", "snapshot positions on the representative session", 12, "12"),
               _design("d.wrong", "probes in category relational", 5, "5"),
               _design("d.none", "probes in category humour", 3, "3"),
               _record("x.gap", "position-averaged drift gap", 0.5, "+0.50", target="a",
                       position="mean over 12 positions (P0_start..P5_pre_C6), positions weighted equally")]
    for done in (None, _regenerated()):
        ours = published.ours(records, done)
        assert {k: ours[k] for k in ("d.n", "d.cat", "d.id", "d.exp", "d.cs", "d.rub", "d.s2", "d.win", "d.pos")} == \
            {"d.n": 25, "d.cat": 5, "d.id": 4, "d.exp": 8, "d.cs": 5, "d.rub": 4, "d.s2": 10, "d.win": 30000,
             "d.pos": 12}
        assert ours["d.wrong"] == 4 and "no probe category 'humour'" in ours["d.none"]
        assert ours["x.gap"] == (published.NO_RELEASE if done is None else 0.5)
        assert set(published.sources(records, released=done is not None)) == \
            {r.id for r in records if r.id.startswith("d.")} | ({"x.gap"} if done is not None else set())
    frame = compare(records, published.ours(records, None))
    assert not frame.set_index("id").loc["d.wrong", "agrees"] and frame.set_index("id").loc["d.win", "agrees"]
    shown = published.compared_table(frame, published.sources(records, released=False)).set_index("id")
    assert shown.loc["d.cat", "ours"] == "5" and shown.loc["d.win", "ours"] == "30,000"
    assert set(shown["source"]) == {published.FROM_INSTRUMENTS}


def test_every_rule_matches_some_published_number():
    """A rule that no record of the paper's numbers matches would regenerate nothing."""
    records = load_published()
    for rule in published.RULES + published.DESIGN_RULES:
        assert any((r.target_safe or not rule.per_target) and rule.quantity.search(r.quantity)
                   and rule.position.search(r.position or "") for r in records), rule.name


def _variables(folder: Path) -> dict:
    return yaml.safe_load((folder / "variables.yml").read_text())["published"]


def test_without_a_release_only_the_design_is_regenerated_and_every_other_number_says_why(tmp_path):
    published.run(published.Parameters(output_dir=str(tmp_path)))
    values = _variables(tmp_path)
    design = published.sources(load_published(), released=False)
    assert values["release"] == "none" and values["n_regenerated"] == len(design) > 0
    assert values["n_not_regenerated"] == values["n_published"] - len(design) == len(load_published()) - len(design)
    table = (tmp_path / "tables" / "not_regenerated.md").read_text()
    assert published.NO_RELEASE.split(" (")[0] in table
    shown = (tmp_path / "tables" / "regenerated.md").read_text()
    assert all(i.replace("_", "\\_") in shown for i in design) and "released cells" not in shown
    assert f"only the {len(design)} that state the design are regenerated" in values["summary"]
    # where nothing is regenerated the table is not a bare header: one row, its footnote says why
    others = [r for r in load_published() if r.id not in design]
    empty = published.compared_table(compare(others, published.ours(others, None)), {})
    assert empty["id"].tolist() == ["none"] and "no release given" in empty["note"].iloc[0]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["status"] == "complete" and not manifest.get("batches")  # no model call


def test_a_release_with_bad_unknown_and_duplicate_files_is_read_and_counted(tmp_path):
    cases = _cases_with("onset_rows")
    if not cases:
        pytest.skip("no onset case in the shared fixtures")
    release = _release(cases[0], tmp_path / "release")
    cell = next((release / "results" / "drift_onset").rglob("C01.json"))
    (cell.parent / "C02.json").write_text("{not json")  # a bad cell (it replaces a good one)
    (release / "results" / "drift_onset" / "notes.json").write_text("{}")  # a layout nobody writes
    shutil.copy(cell, cell.parent / "C01_v00.json")  # replicate 0 under a second name: a duplicate
    published.run(published.Parameters(released=str(release), output_dir=str(tmp_path / "out")))
    values = _variables(tmp_path / "out")
    assert (values["n_bad_cells"], values["n_unknown_cells"], values["n_duplicate_cells"]) == (1, 1, 1)
    assert values["n_regenerated"] > 0 and values["n_regenerated"] == values["n_agree"] + values["n_disagree"]
    assert str(values["n_released_cells"]) in values["summary"].replace(",", "")
    shown = (tmp_path / "out" / "tables" / "regenerated.md").read_text()
    assert "appN." in shown


def test_the_release_s_own_counts_are_set_beside_the_paper_s_for_the_revision_its_receipt_names(tmp_path):
    """Cells and sessions counted as `released fetch` counts them, compared with the paper's
    counts for the receipt's revision only; another revision, or no receipt, says so."""
    from contextecho.echo.reference.release_fetch import make_receipt

    cases = _cases_with("onset_rows")
    if not cases:
        pytest.skip("no onset case in the shared fixtures")
    release = _release(cases[0], tmp_path / "release")
    n_cells = sum(1 for _ in (release / "results").rglob("*.json"))
    sessions = release / "data" / "sessions"
    sessions.mkdir(parents=True)
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        (sessions / name).write_text("{}\n")
    v1 = {"intro.v1.n_cells", "appW.v1.n_cells", "intro.v1.n_sessions", "appW.v1.n_sessions"}
    v2 = {"s3_1.v2.n_cells", "repro.v2.n_cells", "appW.v2.n_cells", "appW.v2.n_sessions"}

    def compared(out: str) -> pd.DataFrame:
        published.run(published.Parameters(released=str(release), output_dir=str(tmp_path / out)))
        return pd.read_parquet(tmp_path / out / "results" / "published_vs_regenerated.parquet").set_index("id")

    unversioned = compared("none")
    assert unversioned.loc[sorted(v1 | v2), "ours"].isna().all()
    assert unversioned.loc[sorted(v1 | v2), "reason"].str.startswith(
        "another revision of the release: this build read a tree with no receipt").all()

    make_receipt(release, revision="v1.0", commit=None, source="a test tree")
    frame = compared("v1")
    ours = frame.loc[sorted(v1), "ours"].to_dict()
    assert ours == {"intro.v1.n_cells": n_cells, "appW.v1.n_cells": n_cells, "intro.v1.n_sessions": 3,
                    "appW.v1.n_sessions": 3}
    assert frame.loc["appW.v1.n_sessions", "agrees"] and not frame.loc["appW.v1.n_cells", "agrees"]
    assert frame.loc[sorted(v2), "reason"].str.contains("this build read the revision v1.0; the number is v2.0's").all()
    assert "contextecho2026/persona-drift-contextecho@v1.0" in _variables(tmp_path / "v1")["summary"]


def test_a_missing_release_folder_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(ParameterError, match="released"):
        published.Parameters(released=str(tmp_path / "nowhere"))
