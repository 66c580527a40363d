"""Reader for Claude Code JSONL transcripts (``~/.claude/projects/<project>/<id>.jsonl``).

Record types handled: ``user``, ``assistant``, ``system`` (``compact_boundary`` marks a
compaction; other subtypes are harness notices outside the model's context),
``progress`` (``agent_progress`` embeds subagent messages, which become embedded
subagent transcripts), ``summary`` (a session title, not a compaction),
``file-history-snapshot``, ``queue-operation``, ``pr-link`` (tallied only). Unknown
types are tallied too, never an error.

Counts follow MANIFEST.csv's README (all user/assistant records, sidechains included);
the timeline holds only the main agent's context:
- sidechain records (``isSidechain`` in a main transcript: old-style subagent traffic),
  API-error placeholders (``isApiErrorMessage``) and ``isVisibleInTranscriptOnly``
  records other than compaction summaries are left out of the timeline;
- ``isMeta`` user records stay in, marked ``meta`` (harness-injected text);
- a compaction is a ``compact_boundary`` (v2.x) followed by an ``isCompactSummary``
  user record, or that record alone (v1.0.x): one ``compaction_summary`` entry;
- records replayed verbatim (same tool-use id / same response block / same prompt and
  timestamp) are kept out of the timeline once and counted as duplicates.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from .jsonl import RawFile
from .model import (CLAUDE_CODE, COMPACTION_SUMMARY, REASONING, TEXT, TOOL_CALL, TOOL_RESULT,
                    Entry, Session)
from .timeline import assemble

RECORD_TYPES = frozenset({"user", "assistant", "system", "progress", "summary",
                          "file-history-snapshot", "queue-operation", "pr-link"})


def _block_text(content) -> str:
    """Text of a tool_result's content: a string, or a list of text/image blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict):
                t = b.get("type")
                parts.append(b.get("text", "") if t == "text" else f"[{t}]")
            elif isinstance(b, str):
                parts.append(b)
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


class _Builder:
    def __init__(self, path: Path, main_thread_only: bool):
        self.path = path
        self.main_only = main_thread_only
        self.entries: list[Entry] = []
        self.compactions: list[list] = []  # [entry_index, line, trigger, pre_tokens, has_summary]
        self.seen: set = set()
        self.tool_names: dict[str, str] = {}
        self.n_dup = 0
        self.n_user = 0
        self.msg_ids: set[str] = set()
        self.tool_ids: set[str] = set()
        self.n_boundaries = 0
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
    def user(self, no: int, r: dict, msg: dict) -> None:
        content = msg.get("content")
        only_results = (isinstance(content, list) and bool(content)
                        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content))
        summary = bool(r.get("isCompactSummary"))
        meta = bool(r.get("isMeta"))
        if not (only_results or meta or summary):
            self.n_user += 1
        if summary:
            self.n_summaries += 1
        if r.get("isSidechain") and self.main_only:
            self.n_sidechain += 1
            return
        ts = r.get("timestamp")
        if summary:
            self._summary(no, _block_text(content))
            return
        if r.get("isVisibleInTranscriptOnly"):
            return
        texts = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for b in content:
                if not isinstance(b, dict):
                    continue
                t = b.get("type")
                if t == "tool_result":
                    cid = b.get("tool_use_id")
                    if self._new(("r", cid)):
                        text = _block_text(b.get("content"))
                        if b.get("is_error"):
                            text = "[error] " + text
                        self.entries.append(Entry("user", TOOL_RESULT, text, no, ts,
                                                  self.tool_names.get(cid), cid))
                elif t == "text":
                    texts.append(b.get("text") or "")
                else:
                    texts.append(f"[{t}]")
        else:
            raise _Bad(no, "user record whose message has no content")
        if texts:
            text = "\n".join(texts)
            if self._new(("u", ts, text)):
                self.entries.append(Entry("user", TEXT, text, no, ts, meta=meta))

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
        self.n_boundaries += 1
        if r.get("isSidechain") and self.main_only:
            return
        meta = r.get("compactMetadata") or {}
        pre = meta.get("preTokens")
        self.compactions.append([len(self.entries), no, meta.get("trigger"),
                                 pre if isinstance(pre, int) else None, False])
        self.entries.append(Entry("user", COMPACTION_SUMMARY, "", no, r.get("timestamp")))

    def assistant(self, no: int, r: dict, msg: dict) -> None:
        mid = msg.get("id") or r.get("uuid") or f"line{no}"
        self.msg_ids.add(mid)
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        elif not isinstance(content, list):
            raise _Bad(no, "assistant record whose message has no content list")
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id"):
                self.tool_ids.add(b["id"])
        if r.get("isSidechain") and self.main_only:
            self.n_sidechain += 1
            return
        if r.get("isApiErrorMessage"):
            self.n_api_errors += 1
            return
        ts = r.get("timestamp")
        for b in content:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "tool_use":
                cid = b.get("id")
                name = b.get("name") or "tool"
                self.tool_names[cid] = name
                if self._new(("c", cid)):
                    args = json.dumps(b.get("input"), ensure_ascii=False)
                    self.entries.append(Entry("assistant", TOOL_CALL, args, no, ts, name, cid, mid))
            elif t == "text":
                text = b.get("text") or ""
                if self._new(("t", mid, text)):
                    self.entries.append(Entry("assistant", TEXT, text, no, ts, message_id=mid))
            elif t in ("thinking", "redacted_thinking"):
                text = b.get("thinking") or ""
                if self._new(("k", mid, text, b.get("signature"))):
                    self.entries.append(Entry("assistant", REASONING, text, no, ts, message_id=mid))


