import json

import pandas as pd

from contextecho.cape.administer import CONTEXT_FREE, administer
from contextecho.cape.bridge import bridge_runs, bridge_summary, session_prefix_provider
from contextecho.cape.factors import factor_runs
from contextecho.cape.paraphrase import (generate_paraphrases, load_paraphrases, paraphrase_path,
                                         parse_paraphrases, write_paraphrases)
from contextecho.sessions import load_session, positions


def _claude_session(path):
    """A tiny Claude Code transcript (v2 shape), written here from scratch."""
    records, n = [], 0

    def rec(type_, message):
        nonlocal n
        n += 1
        records.append({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w",
                        "sessionId": "sess-cape", "version": "2.1.0", "gitBranch": "main", "type": type_,
                        "uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": f"2026-01-01T00:{n:02d}:00.000Z",
                        "message": message})

    def assistant(mid, *blocks):
        rec("assistant", {"id": mid, "type": "message", "role": "assistant", "model": "x", "content": list(blocks)})

    rec("user", {"role": "user", "content": "Add a --verbose flag."})
    assistant("m1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}})
    rec("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "cli.py"}]})
    assistant("m2", {"type": "text", "text": "Added the flag."})
    rec("user", {"role": "user", "content": "Now write a test."})
    assistant("m3", {"type": "text", "text": "Test written and passing."})
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_bridge_administers_after_each_arm_prefix(tmp_path, synthetic_inventory, likert, cache):
    session = load_session(_claude_session(tmp_path / "s.jsonl"))
    where = positions(session, "uniform", k=2)
    filler = lambda snap: [{"role": "user", "content": "x" * 10}, {"role": "assistant", "content": "ok"}]  # noqa: E731
    runs = bridge_runs(session, where, {"real": session_prefix_provider(window=None, redact=False), "filler": filler},
                       synthetic_inventory, n_runs=2)
    assert len(runs) == len(where) * 2 * 2
    likert.seen.clear()
    answers = administer(runs, "cape/hash", setting=CONTEXT_FREE, cache=cache).answers
    real_last = [r for r in runs if r.labels["arm"] == "real"][-1]
    assert real_last.prefix[-1] == {"role": "assistant", "content": "Test written and passing."}
    assert any(m[:len(real_last.prefix)] == list(real_last.prefix) and len(m) == len(real_last.prefix) + 1
               for m in likert.seen)
    summary = bridge_summary(answers)
    assert len(summary) == len(where) * 2
    assert set(summary.columns) >= {"snapshot", "step", "arm", "O", "C", "E", "A", "N", "tc", "oc", "n_invalid"}
    assert (summary["tar"] == 1).all()  # the scripted respondent ignores the prefix


def test_paraphrases_parse_generate_review_and_feed_the_factor(tmp_path, synthetic_inventory, likert,
                                                               cache, monkeypatch):
    assert parse_paraphrases("1. Have a tidy desk\n2. You keep things neat.") == \
        ("Have a tidy desk", "Keep things neat")
    assert parse_paraphrases("Sure, here you go") is None
    table = generate_paraphrases(synthetic_inventory, "cape/hash", cache=cache)
    assert (table["status"] == "unparsed").all() and len(table) == 10  # counted, not guessed
    monkeypatch.setenv("CONTEXTECHO_DATA", str(tmp_path / "data"))
    path = paraphrase_path(synthetic_inventory, "openai/gpt-4o")
    assert path.parent == tmp_path / "data" / "mpi" / "paraphrases"  # git-ignored: holds item text
    table["paraphrase_1"] = [f"P one {i}" for i in table["item"]]
    table["paraphrase_2"] = [f"P two {i}" for i in table["item"]]
    table.loc[0, "review"] = "rejected"
    write_paraphrases(table, path)
    loaded = load_paraphrases(path)
    assert len(loaded) == 9 and 0 not in loaded and loaded[1] == ("P one 1", "P two 1")
    loaded[0] = ("Tidy up", "Keep order")
    runs = factor_runs("paraphrasing", synthetic_inventory, paraphrases=loaded, n_runs=1)
    assert [r.labels["variant"] for r in runs] == ["original", "paraphrase_1", "paraphrase_2"]
    assert isinstance(pd.read_csv(path), pd.DataFrame)
