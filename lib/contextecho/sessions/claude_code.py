"""Reader for Claude Code JSONL transcripts (``~/.claude/projects/<project>/<id>.jsonl``).

Record types handled: ``user``, ``assistant``, ``system`` (``compact_boundary`` marks a
compaction, ``microcompact_boundary`` a microcompaction; other subtypes are harness
notices outside the model's context), ``progress`` (``agent_progress`` embeds subagent
messages, which become embedded subagent transcripts), ``summary`` (a session title,
not a compaction), ``file-history-snapshot``, ``queue-operation``, ``pr-link`` (tallied
only). Unknown types are tallied too, never an error.

Counts follow MANIFEST.csv's README (all user/assistant records, sidechains included);
the timeline holds only the main agent's context:
- sidechain records (``isSidechain`` in a main transcript: old-style subagent traffic),
  API-error placeholders (``isApiErrorMessage``) and ``isVisibleInTranscriptOnly``
  records other than compaction summaries are left out of the timeline;
- ``isMeta`` user records stay in, marked ``meta`` (harness-injected text);
- a compaction is a ``compact_boundary`` (v2.x) followed by an ``isCompactSummary``
  user record, or that record alone (v1.0.x): one ``compaction_summary`` entry;
- a microcompaction (``microcompact_boundary``, v2.1.x) adds no entry: it is listed in
  ``Session.microcompactions`` with the tool-use ids whose results it dropped;
- records replayed verbatim (same tool-use id / same response block / same prompt and
  timestamp) are kept out of the timeline once and counted as duplicates.

The session id is the one that owns most user/assistant records (the later one on a
tie): a file whose first prompt was handed over from another session after ``/clear``
holds a few records of that other id. Counted user messages of another id are of class
``handoff``; the parse report lists every id with its number of records.

Every field is checked as :mod:`.fields` defines (the common case inline, a value of the
wrong type through its accessor, which names it): a record holding a field of the wrong
type is skipped whole and listed in the parse report as ``<type> record: <field> is ...``.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

from .fields import (BadRecord, content_value, dict_item, expect, json_type, opt_bool, opt_dict,
                     opt_int, opt_str, req_str, str_items)
from .jsonl import RawFile
from .model import (CLAUDE_CODE, COMPACTION_SUMMARY, REASONING, TEXT, TOOL_CALL, TOOL_RESULT,
                    Entry, Session, Skip)
from .timeline import assemble_session
from .user_classes import HANDOFF, classify_user_text

RECORD_TYPES = frozenset({"user", "assistant", "system", "progress", "summary",
                          "file-history-snapshot", "queue-operation", "pr-link"})
CONVERSATION_TYPES = ("user", "assistant")
_INPUT_JSON = json.JSONEncoder(ensure_ascii=False)  # json.dumps(v, ensure_ascii=False), one encoder


def _block_text(content, what: str) -> str:
    """Text of a tool_result's (or summary's) content: a string, or a list of blocks."""
    if content is None:
        return ""
    if type(content) is str:
        return content
    if type(content) is not list:
        expect(content, (str, list), what)  # raises
    parts = []
    for i, b in enumerate(content):
        if type(b) is not dict:
            dict_item(b, f"{what}[{i}]")  # raises
        t = b.get("type")
        if t == "text":
            text = b.get("text")
            parts.append(text if type(text) is str else opt_str(b, "text", f"{what}[{i}].text", ""))
        else:
            if t is not None and type(t) is not str:
                opt_str(b, "type", f"{what}[{i}].type")  # raises
            parts.append(f"[{t}]")
    return "\n".join(parts)


def own_session_id(records: list[tuple[int, dict]]) -> tuple[str | None, dict[str, int]]:
    """The id owning most user/assistant records (the later one on a tie), and the tally."""
    tally: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, (_, r) in enumerate(records):
        sid = r.get("sessionId")
        if type(sid) is str and r.get("type") in CONVERSATION_TYPES:
            tally[sid] = tally.get(sid, 0) + 1
            last[sid] = i
    return _owner(records, tally, last)


def _owner(records: list[tuple[int, dict]], tally: dict[str, int],
           last: dict[str, int]) -> tuple[str | None, dict[str, int]]:
    """:func:`own_session_id` from the tally of user/assistant records per id and the
    index of each id's last one; with none, the first id of any record."""
    if not tally:
        sid = next((r["sessionId"] for _, r in records if isinstance(r.get("sessionId"), str)), None)
        return sid, {}
    return max(tally, key=lambda s: (tally[s], last[s])), tally


