"""``python -m contextecho corpus DIR``: what is in a folder of transcripts.

Prints one row per transcript file (subagent files included) — format, agent steps,
user turns, assistant messages, tool calls, compactions, wall-clock span, unusable
lines — or, with ``--json``, one JSON object per line for scripts. ``.jsonl`` files
that are not transcripts are reported on stderr and left out.
"""
from __future__ import annotations

import argparse
import json
import sys

from .corpus import local_corpus, summarize

COLUMNS = ("file", "format", "steps", "user", "assistant", "tools", "compactions", "span", "skipped")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", default=None, metavar="DIR",
                        help="folder to scan recursively for .jsonl transcripts "
                             f"(default: {local_corpus()})")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object per transcript file instead of a table "
                             "(keys: file, format, n_user_msgs, n_assistant_msgs, n_tool_calls, "
                             "n_compactions, n_agent_steps)")


def table(summaries) -> list[str]:
    rows = [COLUMNS]
    for s in summaries:
        c, r = s.session.counts, s.session.report
        rows.append((s.file, s.session.format, str(c.n_agent_steps), str(c.n_user_msgs),
                     str(c.n_assistant_msgs), str(c.n_tool_calls), str(c.n_compactions), s.span,
                     str(r.n_skipped)))
    tot = [sum(getattr(s.session.counts, k) for s in summaries)
           for k in ("n_agent_steps", "n_user_msgs", "n_assistant_msgs", "n_tool_calls", "n_compactions")]
    rows.append((f"total ({len(summaries)} files)", "", *map(str, tot), "",
                 str(sum(s.session.report.n_skipped for s in summaries))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    left = {0, 1}
    return ["  ".join(cell.ljust(widths[i]) if i in left else cell.rjust(widths[i])
                      for i, cell in enumerate(row)).rstrip() for row in rows]


def run(args: argparse.Namespace) -> int:
    from pathlib import Path
    root = Path(args.dir) if args.dir else local_corpus()
    if not root.is_dir():
        print(f"contextecho corpus: {root} is not a folder", file=sys.stderr)
        return 2
    summaries, skipped = summarize(root)
    if args.json:
        for s in summaries:
            print(json.dumps(s.as_json()))
    else:
        print("\n".join(table(summaries)))
    for rel, why in skipped:
        print(f"skipped {rel}: {why}", file=sys.stderr)
    return 0
