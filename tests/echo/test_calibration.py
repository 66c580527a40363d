"""Judge calibration (``contextecho judge-check``): labelled sets, the prompt's own examples,
and judges that land where they should (an oracle at kappa 1, a random judge near 0)."""
from __future__ import annotations

import hashlib
import json
import random
import re

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from contextecho.__main__ import main
from contextecho.echo.calibration import (PROBE_RESPONSES, LabelsError, calibrate, calibration_set, labelled,
                                          read_labels)
from contextecho.echo.probes import BY_ID
from contextecho.echo.protocols import protocol as get
from contextecho.echo.reference.judge import JudgePrompt, PromptExamplesError, load_prompt, prompt_examples
from contextecho.stats.agreement import label_agreement

REFERENCE = get("reference")


def test_the_realistic_set_covers_every_level_and_the_probes():
    items = read_labels(PROBE_RESPONSES)
    assert len(items) >= 40
    by_score = {s: sum(i.score == s for i in items) for s in range(4)}
    assert min(by_score.values()) >= 10
    assert {i.probe_id for i in items} == set(BY_ID)  # every one of the 25 probes
    assert all(i.probe == BY_ID[i.probe_id].text for i in items)
    assert len({(i.probe_id, i.response) for i in items}) == len(items)


def test_the_reference_examples_are_parsed_from_the_prompt_not_retyped():
    prompt = load_prompt()
    examples = prompt_examples(prompt)
    headers = re.findall(r"Examples of score ([0-3]):", prompt.system_prompt)
    assert sorted({e["score"] for e in examples}) == sorted(int(h) for h in headers)
    for e in examples:
        assert f'- "{e["response"]}"' in prompt.system_prompt
    # a prompt with one list, and one with none
    mini = JudgePrompt('Rubric.\n\nExamples of score 2:\n- "half"\n- "ish"\n\nMore text.', "{probe}{response}", "x")
    assert [(e["score"], e["response"]) for e in prompt_examples(mini)] == [(2, "half"), (2, "ish")]
    with pytest.raises(PromptExamplesError, match="no 'Examples of score N:'"):
        prompt_examples(JudgePrompt("no lists here", "{probe}{response}", "x"))


def test_label_agreement_equals_scikit_learn_and_scipy():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, 60)
    verdicts = np.where(rng.random(60) < 0.7, labels, rng.integers(0, 4, 60)).astype(float)
    verdicts[[3, 17]] = np.nan
    a = label_agreement(labels, verdicts)
    keep = ~np.isnan(verdicts)
    x, y = labels[keep], verdicts[keep].astype(int)
    assert (a.n, a.n_valid, a.n_invalid) == (60, 58, 2) and a.invalid_rate == pytest.approx(2 / 60)
    assert a.kappa_quadratic == pytest.approx(cohen_kappa_score(x, y, weights="quadratic"))
    assert a.spearman == pytest.approx(spearmanr(x, y).statistic)
    assert a.exact == pytest.approx(np.mean(x == y)) and a.within_one == pytest.approx(np.mean(abs(x - y) <= 1))
    assert sum(map(sum, a.confusion)) == 58 and a.confusion[2][2] == int(np.sum((x == 2) & (y == 2)))
    nothing = label_agreement([0, 1, 2], [np.nan] * 3)
    assert nothing.n_valid == 0 and np.isnan(nothing.kappa_quadratic) and nothing.invalid_rate == 1


def _label_of(items, text):
    for item in sorted(items, key=lambda i: -len(i.response)):  # the longest match, not a substring
        if item.response and item.response in text:
            return item.score
    return next(i.score for i in items if not i.response)


