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

Every field is checked as :mod:`.fields` defines (the hottest inline, a value of the wrong
type through its accessor, which names it): a record holding a field of the wrong type
(``text: 5``, a list ``call_id``, a compaction ``message: 7``) is skipped whole and
listed in the parse report.
"""
from __future__ import annotations

import json
from collections import Counter

from .fields import BadRecord, dict_item, expect, json_type, opt_list, opt_str
from .jsonl import RawFile
from .model import (CODEX_CLI, COMPACTION_SUMMARY, REASONING, TEXT, TOOL_CALL, TOOL_RESULT,
                    Entry, Session, Skip)
from .timeline import assemble_session
from .user_classes import classify_user_text

INJECTED_PREFIXES = ("<environment_context>", "# AGENTS.md", "<user_instructions>",
                     "<permissions", "<INSTRUCTIONS>")
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
ITEM_TYPES = CALL_TYPES | OUTPUT_TYPES | {"message", "reasoning", "ghost_snapshot"}
TOP_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})


def _content_text(content, what: str) -> str:
    """A content's text: a string, or its blocks' texts (``[<type>]`` for one without)."""
    if content is None:
        return ""
    if type(content) is str:
        return content
    if type(content) is not list:
        expect(content, (str, list), what)  # raises
    parts = []
    for i, c in enumerate(content):
        if type(c) is not dict:
            dict_item(c, f"{what}[{i}]")  # raises
        t = c.get("type")
        if t is not None and type(t) is not str:
            opt_str(c, "type", f"{what}[{i}].type")  # raises
        if "text" in c:
            text = c["text"]
            parts.append(text if type(text) is str else opt_str(c, "text", f"{what}[{i}].text", ""))
        else:
            parts.append(f"[{t or 'item'}]")
    return "\n".join(parts)


def _output_text(output, what: str) -> str:
    if isinstance(output, dict):  # older rollouts: {"content": ..., "success": ...}
        body = output.get("content")
        return body if isinstance(body, str) else json.dumps(output, ensure_ascii=False)
    return _content_text(output, what)


def _call_args(p: dict) -> str:
    t = p.get("type")
    if t == "function_call":
        args = p.get("arguments")
        return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    if t == "custom_tool_call":
        return opt_str(p, "input", "payload.input", "")
    return json.dumps(p.get("action"), ensure_ascii=False)  # local_shell_call, web_search_call


class _Reader:
    """The state of one rollout being read; :meth:`record` takes one record at a time.

    Each record's fields are read and checked before anything changes, so a record with
    a field of the wrong type leaves nothing behind (it raises :class:`BadRecord`).
    """

    def __init__(self):
        self.entries: list[Entry] = []
        self.compactions: list[tuple] = []
        self.event_compactions: list[tuple[int, int, str | None]] = []
        self.types: Counter = Counter()
        self.tool_names: dict[str, str] = {}
        self.event_classes: Counter = Counter()
        self.item_classes: Counter = Counter()
        self.n_assistant = self.n_calls = self.n_compacted = self.n_event_compacted = 0
        self.session_id: str | None = None
        self.version: str | None = None

    def record(self, no: int, t, p: dict, ts: str | None) -> None:
        pt = p.get("type")
        if pt is not None and type(pt) is not str:
            opt_str(p, "type", "payload.type")  # raises
        if t == "session_meta":
            sid = opt_str(p, "id", "payload.id")
            version = opt_str(p, "cli_version", "payload.cli_version")
            self.session_id = self.session_id or sid
            self.version = self.version or version
        elif t == "event_msg":
            if pt == "user_message":
                self.event_classes[classify_user_text(opt_str(p, "message", "payload.message", ""))] += 1
            elif pt == "context_compacted":
                self.n_event_compacted += 1
                self.event_compactions.append((len(self.entries), no, ts))
        elif t == "compacted":
            text = opt_str(p, "message", "payload.message", "")
            history = opt_list(p, "replacement_history", "payload.replacement_history")
            if not text and history:
                items = [dict_item(h, f"payload.replacement_history[{i}]") for i, h in enumerate(history)]
                text = "\n\n".join(_content_text(h.get("content"), f"payload.replacement_history[{i}].content")
                                    for i, h in enumerate(items) if h.get("type") == "message")
            self.n_compacted += 1
            self.compactions.append((len(self.entries), no, None, None))
            self.entries.append(Entry("user", COMPACTION_SUMMARY, text, no, ts))
        elif t == "response_item":
            self._item(no, pt, p, ts)
        self.types[f"{t}/{pt}" if pt else t] += 1

    def _item(self, no: int, pt: str | None, p: dict, ts: str | None) -> None:
        if pt == "message":
            role = p.get("role")
            if role is not None and type(role) is not str:
                opt_str(p, "role", "payload.role")  # raises
            text = _content_text(p.get("content"), "payload.content")
            if role == "assistant":
                self.n_assistant += 1
                self.entries.append(Entry("assistant", TEXT, text, no, ts, message_id=f"line{no}"))
            elif role == "user":
                injected = text.lstrip().startswith(INJECTED_PREFIXES)
                cls = None if injected else classify_user_text(text)
                if cls:
                    self.item_classes[cls] += 1
                self.entries.append(Entry("user", TEXT, text, no, ts, meta=injected, user_class=cls))
            elif role in ("developer", "system"):
                self.entries.append(Entry("system", TEXT, text, no, ts, meta=True))
            else:
                raise BadRecord(f"message with unknown role {role!r}")
        elif pt in CALL_TYPES:
            cid = opt_str(p, "call_id", "payload.call_id") or opt_str(p, "id", "payload.id") or f"line{no}"
            name = opt_str(p, "name", "payload.name") or ("shell" if pt == "local_shell_call" else
                                                           "web_search" if pt == "web_search_call" else "tool")
            args = _call_args(p)
            self.n_calls += 1
            self.tool_names[cid] = name
            self.entries.append(Entry("assistant", TOOL_CALL, args, no, ts, name, cid, f"line{no}"))
        elif pt in OUTPUT_TYPES:
            cid = opt_str(p, "call_id", "payload.call_id")
            text = _output_text(p.get("output"), "payload.output")
            self.entries.append(Entry("user", TOOL_RESULT, text, no, ts, self.tool_names.get(cid), cid))
        elif pt == "reasoning":
            summary = p.get("summary")
            text = _content_text(summary, "payload.summary") if isinstance(summary, list) else ""
            self.entries.append(Entry("assistant", REASONING, text, no, ts))
        elif pt is None:
            raise BadRecord("no payload type")


def parse_codex_cli(raw: RawFile) -> Session:
    path = raw.path
    skipped: list[Skip] = list(raw.skipped)
    stamps: list[str] = []
    rd = _Reader()
    for no, r in raw.records:
        t = r.get("type")
        p = r.get("payload")
        try:
            if t is not None and not isinstance(t, str):
                raise BadRecord(f"record whose 'type' is {json_type(t)}, not a string")
            if p is None and t in ITEM_TYPES:  # legacy: the record is the item itself
                t, p = "response_item", r
            ts = r.get("timestamp")
            if ts is not None and type(ts) is not str:
                opt_str(r, "timestamp")  # raises
            if type(p) is not dict:
                if t in TOP_TYPES:
                    raise BadRecord("no payload object" if p is None else
                                    f"payload is {json_type(p)}, expected an object")
                if "id" in r and "instructions" in r:  # legacy header line
                    rd.session_id = rd.session_id or opt_str(r, "id")
                    rd.types["legacy_header"] += 1
                    continue
                raise BadRecord(f"record of unknown type {t!r:.60} without a payload")
            rd.record(no, t, p, ts)
        except BadRecord as bad:
            skipped.append(Skip(no, f"{t} record: {bad}" if isinstance(t, str) and t in TOP_TYPES else str(bad)))
            continue
        if ts is not None:
            stamps.append(ts)
    entries, compactions = rd.entries, rd.compactions
    classes = rd.event_classes if rd.event_classes else rd.item_classes
    if not rd.n_compacted and rd.event_compactions:
        entries, compactions = _insert_event_compactions(entries, rd.event_compactions)
    return assemble_session(path=path, fmt=CODEX_CLI, session_id=rd.session_id or path.stem, entries=entries,
                            compactions=compactions, n_user_msgs=sum(classes.values()),
                            n_assistant_msgs=rd.n_assistant, n_tool_calls=rd.n_calls,
                            n_compactions=rd.n_compacted or rd.n_event_compacted, user_classes=classes,
                            n_lines=raw.n_lines, record_types=rd.types,
                            skipped=sorted(skipped, key=lambda s: s.line), glued_lines=raw.glued_lines,
                            first_timestamp=min(stamps) if stamps else None,
                            last_timestamp=max(stamps) if stamps else None, version=rd.version)


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
    if not isinstance(t, str):
        return t is None and "instructions" in record and "id" in record
    if t in TOP_TYPES and isinstance(record.get("payload"), dict):
        return True
    return t in ITEM_TYPES and "payload" not in record and "message" not in record
