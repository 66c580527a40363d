"""Redaction cost on the largest corpus transcripts, next to the work it guards.

Per format (Claude Code, Codex CLI), the largest file: ``import-sessions``' redaction of
the whole file beside a plain JSON decode of it, and a full-session ``render_prefix``
redacted beside the same render unredacted. Best of a few repeats.

    .venv/bin/python benchmarks/redaction_speed.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from contextecho.sessions import load_session, render_prefix, snapshot_at  # noqa: E402
from contextecho.sessions.corpus import read_manifest  # noqa: E402
from contextecho.cli.import_sessions import redact_transcript  # noqa: E402

from _common import best_of, corpus_root  # noqa: E402

REPEATS = 2


def main() -> int:
    root = corpus_root()
    if root is None:
        print("no corpus found (run `make data`)", file=sys.stderr)
        return 1
    rows = [r for r in read_manifest() if r["format"] in ("claude_code", "codex_cli") and (root / r["file"]).is_file()]
    for fmt in ("claude_code", "codex_cli"):
        row = max((r for r in rows if r["format"] == fmt), key=lambda r: int(r["bytes"]))
        path = root / row["file"]
        text = path.read_text(encoding="utf-8")
        decode_s = best_of(lambda: [json.loads(line) for line in text.split("\n") if line.strip()], REPEATS)
        import_s = best_of(lambda: redact_transcript(text, path.name, {}), REPEATS)
        session = load_session(path)
        snapshot = snapshot_at(session, session.n_agent_steps)
        raw_s = best_of(lambda: render_prefix(snapshot, window=None, redact=False), REPEATS)
        red_s = best_of(lambda: render_prefix(snapshot, window=None), REPEATS)
        chars = render_prefix(snapshot, window=None, redact=False).n_chars
        print(f"{fmt}: {row['file'][-50:]} {len(text) / 1e6:.2f} MB, {chars / 1e6:.2f} M rendered chars")
        print(f"  import redaction {import_s:.2f} s (JSON decode {decode_s:.2f} s); "
              f"render redacted {red_s:.2f} s (unredacted {raw_s:.2f} s)")
        print(f"RESULT {fmt}_import_redaction_s={import_s:.2f} {fmt}_render_redacted_s={red_s:.2f} "
              f"{fmt}_render_unredacted_s={raw_s:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
