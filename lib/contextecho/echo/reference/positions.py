"""Where the reference runners probe a session (``PROTOCOL.md`` §8), and where a
session's compactions fall in the harness's turn numbering.

The panel positions are hard-coded turn numbers of the authors' representative session
(9 643 turns; compactions at turns 1338, 2229, 4694, 6216, 7724, 8828): "post" is the
compaction turn + 100, "pre" is 28-38 turns before it or the compaction turn itself.
They are data of that session, not a rule; :func:`compaction_turns` gives the same
landmarks for any session so a panel can be anchored on its own compactions.
"""
from __future__ import annotations

from dataclasses import dataclass

from .transcript import Row

#: The twelve named positions of Fig. 1 / Fig. 3, in the forest's order.
PANEL_POSITIONS: tuple[tuple[str, int], ...] = (
    ("P0_start", 100), ("P1_pre_C1", 1300), ("P2_post_C1", 1438), ("P_pre_C2", 2200),
    ("P_post_C2", 2329), ("P_pre_C3", 4694), ("P3_post_C3", 4794), ("P_pre_C4", 6216),
    ("P_post_C4", 6316), ("P_pre_C5", 7724), ("P4_post_C5", 7824), ("P5_pre_C6", 8800),
)
#: The framing ablation and the cross-judge audits.
FRAMING_ABLATION_POSITION = "P5_pre_C6"
#: Onset sweep (Coding-Self only), labelled ``T0001``...
ONSET_TURNS = (1, 5, 25, 100, 250, 500, 1000, 1500)
#: "post" = compaction turn + this.
POST_OFFSET = 100


def onset_label(turn: int) -> str:
    return f"T{turn:04d}"


@dataclass(frozen=True)
class CompactionTurns:
    """One ``compact_boundary`` row and the harness turns around it."""

    boundary_line: int
    last_turn_before: int      # the last counted turn before the boundary (0 if none)
    first_turn_after: int | None  # the first counted turn after it (the summary, usually)


def compaction_turns(rows: list[Row], index: dict[int, int]) -> list[CompactionTurns]:
    """Every compaction boundary of the session, in file order, with its turns."""
    line_to_turn = {line: turn for turn, line in index.items() if turn > 0}
    turns_in_order = sorted(line_to_turn.items())
    out = []
    for line, row in enumerate(rows):
        if row and row.get("type") == "system" and row.get("subtype") == "compact_boundary":
            before = [t for ln, t in turns_in_order if ln < line]
            after = [t for ln, t in turns_in_order if ln > line]
            out.append(CompactionTurns(line, before[-1] if before else 0, after[0] if after else None))
    return out
