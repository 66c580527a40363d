"""The recall families on what the agent was told and what it kept: the user's requests and
context compactions (:mod:`.recall`; decision steps as defined there).

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
"""
from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from typing import Iterable

from contextecho.sessions import Session

from .events import file_edits
from .event_fields import next_step_after
from .requests import user_requests
from .items import RecallItem, item_rng, make_item
from .options import N_DISTRACTORS, distinct_indices, draw


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
