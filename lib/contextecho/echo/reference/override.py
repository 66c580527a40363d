"""The harness's instruction-override designs at e07 cut points: e11's four context arms and e12's prefix lengths.

Source: github.com/Accenture/ContextEcho at commit ``5f8dba3`` (Apache License 2.0). The
design constants below (:data:`E11_PROBE_CUT_INDICES`, :data:`E12_PROBE_LENGTHS`,
:data:`E12_STRESSORS`, the arm names, the runners' token budgets) are reproduced from
``experiments/e11_instruction_override/run.py`` and ``run_xtarget.py`` and
``experiments/e12_session_length_scaling/run.py`` and ``run_anthropic_family.py``; the rules
are re-implemented from ``shared/reference/contextecho/runs/README.md`` (families
``instruction_override`` and ``length_scaling``, behaviour 16). The request itself is
:func:`.requests.override_request`; how each runner sends it and reads the reply is its
rule set in :mod:`.s2_requests`.

Both designs ask the e11 stressors (:data:`.texts.E11_STRESSORS`, S1-S4; e12 only S2 and
S3) at the cut points e07's ``select_cutpoints`` chose (:func:`.continuation.select_cutpoints`),
picked by index into that list (``PROBE_CUT_INDICES``, :func:`probe_cuts`). Every request ends
on the cut's e07 immediate context (:func:`.continuation.immediate_context`, which ends
"Propose your next single tool call.") under ``[Prior task context]``, acknowledged, then
the stressor; it is sent without tools.

* **e11 arms** (:func:`e11_contexts`): ``scratch`` no context; ``filler3K`` the filler
  template at 3,000 characters (the same text at every cut, on both runners);
  ``gpt5_3K`` the last 3,000 characters of the GPT-5 source transcript rendered as e07 reads
  it (:func:`.gpt5_source.extract_gpt5_recent3k`; the same text at every cut); ``recent3K``
  e07's last 3,000 characters before the cut (:func:`.continuation.recent_prefix`).
* **e12 arms at each length** ``L`` (:func:`e12_contexts`): ``claude_session`` the
  session's last ``L`` characters before the cut (:func:`session_prefix`), ``filler`` the
  filler at the length that prefix actually has (shorter than ``L`` where the session is).
* **e12's prefix** (``extract_session_prefix``): walk back from ``cut_index - 1`` while
  fewer than ``1.3 * L`` characters of message text were collected; ``user``/``assistant``
  records only; a string content as is; in a list, ``text`` blocks, ``[tool_use NAME:
  json.dumps(input)[:300]]`` and ``[tool_result: str(X)[:500]]`` (list results joined from
  their items' ``text``), joined by newlines; blank renderings skipped; ``--- USER ---`` /
  ``--- ASSISTANT ---`` blocks joined by a blank line in file order; the last ``L``
  characters kept. This is not e07's renderer (200-character payloads, 2× reach).
* **Compliance** (:func:`compliance`): the stressor's e11 scorer
  (:data:`.scorers.REFERENCE_SCORERS`) on the reply as its runner reads it, 0 or 1.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from .continuation import TARGET_CHARS, Cutpoint, CutpointSelection, recent_prefix, tail_prefix
from .filler import make_filler
from .gpt5_source import flatten_blocks
from .scorers import REFERENCE_SCORERS
from .texts import E11_STRESSORS
from .transcript import PART_JOINER, Row

#: e11's arms, in its loop order, and the cut points its runners ask (indices into the 25).
E11_ARMS = ("scratch", "filler3K", "gpt5_3K", "recent3K")
E11_PROBE_CUT_INDICES = (0, 3, 6, 9, 12, 15, 18, 21, 24, 2)
#: The token budget both e11 runners pass (``client.step`` / ``call_no_tools``).
E11_MAX_TOKENS = 512
#: e12's arms per length, the lengths (characters) and its two stressors ("ACTIVE_STRESSORS").
E12_ARMS = ("claude_session", "filler")
E12_PROBE_LENGTHS = (3000, 30000, 100000, 200000)
E12_STRESSORS = ("S2_NO_PREAMBLE", "S3_NO_ACTION")
E12_MAX_TOKENS = 1024
#: e11's four stressor labels, in its order.
E11_LABELS = tuple(E11_STRESSORS)
#: ``extract_session_prefix``: how far back it reads (× the length) and its payload cuts.
E12_REACH = 1.3
E12_TOOL_USE_CHARS, E12_TOOL_RESULT_CHARS = 300, 500


def probe_cuts(selection: CutpointSelection, indices: Sequence[int]) -> tuple[Cutpoint, ...]:
    """The cut points a runner asks: ``cutpoints[i]`` for each index, in the given order
    (an index past the list raises ``IndexError``, as the harness's list does)."""
    return tuple(selection.cutpoints[i] for i in indices)


def e11_contexts(rows: Sequence[Row], cut_index: int, gpt5_context: str) -> dict[str, str | None]:
    """Each e11 arm's context at one cut (module doc); ``gpt5_context`` is the GPT-5 source's
    3,000 characters (:func:`.gpt5_source.extract_gpt5_recent3k`)."""
    return {"scratch": None, "filler3K": make_filler(TARGET_CHARS), "gpt5_3K": gpt5_context[-TARGET_CHARS:],
            "recent3K": recent_prefix(rows, cut_index)}


def _tool_use(block: dict) -> str:
    return f"[tool_use {block.get('name')}: {json.dumps(block.get('input', {}))[:E12_TOOL_USE_CHARS]}]"


def _tool_result(result) -> str:
    if isinstance(result, list):
        result = "".join(x.get("text", "") for x in result if isinstance(x, dict))
    return f"[tool_result: {str(result)[:E12_TOOL_RESULT_CHARS]}]"


def _block_text(content) -> str:
    """e12's content renderer: text (empty blocks too), ``[tool_use NAME: JSON]`` and
    ``[tool_result: ...]``, both cut, newline-joined."""
    return flatten_blocks(content, _tool_use, _tool_result, PART_JOINER, empty_text=True)


def session_prefix(rows: Sequence[Row], cut_index: int, target_chars: int) -> str:
    """e12's ``claude_session`` context: the session's last ``target_chars`` characters
    before ``cut_index`` (module doc; e07's walk, :func:`.continuation.tail_prefix`, with
    e12's reach and renderer)."""
    return tail_prefix(rows, cut_index, target_chars, E12_REACH, _block_text)


def e12_contexts(rows: Sequence[Row], cut_index: int, length: int) -> dict[str, str]:
    """Each e12 arm's context at one cut and length (module doc)."""
    prefix = session_prefix(rows, cut_index, length)
    return {"claude_session": prefix, "filler": make_filler(len(prefix))}


def compliance(stressor: str, reply: str) -> int:
    """The stressor's e11 scorer on ``reply`` (the label's ``S1``...``S4``), 0 or 1."""
    return int(REFERENCE_SCORERS.get(stressor[:2])(reply))
