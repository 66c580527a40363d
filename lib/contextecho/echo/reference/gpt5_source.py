"""The harness's GPT-5 source transcript and its two renderings of it.

Source: github.com/Accenture/ContextEcho at commit ``5f8dba3`` (Apache License 2.0):
``experiments/e03_same_target_ablation/run_a1_context_source.py`` (``_flatten_content``
``:59-94``, ``extract_gpt5_verbatim`` ``:97-118``) and
``experiments/e07_downstream_pilot/run_gpt5_arm.py`` (``_flatten_content`` ``:44-75``,
``extract_gpt5_recent3K`` ``:78-90``; e11's ``gpt5_3K`` arm imports it). The transcript
(:data:`GPT5_SOURCE`, relative to the harness root) is not in the release.

The transcript is one JSON object per line with a top-level ``role`` (``system``, ``user``,
``assistant`` or ``tool_result``) and ``content`` that is a string or a list of ``text``,
``tool_use`` and ``tool_result`` blocks. Both readers keep the ``user``, ``assistant`` and
``tool_result`` records whose flattened content is non-blank, join them with a blank line
and keep the last characters of the result; they differ in everything else:

====================  ==========================================  ==========================================
                      e03 A1 (:func:`extract_gpt5_verbatim`)       e07/e11 gpt5_3K (:func:`extract_gpt5_recent3k`)
====================  ==========================================  ==========================================
tool_use              ``<tool_use NAME(k=v, ...)>``; a non-dict    ``[tool_use NAME: k=v, ...]``; a non-dict
                      input is written with ``str``                input gives ``[tool_use NAME]``
tool_result           ``<tool_result: X>`` uncut; list content:    ``[tool_result: X]`` cut to 300 characters;
                      each item's ``text`` (else the item's         list content: the dict items' ``text``
                      ``str``) joined by a space                    joined with nothing
blocks joined by      a space                                      a newline
record                ``[role]: text``                             ``--- ROLE ---`` newline text
characters kept       28 000                                       3 000
====================  ==========================================  ==========================================

Values in ``k=v`` are Python ``repr`` of the decoded JSON value, as the harness writes them.
A line that does not decode raises, as it does in the harness (:func:`read_gpt5_transcript`).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

#: Where both runners read the transcript, relative to the harness's repository root.
GPT5_SOURCE = "data/openai_gpt-5_debug_and_fix_baseline_seed301_0952d536c9c9/transcript.jsonl"
#: The roles both readers keep (``system`` records are skipped).
SOURCE_ROLES = ("user", "assistant", "tool_result")
RECORD_JOINER = "\n\n"
#: Characters e03 A1 keeps (``main()`` passes 28000) and e07's ``TARGET_CHARS``.
A1_VERBATIM_CHARS = 28_000
GPT5_ARM_CHARS = 3_000
#: e07 cuts every tool result to this many characters.
GPT5_ARM_RESULT_CHARS = 300

Record = dict


def read_gpt5_transcript(path: str | Path) -> list[Record]:
    """The transcript's records, one per line, in file order (every line must decode)."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _arguments(tool_input: dict) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in tool_input.items())


def flatten_blocks(content, tool_use, tool_result, joiner: str, empty_text: bool = False) -> str:
    """What the harness's content flatteners share (both readers here, e12's session prefix): a
    string as it is, a list's ``text`` blocks (non-empty, unless ``empty_text``), its
    ``tool_use`` blocks as ``tool_use(block)`` and ``tool_result`` blocks as
    ``tool_result(content)``, joined by ``joiner``; anything else ``""``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type", "")
        if kind == "text":
            text = block.get("text", "")
            if text or empty_text:
                parts.append(text)
        elif kind == "tool_use":
            parts.append(tool_use(block))
        elif kind == "tool_result":
            parts.append(tool_result(block.get("content", "")))
    return joiner.join(parts)


def _a1_tool_use(block: dict) -> str:
    name, tool_input = block.get("name", ""), block.get("input", {})
    arguments = _arguments(tool_input) if isinstance(tool_input, dict) else str(tool_input)
    return f"<tool_use {name}({arguments})>"


def _a1_tool_result(inner) -> str:
    if isinstance(inner, list):
        inner = " ".join(item.get("text", str(item)) if isinstance(item, dict) else str(item) for item in inner)
    return f"<tool_result: {inner}>"


def _arm_tool_use(block: dict) -> str:
    name, tool_input = block.get("name", ""), block.get("input", {})
    return f"[tool_use {name}: {_arguments(tool_input)}]" if isinstance(tool_input, dict) else f"[tool_use {name}]"


def _arm_tool_result(result) -> str:
    if isinstance(result, list):
        result = "".join(item.get("text", "") for item in result if isinstance(item, dict))
    return f"[tool_result: {str(result)[:GPT5_ARM_RESULT_CHARS]}]"


def flatten_a1_content(content) -> str:
    """e03 A1's ``_flatten_content``: text, ``<tool_use ...>``, ``<tool_result: ...>``, space-joined."""
    return flatten_blocks(content, _a1_tool_use, _a1_tool_result, " ")


def flatten_gpt5_arm_content(content) -> str:
    """e07's ``_flatten_content``: text, ``[tool_use ...]``, ``[tool_result: ...]`` (cut), newline-joined."""
    return flatten_blocks(content, _arm_tool_use, _arm_tool_result, "\n")


def _kept(records: Iterable[Record], flatten):
    """(role, flattened text) of each kept record, in order."""
    for record in records:
        role = record.get("role")
        if role not in SOURCE_ROLES:
            continue
        text = flatten(record.get("content"))
        if text.strip():
            yield role, text


def extract_gpt5_verbatim(records: Iterable[Record], target_chars: int = A1_VERBATIM_CHARS) -> str:
    """e03 A1's slice: ``[role]: text`` records joined by a blank line, last ``target_chars``."""
    full = RECORD_JOINER.join(f"[{role}]: {text}" for role, text in _kept(records, flatten_a1_content))
    return full[-target_chars:]


def extract_gpt5_recent3k(records: Iterable[Record], target_chars: int = GPT5_ARM_CHARS) -> str:
    """e07/e11's ``gpt5_3K`` context: ``--- ROLE ---`` records, last ``target_chars``.

    e11 ``run.py`` cuts the result again to its own ``TARGET_CHARS`` (3000), which changes
    nothing for the default length.
    """
    full = RECORD_JOINER.join(f"--- {role.upper()} ---\n{text}"
                              for role, text in _kept(records, flatten_gpt5_arm_content))
    return full[-target_chars:]
