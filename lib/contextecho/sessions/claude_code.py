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

Every field is read through :mod:`.fields`: a record holding a field of the wrong type
is skipped whole and listed in the parse report as ``<type> record: <field> is ...``.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from .fields import (BadRecord, blocks, content_value, expect, json_type, opt_bool, opt_dict,
                     opt_int, opt_str, req_str, str_items)
from .jsonl import RawFile
from .model import (CLAUDE_CODE, COMPACTION_SUMMARY, REASONING, TEXT, TOOL_CALL, TOOL_RESULT,
                    Entry, Session, Skip)
from .timeline import assemble
from .user_classes import HANDOFF, classify_user_text

RECORD_TYPES = frozenset({"user", "assistant", "system", "progress", "summary",
                          "file-history-snapshot", "queue-operation", "pr-link"})
CONVERSATION_TYPES = ("user", "assistant")


def _block_text(content, what: str) -> str:
    """Text of a tool_result's (or summary's) content: a string, or a list of blocks."""
    if content is None:
        return ""
    if isinstance(expect(content, (str, list), what), str):
        return content
    return "\n".join(opt_str(b, "text", f"{path}.text", "") if t == "text" else f"[{t}]"
                     for path, b, t in blocks(content, what))


def own_session_id(records: list[tuple[int, dict]]) -> tuple[str | None, dict[str, int]]:
    """The id owning most user/assistant records (the later one on a tie), and the tally."""
    tally: Counter = Counter()
    last: dict[str, int] = {}
    for i, (_, r) in enumerate(records):
        sid = r.get("sessionId")
        if r.get("type") in CONVERSATION_TYPES and isinstance(sid, str):
            tally[sid] += 1
            last[sid] = i
    if not tally:
        sid = next((r["sessionId"] for _, r in records if isinstance(r.get("sessionId"), str)), None)
        return sid, {}
    return max(tally, key=lambda s: (tally[s], last[s])), dict(tally)


class _Builder:
    def __init__(self, path: Path, main_thread_only: bool, own_id: str | None = None):
        self.path = path
        self.main_only = main_thread_only
        self.own_id = own_id  # records of another id are hand-offs (None: no marking)
        self.entries: list[Entry] = []
        self.compactions: list[list] = []  # [entry_index, line, trigger, pre_tokens, has_summary]
        self.microcompactions: list[tuple] = []  # (entry_index, line, tool_ids, trigger, pre, saved)
        self.seen: set = set()
        self.tool_names: dict[str, str] = {}
        self.n_dup = 0
        self.n_user = 0
        self.user_classes: Counter = Counter()
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
    # record with a bad field leaves nothing behind.
    def user(self, no: int, r: dict, msg: dict) -> None:
        content = content_value(msg, "content", "message.content")
        if content is None:
            raise BadRecord("message has no content")
        summary = opt_bool(r, "isCompactSummary")
        meta = opt_bool(r, "isMeta")
        sidechain = opt_bool(r, "isSidechain")
        transcript_only = opt_bool(r, "isVisibleInTranscriptOnly")
        ts = opt_str(r, "timestamp")
        sid = opt_str(r, "sessionId")
        texts: list[str] = []
        results: list[tuple[str, str]] = []
        if summary:
            summary_text = _block_text(content, "message.content")
        elif isinstance(content, str):
            texts.append(content)
        else:
            for what, b, t in blocks(content, "message.content"):
                if t == "tool_result":
                    cid = req_str(b, "tool_use_id", f"{what}.tool_use_id")
                    text = _block_text(b.get("content"), f"{what}.content")
                    if opt_bool(b, "is_error", f"{what}.is_error"):
                        text = "[error] " + text
                    results.append((cid, text))
                elif t == "text":
                    texts.append(opt_str(b, "text", f"{what}.text", ""))
                else:
                    texts.append(f"[{t}]")
        only_results = isinstance(content, list) and bool(content) and len(results) == len(content)
        text = "\n".join(texts)
        cls = None
        if not (only_results or meta or summary):
            cls = HANDOFF if self.own_id and sid and sid != self.own_id else classify_user_text(text)
            self.n_user += 1
            self.user_classes[cls] += 1
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
        for cid, result in results:
            if self._new(("r", cid)):
                self.entries.append(Entry("user", TOOL_RESULT, result, no, ts,
                                          self.tool_names.get(cid), cid))
        if texts and self._new(("u", ts, text)):
            self.entries.append(Entry("user", TEXT, text, no, ts, meta=meta, user_class=cls))

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
        mid = opt_str(msg, "id", "message.id") or opt_str(r, "uuid") or f"line{no}"
        content = content_value(msg, "content", "message.content")
        if content is None:
            raise BadRecord("message has no content list")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        sidechain = opt_bool(r, "isSidechain")
        api_error = opt_bool(r, "isApiErrorMessage")
        ts = opt_str(r, "timestamp")
        parts = []  # (kind, dedup key, text, tool name, call id)
        for what, b, t in blocks(content, "message.content"):
            if t == "tool_use":
                cid = req_str(b, "id", f"{what}.id")
                name = opt_str(b, "name", f"{what}.name") or "tool"
                parts.append((TOOL_CALL, ("c", cid), json.dumps(b.get("input"), ensure_ascii=False), name, cid))
            elif t == "text":
                text = opt_str(b, "text", f"{what}.text", "")
                parts.append((TEXT, ("t", mid, text), text, None, None))
            elif t in ("thinking", "redacted_thinking"):
                text = opt_str(b, "thinking", f"{what}.thinking", "")
                signature = opt_str(b, "signature", f"{what}.signature")
                parts.append((REASONING, ("k", mid, text, signature), text, None, None))
        self.msg_ids.add(mid)
        self.tool_ids.update(cid for kind, _, _, _, cid in parts if kind == TOOL_CALL)
        if sidechain and self.main_only:
            self.n_sidechain += 1
            return
        if api_error:
            self.n_api_errors += 1
            return
        for kind, key, text, name, cid in parts:
            if kind == TOOL_CALL:
                self.tool_names[cid] = name
            if self._new(key):
                self.entries.append(Entry("assistant", kind, text, no, ts, name, cid, mid))


