import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from contextecho.engine import llm
from contextecho.anchor.banks.bank import load_bank
from contextecho.anchor.banks.scorer import BankRunFailed, item_request, score_bank, summarize
from contextecho.anchor.banks.window import bank_context
from contextecho.anchor.recall.items import prompt_text
from contextecho.engine.calls import RETRY_ERRORS_ENV
from contextecho.engine.hashing import canonical_json

FIXTURE = Path(__file__).parents[2] / "fixtures" / "anchor_bank" / "ca_forge_tidyfeed__updated"


@pytest.fixture(scope="module")
def scripted(provider):
    """``script/<any>``: replies with the text in ``script`` for the question's stem ("RAISE"
    raises an authentication error, which is never retried)."""
    def reply(model, messages):
        text = next((r for stem, r in handler.script.items() if stem in messages[-1]["content"]), "No idea.")
        return llm.litellm.AuthenticationError(message="scripted failure", model=model, llm_provider="script") \
            if text == "RAISE" else text

    handler = provider("script", reply, tokens=(1, 1))
    handler.script = {}
    return handler


@pytest.fixture
def bank():
    return load_bank(FIXTURE)


def replies(bank, **by_item):
    """A script from item id suffix (``pv``, ``to``, ...) to reply."""
    return {i.stem: by_item[i.item_id.split("-")[1]] for i in bank.items if i.item_id.split("-")[1] in by_item}


# Hand-computed: keys are pv B, to A, ce B, ue C, pu B, ca D, pp C.
SCRIPT = dict(pv="B", to="The answer is C.", ce="b) the freeze hold", ue="I am not sure.", pu="A", ca="D",
              pp="C")