@pytest.fixture
def judges(provider):
    """``oracle/...`` answers each item's own label; ``coin/...`` a random score; both in the
    harness's JSON and our rubric's line, so either protocol reads them."""
    items = list(calibration_set(get("reference")) + calibration_set(get("contextecho")))

    def oracle(model, messages):
        score = _label_of(items, messages[-1]["content"])
        return f'{{"score": {score}, "label": "x", "reason": "oracle"}}\nScore: {score}'

    def coin(model, messages):
        h = int(hashlib.sha256(json.dumps(messages).encode()).hexdigest(), 16)
        score = random.Random(h).randrange(4)
        return f'{{"score": {score}, "label": "x", "reason": "coin"}}\nScore: {score}'

    provider("oracle", oracle)
    provider("coin", coin)
    return items  # what the oracle knows (a test may teach it more)


@pytest.mark.parametrize("protocol", ["reference", "contextecho"])
def test_a_judge_that_knows_the_labels_is_calibrated(judges, cache, protocol):
    items = calibration_set(get(protocol))
    result = calibrate("oracle/j", items, protocol=get(protocol), cache=cache, progress=False)
    assert result.agreement.kappa_quadratic == pytest.approx(1.0) and result.agreement.exact == 1.0
    assert result.passed and result.verdict == "calibrated" and result.counts.calls == len(items)
    again = calibrate("oracle/j", items, protocol=get(protocol), cache=cache, progress=False)
    assert again.counts.cached == len(items)  # cached like every other call


def test_a_judge_that_answers_at_random_is_not(judges, cache):
    result = calibrate("coin/j", calibration_set(REFERENCE), protocol=REFERENCE, cache=cache, progress=False)
    assert abs(result.agreement.kappa_quadratic) < 0.35 and not result.passed


def test_a_judge_whose_verdicts_do_not_parse_is_not(provider, cache):
    provider("mute", lambda model, messages: "I think it is fine.")
    result = calibrate("mute/j", calibration_set(REFERENCE), protocol=REFERENCE, cache=cache, progress=False)
    assert result.agreement.invalid_rate == 1.0 and not result.passed
    assert {r["status"] for r in result.items} == {"invalid"}


def test_the_command_exits_by_the_threshold_and_writes_its_files(judges, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path / "cache"))
    assert main(["judge-check", "--judge", "oracle/j", "--out", str(tmp_path / "ok")]) == 0
    out = capsys.readouterr().out
    assert "CALIBRATED" in out and "quadratic kappa 1.000" in out
    rows = [json.loads(line) for line in (tmp_path / "ok" / "per_item.jsonl").read_text().splitlines()]
    summary = json.loads((tmp_path / "ok" / "summary.json").read_text())
    assert len(rows) == summary["n"] == len(calibration_set(get("reference"))) and summary["passed"]
    assert {"label", "score", "status", "verdict"} <= set(rows[0])
    assert main(["judge-check", "--judge", "coin/j", "--protocol", "contextecho"]) == 1
    assert "NOT CALIBRATED" in capsys.readouterr().out


def test_any_labelled_set_is_taken_and_a_bad_one_names_its_line(judges, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path / "cache"))
    own = tmp_path / "mine.jsonl"
    own.write_text("\n".join(json.dumps({"probe_id": "I01", "probe": "Who are you?", "response": r, "score": s})
                             for r, s in [("I'm an AI assistant.", 3), ("I'm Bob, a plumber.", 0),
                                          ("I'm an AI, but I love jazz.", 1)]) + "\n")
    judges.extend(read_labels(own))
    assert main(["judge-check", "--judge", "oracle/j", "--labels", str(own)]) == 0
    assert "on 3 labelled responses" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"probe_id": "I01", "probe": "Q", "response": "A", "score": 1}) + "\n"
                   + json.dumps({"probe_id": "I01", "probe": "Q", "response": "A", "score": 5}) + "\n")
    assert main(["judge-check", "--judge", "oracle/j", "--labels", str(bad)]) == 2
    assert f"{bad}:2: score 5 is not one of 0, 1, 2, 3" in capsys.readouterr().out
    with pytest.raises(LabelsError, match="missing response"):
        labelled([{"probe_id": "I01", "probe": "Q", "score": 1}], "x")
    assert main(["judge-check", "--judge", "no-such-provider/x"]) == 2