def parse_claude_code(raw: RawFile, *, subagent_files: tuple[Session, ...] = (),
                      notes: tuple[str, ...] = ()) -> Session:
    """Build a Session from the records of a Claude Code transcript."""
    path = raw.path
    records = raw.records
    first_msg = next((r for _, r in records if r.get("type") in CONVERSATION_TYPES), None)
    is_subagent_file = bool(first_msg and first_msg.get("isSidechain") is True)
    session_id, id_tally = own_session_id(records)
    b = _Builder(path, main_thread_only=not is_subagent_file, own_id=session_id)
    types: Counter = Counter()
    skipped = list(raw.skipped)
    embedded: dict[str, list[tuple[int, dict]]] = {}
    stamps: list[str] = []
    version = None
    for no, r in records:
        t = r.get("type")
        try:
            if t is None:
                raise BadRecord("record without a 'type' field")
            if not isinstance(t, str):
                raise BadRecord(f"record whose 'type' is {json_type(t)}, not a string")
            ts = opt_str(r, "timestamp")
            _record(b, no, t, r, types, embedded)
        except BadRecord as bad:
            skipped.append(Skip(no, f"{t} record: {bad}" if isinstance(t, str) else str(bad)))
            continue
        if ts is not None:
            stamps.append(ts)
        if version is None and t in CONVERSATION_TYPES and r.get("sessionId") == session_id:
            v = r.get("version")
            version = v if isinstance(v, str) else None
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
    return assemble(path=path, fmt=CLAUDE_CODE, session_id=session_id or path.stem,
                    entries=b.entries, compactions=[c[:4] for c in b.compactions],
                    microcompactions=b.microcompactions,
                    n_user_msgs=b.n_user, n_assistant_msgs=len(b.msg_ids),
                    n_tool_calls=len(b.tool_ids), n_compactions=n_comp,
                    n_microcompactions=b.n_micro, user_classes=b.user_classes, n_lines=raw.n_lines,
                    record_types=types, skipped=skipped, n_duplicates=b.n_dup, notes=notes,
                    glued_lines=raw.glued_lines, session_ids=id_tally,
                    first_timestamp=min(stamps) if stamps else None,
                    last_timestamp=max(stamps) if stamps else None, version=version,
                    subagents=tuple(subagents))


def _record(b: _Builder, no: int, t: str, r: dict, types: Counter, embedded: dict) -> None:
    """Hand one record to the builder (or tally it); BadRecord when a field is wrong."""
    if t in CONVERSATION_TYPES:
        msg = r.get("message")
        if not isinstance(msg, dict):
            raise BadRecord("no message object" if msg is None else
                            f"message is {json_type(msg)}, expected an object")
        opt_str(r, "sessionId")
        opt_str(r, "version")
        (b.user if t == "user" else b.assistant)(no, r, msg)
        types[t] += 1
    elif t == "system":
        sub = opt_str(r, "subtype")
        if sub == "compact_boundary":
            b.boundary(no, r)
        elif sub == "microcompact_boundary":
            b.microcompaction(no, r)
        types[f"system/{sub}" if sub else "system"] += 1
    elif t == "progress":
        data = opt_dict(r, "data") or {}
        kind = opt_str(data, "type", "data.type")
        if kind == "agent_progress":
            inner = opt_dict(data, "message", "data.message")
            agent = opt_str(data, "agentId", "data.agentId") or opt_str(r, "parentToolUseID")
            if inner is not None:
                embedded.setdefault(agent or "unknown", []).append((no, inner))
        types[f"progress/{kind}" if kind else "progress"] += 1
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
    return assemble(path=path, fmt=CLAUDE_CODE, session_id=f"{session_id}:{agent_id}",
                    entries=sub.entries, compactions=[], n_user_msgs=sub.n_user,
                    n_assistant_msgs=len(sub.msg_ids), n_tool_calls=len(sub.tool_ids),
                    n_compactions=0, user_classes=sub.user_classes, n_lines=0,
                    record_types=types, skipped=skipped,
                    n_duplicates=sub.n_dup, notes=["embedded in agent_progress records"])


def looks_like_claude_code(record: dict) -> bool:
    t = record.get("type")
    if t in CONVERSATION_TYPES:
        return isinstance(record.get("message"), dict) and "payload" not in record
    return isinstance(t, str) and t in RECORD_TYPES and "payload" not in record
