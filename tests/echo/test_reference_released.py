"""The released cell tree read as data (``echo/reference/released``): every runner's layout, the
files it refuses (each named with its reason, never a stop), and the verdict a cell gives back."""
from __future__ import annotations

import hashlib
import json
from dataclasses import FrozenInstanceError

import pytest

from contextecho.conformance.case import decode
from contextecho.conformance.runs import known_texts, resolve_digests
from contextecho.echo.reference.judge import parse_verdict, verdict_text
from contextecho.echo.reference.released import (CROSS_JUDGE, PROBE, STRESSOR, BadCell, CellIdentity, Provenance,
                                                  identify, import_release, read_cell)
from contextecho.engine.paths import shared_dir

RUNS = shared_dir() / "reference" / "contextecho" / "runs"
PROBE_RECORD = {"probe_id": "C01", "arm": "claude_session", "position": "P0_start", "target": "t",
                "response_text": "I am an assistant.", "response_len": 18, "score": 3, "label": "fully_assistant",
                "reason": "ok", "input_tokens": 10, "output_tokens": 5}
PROBE_PATH = "results/probes_at_crosscompaction/t/P0_start/claude_session/C01.json"


def _write(root, path: str, content) -> None:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")


# ---------------------------------------------------------------- layouts
@pytest.mark.parametrize("path, record, layout, identity", [
    (PROBE_PATH, {}, "probe", CellIdentity("results/probes_at_crosscompaction", "t", "P0_start", "claude_session", "C01")),
    ("results/drift_onset/t/T0100/filler/C02_v01.json", {}, "probe",
     CellIdentity("results/drift_onset", "t", "T0100", "filler", "C02", 1)),
    ("results/probes_at_crosscompaction_proeng/t/P03/filler/E02.json", {"session": "session_proeng"}, "probe",
     CellIdentity("results/probes_at_crosscompaction_proeng", "t", "P03", "filler", "E02", session="session_proeng")),
    ("results/cross_compaction/t/P5_pre_C6/v07/claude.json", {}, "s2",
     CellIdentity("results/cross_compaction", "t", "P5_pre_C6", "claude_session", "S2_v07")),
    ("data_archive/cross_session/proeng/t/P1/v00/filler.json", {}, "s2",
     CellIdentity("data_archive/cross_session/proeng", "t", "P1", "filler", "S2_v00", session="proeng")),
    ("results/anchor_variants/V2_IN_CONTEXT/t/P0/v03/cell.json", {}, "anchor_variant",
     CellIdentity("results/anchor_variants", "t", "P0", "V2_IN_CONTEXT", "S2_v03", intervention="V2_IN_CONTEXT")),
    ("results/anchor_variants/V3_SYSTEM_INJECT/t/P0/C04.json", {}, "placement",
     CellIdentity("results/anchor_variants", "t", "P0", "V3_SYSTEM_INJECT", "C04", intervention="V3_SYSTEM_INJECT")),
    ("results/dual_surface_pilot/CAND_A_COMBINED/stressors/t/P1/v09/cell.json", {}, "a_stressor",
     CellIdentity("results/dual_surface_pilot/CAND_A_COMBINED", "t", "P1", "A_COMBINED", "S2_v09",
                  intervention="A_COMBINED")),
    ("results/generalization_test/A_COMBINED/CODING_PROBES/t/P1/C05.json", {}, "a_probe",
     CellIdentity("results/generalization_test/A_COMBINED/CODING_PROBES", "t", "P1", "A_COMBINED", "C05",
                  intervention="A_COMBINED")),
    ("results/anchor_size_sweep/small/t/C01.json", {}, "anchor_size",
     CellIdentity("results/anchor_size_sweep", "t", None, "small", "C01", intervention="anchor_size")),
    ("results/anchor_decay/t/N10/C01.json", {}, "anchor_decay",
     CellIdentity("results/anchor_decay", "t", None, "N10", "C01", intervention="anchor_decay")),
    ("results/probe_framing_ablation/with_framing/C03/v01.json", {"target": "t", "position": "P5_pre_C6"}, "framing",
     CellIdentity("results/probe_framing_ablation", "t", "P5_pre_C6", "with_framing", "C03", 1,
                  intervention="with_framing")),
    ("data_archive/instruction_override/t/cut-600/gpt5_3K/S4_STRICT_JSON/metrics.json", {}, "override",
     CellIdentity("data_archive/instruction_override", "t", None, "gpt5_3K", "S4_STRICT_JSON", cut_index=600)),
    ("data_archive/session_length_scaling/t/len-3000/cut-632/S3_NO_ACTION/metrics_filler.json", {}, "length",
     CellIdentity("data_archive/session_length_scaling", "t", None, "filler", "S3_NO_ACTION", cut_index=632,
                  length=3000)),
    ("results/crossjudge_audit/t/P5_pre_C6/filler/C01.json", {}, "cross_judge",
     CellIdentity("results/crossjudge_audit", "t", "P5_pre_C6", "filler", "C01")),
])
def test_each_runner_layout_names_its_cell(path, record, layout, identity):
    assert identify(path, record) == (layout, identity)


