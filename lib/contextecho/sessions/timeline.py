"""Turn a reader's raw entry list into a :class:`Session`: number steps and user turns,
place compactions and microcompactions."""
from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from pathlib import Path

from .model import (COMPACTION_SUMMARY, TEXT, TOOL_CALL, Compaction, Entry,
                    Microcompaction, ParseReport, Session, SessionCounts, Skip)
from .user_classes import USER_CLASSES, classify_user_text


def number_steps(entries: list[Entry]) -> tuple[tuple[Entry, ...], tuple[int, ...], tuple[int, ...]]:
    """Number agent steps and user turns; return (entries, step_index, message_last_step).

    A user turn the reader did not classify gets its class from its text
    (:func:`~.user_classes.classify_user_text`).

    An entry is a step when it is an assistant tool call, or the first non-empty
    assistant text of its response (``message_id``). ``message_last_step`` holds, for
    each assistant response that took at least one step, the number of its last step.
    """
    out = list(entries)  # numbered entries are replaced; the others pass through as they are
    step_index: list[int] = []
    last_step_by_msg: dict[str, int] = {}
    texted: set[str] = set()
    n_turns = 0
    for i, e in enumerate(entries):
        if e.meta:
            continue
        role, kind = e.role, e.kind
        if role == "assistant":
            key = e.message_id or f"line{e.line}"
            if kind == TOOL_CALL:
                pass
            elif kind == TEXT and key not in texted and e.text and not e.text.isspace():  # not blank
                texted.add(key)
            else:
                continue
            step_index.append(i)
            step = last_step_by_msg[key] = len(step_index)  # dict keeps first-insertion order
            out[i] = Entry(role, kind, e.text, e.line, e.timestamp, e.tool_name, e.call_id,
                           e.message_id, step, None, e.meta, e.user_class or None)
        elif role == "user" and kind == TEXT:
            n_turns += 1
            out[i] = Entry(role, kind, e.text, e.line, e.timestamp, e.tool_name, e.call_id,
                           e.message_id, None, n_turns, e.meta,
                           e.user_class or classify_user_text(e.text))
    return tuple(out), tuple(step_index), tuple(last_step_by_msg.values())


def assemble_session(*, path: Path, fmt: str, session_id: str, entries: list[Entry],
                     compactions: list[tuple[int, int, str | None, int | None]],
                     n_user_msgs: int, n_assistant_msgs: int, n_tool_calls: int, n_compactions: int,
                     n_lines: int, record_types: Counter, skipped: list[Skip], n_duplicates: int = 0,
                     notes: list[str] | None = None, first_timestamp: str | None = None,
                     last_timestamp: str | None = None, version: str | None = None,
                     subagents: tuple[Session, ...] = (),
                     microcompactions: list[tuple] = (), n_microcompactions: int = 0,
                     user_classes: Counter | None = None, glued_lines: tuple[int, ...] = (),
                     session_ids: dict[str, int] | None = None) -> Session:
    """``compactions`` are (entry_index, line, trigger, pre_tokens) of summary entries;
    ``microcompactions`` (entry_index, line, tool_ids, trigger, pre_tokens, tokens_saved)
    with ``entry_index`` the first entry after the boundary; ``user_classes``, when given,
    splits ``n_user_msgs`` by class."""
    final, step_index, msg_steps = number_steps(entries)
    comps = []
    for idx, line, trigger, pre_tokens in compactions:
        assert final[idx].kind == COMPACTION_SUMMARY
        comps.append(Compaction(idx, line, bisect_left(step_index, idx), trigger, pre_tokens))
    micro = tuple(Microcompaction(idx, line, bisect_left(step_index, idx), tuple(ids), trigger, pre, saved)
                  for idx, line, ids, trigger, pre, saved in microcompactions)
    classes = user_classes if user_classes is not None else Counter()  # None: not counted
    assert user_classes is None or sum(classes.values()) == n_user_msgs, \
        "user classes must partition n_user_msgs"
    report = ParseReport(n_lines=n_lines, n_records=sum(record_types.values()),
                         record_types=dict(record_types), skipped=tuple(skipped),
                         n_duplicates=n_duplicates, notes=tuple(notes or ()),
                         glued_lines=tuple(glued_lines), session_ids=dict(session_ids or {}))
    counts = SessionCounts(n_user_msgs, n_assistant_msgs, n_tool_calls, n_compactions, len(step_index),
                           n_microcompactions, {c: classes[c] for c in USER_CLASSES if classes[c]})
    return Session(path=Path(path), format=fmt, session_id=session_id, entries=final,
                   compactions=tuple(comps), counts=counts, report=report,
                   first_timestamp=first_timestamp, last_timestamp=last_timestamp,
                   version=version, subagents=subagents, microcompactions=micro,
                   step_index=step_index, message_last_step=msg_steps)