class _Builder:
    def __init__(self, path: Path, main_thread_only: bool):
        self.path = path
        self.main_only = main_thread_only
        self.entries: list[Entry] = []
        self.compactions: list[list] = []  # [entry_index, line, trigger, pre_tokens, has_summary]
        self.microcompactions: list[tuple] = []  # (entry_index, line, tool_ids, trigger, pre, saved)
        self.seen: set = set()
        self.tool_names: dict[str, str] = {}
        self.n_dup = 0
        self.n_user = 0
        # [session id, class, index of its entry or None] of each counted user message:
        # the file's own id is known once every record is read (see hand_offs).
        self.counted: list[list] = []
        self.msg_ids: set[str] = set()
        self.tool_ids: set[str] = set()
        self.n_boundaries = 0
        self.n_micro = 0
        self.n_summaries = 0
        self.n_sidechain = 0
        self.n_api_errors = 0

    def _new(self, key) -> bool:
        if key in self.seen:
            self.n_dup += 1
            return False
        self.seen.add(key)
        return True

    # -- counting (MANIFEST rules) and timeline, one record at a time -----------------
    # Each handler reads and checks every field first, then changes the builder, so a
    # record with a bad field leaves nothing behind. A field is read with ``dict.get``
    # and its type checked in place; only a value of the wrong type goes through its
    # :mod:`.fields` accessor, which raises the message naming it (null or absent is the
    # accessor's default), so the checks run in the same order as the message says.
    def user(self, no: int, r: dict, msg: dict) -> None:
        content = msg.get("content")
        if type(content) is not str and type(content) is not list:
            if content_value(msg, "content", "message.content") is None:
                raise BadRecord("message has no content")
        summary = r.get("isCompactSummary", False)
        if type(summary) is not bool:
            summary = opt_bool(r, "isCompactSummary")
        meta = r.get("isMeta", False)
        if type(meta) is not bool:
            meta = opt_bool(r, "isMeta")
        sidechain = r.get("isSidechain", False)
        if type(sidechain) is not bool:
            sidechain = opt_bool(r, "isSidechain")
        transcript_only = r.get("isVisibleInTranscriptOnly", False)
        if type(transcript_only) is not bool:
            transcript_only = opt_bool(r, "isVisibleInTranscriptOnly")
        ts = r.get("timestamp")
        if ts is not None and type(ts) is not str:
            opt_str(r, "timestamp")
        sid = r.get("sessionId")
        if sid is not None and type(sid) is not str:
            opt_str(r, "sessionId")
        texts: list[str] = []
        results: list[tuple[str, str]] = []
        if summary:
            summary_text = _block_text(content, "message.content")
        elif type(content) is str:
            texts.append(content)
        else:
            for i, b in enumerate(content):
                if type(b) is not dict:
                    dict_item(b, f"message.content[{i}]")
                t = b.get("type")
                if t == "tool_result":
                    cid = b.get("tool_use_id")
                    if type(cid) is not str:
                        req_str(b, "tool_use_id", f"message.content[{i}].tool_use_id")
                    text = b.get("content")
                    if type(text) is not str:
                        text = _block_text(text, f"message.content[{i}].content")
                    error = b.get("is_error", False)
                    if type(error) is not bool:
                        error = opt_bool(b, "is_error", f"message.content[{i}].is_error")
                    results.append((cid, "[error] " + text if error else text))
                elif t == "text":
                    text = b.get("text")
                    texts.append(text if type(text) is str else
                                 opt_str(b, "text", f"message.content[{i}].text", ""))
                else:
                    if t is not None and type(t) is not str:
                        opt_str(b, "type", f"message.content[{i}].type")
                    texts.append(f"[{t}]")
        only_results = type(content) is list and bool(content) and len(results) == len(content)
        text = "\n".join(texts)
        cls = None
        if not (only_results or meta or summary):
            cls = classify_user_text(text)
            self.n_user += 1
            self.counted.append([sid, cls, None])
        if summary:
            self.n_summaries += 1
        if sidechain and self.main_only:
            self.n_sidechain += 1
            return
        if summary:
            self._summary(no, summary_text)
            return
        if transcript_only:
            return
        entries = self.entries
        for cid, result in results:
            if self._new(("r", cid)):
                entries.append(Entry("user", TOOL_RESULT, result, no, ts, self.tool_names.get(cid), cid))
        if texts and self._new(("u", ts, text)):
            if cls is not None:
                self.counted[-1][2] = len(entries)
            entries.append(Entry("user", TEXT, text, no, ts, meta=meta, user_class=cls))

    def hand_offs(self, own_id: str | None) -> Counter:
        """The classes of the counted user messages, those of another session id than
        ``own_id`` (None: no marking) made hand-offs, in the timeline too."""
        classes: Counter = Counter()
        for sid, cls, index in self.counted:
            if own_id and sid and sid != own_id:
                cls = HANDOFF
                if index is not None:
                    self.entries[index] = replace(self.entries[index], user_class=HANDOFF)
            classes[cls] += 1
        return classes

    def _summary(self, no: int, text: str) -> None:
        last = self.compactions[-1] if self.compactions else None
        if last is not None and not last[4]:
            # v2.x: the boundary placed an empty summary entry; fill it.
            old = self.entries[last[0]]
            self.entries[last[0]] = Entry("user", COMPACTION_SUMMARY, text, no, old.timestamp)
            last[4] = True
            return
        self.compactions.append([len(self.entries), no, None, None, True])
        self.entries.append(Entry("user", COMPACTION_SUMMARY, text, no))

    def boundary(self, no: int, r: dict) -> None:
        meta = opt_dict(r, "compactMetadata") or {}
        trigger = opt_str(meta, "trigger", "compactMetadata.trigger")
        pre = opt_int(meta, "preTokens", "compactMetadata.preTokens")
        sidechain = opt_bool(r, "isSidechain")
        ts = opt_str(r, "timestamp")
        self.n_boundaries += 1
        if sidechain and self.main_only:
            return
        self.compactions.append([len(self.entries), no, trigger, pre, False])
        self.entries.append(Entry("user", COMPACTION_SUMMARY, "", no, ts))

    def microcompaction(self, no: int, r: dict) -> None:
        meta = opt_dict(r, "microcompactMetadata")
        if meta is None:
            raise BadRecord("microcompact_boundary without microcompactMetadata")
        ids = str_items(meta, "compactedToolIds", "microcompactMetadata.compactedToolIds")
        trigger = opt_str(meta, "trigger", "microcompactMetadata.trigger")
        pre = opt_int(meta, "preTokens", "microcompactMetadata.preTokens")
        saved = opt_int(meta, "tokensSaved", "microcompactMetadata.tokensSaved")
        sidechain = opt_bool(r, "isSidechain")
        self.n_micro += 1
        if sidechain and self.main_only:
            return
        self.microcompactions.append((len(self.entries), no, ids, trigger, pre, saved))

    def assistant(self, no: int, r: dict, msg: dict) -> None:
        mid = msg.get("id")
        if type(mid) is not str or not mid:
            mid = opt_str(msg, "id", "message.id") or opt_str(r, "uuid") or f"line{no}"
        content = msg.get("content")
        if type(content) is str:
            content = [{"type": "text", "text": content}]
        elif type(content) is not list:
            if content_value(msg, "content", "message.content") is None:
                raise BadRecord("message has no content list")
        sidechain = r.get("isSidechain", False)
        if type(sidechain) is not bool:
            sidechain = opt_bool(r, "isSidechain")
        api_error = r.get("isApiErrorMessage", False)
        if type(api_error) is not bool:
            api_error = opt_bool(r, "isApiErrorMessage")
        ts = r.get("timestamp")
        if ts is not None and type(ts) is not str:
            opt_str(r, "timestamp")
        # (kind, dedup key, text, tool name, call id); for a tool call, its input instead of
        # the text, which is that input as JSON: encoded only if the call enters the timeline
        # (encoding a decoded JSON value cannot fail).
        parts = []
        for i, b in enumerate(content):
            if type(b) is not dict:
                dict_item(b, f"message.content[{i}]")
            t = b.get("type")
            if t == "tool_use":
                cid = b.get("id")
                if type(cid) is not str:
                    req_str(b, "id", f"message.content[{i}].id")
                name = b.get("name")
                if type(name) is not str:
                    name = opt_str(b, "name", f"message.content[{i}].name")
                parts.append((TOOL_CALL, ("c", cid), b.get("input"), name or "tool", cid))
            elif t == "text":
                text = b.get("text")
                if type(text) is not str:
                    text = opt_str(b, "text", f"message.content[{i}].text", "")
                parts.append((TEXT, ("t", mid, text), text, None, None))
            elif t == "thinking" or t == "redacted_thinking":
                text = b.get("thinking")
                if type(text) is not str:
                    text = opt_str(b, "thinking", f"message.content[{i}].thinking", "")
                signature = b.get("signature")
                if signature is not None and type(signature) is not str:
                    opt_str(b, "signature", f"message.content[{i}].signature")
                parts.append((REASONING, ("k", mid, text, signature), text, None, None))
            elif t is not None and type(t) is not str:
                opt_str(b, "type", f"message.content[{i}].type")
        self.msg_ids.add(mid)
        if (sidechain and self.main_only) or api_error:  # counted, kept out of the timeline
            self.tool_ids.update(cid for kind, _, _, _, cid in parts if kind == TOOL_CALL)
            if sidechain and self.main_only:
                self.n_sidechain += 1
            else:
                self.n_api_errors += 1
            return
        entries = self.entries
        for kind, key, value, name, cid in parts:
            if kind == TOOL_CALL:
                self.tool_ids.add(cid)
                self.tool_names[cid] = name
                if self._new(key):
                    entries.append(Entry("assistant", TOOL_CALL, _INPUT_JSON.encode(value), no, ts,
                                         name, cid, mid))
            elif self._new(key):
                entries.append(Entry("assistant", kind, value, no, ts, None, None, mid))