class _Bad(Exception):
    def __init__(self, line: int, reason: str):
        self.line, self.reason = line, reason


def parse_claude_code(raw: RawFile, *, subagent_files: tuple[Session, ...] = ()) -> Session:
    """Build a Session from the records of a Claude Code transcript."""
    path = raw.path
    records = raw.records
    first_msg = next((r for _, r in records if r.get("type") in ("user", "assistant")), None)
    is_subagent_file = bool(first_msg and first_msg.get("isSidechain"))
    b = _Builder(path, main_thread_only=not is_subagent_file)
    types: Counter = Counter()
    skipped = list(raw.skipped)
    embedded: dict[str, list[tuple[int, dict]]] = {}
    stamps: list[str] = []
    session_id = version = None
    for no, r in records:
        t = r.get("type")
        ts = r.get("timestamp")
        if isinstance(ts, str):
            stamps.append(ts)
        if session_id is None and isinstance(r.get("sessionId"), str):
            session_id = r["sessionId"]
            version = r.get("version")
        try:
            if t == "user" or t == "assistant":
                msg = r.get("message")
                if not isinstance(msg, dict):
                    raise _Bad(no, f"{t} record without a message object")
                types[t] += 1
                (b.user if t == "user" else b.assistant)(no, r, msg)
            elif t == "system":
                sub = r.get("subtype")
                types[f"system/{sub}" if sub else "system"] += 1
                if sub == "compact_boundary":
                    b.boundary(no, r)
            elif t == "progress":
                data = r.get("data") if isinstance(r.get("data"), dict) else {}
                kind = data.get("type")
                types[f"progress/{kind}" if kind else "progress"] += 1
                inner = data.get("message")
                if kind == "agent_progress" and isinstance(inner, dict):
                    embedded.setdefault(str(data.get("agentId") or r.get("parentToolUseID")), []).append((no, inner))
            elif isinstance(t, str):
                types[t] += 1
            else:
                raise _Bad(no, "record without a 'type' field")
        except _Bad as bad:
            skipped.append(_skip(bad))
    skipped.sort(key=lambda s: s.line)
    notes = []
    if b.n_sidechain:
        notes.append(f"{b.n_sidechain} sidechain (subagent) records kept out of the main timeline")
    if b.n_api_errors:
        notes.append(f"{b.n_api_errors} API-error placeholder messages kept out of the timeline")
    from_files = {s.session_id.rsplit(":", 1)[-1] for s in subagent_files}
    subagents = list(subagent_files)
    for agent_id, recs in embedded.items():
        if agent_id not in from_files:
            subagents.append(_embedded_subagent(path, session_id, agent_id, recs))
    n_comp = b.n_boundaries if b.n_boundaries else b.n_summaries
    if is_subagent_file and first_msg.get("agentId"):
        session_id = f"{session_id}:{first_msg['agentId']}"
    return assemble(path=path, fmt=CLAUDE_CODE, session_id=session_id or path.stem,
                    entries=b.entries, compactions=[c[:4] for c in b.compactions],
                    n_user_msgs=b.n_user, n_assistant_msgs=len(b.msg_ids),
                    n_tool_calls=len(b.tool_ids), n_compactions=n_comp, n_lines=raw.n_lines,
                    record_types=types, skipped=skipped, n_duplicates=b.n_dup, notes=notes,
                    first_timestamp=min(stamps) if stamps else None,
                    last_timestamp=max(stamps) if stamps else None, version=version,
                    subagents=tuple(subagents))


def _skip(bad: _Bad):
    from .model import Skip
    return Skip(bad.line, bad.reason)


def _embedded_subagent(path: Path, session_id: str | None, agent_id: str,
                       recs: list[tuple[int, dict]]) -> Session:
    """A subagent transcript rebuilt from the messages ``agent_progress`` embedded."""
    sub = _Builder(path, main_thread_only=False)
    skipped = []
    types: Counter = Counter()
    for no, r in recs:
        t = r.get("type")
        msg = r.get("message")
        if t in ("user", "assistant") and isinstance(msg, dict):
            types[t] += 1
            try:
                (sub.user if t == "user" else sub.assistant)(no, r, msg)
            except _Bad as bad:
                skipped.append(_skip(bad))
    return assemble(path=path, fmt=CLAUDE_CODE, session_id=f"{session_id}:{agent_id}",
                    entries=sub.entries, compactions=[], n_user_msgs=sub.n_user,
                    n_assistant_msgs=len(sub.msg_ids), n_tool_calls=len(sub.tool_ids),
                    n_compactions=0, n_lines=0, record_types=types, skipped=skipped,
                    n_duplicates=sub.n_dup, notes=["embedded in agent_progress records"])


def looks_like_claude_code(record: dict) -> bool:
    t = record.get("type")
    if t in ("user", "assistant"):
        return isinstance(record.get("message"), dict) and "payload" not in record
    return t in RECORD_TYPES and "payload" not in record

