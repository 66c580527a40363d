"""``python -m contextecho corpus DIR``: what is in a folder of transcripts.

Prints one row per transcript file (subagent files included) — format, agent steps,
user messages and how many of them are typed prompts, assistant messages, tool calls,
compactions, microcompactions, wall-clock span, unusable lines — or, with ``--json``,
one JSON object per line for scripts. Every other path is accounted for: a ``.jsonl``
file that cannot be read as a transcript (another format, another encoding, a FIFO, a
dangling link...) and a folder that cannot be entered are named with the reason on
stderr (and, with ``--json``, as ``{"file", "error"}`` objects). The exit status is 0
when at least one transcript was read, 1 when none was, 2 when DIR is no folder.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..sessions.corpus import local_corpus, summarize
from ..sessions.user_classes import TYPED_PROMPT

COLUMNS = ("file", "format", "steps", "user", "typed", "assistant", "tools", "compactions",
           "micro", "span", "skipped")
_TOTALS = ("n_agent_steps", "n_user_msgs", TYPED_PROMPT, "n_assistant_msgs", "n_tool_calls",
           "n_compactions", "n_microcompactions")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", default=None, metavar="DIR",
                        help="folder to scan recursively for .jsonl transcripts "
                             f"(default: {local_corpus()})")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object per transcript file instead of a table "
                             "(keys: file, format, session_id, n_user_msgs, user_msg_classes, "
                             "n_assistant_msgs, n_tool_calls, n_compactions, n_microcompactions, "
                             "n_agent_steps, glued_lines, session_ids, skipped_lines); a file "
                             "that cannot be read is an object with keys file and error")


def _count(session, key: str) -> int:
    c = session.counts
    return c.user_classes.get(key, 0) if key == TYPED_PROMPT else getattr(c, key)


def table(summaries) -> list[str]:
    rows = [COLUMNS]
    for s in summaries:
        counts = [str(_count(s.session, k)) for k in _TOTALS]
        rows.append((s.file, s.session.format, *counts, s.span, str(s.session.report.n_skipped)))
    tot = [sum(_count(s.session, k) for s in summaries) for k in _TOTALS]
    rows.append((f"total ({len(summaries)} files)", "", *map(str, tot), "",
                 str(sum(s.session.report.n_skipped for s in summaries))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    left = {0, 1}
    return ["  ".join(cell.ljust(widths[i]) if i in left else cell.rjust(widths[i])
                      for i, cell in enumerate(row)).rstrip() for row in rows]


def notes(summaries) -> list[str]:
    """What the table does not show: glued lines recovered, files of several session ids."""
    out = []
    glued = [(s.file, s.session.report.glued_lines) for s in summaries if s.session.report.glued_lines]
    if glued:
        n = sum(len(lines) for _, lines in glued)
        out.append(f"glued lines recovered: {n} in {len(glued)} file(s) "
                   "(two or more records on one line, each read)")
        out += [f"  {f}: line(s) {', '.join(map(str, lines))}" for f, lines in glued]
    mixed = [s for s in summaries if len(s.session.report.session_ids) > 1]
    if mixed:
        out.append(f"files with several session ids: {len(mixed)}")
        out += [f"  {s.file}: {s.session.session_id} (+ {len(s.session.report.session_ids) - 1} other, "
                f"hand-offs: {s.session.counts.user_classes.get('handoff', 0)})" for s in mixed]
    return out


def run(args: argparse.Namespace) -> int:
    root = Path(args.dir) if args.dir else local_corpus()
    if not root.is_dir():
        print(f"contextecho corpus: {root} is not a folder", file=sys.stderr)
        return 2
    summaries, skipped = summarize(root)
    if args.json:
        for s in summaries:
            print(json.dumps(s.as_json()))
        for rel, why in skipped:
            print(json.dumps({"file": rel, "error": why}))
    else:
        print("\n".join(table(summaries) + notes(summaries)))
    for rel, why in skipped:
        print(f"not read {rel}: {why}", file=sys.stderr)
    print(f"contextecho corpus: {len(summaries)} transcript(s) read, {len(skipped)} path(s) not read "
          f"under {root}", file=sys.stderr)
    return 0 if summaries else 1