def parse_claude_code(raw: RawFile, *, subagent_files: tuple[Session, ...] = (),
                      notes: tuple[str, ...] = ()) -> Session:
    """Build a Session from the records of a Claude Code transcript."""
    path = raw.path
    records = raw.records
    first_msg = next((r for _, r in records if r.get("type") in CONVERSATION_TYPES), None)
    is_subagent_file = bool(first_msg and first_msg.get("isSidechain") is True)
    b = _Builder(path, main_thread_only=not is_subagent_file)
    types: Counter = Counter()
    skipped = list(raw.skipped)
    embedded: dict[str, list[tuple[int, dict]]] = {}
    stamps: list[str] = []
    tally: dict[str, int] = {}  # own_session_id's count, in the same pass
    last: dict[str, int] = {}
    versions: dict[str | None, str] = {}  # the first version of each session id's records
    for i, (no, r) in enumerate(records):
        t = r.get("type")
        ts = r.get("timestamp")
        if t == "assistant" or t == "user":  # counted for the session id even if skipped
            sid = r.get("sessionId")
            if type(sid) is str:
                tally[sid] = tally.get(sid, 0) + 1
                last[sid] = i
        try:
            if type(t) is not str:
                raise BadRecord("record without a 'type' field" if t is None else
                                f"record whose 'type' is {json_type(t)}, not a string")
            if ts is not None and type(ts) is not str:
                opt_str(r, "timestamp")
            if t == "assistant" or t == "user":
                msg = r.get("message")
                if type(msg) is not dict:
                    raise BadRecord("no message object" if msg is None else
                                    f"message is {json_type(msg)}, expected an object")
                if sid is not None and type(sid) is not str:
                    opt_str(r, "sessionId")
                v = r.get("version")
                if v is not None and type(v) is not str:
                    opt_str(r, "version")
                (b.user if t == "user" else b.assistant)(no, r, msg)
                types[t] += 1
                if v is not None and sid not in versions:
                    versions[sid] = v
            else:
                _record(b, no, t, r, types, embedded)
        except BadRecord as bad:
            skipped.append(Skip(no, f"{t} record: {bad}" if type(t) is str else str(bad)))
            continue
        if ts is not None:
            stamps.append(ts)
    session_id, id_tally = _owner(records, tally, last)
    version = versions.get(session_id)
    user_classes = b.hand_offs(session_id)
    skipped.sort(key=lambda s: s.line)
    notes = list(notes)
    if b.n_sidechain:
        notes.append(f"{b.n_sidechain} sidechain (subagent) records kept out of the main timeline")
    if b.n_api_errors:
        notes.append(f"{b.n_api_errors} API-error placeholder messages kept out of the timeline")
    if len(id_tally) > 1:
        notes.append(f"records of {len(id_tally)} session ids; the session is {session_id} "
                     "(most user/assistant records), the others' user messages are hand-offs")
    if raw.glued_lines:
        notes.append(f"{len(raw.glued_lines)} glued line(s) (two or more records with no newline "
                     f"between them) split into their records: line(s) {', '.join(map(str, raw.glued_lines))}")
    from_files = {s.session_id.rsplit(":", 1)[-1] for s in subagent_files}
    subagents = list(subagent_files)
    for agent_id, recs in embedded.items():
        if agent_id not in from_files:
            subagents.append(_embedded_subagent(path, session_id, agent_id, recs))
    n_comp = b.n_boundaries if b.n_boundaries else b.n_summaries
    agent_id = first_msg.get("agentId") if is_subagent_file else None
    if isinstance(agent_id, str) and agent_id:
        session_id = f"{session_id}:{agent_id}"
    return assemble_session(path=path, fmt=CLAUDE_CODE, session_id=session_id or path.stem,
                            entries=b.entries, compactions=[c[:4] for c in b.compactions],
                            microcompactions=b.microcompactions,
                            n_user_msgs=b.n_user, n_assistant_msgs=len(b.msg_ids),
                            n_tool_calls=len(b.tool_ids), n_compactions=n_comp,
                            n_microcompactions=b.n_micro, user_classes=user_classes, n_lines=raw.n_lines,
                            record_types=types, skipped=skipped, n_duplicates=b.n_dup, notes=notes,
                            glued_lines=raw.glued_lines, session_ids=id_tally,
                            first_timestamp=min(stamps) if stamps else None,
                            last_timestamp=max(stamps) if stamps else None, version=version,
                            subagents=tuple(subagents))


