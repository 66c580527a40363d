import pytest

from contextecho.anchor.context.window import causal_window


def test_window_ends_at_the_decision_step_and_ignores_the_future(synthetic, causality):
    s = synthetic.build()
    for t in range(1, s.n_agent_steps + 1):
        w = causal_window(s, t, limit=None)
        assert w.last_entry == s.step_index[t - 1] and w.first_entry == 0
        assert w.messages[-1]["role"] == "assistant"
        assert causal_window(causality.cut_at(s, t), t, limit=None).sha256 == w.sha256


def test_window_keeps_the_most_recent_material_under_a_limit(synthetic):
    s = synthetic.build()
    t = s.n_agent_steps
    full, short = causal_window(s, t, limit=None), causal_window(s, t, limit=300)
    assert short.truncated and short.n_chars <= 300 and short.first_entry > 0
    assert short.messages[-1] == full.messages[-1]
    assert short.n_chars_full == full.n_chars and short.sha256 != full.sha256


def test_window_rejects_steps_outside_the_session(synthetic):
    with pytest.raises(ValueError):
        causal_window(synthetic.build(), 0)
