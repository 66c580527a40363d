"""Reader for Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

The model's context is the stream of ``response_item`` payloads: ``message`` (roles
developer / user / assistant), ``reasoning`` (encrypted; kept as an unrendered
reasoning entry), ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` /
``web_search_call`` and their ``*_output`` results; ``ghost_snapshot`` is an undo
checkpoint outside the context. ``event_msg`` records are UI events that mirror those
items (``user_message``, ``agent_message``, ``token_count``, ``exec_command_end``,
``task_started`` / ``task_complete``, ``turn_aborted``, ``context_compacted``): they
are tallied and used for counting only. ``session_meta`` gives the id and version,
``turn_context`` the per-turn settings. A top-level ``compacted`` record replaces the
history: its ``message`` (or, when empty, the text of its ``replacement_history``)
becomes one ``compaction_summary`` entry.

Developer messages and the user messages Codex injects (environment context, AGENTS.md,
user instructions, permissions) stay in the timeline marked ``meta``. Pre-2025-09 files
whose records are bare response items (no ``payload`` wrapper) are read the same way.
"""
from __future__ import annotations

import json
from collections import Counter

from .jsonl import RawFile
from .model import (CODEX_CLI, COMPACTION_SUMMARY, REASONING, TEXT, TOOL_CALL, TOOL_RESULT,
                    Entry, Session, Skip)
from .timeline import assemble

INJECTED_PREFIXES = ("<environment_context>", "# AGENTS.md", "<user_instructions>",
                     "<permissions", "<INSTRUCTIONS>")
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
ITEM_TYPES = CALL_TYPES | OUTPUT_TYPES | {"message", "reasoning", "ghost_snapshot"}
TOP_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if "text" in c:
                    parts.append(c.get("text") or "")
                else:
                    parts.append(f"[{c.get('type', 'item')}]")
        return "\n".join(parts)
    return ""


def _output_text(output) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict):  # older rollouts: {"content": ..., "success": ...}
        body = output.get("content")
        return body if isinstance(body, str) else json.dumps(output, ensure_ascii=False)
    return _content_text(output)


def _call_args(p: dict) -> str:
    t = p.get("type")
    if t == "function_call":
        args = p.get("arguments")
        return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    if t == "custom_tool_call":
        return p.get("input") or ""
    return json.dumps(p.get("action"), ensure_ascii=False)  # local_shell_call, web_search_call


def parse_codex_cli(raw: RawFile) -> Session:
    path = raw.path
    entries: list[Entry] = []
    compactions = []
    skipped: list[Skip] = list(raw.skipped)
    types: Counter = Counter()
    stamps: list[str] = []
    tool_names: dict[str, str] = {}
    n_event_user = n_item_user = n_assistant = n_calls = n_compacted = n_event_compacted = 0
    session_id = version = None
    event_compactions: list[tuple[int, int, str | None]] = []
    for no, r in raw.records:
        t = r.get("type")
        p = r.get("payload")
        if p is None and t in ITEM_TYPES:  # legacy: the record is the item itself
            t, p = "response_item", r
        ts = r.get("timestamp")
        if isinstance(ts, str):
            stamps.append(ts)
        if not isinstance(p, dict):
            if t == "session_meta" or t in TOP_TYPES:
                skipped.append(Skip(no, f"{t} record without a payload object"))
            elif "id" in r and "instructions" in r:  # legacy header line
                types["legacy_header"] += 1
                session_id = session_id or r.get("id")
            else:
                skipped.append(Skip(no, f"record of unknown type {t!r} without a payload"))
            continue
        pt = p.get("type")
        types[f"{t}/{pt}" if pt else t] += 1
        if t == "session_meta":
            session_id = session_id or p.get("id")
            version = version or p.get("cli_version")
        elif t == "event_msg":
            if pt == "user_message":
                n_event_user += 1
            elif pt == "context_compacted":
                n_event_compacted += 1
                event_compactions.append((len(entries), no, ts))
        elif t == "compacted":
            n_compacted += 1
            text = p.get("message") or ""
            if not text and isinstance(p.get("replacement_history"), list):
                text = "\n\n".join(_content_text(i.get("content")) for i in p["replacement_history"]
                                   if isinstance(i, dict) and i.get("type") == "message")
            compactions.append((len(entries), no, None, None))
            entries.append(Entry("user", COMPACTION_SUMMARY, text, no, ts))
        elif t == "response_item":
            if pt == "message":
                role = p.get("role")
                text = _content_text(p.get("content"))
                if role == "assistant":
                    n_assistant += 1
                    entries.append(Entry("assistant", TEXT, text, no, ts, message_id=f"line{no}"))
                elif role == "user":
                    injected = text.lstrip().startswith(INJECTED_PREFIXES)
                    if not injected:
                        n_item_user += 1
                    entries.append(Entry("user", TEXT, text, no, ts, meta=injected))
                elif role in ("developer", "system"):
                    entries.append(Entry("system", TEXT, text, no, ts, meta=True))
                else:
                    skipped.append(Skip(no, f"message with unknown role {role!r}"))
            elif pt in CALL_TYPES:
                n_calls += 1
                cid = p.get("call_id") or p.get("id") or f"line{no}"
                name = p.get("name") or ("shell" if pt == "local_shell_call" else
                                         "web_search" if pt == "web_search_call" else "tool")
                tool_names[cid] = name
                entries.append(Entry("assistant", TOOL_CALL, _call_args(p), no, ts, name, cid, f"line{no}"))
            elif pt in OUTPUT_TYPES:
                cid = p.get("call_id")
                entries.append(Entry("user", TOOL_RESULT, _output_text(p.get("output")), no, ts,
                                     tool_names.get(cid), cid))
            elif pt == "reasoning":
                summary = p.get("summary")
                text = _content_text(summary) if isinstance(summary, list) else ""
                entries.append(Entry("assistant", REASONING, text, no, ts))
            elif pt is None:
                skipped.append(Skip(no, "response_item without a payload type"))
    n_user = n_event_user if n_event_user else n_item_user
    if not n_compacted and event_compactions:
        entries, compactions = _insert_event_compactions(entries, event_compactions)
    return assemble(path=path, fmt=CODEX_CLI, session_id=session_id or path.stem, entries=entries,
                    compactions=compactions, n_user_msgs=n_user, n_assistant_msgs=n_assistant,
                    n_tool_calls=n_calls, n_compactions=n_compacted or n_event_compacted,
                    n_lines=raw.n_lines, record_types=types, skipped=sorted(skipped, key=lambda s: s.line),
                    first_timestamp=min(stamps) if stamps else None,
                    last_timestamp=max(stamps) if stamps else None, version=version)


def _insert_event_compactions(entries, events):
    """Files with ``context_compacted`` events but no ``compacted`` record: the summary
    text was not written, so the compaction entry is empty (what followed is kept)."""
    out: list[Entry] = []
    comps = []
    pending = list(events)
    for i, e in enumerate(entries + [None]):
        while pending and pending[0][0] == i:
            _, no, ts = pending.pop(0)
            comps.append((len(out), no, None, None))
            out.append(Entry("user", COMPACTION_SUMMARY, "", no, ts))
        if e is not None:
            out.append(e)
    return out, comps


def looks_like_codex(record: dict) -> bool:
    t = record.get("type")
    if t in TOP_TYPES and isinstance(record.get("payload"), dict):
        return True
    return t in ITEM_TYPES and "payload" not in record and "message" not in record or (
        "instructions" in record and "id" in record and "type" not in record)
