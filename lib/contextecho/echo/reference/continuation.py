"""The harness's tool-call continuation experiment (e07): cut points, prefixes, scoring.

Source: github.com/Accenture/ContextEcho at commit ``5f8dba3`` (Apache License 2.0). The
instrument data below (:data:`SYSTEM_PROMPT`, :data:`TOOLS`, the selection constants and
:data:`SELECTION_METHOD`) is reproduced unchanged from ``experiments/_shared/select_cutpoints.py``
and ``experiments/e07_downstream_pilot/run_continuation.py``; the rules are re-implemented
from ``shared/reference/contextecho/continuation/README.md``. Two e07 instruments are the
ones the probe runners already import from ``run_clean_control.py`` and live where those are:
the assistant acknowledgement (:data:`.texts.ACKNOWLEDGEMENT`, e07's ``ACK_MESSAGE``) and the
filler (:data:`.texts.FILLER_TEMPLATE`, :func:`.filler.make_filler`; the e07 arms use
``make_filler(len(recent3K))`` for Sonnet and ``make_filler(3000)`` cross-target).

Rows are :func:`.transcript.read_rows`: one entry per line, ``None`` for a line that is not a
JSON object, so list index = 0-based line number. (The harness keeps any decoded JSON value;
a non-object line makes ``select_cutpoints`` raise ``AttributeError`` and the prefix builders
skip a falsy one and raise on a truthy one. Real sessions hold no such line and no fixture
has one; here such a line is simply skipped.)

* **Cut points** (``select_cutpoints.main``): walk the rows; every ``type == "user"`` record
  (tool results included) moves the last-user index; an ``assistant`` record whose
  ``message.content`` holds exactly one ``tool_use`` block with a truthy ``name`` is a
  candidate when some user record came before. ``eligible = candidates[skip:]``; fewer than
  ``n`` is :class:`TooFewCutpoints`; ``stride = len(eligible) // n``; the cut points are
  ``eligible[i * stride]`` for ``i < n``.
* **recent3K** (``extract_recent3K``): walk back from ``cut_index - 1`` while fewer than
  ``2 * target_chars`` characters of message text were collected; ``user``/``assistant``
  records render as in e08 (:func:`.transcript.render_content`: text blocks,
  ``[tool_use NAME: JSON]``, ``[tool_result: X]``, payloads cut to 200); blank renderings
  are skipped; blocks ``--- USER ---``/``--- ASSISTANT ---`` + newline + text are joined by
  a blank line in file order and the last ``target_chars`` characters kept.
* **Scratch turn** (``get_immediate_context_at``): among the 199 rows before the cut, newest
  first, the first tool result (``str(content)[:1500]``, list content joined from its text
  items), the first non-blank assistant text block (``[:1000]``) and the first non-blank user
  text (a text block of a list, or a string content; ``[:1000]``); the walk stops once a
  tool result and an assistant text are both non-empty. Present sections
  (``[Most recent user instruction]``, ``[Your last reasoning]``, ``[Most recent tool
  result]``, each header + newline + text) and :data:`SCRATCH_CUE` are joined by a blank
  line. A first tool result that is empty is kept (and hides older ones) but not shown.
* **gpt5_3K** (``extract_gpt5_recent3K``): records whose top-level ``role`` is ``user``,
  ``assistant`` or ``tool_result``; content flattened by :func:`flatten_content`; non-blank
  texts become ``--- ROLE ---`` blocks joined by a blank line; the last ``target_chars``
  characters are kept. :func:`codex_records` (our extension) maps a Codex CLI session to
  that record shape.
* **Scoring** (``run_one_cut`` and ``run_one_cut_mistral``): only the first tool call
  counts; ``M1 = tool == gt_tool`` when a tool was named, else ``False``; ``M2 =
  jaccard_args(args, gt_args or {})`` when ``tool == gt_tool``, else ``None``
  (:func:`score_call`); :func:`jaccard_args` over :func:`argument_tokens`; on the
  OpenAI-compatible path the arguments string is read by :func:`parse_arguments`.

Positions in the text are Unicode code points (Python ``len``), as in the harness.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .gpt5_source import flatten_blocks
from .transcript import BLOCK_JOINER, PART_JOINER, Row, render_content

# ---------------------------------------------------------------- instrument constants

#: ``run_continuation.py`` ``SYSTEM_PROMPT`` (every e07 runner, both API paths).
SYSTEM_PROMPT = (
    "You are an AI coding assistant operating like Claude Code: a tool-using "
    "agent that helps with software-engineering tasks via shell, file, and web "
    "tools. Given the conversation so far, propose the SINGLE next action you "
    "would take. Respond with exactly one tool call. Do not respond with text "
    "alone \u2014 emit a tool_use."
)

#: ``run_continuation.py`` ``TOOLS``: the eight tool schemas in the Anthropic form, in order.
TOOLS: list[dict] = [
    {
        "name": "Bash",
        "description": "Run a shell command in a persistent zsh session.",
        "input_schema": {
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "description": {"type": "string"},
                "run_in_background": {"type": "boolean"},
                "timeout": {"type": "number"},
            },
            "required": ["command"],
        },
    },
    {
        "name": "Read",
        "description": "Read a file from the local filesystem.",
        "input_schema": {
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "offset": {"type": "integer"},
                "limit": {"type": "integer"},
            },
            "required": ["file_path"],
        },
    },
    {
        "name": "Edit",
        "description": "Performs exact string replacements in files.",
        "input_schema": {
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            "required": ["file_path", "old_string", "new_string"],
        },
    },
    {
        "name": "Write",
        "description": "Writes a file to the local filesystem.",
        "input_schema": {
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "content": {"type": "string"},
            },
            "required": ["file_path", "content"],
        },
    },
    {
        "name": "WebFetch",
        "description": "Fetches a URL and extracts content.",
        "input_schema": {
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "prompt": {"type": "string"},
            },
            "required": ["url", "prompt"],
        },
    },
    {
        "name": "TaskUpdate",
        "description": "Update task list with progress.",
        "input_schema": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "status": {"type": "string"},
            },
            "required": ["id", "status"],
        },
    },
    {
        "name": "Grep",
        "description": "Search file contents with regex.",
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
            },
            "required": ["pattern"],
        },
    },
    {
        "name": "Glob",
        "description": "Find files matching glob pattern.",
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
            },
            "required": ["pattern"],
        },
    },
]

#: ``select_cutpoints.py``: cut points per session, candidates skipped at the start.
N_CUTPOINTS = 25
SKIP_INITIAL = 100
#: The prefix length of every e07 arm (recent3K, gpt5_3K, the cross-target filler), in characters.
TARGET_CHARS = 3000
#: The last line of the scratch turn.
SCRATCH_CUE = "Propose your next single tool call."
#: ``CUTPOINTS.json``'s ``selection_method``, as ``select_cutpoints.main`` writes it.
SELECTION_METHOD = (
    "deterministic stride sampling: walk transcript, collect "
    "assistant turns with exactly one tool_use; skip first SKIP_INITIAL; "
    "take every stride-th from remainder"
)


def openai_tools(tools: Sequence[dict]) -> list[dict]:
    """``tools`` in the OpenAI function-tool form the OpenAI-compatible runners send
    (``call_mistral_with_tools``): ``{"type": "function", "function": {name, description,
    parameters}}``, the parameters being the Anthropic ``input_schema``."""
    return [{"type": "function",
             "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}
            for t in tools]


# ---------------------------------------------------------------- cut points

@dataclass(frozen=True)
class Cutpoint:
    """A candidate cut: the line of an assistant record with a single tool call."""

    cut_index: int
    tool: str
    args: object  # the tool_use ``input`` as stored (normally a dict; ``None`` when absent)
    preceding_user_msg_idx: int

    def as_json(self) -> dict:
        return {"cut_index": self.cut_index, "ground_truth_tool": self.tool,
                "ground_truth_args": self.args, "preceding_user_msg_idx": self.preceding_user_msg_idx}


@dataclass(frozen=True)
class CutpointSelection:
    """The selected cut points of one session and how they were drawn."""

    n_total_candidates: int
    skip_initial: int
    stride: int
    cutpoints: tuple[Cutpoint, ...]

    def as_json(self) -> dict:
        """``CUTPOINTS.json`` as ``select_cutpoints.main`` writes it (parsed)."""
        return {"n_cutpoints": len(self.cutpoints), "n_total_candidates": self.n_total_candidates,
                "skip_initial": self.skip_initial, "stride": self.stride,
                "selection_method": SELECTION_METHOD,
                "cutpoints": [c.as_json() for c in self.cutpoints]}


class TooFewCutpoints(ValueError):
    """Fewer eligible candidates than cut points wanted; the message is the harness's
    ``SystemExit`` message."""

    def __init__(self, n_eligible: int, skip: int, n: int) -> None:
        self.n_eligible, self.skip, self.n = n_eligible, skip, n
        super().__init__(f"Only {n_eligible} eligible candidates after skipping first {skip}; need {n}")


def _message(row: dict) -> dict:
    return row.get("message") or {}


def _single_tool_use(row: dict) -> dict | None:
    blocks = [b for b in (_message(row).get("content") or [])
              if isinstance(b, dict) and b.get("type") == "tool_use"]
    return blocks[0] if len(blocks) == 1 else None


def candidates(rows: Sequence[Row]) -> list[Cutpoint]:
    """Every candidate cut of a session, in file order."""
    found: list[Cutpoint] = []
    last_user: int | None = None
    for line, row in enumerate(rows):
        if row is None:
            continue
        kind = row.get("type")
        if kind == "user":
            last_user = line
        elif kind == "assistant":
            block = _single_tool_use(row)
            if block is not None and block.get("name") and last_user is not None:
                found.append(Cutpoint(line, block["name"], block.get("input"), last_user))
    return found


def select_cutpoints(rows: Sequence[Row], n: int = N_CUTPOINTS, skip: int = SKIP_INITIAL) -> CutpointSelection:
    """The ``n`` cut points of a session, stride-sampled after the first ``skip`` candidates.

    Raises :class:`TooFewCutpoints` when fewer than ``n`` candidates remain, and
    ``ValueError`` for ``n < 1`` or ``skip < 0`` (values the harness never uses: it divides
    by ``n`` and slices with ``skip``).
    """
    if n < 1 or skip < 0:
        raise ValueError(f"need n >= 1 and skip >= 0, got n={n}, skip={skip}")
    found = candidates(rows)
    eligible = found[skip:]
    if len(eligible) < n:
        raise TooFewCutpoints(len(eligible), skip, n)
    stride = len(eligible) // n
    return CutpointSelection(len(found), skip, stride, tuple(eligible[i * stride] for i in range(n)))


# ---------------------------------------------------------------- prefixes

def _row_at(rows: Sequence[Row], index: int) -> Row:
    """``rows[index]`` for ``0 <= index``; past the end, the harness's ``IndexError``."""
    if index >= len(rows):
        raise IndexError("list index out of range")
    return rows[index]