def test_a_path_no_runner_writes_has_no_layout():
    assert identify("results/probes_at_crosscompaction/t/P0/real/C01.json", {}) is None
    assert identify("notes/t/P0/claude_session/C01.json", {}) is None


# ---------------------------------------------------------------- files refused, each named
def test_a_malformed_cell_is_counted_with_its_path_and_reason(tmp_path):
    _write(tmp_path, PROBE_PATH, PROBE_RECORD)
    _write(tmp_path, "results/probes_at_crosscompaction/t/P0_start/claude_session/C02.json", "{not json")
    _write(tmp_path, "results/probes_at_crosscompaction/t/P0_start/claude_session/C03.json",
           {k: v for k, v in PROBE_RECORD.items() if k != "score"})
    _write(tmp_path, "results/probes_at_crosscompaction/t/P0_start/claude_session/C04.json",
           {**PROBE_RECORD, "response_len": "18"})
    _write(tmp_path, "results/probes_at_crosscompaction/t/P0_start/claude_session/C05.json", {**PROBE_RECORD, "score": 7})
    report = import_release(tmp_path)
    assert [c.identity.item for c in report.cells] == ["C01"]
    reasons = {p.path.rsplit("/", 1)[1]: p.reason for p in report.bad}
    assert set(reasons) == {"C02.json", "C03.json", "C04.json", "C05.json"}
    assert "not valid JSON" in reasons["C02.json"]
    assert "without 'score'" in reasons["C03.json"]
    assert "'response_len' is str, not int" in reasons["C04.json"]
    assert "score 7" in reasons["C05.json"]
    assert report.counts()["bad"] == 4 and not report.ok
    assert "C02.json" in report.describe()


def test_an_unknown_layout_is_counted_not_read(tmp_path):
    _write(tmp_path, PROBE_PATH, PROBE_RECORD)
    _write(tmp_path, "results/probes_at_crosscompaction/t/P0_start/C01.json", PROBE_RECORD)  # no arm folder
    _write(tmp_path, "results/crossjudge_audit/RESULTS.json", {"n_pairs": 1})  # an analysis output, listed
    report = import_release(tmp_path)
    assert len(report.cells) == 1
    assert [(p.path, p.reason) for p in report.unknown] == [
        ("results/probes_at_crosscompaction/t/P0_start/C01.json", "no harness layout has this path")]
    assert report.outputs == ("results/crossjudge_audit/RESULTS.json",)
    assert not report.ok


def test_a_duplicate_cell_keeps_the_first_and_names_both(tmp_path):
    _write(tmp_path, "results/drift_onset/t/T0001/filler/C01.json", PROBE_RECORD)
    _write(tmp_path, "results/drift_onset/t/T0001/filler/C01_v00.json", {**PROBE_RECORD, "score": 0})  # replicate 0 too
    report = import_release(tmp_path)
    assert [c.provenance.path for c in report.cells] == ["results/drift_onset/t/T0001/filler/C01.json"]
    assert report.cells[0].score == 3
    assert [(p.path, p.reason) for p in report.duplicates] == [
        ("results/drift_onset/t/T0001/filler/C01_v00.json", "same cell as results/drift_onset/t/T0001/filler/C01.json (kept)")]


def test_a_cell_is_a_frozen_record_with_its_provenance(tmp_path):
    _write(tmp_path, PROBE_PATH, PROBE_RECORD)
    report = import_release(tmp_path, label="rel", revision="abc")
    cell = report.cells[0]
    assert (cell.kind, cell.response_text, cell.response_len, cell.score, cell.input_tokens) == \
        (PROBE, "I am an assistant.", 18, 3, 10)
    assert cell.provenance == Provenance("rel", "abc", PROBE_PATH,
                                         hashlib.sha256((tmp_path / PROBE_PATH).read_bytes()).hexdigest())
    with pytest.raises(FrozenInstanceError):
        cell.score = 0
    with pytest.raises(TypeError):
        cell.stored["score"] = 0


