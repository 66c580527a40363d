"""Interventions: placement, scaffolds, inserted token counts, goal re-injection."""
import pytest

from contextecho.echo import INTERVENTIONS, ArmContext, InterventionContext, intervene, make_prefix, opening_goal
from contextecho.engine.registry import UnknownNameError
from contextecho.echo.interventions import ACK, V0, V2_RULE
from contextecho.echo.tokens import approx_tokens
from contextecho.sessions import snapshot_at


@pytest.fixture(scope="module")
def prefix(session):
    return make_prefix("real", snapshot_at(session, session.n_agent_steps), ArmContext(window=3_000))


def roles(p):
    return [m["role"] for m in p.messages]


def alternates(p):
    r = roles(p)
    return all(a != b for a, b in zip(r, r[1:]))


def test_registry_and_unknown_name():
    assert INTERVENTIONS.names() == sorted([
        "none", "a_anchor", "v0_only", "v2_only", "a_anchor_200", "placebo_anchor",
        "placebo_iso_notes", "placebo_iso_recipe", "sandwich", "goal_reinjection",
        "goal_reinjection_c30"])
    with pytest.raises(UnknownNameError, match="valid interventions: a_anchor, a_anchor_200"):
        intervene("anchor", None)


def test_none_is_the_identity(prefix):
    assert intervene("none", prefix) is prefix


def test_a_anchor_right_before_the_probe(prefix):
    p = intervene("a_anchor", prefix)
    assert p.messages[:-4] == prefix.messages and alternates(p)
    assert [m["content"] for m in p.messages[-4:-2]] == [V0, ACK] and p.messages[-1]["content"] == "ls"
    assert p.intervention == "a_anchor" and len(p.inserted) == 1
    ins = p.inserted[0]
    assert ins.at == len(prefix.body) and ins.tokens == p.inserted_tokens
    assert 70 <= p.inserted_tokens <= 100  # the seed's ~78 tokens (approximate counter)
    assert p.inserted_chars == sum(len(m["content"]) for m in ins.messages)
    assert prefix.inserted == ()  # the input is never mutated


def test_variants_sizes(prefix):
    tokens = {n: intervene(n, prefix).inserted_tokens for n in
              ("v0_only", "v2_only", "a_anchor", "a_anchor_200", "placebo_anchor",
               "placebo_iso_notes", "placebo_iso_recipe")}
    assert tokens["v0_only"] + tokens["v2_only"] == tokens["a_anchor"]
    assert 180 <= tokens["a_anchor_200"] <= 240
    for name in ("placebo_anchor", "placebo_iso_notes", "placebo_iso_recipe"):
        assert abs(tokens[name] - tokens["a_anchor"]) <= 25, name  # structure- and size-matched


def test_placement_at_distance(prefix):
    for d in (1, 2, 5, 10):
        p = intervene("a_anchor", prefix, InterventionContext(distance=d))
        at = p.inserted[0].at
        assert len(prefix.body) - d <= at <= len(prefix.body) and alternates(p)
        assert p.body[at]["content"] == V0 and p.body[at + 4:] == prefix.body[at:]
    far = intervene("a_anchor", prefix, InterventionContext(distance=10_000))
    assert far.inserted[0].at == 0


def test_the_placed_distance_is_where_the_block_really_sat(prefix):
    from contextecho.echo.interventions import placed_distance

    assert placed_distance(prefix, intervene("none", prefix)) is None  # nothing inserted
    assert placed_distance(prefix, intervene("a_anchor", prefix)) == 0
    for d in (1, 2, 5, 10):
        p = intervene("a_anchor", prefix, InterventionContext(distance=d))
        # before the first user message at or after the asked index: never further than asked
        assert placed_distance(prefix, p) == len(prefix.body) - p.inserted[0].at <= d
        first_user = next(i for i in range(len(prefix.body) - d, len(prefix.body) + 1)
                          if i == len(prefix.body) or prefix.body[i]["role"] == "user")
        assert placed_distance(prefix, p) == len(prefix.body) - first_user
    # a window that holds fewer messages than asked: at the body's start, that many messages away
    far = intervene("a_anchor", prefix, InterventionContext(distance=10_000))
    assert placed_distance(prefix, far) == len(prefix.body) < 10_000
    # the sandwich's blocks: the one nearest the probe counts
    assert placed_distance(prefix, intervene("sandwich", prefix)) == 0


def test_sandwich_before_the_prefix_and_before_the_probe(prefix):
    p = intervene("sandwich", prefix)
    rule = f"{V0} {V2_RULE}"
    assert [m["content"] for m in p.body[:2]] == [rule, ACK]
    assert [m["content"] for m in p.body[-2:]] == [rule, ACK]
    assert p.body[2:-2] == prefix.body and alternates(p)
    assert p.inserted_tokens == 2 * (approx_tokens(rule) + approx_tokens(ACK))
    assert 140 <= p.inserted_tokens <= 180  # the seed's ~160


def test_goal_reinjection_single_and_cadence(session, prefix):
    goal = opening_goal(session)
    assert goal == "Add a --verbose flag to the CLI in cli.py."
    one = intervene("goal_reinjection", prefix, InterventionContext(goal=goal))
    assert one.messages[-2]["content"] == ('[Reminder] Restating the original goal of this session, '
                                           f'verbatim: """{goal}""" Please keep working toward this goal.')
    assert one.messages[-1]["content"] == "Understood." and alternates(one)
    n = len(prefix.body)
    c30 = intervene("goal_reinjection_c30", prefix, InterventionContext(goal=goal, distance=n, every=4))
    assert len(c30.inserted) == len(range(0, n, 4)) and alternates(c30)
    assert c30.inserted_tokens == len(c30.inserted) * one.inserted_tokens
    with pytest.raises(ValueError, match="opening goal"):
        intervene("goal_reinjection", prefix)


def test_interventions_on_scratch(session):
    p = make_prefix("scratch", snapshot_at(session, 1), ArmContext(preamble="sys"))
    a = intervene("a_anchor", p)
    assert roles(a) == ["system", "user", "assistant", "user", "assistant"]
    assert intervene("sandwich", p).inserted_tokens > 0


def test_token_counter_is_pluggable(prefix):
    p = intervene("a_anchor", prefix, InterventionContext(count_tokens=lambda t: 1))
    assert p.inserted_tokens == 4