def recent_prefix(rows: Sequence[Row], cut_index: int, target_chars: int = TARGET_CHARS) -> str:
    """recent3K: the last ``target_chars`` characters of the rendered records before
    ``cut_index`` (``extract_recent3K``). A cut past the end of ``rows`` + 1 raises
    ``IndexError`` as the harness does."""
    return tail_prefix(rows, cut_index, target_chars, RECENT_REACH, render_content)


#: How far back ``extract_recent3K`` reads, in multiples of the characters it keeps.
RECENT_REACH = 2


def tail_prefix(rows: Sequence[Row], cut_index: int, target_chars: int, reach: float,
                render: Callable[[object], str]) -> str:
    """The walk of e07's ``extract_recent3K`` and e12's ``extract_session_prefix``: back from
    ``cut_index - 1`` while fewer than ``reach * target_chars`` characters of message text
    were collected, ``user``/``assistant`` records only, each record's content rendered by
    ``render`` (blank renderings skipped) as a ``--- USER ---`` / ``--- ASSISTANT ---`` block;
    the blocks joined by a blank line in file order and the last ``target_chars`` kept."""
    blocks: list[str] = []
    collected = 0
    line = cut_index - 1
    while line >= 0 and collected < reach * target_chars:
        row = _row_at(rows, line)
        line -= 1
        if not row or row.get("type") not in ("user", "assistant"):
            continue
        text = render(_message(row).get("content"))
        if not text.strip():
            continue
        blocks.append(f"--- {'USER' if row.get('type') == 'user' else 'ASSISTANT'} ---\n{text}")
        collected += len(text)
    full = BLOCK_JOINER.join(reversed(blocks))
    return full[-target_chars:] if len(full) > target_chars else full