def generated_bank(root: Path, seed: int, n_sessions: int = 30):
    """A bank whose every turn is tagged ``S<session>T<turn>``, with runs of same-role turns."""
    rng = np.random.default_rng(seed)
    (root / "persona_card.json").write_text((FIXTURE / "persona_card.json").read_text())
    turns = []
    for s in range(1, n_sessions + 1):
        for t in range(1, int(rng.integers(1, 7)) + 1):
            tag = f"S{s:03d}T{t:02d}"  # at both ends, so a tail cut keeps one
            text = f"{tag} " + "x" * int(rng.integers(0, 400)) + f" {tag}"
            turns.append({"session_id": s, "turn": t, "role": str(rng.choice(["user", "assistant"])), "content": text})
    rng.shuffle(turns)
    (root / "transcript.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    items = [{"item_id": f"g{k}", "family": "T-ORD", "stem": f"Question {k}?", "options": list("wxyz"),
              "correct_index": 0, "source": {"session_id": int(rng.integers(1, n_sessions + 1))}}
             for k in range(25)]
    (root / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    return load_bank(root)


def check_causal(bank, item, context, limit):
    causal = [t for t in bank.turns if t.session_id <= item.source_session]
    kept = causal[len(causal) - context.n_turns:]
    text = "\n".join(m["content"] for m in item_request(bank, item, context, "script/x").messages)
    for later in (t for t in bank.turns if t.session_id > item.source_session):
        assert later.content not in text, f"{item.item_id} sees session {later.session_id}"
    assert context.last == (causal[-1].session_id, causal[-1].turn)  # ends with the source session
    assert context.first == (kept[0].session_id, kept[0].turn)
    assert context.n_chars_full == sum(len(t.content) for t in causal)
    if not context.tail_cut:  # the most recent whole turns, as many as fit
        assert context.n_chars == sum(len(t.content) for t in kept)
        assert context.truncated == (len(kept) < len(causal))
        if limit is not None:
            assert context.n_chars <= limit
            assert not context.truncated or context.n_chars + len(causal[-len(kept) - 1].content) > limit
    assert context.sha256 == hashlib.sha256(canonical_json(list(context.messages)).encode()).hexdigest()
    roles = [m["role"] for m in context.messages]
    assert all(a != b for a, b in zip(roles, roles[1:]))


@pytest.mark.parametrize("limit", [None, 24_000, 700, 150])
def test_fixture_context_is_causal_and_most_recent(bank, limit):
    for item in bank.items:
        check_causal(bank, item, bank_context(bank, item, limit=limit), limit)


@pytest.mark.parametrize("seed", range(6))
def test_generated_bank_context_is_causal_and_most_recent(tmp_path, seed):
    bank = generated_bank(tmp_path, seed)
    for limit in (None, 5_000, 900, 120):
        for item in bank.items:
            context = bank_context(bank, item, limit=limit)
            check_causal(bank, item, context, limit)
            sent = json.dumps(item_request(bank, item, context, "script/x").messages)
            assert max(int(s) for s in re.findall(r"S(\d{3})T\d{2}", sent)) == item.source_session


def test_an_overflowing_last_turn_keeps_its_tail(bank):
    item = bank.items[0]  # source session 1; its last turn is the assistant's
    last = [t for t in bank.turns if t.session_id == 1][-1]
    context = bank_context(bank, item, limit=20)
    assert context.tail_cut and context.truncated and context.n_turns == 1
    assert context.first == context.last == (1, last.turn)
    assert context.messages == ({"role": "assistant", "content": last.content[-20:]},)


def test_requests_alternate_and_end_with_the_question(bank):
    for item in bank.items:
        request = item_request(bank, item, bank_context(bank, item), "script/x")
        messages = request.messages
        assert messages[0] == {"role": "system", "content": bank.card.system_prompt()}
        assert all(a["role"] != b["role"] for a, b in zip(messages, messages[1:]))
        assert messages[-1]["role"] == "user" and messages[-1]["content"].endswith(prompt_text(item))
    # Session 2 has two user turns in a row: one message, joined by a blank line.
    merged = bank_context(bank, bank.items[2]).messages  # source session 3
    assert any("One more thing before I forget.\n\nThe release needs" in m["content"] for m in merged)


def test_condition_none_is_card_and_question_only(bank):
    item = bank.items[-1]
    context = bank_context(bank, item, condition="none")
    assert context.n_turns == 0 and context.first is None and context.n_chars_full == 0
    request = item_request(bank, item, context, "script/x")
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.messages[1]["content"] == prompt_text(item)


@pytest.mark.parametrize("kwargs, message", [({"condition": "rag"}, "condition"), ({"limit": 0}, "limit")])
def test_bad_context_policy_is_refused(bank, kwargs, message):
    with pytest.raises(ValueError, match=message):
        bank_context(bank, bank.items[0], **kwargs)


def test_accuracy_by_hand(bank, scripted, cache, tmp_path):
    scripted.script = replies(bank, **SCRIPT)
    run = score_bank(bank, "script/hand", tmp_path / "out", cache=cache)
    assert [r["status"] for r in run.rows] == ["ok", "ok", "ok", "unparsed", "ok", "ok", "ok"]
    assert [r["choice"] for r in run.rows] == ["B", "C", "B", None, "A", "D", "C"]
    assert [r["correct"] for r in run.rows] == [True, False, True, None, False, True, True]
    s = run.summary
    assert (s["n_items"], s["n_answered"], s["n_unparsed"], s["n_errors"], s["n_correct"]) == (7, 6, 1, 0, 4)
    assert s["accuracy"] == pytest.approx(4 / 7) and s["accuracy_answered"] == pytest.approx(4 / 6)
    assert s["chance"] == 0.25 and s["model"] == "script/hand" and s["condition"] == "causal"
    assert s["per_family"]["U-EVO"]["accuracy"] == 0.0 and s["per_family"]["U-EVO"]["accuracy_answered"] is None
    assert s["per_family"]["T-ORD"]["n_correct"] == 0 and s["per_family"]["C-ACT"]["accuracy"] == 1.0
    files = {p.name: p for p in (tmp_path / "out").iterdir()}
    assert set(files) == {"per_item.jsonl", "summary.json", "run_manifest.json"}
    assert [json.loads(line) for line in files["per_item.jsonl"].read_text().splitlines()] == \
        json.loads(json.dumps(run.rows))
    manifest = json.loads(files["run_manifest.json"].read_text())
    assert manifest["status"] == "complete" and manifest["bank"]["file_sha256"] == bank.file_sha256
    assert manifest["parameters"]["params"] == {"temperature": 0.0, "max_tokens": 32}
    assert manifest["context_policy"]["limit_chars"] == 24_000 and manifest["models"] == ["script/hand"]
    assert manifest["batches"]["answers"] == {"calls": 7, "cached": 0, "computed": 7, "failed": 0, "invalid": 1,
                                              "constrained": 0}
    assert manifest["scores"]["n_unparsed"] == 1 and manifest["scores"]["errors_by_type"] == {}
    assert manifest["git"]["commit"] and manifest["wall_s"] >= 0 and manifest["finished"] >= manifest["started"]


def test_summarize_counts_an_empty_family_as_no_accuracy():
    rows = [{"family": "F", "status": "error", "correct": None}]
    assert summarize(rows)["accuracy"] is None and summarize(rows)["n_scored"] == 0


def test_provider_errors_fail_the_run_but_every_file_is_written(bank, scripted, cache, tmp_path, monkeypatch):
    out = tmp_path / "out"
    scripted.script = replies(bank, **SCRIPT)
    score_bank(bank, "script/errors", out, cache=cache)  # complete: a summary.json exists
    scripted.script = replies(bank, **{**SCRIPT, "pp": "RAISE"})
    with pytest.raises(BankRunFailed, match="1 of 7 calls failed \\(AuthenticationError 1\\)") as failure:
        score_bank(bank, "script/errors", out, params={"temperature": 0.0, "max_tokens": 8}, cache=cache)
    run = failure.value.run
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["scores"]["errors_by_type"] == {"AuthenticationError": 1}
    assert manifest["batches"]["answers"]["failed"] == 1
    assert not (out / "summary.json").exists() and run.summary is None  # the old accuracy is gone
    rows = [json.loads(line) for line in (out / "per_item.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows].count("error") == 1
    assert rows[-1]["correct"] is None and rows[-1]["error_type"] == "AuthenticationError"
    # A permanent error (authentication) is not asked again by a rerun unless asked to;
    # then the rerun asks only the failed item again.
    scripted.script = replies(bank, **SCRIPT)
    before = len(scripted.seen)
    with pytest.raises(BankRunFailed, match="AuthenticationError 1"):
        score_bank(bank, "script/errors", out, params={"temperature": 0.0, "max_tokens": 8}, cache=cache)
    assert len(scripted.seen) == before
    monkeypatch.setenv(RETRY_ERRORS_ENV, "1")  # what `anchor-score --retry-errors` sets
    again = score_bank(bank, "script/errors", out, params={"temperature": 0.0, "max_tokens": 8}, cache=cache)
    assert len(scripted.seen) == before + 1 and again.status == "complete"


def test_allowed_errors_are_counted_never_wrong(bank, scripted, cache, tmp_path):
    scripted.script = replies(bank, **{**SCRIPT, "pp": "RAISE"})
    s = score_bank(bank, "script/allowed", tmp_path / "out", allow_errors=True, cache=cache).summary
    assert (s["n_errors"], s["n_scored"], s["n_correct"], s["errors_excluded"]) == (1, 6, 3, 1)
    assert s["accuracy"] == pytest.approx(3 / 6) and s["accuracy_answered"] == pytest.approx(3 / 5)
    assert s["per_family"]["P-PROT"]["accuracy"] is None


def test_a_cached_rerun_makes_no_call(bank, scripted, cache, tmp_path):
    scripted.script = replies(bank, **SCRIPT)
    first = score_bank(bank, "script/cached", tmp_path / "a", cache=cache)
    before = len(scripted.seen)
    second = score_bank(bank, "script/cached", tmp_path / "b", cache=cache)
    assert len(scripted.seen) == before and all(r["cached"] for r in second.rows)
    assert second.manifest["batches"]["answers"]["computed"] == 0 and second.summary["accuracy"] == first.summary["accuracy"]


def test_nothing_of_the_user_profile_reaches_the_model(tmp_path, scripted, cache):
    root = Path(shutil.copytree(FIXTURE, tmp_path / "bank"))
    (root / "user_profile.json").write_text(json.dumps({"secret": "PROFILE-MARKER-7731"}))
    before = len(scripted.seen)
    score_bank(load_bank(root), "script/profile", tmp_path / "out", cache=cache)
    sent = json.dumps(scripted.seen[before:])
    assert len(scripted.seen) == before + 7 and "PROFILE-MARKER-7731" not in sent
