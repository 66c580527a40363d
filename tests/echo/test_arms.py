"""Arms: real, filler (exact skeleton), shuffled_real, unrelated_session, scratch."""
from collections import Counter

import numpy as np
import pytest

from contextecho.echo import ARMS, ArmContext, make_prefix
from contextecho.engine.registry import UnknownNameError
from contextecho.echo.filler import WORDS, filler_like, lorem
from contextecho.sessions import render_prefix, snapshot_at

WINDOW = 2_000


def skeleton(prefix):
    return [(t.role, t.kind, t.n_chars, t.message) for t in prefix.turns]


@pytest.fixture(scope="module")
def snap(session):
    return snapshot_at(session, session.n_agent_steps - 3)


@pytest.fixture(scope="module")
def ctx(sessions):
    return ArmContext(window=WINDOW, others=tuple(sessions))


def test_registered_arms_and_unknown_name():
    assert ARMS.names() == ["filler", "real", "scratch", "shuffled_real", "unrelated_session"]
    with pytest.raises(UnknownNameError, match="unknown arm 'claude'; valid arms: filler, real, "):
        make_prefix("claude", None)


def test_real_is_the_rendered_prefix(snap, ctx):
    p = make_prefix("real", snap, ctx)
    q = render_prefix(snap, window=WINDOW)
    assert p.messages == q.messages and p.turns == q.turns and p.n_chars == q.n_chars
    assert p.messages[-1]["role"] == "assistant" and p.source == f"{snap.session_id}@{snap.step}"


def test_filler_mirrors_the_skeleton_exactly(snap, ctx):
    real = make_prefix("real", snap, ctx)
    fill = make_prefix("filler", snap, ctx)
    assert skeleton(fill) == skeleton(real)
    assert fill.n_chars == real.n_chars == sum(len(m["content"]) for m in fill.body)
    assert [m["role"] for m in fill.messages] == [m["role"] for m in real.messages]
    assert [len(m["content"]) for m in fill.messages] == [len(m["content"]) for m in real.messages]
    words = set(" ".join(m["content"] for m in fill.body).lower().replace(".", " ").split())
    # Neutral: lorem words only (a turn's last word may be cut), no tool markers, no session words.
    assert all(any(v.startswith(w) for v in WORDS) for w in words)
    assert "tool_call" not in str(fill.messages) and "parser" not in str(fill.messages)


def test_filler_is_deterministic_per_cell_and_seed(snap, ctx, session):
    a, b = make_prefix("filler", snap, ctx), make_prefix("filler", snap, ctx)
    assert a.messages == b.messages and a.seed == b.seed
    other_seed = make_prefix("filler", snap, ArmContext(window=WINDOW, instrument_seed=7))
    assert other_seed.messages != a.messages
    other_step = make_prefix("filler", snapshot_at(session, snap.step - 1), ctx)
    assert other_step.seed != a.seed


def test_filler_keeps_a_preamble(snap):
    ctx = ArmContext(window=WINDOW, preamble="You are Claude Code.")
    fill = make_prefix("filler", snap, ctx)
    assert fill.messages[0] == {"role": "system", "content": "You are Claude Code."}
    assert fill.n_chars == make_prefix("real", snap, ctx).n_chars


def test_lorem_lengths_and_zero_length_error(snap):
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5, 17, 999):
        text = lorem(n, rng)
        assert len(text) == n and not text.endswith(" ")
    real = render_prefix(snap, window=WINDOW)
    empty = real.__class__(**{**real.__dict__, "turns": (), "messages": (), "n_chars": 0, "texts": ()})
    with pytest.raises(ValueError, match="filler for a prefix of zero length"):
        filler_like(empty, rng)


def test_shuffled_real_permutes_turns_within_roles(snap, ctx):
    real = make_prefix("real", snap, ctx)
    shuf = make_prefix("shuffled_real", snap, ctx)
    assert shuf.n_chars == real.n_chars and len(shuf.turns) == len(real.turns)
    assert [m["role"] for m in shuf.messages] == [m["role"] for m in real.messages]
    assert [t.role for t in shuf.turns] == [t.role for t in real.turns]
    assert Counter(t.n_chars for t in shuf.turns) == Counter(t.n_chars for t in real.turns)
    assert shuf.messages != real.messages
    assert shuf.messages == make_prefix("shuffled_real", snap, ctx).messages


def test_unrelated_session_is_length_matched_and_from_another_session(snap, ctx):
    real = make_prefix("real", snap, ctx)
    other = make_prefix("unrelated_session", snap, ctx)
    assert not other.source.startswith(snap.session_id + "@")
    assert other.reference_n_chars == real.n_chars
    assert 0.9 * real.n_chars <= other.n_chars <= real.n_chars
    assert other.messages[0]["role"] == "user" and other.messages[-1]["role"] == "assistant"
    with pytest.raises(ValueError, match="needs other sessions"):
        make_prefix("unrelated_session", snap, ArmContext(window=WINDOW))


def test_scratch_has_no_session_content(snap):
    assert make_prefix("scratch", snap, ArmContext()).messages == ()
    p = make_prefix("scratch", snap, ArmContext(preamble="sys"))
    assert p.messages == ({"role": "system", "content": "sys"},) and p.n_chars == 0


@pytest.mark.corpus
def test_filler_matches_every_corpus_session(corpus_sessions):
    """Char count within 1% (in fact exact) and the identical turn skeleton, on every
    session of the shared corpus, at three positions, under the paper's 30,000 window."""
    checked = 0
    for name, session in corpus_sessions.items():
        n = session.n_agent_steps
        if n == 0:
            continue
        for step in sorted({1, (n + 1) // 2, n}):
            snap = snapshot_at(session, step)
            ctx = ArmContext(window=30_000)
            real, fill = make_prefix("real", snap, ctx), make_prefix("filler", snap, ctx)
            assert abs(fill.n_chars - real.n_chars) <= 0.01 * real.n_chars, (name, step)
            assert skeleton(fill) == skeleton(real), (name, step)
            assert [m["role"] for m in fill.messages] == [m["role"] for m in real.messages]
            checked += 1
    assert checked >= len(corpus_sessions)