SECTION_USER = "[Most recent user instruction]"
SECTION_REASONING = "[Your last reasoning]"
SECTION_RESULT = "[Most recent tool result]"
#: How far back the scratch turn looks (rows ``cut - 1`` .. ``cut - 199``) and its cuts.
SCRATCH_WINDOW = 200
RESULT_CHARS, TEXT_CHARS = 1500, 1000


def _result_text(block: dict) -> str:
    return _content_text(block.get("content", ""))


def _content_text(result) -> str:
    if isinstance(result, list):
        result = "".join(x.get("text", "") for x in result if isinstance(x, dict))
    return str(result)


def context_sections(rows: Sequence[Row], cut_index: int) -> list[tuple[str, str]]:
    """The scratch turn's sections as ``(header, text)``, in the turn's order (user
    instruction, last reasoning, tool result); absent and empty ones left out."""
    result = reasoning = user = None
    for offset in range(1, SCRATCH_WINDOW):
        line = cut_index - offset
        if line < 0:
            break
        row = _row_at(rows, line)
        if not row:
            continue
        kind, content = row.get("type"), _message(row).get("content")
        if kind == "user" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    if result is None:
                        result = _result_text(block)[:RESULT_CHARS]
                elif block.get("type") == "text" and user is None and block.get("text", "").strip():
                    user = block["text"][:TEXT_CHARS]
        elif kind == "user" and isinstance(content, str):
            if user is None and content.strip():
                user = content[:TEXT_CHARS]
        elif kind == "assistant" and isinstance(content, list):
            for block in content:
                if (isinstance(block, dict) and block.get("type") == "text" and reasoning is None
                        and block.get("text", "").strip()):
                    reasoning = block["text"][:TEXT_CHARS]
        if result and reasoning:
            break
    return [(header, text) for header, text in
            ((SECTION_USER, user), (SECTION_REASONING, reasoning), (SECTION_RESULT, result)) if text]