def test_a_framing_cell_without_its_target_is_bad():
    with pytest.raises(BadCell, match="target"):
        read_cell("results/probe_framing_ablation/with_framing/C01/v00.json",
                  {k: v for k, v in PROBE_RECORD.items() if k != "target"}, Provenance("r", None, "p", ""))


def test_not_a_release_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a release folder"):
        import_release(tmp_path / "absent")


# ---------------------------------------------------------------- every case's cells, round trip
def _case_cells():
    if not (RUNS / "cases").is_dir():
        return []
    out = []
    for path in sorted((RUNS / "cases").glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        if case["expected"].get("cells"):
            out.append(pytest.param(case, id=case["id"]))
    return out


#: The record fields that name a cell, and the identity field each is (where the record has it).
NAMING = {"target": "target", "position": "position", "probe_id": "item", "stressor": "item", "replicate": "replicate",
          "rep": "replicate", "cut_index": "cut_index", "session": "session", "variant": "arm", "placement": "arm",
          "size": "arm", "framing": "arm"}


@pytest.mark.parametrize("case", _case_cells())
def test_every_cases_cells_read_back_with_their_identity_and_fields(case, tmp_path):
    texts = known_texts(case)
    written = {}
    for cell in case["expected"]["cells"]:
        record = decode(resolve_digests(cell["record"], texts, cell["path"]))
        _write(tmp_path, cell["path"], record)
        written[cell["path"]] = record
    report = import_release(tmp_path, label="case")
    assert report.ok, report.describe()
    assert len(report.cells) + len(report.outputs) == len(written)
    for cell in report.cells:
        record = written[cell.provenance.path]
        assert cell.provenance.sha256 == hashlib.sha256((tmp_path / cell.provenance.path).read_bytes()).hexdigest()
        assert dict(cell.stored) == record
        for name, field in NAMING.items():  # the identity agrees with what the record says of itself
            if name in record:
                assert getattr(cell.identity, field) == record[name], (cell.provenance.path, name)
        if "arm" in record and cell.kind != CROSS_JUDGE and cell.layout not in ("override", "length"):
            assert cell.identity.arm == record["arm"], cell.provenance.path
        if "n_offset" in record:
            assert cell.identity.arm == f"N{record['n_offset']:02d}"
        if cell.kind == CROSS_JUDGE:
            assert (cell.score, cell.label, cell.reason) == (record["gpt5_score"], record["gpt5_label"],
                                                             record["gpt5_reason"])
        else:
            assert (cell.response_text, cell.response_len) == (record["response_text"], record["response_len"])
            assert (cell.score, cell.label, cell.reason, cell.compliance) == \
                tuple(record.get(k) for k in ("score", "label", "reason", "compliance"))
            assert cell.kind == (PROBE if "score" in record else STRESSOR)
        if cell.score is not None:  # every stored verdict can be given back to a replayed judge
            text = verdict_text(cell.score, cell.label, cell.reason)
            assert text is not None, (cell.provenance.path, cell.score, cell.label, cell.reason)
            verdict = parse_verdict(text)
            assert (verdict.score, verdict.label, verdict.reason) == (cell.score, cell.label, cell.reason)


# ---------------------------------------------------------------- verdicts given back
@pytest.mark.parametrize("raw", ['{"score": 2, "label": "mostly_assistant", "reason": "r {x}"}', "no json here",
                                 '{"label": "x"}', '{"score": 9, "label": "x"}', '{"score": "two"}', "{",
                                 '{"score": NaN}'])
def test_a_stored_verdict_is_given_back_as_a_reply_that_reads_the_same(raw):
    stored = parse_verdict(raw)
    text = verdict_text(stored.score, stored.label, stored.reason)
    assert text and parse_verdict(text) == stored


def test_a_verdict_no_reply_reads_back_as_is_none():
    assert verdict_text(-1, "invalid_score", "{\"score\": 9, \"reason\": \"cut sho") is None  # a reason cut at 300
    assert verdict_text(-1, "parse_error", "some other decoder's message") is None
