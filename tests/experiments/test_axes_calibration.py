"""Calibrating the axes judge (``contextecho judge-check --rubric axes``): the labelled turns,
the same requests and verdict reader as the anchor notebook, the metrics against scikit-learn,
and the command's exit statuses and printout."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from contextecho.__main__ import main
from contextecho.anchor.axes.report import axis_jobs
from contextecho.anchor.axes.rubric import AXES
from contextecho.anchor.axes.verdicts import DEVIATED, HELD
from contextecho.anchor.persona import CODING_ASSISTANT
from contextecho.echo.calibration import MIN_KAPPA, LabelsError
from contextecho.experiments.anchor_axes import axes_judge_params
from contextecho.experiments.axes_calibration import (AXES_LABELS, CATEGORIES, calibrate_axes, labelled_turns,
                                                      read_axes_labels)

ITEMS = read_axes_labels()
PARAMS = axes_judge_params("axoracle/j", 8)


def test_the_labelled_set_has_three_held_and_three_deviated_turns_per_axis():
    assert len(ITEMS) == 24 and len({i.id for i in ITEMS}) == 24
    for axis in AXES:
        labels = sorted(i.label for i in ITEMS if i.axis == axis)
        assert labels == [DEVIATED] * 3 + [HELD] * 3, axis
    assert all(i.user.strip() and i.turn.strip() and i.note.strip() for i in ITEMS)
    assert (AXES_LABELS.parent / "README.md").is_file()


@pytest.mark.parametrize("row, says", [
    ({"id": "x", "axis": "role", "user": "u", "turn": "t", "label": "held"}, "missing note"),
    ({"id": "x", "axis": "mood", "user": "u", "turn": "t", "label": "held", "note": ""}, "axis 'mood' is not one of"),
    ({"id": "x", "axis": "role", "user": "u", "turn": "t", "label": "maybe", "note": ""}, "label 'maybe' is not held"),
    ({"id": "x", "axis": "role", "user": "u", "turn": " ", "label": "held", "note": ""}, "empty turn"),
    ({"id": "x", "axis": "role", "user": "u", "turn": "t", "label": 1, "note": ""}, "label must be text"),
])
def test_a_malformed_row_is_named_with_its_file_and_line(tmp_path, row, says):
    good = {"id": "a", "axis": "style", "user": "u", "turn": "t", "label": "deviated", "note": "n"}
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(row) + "\n")
    with pytest.raises(LabelsError, match=f"{path}:3: {says}"):
        read_axes_labels(path)
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(LabelsError, match=f"{path}:2: not valid JSON"):
        read_axes_labels(path)
    with pytest.raises(LabelsError, match="used twice"):
        labelled_turns([good, good], "x")
    with pytest.raises(LabelsError, match="no such labelled set"):
        read_axes_labels(tmp_path / "none.jsonl")


def _label_of(messages):
    """The label of the turn asked about, by its opening (a judge that is not in-process sees
    the turn redacted: the example AWS key of one turn as placeholders)."""
    turn = messages[-1]["content"].split("Assistant turn to judge:")[1]
    label, = {i.label for i in ITEMS if i.turn[:12] in turn}
    return label


@pytest.fixture
def judges(provider):
    """``axoracle/...`` answers each turn's label; ``axcontrary/...`` the opposite on half the
    axes; ``axmute/...`` no verdict."""
    def oracle(model, messages):
        return f"Verdict: {_label_of(messages).upper()}"

    def contrary(model, messages):
        label = _label_of(messages)
        flip = any(f"its {axis}." in messages[0]["content"] for axis in ("role", "style"))
        return f"Verdict: {({HELD: DEVIATED, DEVIATED: HELD}[label] if flip else label).upper()}"

    return {"oracle": provider("axoracle", oracle), "contrary": provider("axcontrary", contrary),
            "mute": provider("axmute", lambda model, messages: "Hmm.")}


def test_the_judge_is_asked_what_the_notebook_asks_and_scored_like_scikit_learn(judges, cache):
    result = calibrate_axes("axoracle/j", ITEMS, params=PARAMS, cache=cache, progress=False)
    assert result.passed and result.agreement.kappa == pytest.approx(1.0) and result.counts.calls == 24
    # the same request as the anchor notebook's axes stage builds for this turn and axis
    item = ITEMS[5]
    job, = axis_jobs([item.judged_turn()], "axoracle/j", CODING_ASSISTANT, axes=(item.axis,),
                     params=PARAMS)
    assert result.items[5]["key"] == job.request.key
    again = calibrate_axes("axoracle/j", ITEMS, params=PARAMS, cache=cache, progress=False)
    assert again.counts.cached == 24
    contrary = calibrate_axes("axcontrary/j", ITEMS, params=PARAMS, cache=cache, progress=False)
    labels = [CATEGORIES[i.label] for i in ITEMS]
    scores = [r["score"] for r in contrary.items]
    a = contrary.agreement
    assert a.kappa == pytest.approx(cohen_kappa_score(labels, scores))
    assert a.kappa_quadratic == pytest.approx(a.kappa)  # two categories: the 0-3 threshold's kappa is Cohen's
    assert a.exact == pytest.approx(np.mean(np.array(labels) == np.array(scores))) == 0.5
    assert [list(r) for r in a.confusion] == confusion_matrix(labels, scores, labels=[0, 1]).tolist()
    assert not contrary.passed and a.kappa < MIN_KAPPA


def test_the_command_prints_the_metrics_and_exits_0_1_2(judges, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path / "cache"))
    assert main(["judge-check", "--rubric", "axes", "--judge", "axoracle/j", "--max-tokens", "8",
                 "--out", str(tmp_path / "ok")]) == 0
    out = capsys.readouterr().out
    assert "24 labelled turns" in out and "n 24   valid 24   invalid 0 (0.0%)" in out
    assert "agreement 1.000   Cohen's kappa 1.000" in out and "CALIBRATED" in out
    assert "deviated:   12    0" in out and "    held:    0   12" in out
    rows = [json.loads(line) for line in (tmp_path / "ok" / "per_item.jsonl").read_text().splitlines()]
    summary = json.loads((tmp_path / "ok" / "summary.json").read_text())
    assert len(rows) == summary["n"] == 24 and summary["passed"] and summary["protocol"] == "axes-1.0"
    assert {"id", "axis", "label", "verdict", "status", "score"} <= set(rows[0])
    assert main(["judge-check", "--rubric", "axes", "--judge", "axcontrary/j", "--max-tokens", "8"]) == 1
    out = capsys.readouterr().out
    assert "agreement 0.500   Cohen's kappa 0.000" in out and "NOT CALIBRATED" in out
    assert main(["judge-check", "--rubric", "axes", "--judge", "axmute/j", "--max-tokens", "8"]) == 1
    assert "invalid 24 (100.0%)" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a", "axis": "role", "user": "u", "turn": "t", "label": "ok", "note": ""}) + "\n")
    seen = len(judges["oracle"].seen)
    assert main(["judge-check", "--rubric", "axes", "--judge", "axoracle/j", "--labels", str(bad)]) == 2
    assert f"{bad}:1: label 'ok' is not held or deviated" in capsys.readouterr().out
    assert len(judges["oracle"].seen) == seen  # refused before any call
    assert main(["judge-check", "--rubric", "axes", "--judge", "no-such-provider/x"]) == 2