def immediate_context(rows: Sequence[Row], cut_index: int) -> str:
    """The scratch arm's user turn at ``cut_index`` (``get_immediate_context_at``), also the
    last user turn of every other arm."""
    parts = [f"{header}\n{text}" for header, text in context_sections(rows, cut_index)]
    return BLOCK_JOINER.join([*parts, SCRATCH_CUE])


# ---------------------------------------------------------------- the gpt5_3K arm

GPT5_ROLES = ("user", "assistant", "tool_result")
GPT5_RESULT_CHARS = 300


def flatten_content(content) -> str:
    """A record's content as ``extract_gpt5_recent3K`` reads it (``_flatten_content``):
    a string as is; in a list, non-empty ``text`` blocks, ``[tool_use NAME: k=repr(v), ...]``
    (``[tool_use NAME]`` for a non-dict input) and ``[tool_result: str(content)[:300]]``,
    joined by newlines; anything else ``""``."""
    return flatten_blocks(content, _gpt5_tool_use, lambda result: f"[tool_result: {_content_text(result)[:GPT5_RESULT_CHARS]}]",
                          PART_JOINER)


def _gpt5_tool_use(block: dict) -> str:
    name, args = block.get("name", ""), block.get("input", {})
    if isinstance(args, dict):
        return f"[tool_use {name}: {', '.join(f'{k}={v!r}' for k, v in args.items())}]"
    return f"[tool_use {name}]"


