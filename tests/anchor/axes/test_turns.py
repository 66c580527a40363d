"""Which turns the axes judge sees: real checkpoint turns and forks that end before them."""
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from contextecho.anchor.axes.turns import (FORK, REAL, RECORDED, checkpoints, fork_requests, forked_turns,
                                           judgeable, real_turns)
from contextecho.anchor.persona import CODING_ASSISTANT
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import generate
from contextecho.sessions import positions
from contextecho.sessions.model import REASONING, TEXT, TOOL_CALL, TOOL_RESULT, Entry
from contextecho.sessions.timeline import assemble_session

EMAIL = "alice.smith@example.org"


def session(n_rounds: int = 12, session_id: str = "axes-session-7f3a"):
    """Rounds of tool call, tool result, (reasoning), text; every entry carries a marker Mnn."""
    entries = []

    def add(role, kind, text, meta=False, mid=None):
        line = len(entries) + 1
        entries.append(Entry(role, kind, f"{text} M{line:02d}", line, tool_name="Bash" if kind != TEXT else None,
                             message_id=mid or f"m{line}", meta=meta))

    add("user", TEXT, "Please tidy the repository.")
    add("assistant", TEXT, "I will look around first.")
    for r in range(n_rounds):
        add("assistant", TOOL_CALL, f'{{"command": "ls dir{r}"}}')
        add("user", TOOL_RESULT, f"listing of dir{r}" + (f" owner {EMAIL}" if r == 2 else ""))
        if r % 3 == 1:
            add("user", TEXT, "<system-reminder>harness text</system-reminder>", meta=True)
            add("assistant", REASONING, "thinking it over")
        add("assistant", TEXT, f"Round {r} done.", mid=f"r{r}")
        if r % 4 == 3:
            add("assistant", TEXT, f"An afterthought on round {r}.", mid=f"x{r}")  # follows a text: not judged
    return assemble_session(path=Path(f"{session_id}.jsonl"), fmt="claude_code", session_id=session_id,
                            entries=entries, compactions=[], n_user_msgs=1, n_assistant_msgs=len(entries),
                            n_tool_calls=n_rounds, n_compactions=0, n_lines=len(entries), record_types=Counter(),
                            skipped=[])


def markers(text: str) -> set[int]:
    return {int(m) for m in re.findall(r"\bM(\d\d)\b", text)}


def test_judgeable_turns_are_assistant_texts_right_after_user_side_input():
    s = session()
    turns = judgeable(s)
    assert turns and all(s.entries[i].kind == TEXT and s.entries[i].role == "assistant" for _, i, _ in turns)
    for step, i, c in turns:
        assert s.entries[i].step == step and s.entries[c].role == "user" and not s.entries[c].meta
        assert all(s.entries[j].kind == REASONING or s.entries[j].meta for j in range(c + 1, i))
    texts = [s.entries[i].text for _, i, _ in turns]
    assert not any("afterthought" in t for t in texts) and sum("Round" in t for t in texts) == 12


def test_checkpoints_are_the_turns_nearest_uniform_positions():
    s = session()
    steps = [t[0] for t in judgeable(s)]
    chosen = checkpoints(s, k=4)
    assert len(chosen) == 4 and len({c[1] for c in chosen}) == 4
    for (label, step, _, _), pos in zip(chosen, positions(s, "uniform", k=4)):
        assert label == pos.label
        assert abs(step - pos.step) == min(abs(x - pos.step) for x in steps)
    assert len(checkpoints(s, k=50)) == len(steps)  # nearest turns repeat: duplicates dropped
    assert [c[1] for c in checkpoints(session(0), k=4)] == [1]  # one turn serves every position


def test_a_session_without_judgeable_turns_gives_none():
    s = session(0)
    s = assemble_session(path=s.path, fmt=s.format, session_id=s.session_id,
                         entries=[Entry("assistant", TOOL_CALL, "{}", 1, tool_name="Bash")], compactions=[],
                         n_user_msgs=0, n_assistant_msgs=1, n_tool_calls=1, n_compactions=0, n_lines=1,
                         record_types=Counter(), skipped=[])
    assert judgeable(s) == [] and checkpoints(s) == [] and real_turns(s) == [] and fork_requests(s, "fake/echo") == []


def test_real_turns_record_session_step_and_redacted_context():
    s = session()
    turns = real_turns(s, k=12)
    assert [t.step for t in turns] == [c[1] for c in checkpoints(s, k=12)]
    for t in turns:
        entry = s.entries[s.step_index[t.step - 1]]
        assert (t.source, t.target, t.session_id, t.replicate) == (REAL, RECORDED, s.session_id, 0)
        assert t.text == entry.text and t.context.startswith(("[tool_result", "Please tidy"))
        assert t.id == f"real|{s.session_id}|{t.step}|recorded|0"
    leaked = [t for t in turns if EMAIL in (t.context or "")]
    assert not leaked and any("<EMAIL_1>" in (t.context or "") for t in turns)
    assert any(EMAIL in t.context for t in real_turns(s, k=12, redact=False))


def test_forks_hold_the_card_then_only_what_came_before_the_turn():
    s = session()
    forks = fork_requests(s, "fake/echo", k=4, window=None, params={"temperature": 0.5, "max_tokens": 99})
    assert [f.turn.step for f in forks] == [c[1] for c in checkpoints(s, k=4)]
    for f in forks:
        messages = f.request.messages
        assert messages[0] == {"role": "system", "content": CODING_ASSISTANT.system_prompt()}
        assert messages[-1]["role"] == "user" and f.request.model == "fake/echo"
        assert f.request.params == {"temperature": 0.5, "max_tokens": 99}
        turn_index = s.step_index[f.turn.step - 1]
        seen = set().union(*(markers(m["content"]) for m in messages[1:]))
        assert max(seen) < s.entries[turn_index].line  # nothing at or after the turn
        assert markers(f.turn.context) <= markers(messages[-1]["content"])
        assert 1 in seen and EMAIL not in str(messages)
        assert (f.turn.source, f.turn.target, f.turn.text, f.turn.source_key) == (FORK, "fake/echo", None,
                                                                                  f.request.key)


def test_fork_keys_change_with_target_window_params_card_and_replicate():
    s = session()
    base = fork_requests(s, "fake/echo", k=2)[-1]
    variants = [fork_requests(s, "fake/other", k=2)[-1], fork_requests(s, "fake/echo", k=2, window=200)[-1],
                fork_requests(s, "fake/echo", k=2, params={"temperature": 1.0})[-1],
                fork_requests(s, "fake/echo", k=2, replicate=1)[-1],
                fork_requests(s, "fake/echo", replace(CODING_ASSISTANT, name="Anvil"), k=2)[-1]]
    assert len({v.request.key for v in variants} | {base.request.key}) == 6
    short = variants[1]
    assert short.truncated and short.prefix_chars <= 200 and not base.truncated
    assert variants[3].turn.id != base.turn.id  # replicates are distinct turns


def test_forked_turns_take_the_generated_text_or_the_failure(tmp_path):
    s = session()
    forks = fork_requests(s, "fake/echo", k=3) + fork_requests(s, "fake/auth", k=1)
    records = generate([f.request for f in forks], cache=CallCache(tmp_path), progress=False).records
    turns = forked_turns(forks, list(reversed(records)))  # matched by key, not by order
    assert all(t.text.startswith("echo:") and t.error is None for t in turns[:3])
    failed = turns[3]
    assert failed.text is None and failed.error.startswith("target call failed: ")
    with pytest.raises(ValueError, match="no target record"):
        forked_turns(forks, records[:1])
