"""The format-neutral session model: what a Claude Code or Codex CLI transcript becomes.

A :class:`Session` is an ordered timeline of :class:`Entry` items — the main agent's
context as it grew — plus compaction events, counts, subagent transcripts and a parse
report. Everything is frozen: later stages derive new records, never mutate these.

Vocabulary
- *agent step*: one assistant action, i.e. an assistant message with visible text or
  one tool call (the ContextEcho definition). Steps are numbered 1..n in timeline order.
  A response that writes text and then calls two tools is three steps. Thinking /
  reasoning alone is not a step; neither is a synthetic API-error message.
- *user turn*: a prompt the person typed (not tool results, not harness-injected text,
  not compaction summaries).
- *compaction*: the harness replaced the history by a summary; the timeline holds one
  ``compaction_summary`` entry where that happened.
- *microcompaction*: the harness (Claude Code 2.1.x, ``microcompact_boundary``) dropped
  some old tool results from the model's context and kept the rest. The timeline keeps
  those results (it is the record of what happened); a :class:`Microcompaction` lists
  them, and a snapshot after it leaves them out.
- *user message class*: what kind of user message a counted one is (:mod:`.user_classes`):
  a typed prompt, or one of the wrappers the harness writes as user messages.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

# Entry kinds. The first four are the turn kinds a rendered prefix is made of.
TEXT = "text"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
COMPACTION_SUMMARY = "compaction_summary"
REASONING = "reasoning"  # thinking / encrypted reasoning: kept, never rendered
KINDS = (TEXT, TOOL_CALL, TOOL_RESULT, COMPACTION_SUMMARY, REASONING)

CLAUDE_CODE = "claude_code"
CODEX_CLI = "codex_cli"


@dataclass(frozen=True, slots=True)
class Entry:
    """One item of the main agent's context, in the order it entered the context."""

    role: str  # "user" | "assistant" | "system" (system = harness/developer text)
    kind: str  # one of KINDS
    text: str
    line: int  # 1-based line of the source record
    timestamp: str | None = None
    tool_name: str | None = None
    call_id: str | None = None
    message_id: str | None = None  # groups the records of one assistant response
    step: int | None = None  # 1-based agent step number, when this entry is a step
    user_turn: int | None = None  # 1-based user-turn number, when this is a typed prompt
    meta: bool = False  # harness-injected (isMeta, AGENTS.md, environment context, developer)
    user_class: str | None = None  # for a user text: its class (user_classes.USER_CLASSES)


def _entry_init():
    """``Entry.__init__``, storing each field through its slot's descriptor.

    A session holds thousands of entries, and the ``__init__`` a frozen dataclass
    generates stores every field through ``object.__setattr__`` (its own ``__setattr__``
    refuses), which looks the name up each time. This one, about twice as fast, has the
    same signature and defaults; the instances are as frozen (assignment still raises
    ``FrozenInstanceError``), compare, hash, copy and pickle as before.
    """
    (role_, kind_, text_, line_, timestamp_, tool_name_, call_id_, message_id_, step_,
     user_turn_, meta_, user_class_) = (Entry.__dict__[f.name].__set__ for f in fields(Entry))

    def __init__(self, role: str, kind: str, text: str, line: int, timestamp: str | None = None,
                 tool_name: str | None = None, call_id: str | None = None,
                 message_id: str | None = None, step: int | None = None,
                 user_turn: int | None = None, meta: bool = False,
                 user_class: str | None = None) -> None:
        role_(self, role)
        kind_(self, kind)
        text_(self, text)
        line_(self, line)
        timestamp_(self, timestamp)
        tool_name_(self, tool_name)
        call_id_(self, call_id)
        message_id_(self, message_id)
        step_(self, step)
        user_turn_(self, user_turn)
        meta_(self, meta)
        user_class_(self, user_class)

    __init__.__qualname__ = "Entry.__init__"
    return __init__


Entry.__init__ = _entry_init()


@dataclass(frozen=True, slots=True)
class Compaction:
    """A context compaction: history before ``entry_index`` was replaced by a summary."""

    entry_index: int  # index in Session.entries of the compaction_summary entry
    line: int
    steps_before: int  # agent steps taken before the compaction (the pre checkpoint)
    trigger: str | None = None  # "auto" | "manual" when the harness recorded it
    pre_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Microcompaction:
    """Old tool results dropped from the context; nothing replaces them in the timeline."""

    entry_index: int  # index in Session.entries of the first entry after the boundary
    line: int
    steps_before: int  # agent steps taken before it (the pre checkpoint)
    tool_ids: tuple[str, ...]  # the tool-use ids whose results were dropped
    trigger: str | None = None
    pre_tokens: int | None = None
    tokens_saved: int | None = None


@dataclass(frozen=True, slots=True)
class Skip:
    """A line the reader could not use, and why."""

    line: int
    reason: str


@dataclass(frozen=True)
class ParseReport:
    """What the reader saw: line and record-type tallies, skipped lines, duplicates."""

    n_lines: int
    n_records: int
    record_types: dict[str, int]
    skipped: tuple[Skip, ...] = ()
    n_duplicates: int = 0  # records replayed verbatim (same block ids) and left out
    notes: tuple[str, ...] = ()
    glued_lines: tuple[int, ...] = ()  # lines that held two or more records (each one read)
    session_ids: dict[str, int] = field(default_factory=dict)  # conversation records per id

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)

    @property
    def complete(self) -> bool:
        """True when every non-blank line was a usable record."""
        return not self.skipped


@dataclass(frozen=True)
class SessionCounts:
    """The MANIFEST.csv counts (its README's rules) plus the number of agent steps."""

    n_user_msgs: int
    n_assistant_msgs: int
    n_tool_calls: int
    n_compactions: int
    n_agent_steps: int
    n_microcompactions: int = 0
    user_classes: dict[str, int] = field(default_factory=dict)  # n_user_msgs split by class


@dataclass(frozen=True)
class Session:
    """A parsed transcript. ``entries`` is the main agent's timeline (no sidechains)."""

    path: Path
    format: str
    session_id: str
    entries: tuple[Entry, ...]
    compactions: tuple[Compaction, ...]
    counts: SessionCounts
    report: ParseReport
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    version: str | None = None
    subagents: tuple["Session", ...] = ()
    microcompactions: tuple[Microcompaction, ...] = ()
    step_index: tuple[int, ...] = field(default=(), repr=False)  # entry index of step k+1
    message_last_step: tuple[int, ...] = field(default=(), repr=False)  # per assistant message

    @property
    def n_agent_steps(self) -> int:
        return len(self.step_index)

    @property
    def n_user_turns(self) -> int:
        return sum(1 for e in self.entries if e.user_turn is not None)

    def entry_of_step(self, step: int) -> Entry:
        return self.entries[self.step_index[step - 1]]

    def __repr__(self) -> str:  # the default would print thousands of entries
        c = self.counts
        return (f"Session({self.format}, {self.path.name!r}, steps={c.n_agent_steps}, "
                f"user={c.n_user_msgs}, assistant={c.n_assistant_msgs}, "
                f"tools={c.n_tool_calls}, compactions={c.n_compactions}, "
                f"microcompactions={c.n_microcompactions})")