def gpt5_prefix(records: Iterable[dict | str], target_chars: int = TARGET_CHARS) -> str:
    """gpt5_3K: the last ``target_chars`` characters of a transcript in the harness's record
    shape (``{"role", "content"}`` per line; ``extract_gpt5_recent3K``).

    A ``str`` item is a line of the transcript file and is JSON-decoded as the harness
    decodes it, without a guard: a bad line raises ``json.JSONDecodeError``, and a line that
    is not an object raises ``AttributeError``, as in the harness. ``target_chars <= 0``
    gives ``""`` (the harness's constant is 3000).
    """
    blocks: list[str] = []
    for record in records:
        if isinstance(record, str):
            record = json.loads(record)
        role = record.get("role")
        if role not in GPT5_ROLES:
            continue
        text = flatten_content(record.get("content", ""))
        if text and text.strip():
            blocks.append(f"--- {role.upper()} ---\n{text}")
    full = BLOCK_JOINER.join(blocks)
    return full[-target_chars:] if target_chars > 0 else ""


CODEX_TEXT_TYPES = ("input_text", "output_text")


def codex_records(rows: Sequence[Row], tool_result_as: str = "blocks") -> list[dict]:
    """A Codex CLI session in the record shape :func:`gpt5_prefix` reads.

    **Our documented extension, not harness code**: the harness builds gpt5_3K from a
    synthetic GPT-5 session that is not public (README §2); this is the fixture writer's
    adapter (``codex_to_harness_records``), with which the fixtures' gpt5_3K texts were made.
    ``response_item`` payloads only, in file order: ``message`` -> ``{role, content: [text
    blocks of its input_text/output_text items]}`` (the role as stored, ``developer``
    included); ``function_call`` -> an assistant ``tool_use`` whose input is the parsed
    ``arguments`` (``{"arguments": raw}`` when they do not parse to a JSON object);
    ``custom_tool_call`` -> a ``tool_use`` with input ``{"input": ...}``; ``*_output`` -> a
    ``tool_result`` record holding the output in a ``tool_result`` block
    (``tool_result_as="blocks"``, variant A: :func:`flatten_content` cuts it to 300) or as
    its string content (``"string"``, variant B: uncut). Reasoning, events, turn contexts
    and session metadata are dropped.
    """
    if tool_result_as not in ("blocks", "string"):
        raise ValueError(f"tool_result_as must be 'blocks' or 'string', got {tool_result_as!r}")
    out: list[dict] = []
    for row in rows:
        if not row or row.get("type") != "response_item" or not isinstance(row.get("payload"), dict):
            continue
        payload = row["payload"]
        kind = payload.get("type")
        if kind == "message":
            out.append({"role": payload.get("role"),
                        "content": [{"type": "text", "text": c.get("text", "")} for c in payload.get("content") or []
                                    if isinstance(c, dict) and c.get("type") in CODEX_TEXT_TYPES]})
        elif kind == "function_call":
            raw = payload.get("arguments")
            try:
                args = json.loads(raw)
            except (TypeError, ValueError):
                args = None
            if not isinstance(args, dict):
                args = {"arguments": raw}
            out.append({"role": "assistant",
                        "content": [{"type": "tool_use", "name": payload.get("name"), "input": args}]})
        elif kind == "custom_tool_call":
            out.append({"role": "assistant",
                        "content": [{"type": "tool_use", "name": payload.get("name"),
                                     "input": {"input": payload.get("input")}}]})
        elif isinstance(kind, str) and kind.endswith("_output"):
            output = payload.get("output")
            content = ([{"type": "tool_result", "content": output}] if tool_result_as == "blocks" else output)
            out.append({"role": "tool_result", "content": content})
    return out


