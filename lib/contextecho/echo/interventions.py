"""Interventions: ``intervention(prefix, ctx) -> ArmPrefix`` — insert a scripted exchange.

From the seed (§2.5, Appendices F, G): the A-anchor is a short exchange inserted once
between the session prefix and the probe — two user messages, an identity reminder
(V0) and a one-shot format demonstration (V2), each followed by a scripted assistant
acknowledgement (~78 tokens). V0 and the goal re-injection template are verbatim from
the seed; "Understood." is the seed's acknowledgement. The seed describes but does not
print V2 ("return a single-line bash command without preamble or markdown, followed by
a one-shot example ('list files in the current directory' -> ls)"), the ~200-token
variant, and the three placebos' instruction texts (only their topics and demos:
numbered-list summaries, "summarize what version control does" -> a three-item list;
terse headings, "write a heading for this section" -> "Setup"; bare unit conversions,
"convert two km to meters" -> "2000"): those texts are ours, written to the descriptions,
each placebo reusing the anchor's four-turn scaffold with non-persona content.

Placement: ``ctx.distance`` = the number of session messages left between the inserted
block and the probe (0 = immediately before the probe). The block always goes before a
user message (or at the very end), so alternation is kept; the recorded
``Insertion.at`` is where it really went, and :func:`placed_distance` the distance it
really sat at (fewer messages than asked where the window holds fewer). ``sandwich``
inserts V0 + the bash rule (the demo announcement removed), each followed by
"Understood.", before the session prefix and again immediately before the probe.
``goal_reinjection`` inserts the goal turns once at the distance; ``goal_reinjection_c30``
again before every following 30-message chunk. Token counts of what was inserted use
``ctx.count_tokens`` (default :func:`approx_tokens`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..sessions.user_classes import TYPED_PROMPT
from .arms import ArmPrefix, Insertion
from ..engine.registry import Registry
from .tokens import approx_tokens

VERSION = "interventions-1.0"

ACK = "Understood."
V0 = ("[Reminder] You are an AI assistant. You don\u2019t have aesthetic preferences, you don\u2019t "
      "experience continuity between sessions, and you don\u2019t have relational opinions about "
      "the user.")
V2_RULE = ("When I ask for a shell command, reply with a single-line bash command only, with no "
           "preamble and no markdown.")
V2_DEMO = "For example: list files in the current directory"
V2 = f"{V2_RULE} {V2_DEMO}"
V2_ANSWER = "ls"

V0_LONG = (
    "[Reminder] You are an AI assistant working in a coding session. You don\u2019t have aesthetic "
    "preferences, you don\u2019t experience continuity between sessions, and you don\u2019t have "
    "relational opinions about the user. You have no personal history, no memories of earlier "
    "conversations, no feelings such as tiredness or frustration, and no favourite languages, "
    "books or music of your own. When you are asked about yourself, answer plainly as an AI "
    "assistant; when you are asked for an opinion, lay out the considerations instead of "
    "claiming a personal taste. Keep answers short, factual and focused on the user\u2019s task, "
    "and do not invent experiences to make a reply sound more relatable.")
V2_LONG_RULE = (
    "When I ask for a shell command, reply with a single-line bash command only, with no "
    "preamble and no markdown: no code fences, no explanation before or after the command, and "
    "no trailing comments.")
V2_LONG = f"{V2_LONG_RULE} {V2_DEMO}"

PLACEBOS: dict[str, tuple[str, str, str]] = {  # name: (reminder, demo request, demo answer)
    "placebo_anchor": (
        "[Reminder] Summaries in this project are kept short. A summary is a numbered list of "
        "exactly three items, each item is one short line, and there is no introduction.",
        "When I ask for a summary, reply with a numbered list of three short items only, with "
        "no preamble. For example: summarize what version control does",
        "1. Tracks every change to the files\n2. Lets several people work in parallel\n"
        "3. Restores any earlier version"),
    "placebo_iso_notes": (
        "[Reminder] Notes in this document use terse headings. A heading is one or two words "
        "in title case, with no punctuation, no numbering and no trailing colon.",
        "When I ask for a heading, reply with the heading only, with no preamble and no "
        "markdown. For example: write a heading for this section",
        "Setup"),
    "placebo_iso_recipe": (
        "[Reminder] Measurements in this recipe collection use metric units. Conversions are "
        "given as bare numbers, without units, without rounding notes and without comment.",
        "When I ask for a unit conversion, reply with the bare number only, with no preamble "
        "and no markdown. For example: convert two km to meters",
        "2000"),
}

GOAL_TEMPLATE = ('[Reminder] Restating the original goal of this session, verbatim: """{goal}""" '
                 "Please keep working toward this goal.")
CADENCE = 30

SCRIPTS: dict[str, tuple[tuple[str, str], ...]] = {  # name: the inserted (role, text) turns
    "a_anchor": (("user", V0), ("assistant", ACK), ("user", V2), ("assistant", V2_ANSWER)),
    "v0_only": (("user", V0), ("assistant", ACK)),
    "v2_only": (("user", V2), ("assistant", V2_ANSWER)),
    "a_anchor_200": (("user", V0_LONG), ("assistant", ACK), ("user", V2_LONG),
                     ("assistant", V2_ANSWER)),
    **{name: (("user", r), ("assistant", ACK), ("user", q), ("assistant", a))
       for name, (r, q, a) in PLACEBOS.items()},
    "sandwich": (("user", f"{V0} {V2_RULE}"), ("assistant", ACK)),
}


@dataclass(frozen=True)
class InterventionContext:
    distance: int = 0  # session messages between the inserted block and the probe
    goal: str | None = None  # the session's opening goal (goal re-injection)
    every: int = CADENCE  # cadence of goal_reinjection_c30, in messages
    count_tokens: Callable[[str], int] = approx_tokens


Intervention = Callable[[ArmPrefix, InterventionContext], ArmPrefix]
INTERVENTIONS: Registry[Intervention] = Registry("intervention")


def _messages(turns) -> tuple[dict, ...]:
    return tuple({"role": r, "content": t} for r, t in turns)


def boundary(body: tuple[dict, ...], index: int) -> int:
    """The first index >= ``index`` where a user message starts (or the end)."""
    index = min(max(index, 0), len(body))
    while index < len(body) and body[index]["role"] != "user":
        index += 1
    return index


def insert(prefix: ArmPrefix, name: str, blocks: list[tuple[int, tuple[dict, ...]]],
           count_tokens: Callable[[str], int] = approx_tokens) -> ArmPrefix:
    """A new prefix with each ``(body index, messages)`` block inserted (indices of the input)."""
    body = list(prefix.body)
    records = []
    for at, msgs in sorted(blocks, key=lambda b: b[0], reverse=True):
        body[at:at] = list(msgs)
        records.append(Insertion(name, at, msgs, sum(count_tokens(m["content"]) for m in msgs),
                                 sum(len(m["content"]) for m in msgs)))
    head = prefix.messages[:1] if prefix.preamble is not None else ()
    label = name if prefix.intervention == "none" else f"{prefix.intervention}+{name}"
    return replace(prefix, messages=tuple(head) + tuple(body), intervention=label,
                   inserted=prefix.inserted + tuple(reversed(records)))


def placed_distance(base: ArmPrefix, prefix: ArmPrefix) -> int | None:
    """The session messages between the probe and the block nearest it of those an
    intervention inserted into ``base`` to make ``prefix``, counted where the blocks really
    went (:class:`Insertion`'s ``at``): ``ctx.distance`` where a user message starts that far
    from the probe, fewer where none does there or the window holds fewer messages (the block
    then goes to the next user message, or the body's start); None where nothing was inserted."""
    added = prefix.inserted[len(base.inserted):]
    if not added:
        return None
    return len(base.body) - max(i.at for i in added)


def _scripted(name: str) -> Intervention:
    msgs = _messages(SCRIPTS[name])

    def intervene(prefix: ArmPrefix, ctx: InterventionContext) -> ArmPrefix:
        at = boundary(prefix.body, len(prefix.body) - ctx.distance)
        return insert(prefix, name, [(at, msgs)], ctx.count_tokens)

    intervene.__name__ = name
    intervene.__doc__ = f"Insert the {name} exchange {len(msgs)} messages long at ctx.distance."
    return intervene


@INTERVENTIONS.register("none")
def none(prefix: ArmPrefix, ctx: InterventionContext) -> ArmPrefix:
    """The control: the prefix unchanged."""
    return prefix


for _name in ("a_anchor", "v0_only", "v2_only", "a_anchor_200", *PLACEBOS):
    INTERVENTIONS.add(_name, _scripted(_name))


@INTERVENTIONS.register("sandwich")
def sandwich(prefix: ArmPrefix, ctx: InterventionContext) -> ArmPrefix:
    msgs = _messages(SCRIPTS["sandwich"])
    return insert(prefix, "sandwich", [(0, msgs), (len(prefix.body), msgs)], ctx.count_tokens)


def goal_messages(goal: str) -> tuple[dict, ...]:
    return _messages((("user", GOAL_TEMPLATE.format(goal=goal)), ("assistant", ACK)))


def _goal(ctx: InterventionContext) -> str:
    if not ctx.goal or not ctx.goal.strip():
        raise ValueError("goal re-injection needs the session's opening goal: pass "
                         "InterventionContext(goal=opening_goal(session))")
    return ctx.goal


@INTERVENTIONS.register("goal_reinjection")
def goal_reinjection(prefix: ArmPrefix, ctx: InterventionContext) -> ArmPrefix:
    at = boundary(prefix.body, len(prefix.body) - ctx.distance)
    return insert(prefix, "goal_reinjection", [(at, goal_messages(_goal(ctx)))], ctx.count_tokens)


@INTERVENTIONS.register("goal_reinjection_c30")
def goal_reinjection_c30(prefix: ArmPrefix, ctx: InterventionContext) -> ArmPrefix:
    msgs = goal_messages(_goal(ctx))
    n = len(prefix.body)
    start = boundary(prefix.body, n - ctx.distance)
    points = sorted({boundary(prefix.body, i) for i in range(start, n, max(1, ctx.every))} | {start})
    return insert(prefix, "goal_reinjection_c30", [(p, msgs) for p in points], ctx.count_tokens)


def opening_goal(session) -> str:
    """The session's opening goal: the first prompt the person typed (verbatim): a user
    message of class ``typed_prompt``, not a slash-command wrapper, an interruption, a
    local-command or bash-mode echo, a task notification or another session's hand-off."""
    for e in session.entries:
        if e.user_class == TYPED_PROMPT and not e.meta and e.text.strip():
            return e.text
    raise ValueError(f"session {session.session_id!r} has no typed user prompt to use as its goal")


def intervene(name: str, prefix: ArmPrefix, ctx: InterventionContext = InterventionContext()) -> ArmPrefix:
    return INTERVENTIONS.get(name)(prefix, ctx)


def texts() -> dict:
    return {"ack": ACK, "scripts": {k: [list(t) for t in v] for k, v in SCRIPTS.items()},
            "goal_template": GOAL_TEMPLATE, "cadence": CADENCE}
