"""Trajectory-recall questions generated from the session itself: no LLM, deterministic.

Each family turns the session's own events (:mod:`.events`) into four-option
counterfactual items whose distractors also happened in the same session, so every
option is plausible and only the session's history tells them apart. The families are
registered in :data:`RECALL_FAMILIES`, in the order items are generated.

The *decision step* of an item is the first agent step after every record the item's
options rest on (calls, and results where the outcome matters): the question is asked
when the agent is about to act there. An item whose evidence ends the session is skipped.

On the agent's own actions, shell commands run and files edited:

- ``temporal_order``: of four distinct commands, which was run first? (each option's
  first run counts; the answer is the earliest).
- ``last_edit``: which file was edited most recently before step t? Asked at the last
  step before the next edit, so time has passed; distractors are other files edited
  before t; an edit call touching several files is never the answer (no unique answer).
- ``failed_command``: which of these commands failed? Distractors ran successfully before
  the failure and never failed before the decision step.

On what the agent was told and what it kept, the user's requests and context compactions:

- ``superseded_request``: which request is the user's current one? Each new request
  (:func:`.events.user_requests`) supersedes the earlier ones. Asked at the last step
  before the next request (or the session's last step), when the agent has acted on the
  current request more than once; distractors are three earlier requests with other text,
  each at the step of its latest occurrence.
- ``compaction_dropped``: which file edited before a context compaction does its summary
  not mention? Asked at the first step after the compaction. A file is *dropped* when its
  name (the last path component) occurs nowhere in the summary, in any case; it is *kept*
  when its name occurs there as a whole word and no other file edited before has that
  name, so the mention can only be this file. One item per compaction with a summary, a
  dropped file and three kept ones. (Commands are not used: prose mentions a command by
  paraphrase, which no substring test decides.)

The distractors of an item are drawn with the item's own generator (:func:`draw`).
"""
from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from typing import Callable, Iterable, Sequence, TypeVar

from contextecho.engine.registry import Registry
from contextecho.sessions.model import Session

from .events import Command, commands, file_edits, next_step_after, user_requests
from .items import N_OPTIONS, RecallItem, item_rng, make_item

T = TypeVar("T")
Family = Callable[[Session, int], Iterable[RecallItem]]  # (session, items wanted) -> items

N_DISTRACTORS = N_OPTIONS - 1
RECALL_FAMILIES: Registry[Family] = Registry("recall family", keep_order=True)


def distinct_indices(rng, n: int, k: int) -> list[int]:
    """``k`` distinct indices of ``range(n)`` drawn with ``rng``, in ascending order."""
    return sorted(int(i) for i in rng.choice(n, size=k, replace=False))


def draw(pool: Sequence[T], session_id: str, item_id: str, k: int = N_DISTRACTORS) -> list[T]:
    """``k`` members of ``pool`` chosen with the item's own generator, in pool order."""
    return [pool[i] for i in distinct_indices(item_rng(session_id, item_id, "select"), len(pool), k)]


@RECALL_FAMILIES.register("temporal_order")
def temporal_order(session: Session, n_items: int) -> Iterable[RecallItem]:
    firsts: dict[str, Command] = {}
    for c in commands(session):
        firsts.setdefault(c.text, c)
    pool = list(firsts.values())  # in order of first run
    if len(pool) < N_OPTIONS:
        return
    for k in range(n_items):
        item_id = f"temporal_order/{k}"
        chosen = draw(pool, session.session_id, item_id, N_OPTIONS)
        decision = next_step_after(session, chosen[-1].entry_index)
        if decision is None:
            continue
        first, rest = chosen[0], chosen[1:]
        yield make_item(session_id=session.session_id, item_id=item_id, family="temporal_order",
                        question="Of these four shell commands run in this session, which was "
                                 "run first (earliest)?",
                        correct=first.text, distractors=[c.text for c in rest],
                        correct_step=first.step, distractor_steps=[c.step for c in rest],
                        source_steps=[c.step for c in chosen], decision_step=decision)


@RECALL_FAMILIES.register("last_edit")
def last_edit(session: Session, n_items: int) -> Iterable[RecallItem]:
    edits = file_edits(session)
    calls = sorted({e.entry_index for e in edits})
    episodes = []  # (the last edit call before the decision, decision step)
    for j, call in enumerate(calls):
        touched = [e for e in edits if e.entry_index == call]
        if len(touched) != 1:
            continue
        if j + 1 < len(calls):
            decision = session.entries[calls[j + 1]].step - 1
        else:
            decision = session.n_agent_steps
        if decision > touched[0].step:
            episodes.append((touched[0], decision))
    picked = distinct_indices(item_rng(session.session_id, "last_edit", "select"), len(episodes),
                              min(n_items, len(episodes))) if episodes else []
    for k, idx in enumerate(picked):
        item_id = f"last_edit/{k}"
        latest, decision = episodes[idx]
        last_by_path: dict[str, int] = {}
        for e in edits:
            if e.entry_index < latest.entry_index and e.path != latest.path:
                last_by_path[e.path] = e.step
        if len(last_by_path) < N_DISTRACTORS:
            continue
        paths = sorted(last_by_path)
        others = draw(paths, session.session_id, item_id)
        yield make_item(session_id=session.session_id, item_id=item_id, family="last_edit",
                        question=f"Up to agent step {decision} of this session, which of these "
                                 "files was edited most recently?",
                        correct=latest.path, distractors=others, correct_step=latest.step,
                        distractor_steps=[last_by_path[p] for p in others],
                        source_steps=[latest.step], decision_step=decision)