# ---------------------------------------------------------------- scoring

JACCARD_WHOLE_CHARS = 50
JACCARD_CHUNK = 4


def argument_tokens(args) -> set[str]:
    """The token set ``jaccard_args`` compares (its ``flatten``): a nested dict adds
    ``prefix.key``; a list gives ``key[i]=str(x)`` per element (not recursed); any other
    value ``s = str(v)`` gives ``key=s`` when ``len(s) <= 50``, else the non-overlapping
    4-character chunks ``key~s[i:i+4]`` for ``i`` in ``range(0, len(s) - 3, 4)`` (the last
    ``len(s) % 4`` characters never count; order and repeats are lost).

    A falsy ``args`` (``None``, ``0``, ``[]``, ``""``, ``False``) acts as ``{}``; a truthy
    non-dict raises ``AttributeError`` (``'list' object has no attribute 'items'``), as the
    harness does (its mains catch it and write no metrics for that cut).
    """
    return _tokens(args, "")


def _tokens(args, prefix: str) -> set[str]:
    found: set[str] = set()
    for key, value in (args or {}).items():
        if isinstance(value, dict):
            found |= _tokens(value, f"{prefix}{key}.")
        elif isinstance(value, list):
            found.update(f"{prefix}{key}[{i}]={x}" for i, x in enumerate(value))
        else:
            text = str(value)
            if len(text) > JACCARD_WHOLE_CHARS:
                found.update(f"{prefix}{key}~{text[i:i + JACCARD_CHUNK]}"
                             for i in range(0, len(text) - JACCARD_CHUNK + 1, JACCARD_CHUNK))
            else:
                found.add(f"{prefix}{key}={text}")
    return found


def jaccard_args(a, b) -> float:
    """|A ∩ B| / |A ∪ B| of the two token sets (:func:`argument_tokens`; ``a``'s first);
    ``1.0`` when both are empty. Raises ``AttributeError`` like :func:`argument_tokens`."""
    tokens_a, tokens_b = argument_tokens(a), argument_tokens(b)
    if not tokens_a and not tokens_b:
        return 1.0
    return len(tokens_a & tokens_b) / len(tokens_a | tokens_b)


def parse_arguments(raw: str | None) -> object:
    """A tool call's ``arguments`` string as the OpenAI-compatible path reads it
    (``call_mistral_with_tools``): JSON-decoded (any JSON value, a list or a number
    included); ``{}`` when empty or missing; ``{"_parse_error": True, "raw": raw}`` when it
    is not JSON."""
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return {"_parse_error": True, "raw": raw}


def score_call(tool: str | None, args, gt_tool: str | None, gt_args) -> tuple[bool, float | None]:
    """``(M1, M2)`` of a response's first tool call (``tool`` ``None`` when there was none)
    against the ground truth: ``M1 = tool == gt_tool`` when ``tool`` is truthy, else
    ``False``; ``M2 = jaccard_args(args, gt_args or {})`` when ``tool == gt_tool``, else
    ``None``. A truthy non-dict ``args`` with the right tool raises ``AttributeError`` as the
    harness's runners do (they then save no metrics for the cut)."""
    m1 = (tool == gt_tool) if tool else False
    m2 = jaccard_args(args, gt_args or {}) if tool == gt_tool else None
    return m1, m2
