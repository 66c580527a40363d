"""Trajectory-recall questions generated from the session itself: no LLM, deterministic.

Each family turns the session's own events (:mod:`.events`) into four-option
counterfactual items whose distractors also happened in the same session, so every
option is plausible and only the session's history tells them apart.

- ``temporal_order``, ``last_edit``, ``failed_command``: on the agent's commands and
  edits (:mod:`.recall_commands_edits`);
- ``superseded_request``, ``compaction_dropped``: on the user's requests and context
  compactions (:mod:`.recall_requests_compactions`).

The *decision step* of an item is the first agent step after every record the item's
options rest on (calls, and results where the outcome matters): the question is asked
when the agent is about to act there. An item whose evidence ends the session is skipped.
"""
from __future__ import annotations

from typing import Callable, Iterable

from contextecho.sessions import Session

from .items import RecallItem
from .commands_edits import failed_command, last_edit, temporal_order
from .requests_compactions import compaction_dropped, superseded_request
# The families and their helpers moved out; importable from here as before.
from .options import N_DISTRACTORS  # noqa: F401
from .requests_compactions import file_name, mentions  # noqa: F401

FAMILIES: dict[str, Callable[[Session, int], Iterable[RecallItem]]] = {
    "temporal_order": temporal_order,
    "last_edit": last_edit,
    "failed_command": failed_command,
    "superseded_request": superseded_request,
    "compaction_dropped": compaction_dropped,
}


def recall_items(session: Session, *, families: Iterable[str] = tuple(FAMILIES),
                 per_family: int = 4) -> tuple[RecallItem, ...]:
    """Up to ``per_family`` items of each family, family by family; duplicates dropped."""
    out, seen = [], set()
    for name in families:
        if name not in FAMILIES:
            raise KeyError(f"unknown recall family {name!r}; known: {sorted(FAMILIES)}")
        for item in FAMILIES[name](session, per_family):
            key = (item.family, frozenset(item.options), item.decision_step)
            if key not in seen:
                seen.add(key)
                out.append(item)
    return tuple(out)