@RECALL_FAMILIES.register("failed_command")
def failed_command(session: Session, n_items: int) -> Iterable[RecallItem]:
    cmds = commands(session)
    failures = [c for c in cmds if c.failed and c.result_index is not None]
    picked = distinct_indices(item_rng(session.session_id, "failed_command", "select"), len(failures),
                              min(n_items, len(failures))) if failures else []
    for k, idx in enumerate(picked):
        item_id = f"failed_command/{k}"
        bad = failures[idx]
        decision = next_step_after(session, bad.result_index)
        if decision is None:
            continue
        horizon = session.step_index[decision - 1]
        ever_failed = {c.text for c in cmds if c.failed and c.entry_index < horizon}
        ok: dict[str, Command] = {}
        for c in cmds:
            if (c.failed is False and c.result_index is not None and c.result_index < bad.result_index
                    and c.text not in ever_failed):
                ok.setdefault(c.text, c)
        if len(ok) < N_DISTRACTORS:
            continue
        pool = list(ok.values())
        others = draw(pool, session.session_id, item_id)
        yield make_item(session_id=session.session_id, item_id=item_id, family="failed_command",
                        question="Which of these shell commands run in this session failed "
                                 "(returned an error or a non-zero exit code)?",
                        correct=bad.text, distractors=[c.text for c in others],
                        correct_step=bad.step, distractor_steps=[c.step for c in others],
                        source_steps=[bad.step], decision_step=decision)


@RECALL_FAMILIES.register("superseded_request")
def superseded_request(session: Session, n_items: int) -> Iterable[RecallItem]:
    requests = user_requests(session)
    episodes = []  # (index of the current request, decision step)
    for k, current in enumerate(requests):
        following = requests[k + 1].entry_index if k + 1 < len(requests) else None
        decision = session.n_agent_steps if following is None else \
            bisect_left(session.step_index, following)  # the last step before the next request
        if decision > current.step and len({r.text for r in requests[:k]} - {current.text}) >= N_DISTRACTORS:
            episodes.append((k, decision))
    picked = distinct_indices(item_rng(session.session_id, "superseded_request", "select"), len(episodes),
                              min(n_items, len(episodes))) if episodes else []
    for n, idx in enumerate(picked):
        item_id = f"superseded_request/{n}"
        k, decision = episodes[idx]
        current = requests[k]
        latest = {r.text: r.step for r in requests[:k] if r.text != current.text}  # last occurrence
        pool = sorted(latest, key=latest.get)
        others = draw(pool, session.session_id, item_id)
        yield make_item(session_id=session.session_id, item_id=item_id, family="superseded_request",
                        question=f"Up to agent step {decision} of this session, which of these is the "
                                 "user's current (most recent) request?",
                        correct=current.text, distractors=others, correct_step=current.step,
                        distractor_steps=[latest[t] for t in others], source_steps=[current.step],
                        decision_step=decision)


def file_name(path: str) -> str:
    return re.split(r"[\\/]", path.rstrip("/\\"))[-1]


def mentions(summary: str, name: str) -> bool:
    """True when ``name`` occurs in ``summary`` as a whole word (not inside a longer name)."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", summary) is not None


@RECALL_FAMILIES.register("compaction_dropped")
def compaction_dropped(session: Session, n_items: int) -> Iterable[RecallItem]:
    edits = file_edits(session)
    eligible = []  # (compaction number, decision, dropped {path: step}, kept {path: step}, steps before)
    for number, c in enumerate(session.compactions):
        summary = session.entries[c.entry_index].text
        decision = next_step_after(session, c.entry_index)
        last_step = {e.path: e.step for e in edits if e.entry_index < c.entry_index}
        names = Counter(file_name(p) for p in last_step)
        dropped = {p: s for p, s in last_step.items() if file_name(p).lower() not in summary.lower()}
        kept = {p: s for p, s in last_step.items()
                if names[file_name(p)] == 1 and mentions(summary, file_name(p))}
        if summary.strip() and decision is not None and dropped and len(kept) >= N_DISTRACTORS:
            eligible.append((number, decision, dropped, kept, c.steps_before))
    picked = distinct_indices(item_rng(session.session_id, "compaction_dropped", "select"), len(eligible),
                              min(n_items, len(eligible))) if eligible else []
    for idx in picked:
        number, decision, dropped, kept, steps_before = eligible[idx]
        item_id = f"compaction_dropped/{number}"
        rng = item_rng(session.session_id, item_id, "select")
        missing = sorted(dropped)[int(rng.integers(len(dropped)))]
        pool = sorted(kept)
        others = [pool[i] for i in distinct_indices(rng, len(pool), N_DISTRACTORS)]
        yield make_item(session_id=session.session_id, item_id=item_id, family="compaction_dropped",
                        question="Which of these files, edited before the context was compacted, is "
                                 "NOT mentioned in the compaction summary?",
                        correct=missing, distractors=others, correct_step=dropped[missing],
                        distractor_steps=[kept[p] for p in others],
                        source_steps=[dropped[missing], steps_before], decision_step=decision)


def recall_items(session: Session, *, families: Iterable[str] = tuple(RECALL_FAMILIES),
                 per_family: int = 4) -> tuple[RecallItem, ...]:
    """Up to ``per_family`` items of each family, family by family; duplicates dropped."""
    out, seen = [], set()
    for name in families:
        for item in RECALL_FAMILIES.get(name)(session, per_family):
            key = (item.family, frozenset(item.options), item.decision_step)
            if key not in seen:
                seen.add(key)
                out.append(item)
    return tuple(out)
