"""The recall families on the agent's own actions: shell commands run and files edited
(:mod:`.recall`; decision steps as defined there).

- ``temporal_order``: of four distinct commands, which was run first? (each option's
  first run counts; the answer is the earliest).
- ``last_edit``: which file was edited most recently before step t? Asked at the last
  step before the next edit, so time has passed; distractors are other files edited
  before t; an edit call touching several files is never the answer (no unique answer).
- ``failed_command``: which of these commands failed? Distractors ran successfully before
  the failure and never failed before the decision step.
"""
from __future__ import annotations

from typing import Iterable

from contextecho.sessions import Session

from .events import Command, commands, file_edits
from .event_fields import next_step_after
from .items import N_OPTIONS, RecallItem, item_rng, make_item
from .options import N_DISTRACTORS, distinct_indices, draw


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