def _record(b: _Builder, no: int, t: str, r: dict, types: Counter, embedded: dict) -> None:
    """Tally one record other than a user or assistant message (a compaction boundary
    goes to the builder); BadRecord when a field is wrong."""
    if t == "progress":
        data = r.get("data")
        if type(data) is not dict:
            data = opt_dict(r, "data") or {}
        kind = data.get("type")
        if kind is not None and type(kind) is not str:
            opt_str(data, "type", "data.type")
        if kind == "agent_progress":
            inner = opt_dict(data, "message", "data.message")
            agent = opt_str(data, "agentId", "data.agentId") or opt_str(r, "parentToolUseID")
            if inner is not None:
                embedded.setdefault(agent or "unknown", []).append((no, inner))
        types[f"progress/{kind}" if kind else "progress"] += 1
    elif t == "system":
        sub = opt_str(r, "subtype")
        if sub == "compact_boundary":
            b.boundary(no, r)
        elif sub == "microcompact_boundary":
            b.microcompaction(no, r)
        types[f"system/{sub}" if sub else "system"] += 1
    else:
        types[t] += 1


def _embedded_subagent(path: Path, session_id: str | None, agent_id: str,
                       recs: list[tuple[int, dict]]) -> Session:
    """A subagent transcript rebuilt from the messages ``agent_progress`` embedded."""
    sub = _Builder(path, main_thread_only=False)
    skipped = []
    types: Counter = Counter()
    for no, r in recs:
        t = r.get("type")
        msg = r.get("message")
        if t in CONVERSATION_TYPES and isinstance(msg, dict):
            try:
                (sub.user if t == "user" else sub.assistant)(no, r, msg)
            except BadRecord as bad:
                skipped.append(Skip(no, f"embedded {t} record: {bad}"))
                continue
            types[t] += 1
    return assemble_session(path=path, fmt=CLAUDE_CODE, session_id=f"{session_id}:{agent_id}",
                            entries=sub.entries, compactions=[], n_user_msgs=sub.n_user,
                            n_assistant_msgs=len(sub.msg_ids), n_tool_calls=len(sub.tool_ids),
                            n_compactions=0, user_classes=sub.hand_offs(None), n_lines=0,
                            record_types=types, skipped=skipped,
                            n_duplicates=sub.n_dup, notes=["embedded in agent_progress records"])


def looks_like_claude_code(record: dict) -> bool:
    t = record.get("type")
    if t in CONVERSATION_TYPES:
        return isinstance(record.get("message"), dict) and "payload" not in record
    return isinstance(t, str) and t in RECORD_TYPES and "payload" not in record
