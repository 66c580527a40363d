"""``python -m contextecho import-sessions``: copy your own sessions in, redacted.

Reads Claude Code transcripts from ``~/.claude/projects`` and Codex CLI rollouts from
``~/.codex/sessions`` (both overridable) and writes them under the destination as
``claude_code/<project>/<id>.jsonl`` and ``codex_cli/YYYY/MM/DD/rollout-*.jsonl``.
Every string value of every record — and the relative path itself — is redacted with
one :class:`Redactor` per file (so placeholders agree within a session), and the
written text is verified to contain none of the originals before it is kept. Your
login name and machine name are always redacted; ``--redact-term`` adds more.
"""
from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
from pathlib import Path

from ..paths import data_dir
from .errors import RedactionLeak
from .redaction import GENERIC_USERS, Redactor

SOURCES = (("claude_code", "claude_dir", "~/.claude/projects"),
           ("codex_cli", "codex_dir", "~/.codex/sessions"))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claude-dir", type=Path, default=Path("~/.claude/projects"),
                        help="Claude Code projects folder to import from (default: ~/.claude/projects)")
    parser.add_argument("--codex-dir", type=Path, default=Path("~/.codex/sessions"),
                        help="Codex CLI sessions folder to import from (default: ~/.codex/sessions)")
    parser.add_argument("--dest", type=Path, default=None,
                        help=f"where to write the redacted copies (default: {data_dir() / 'own_sessions'})")
    parser.add_argument("--redact-term", action="append", default=[], metavar="TEXT",
                        help="an extra string to replace by <PROJECT_n> (repeatable): "
                             "employer, project code names, colleagues' names")
    parser.add_argument("--dry-run", action="store_true",
                        help="list what would be imported without writing anything")


def _strings(obj, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, out)


def _map(obj, f):
    if isinstance(obj, str):
        return f(obj)
    if isinstance(obj, dict):
        return {k: _map(v, f) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map(v, f) for v in obj]
    return obj


def local_identity() -> dict[str, list[str]]:
    """This machine's login and host names, always redacted on import."""
    extra: dict[str, list[str]] = {"USER": [], "HOST": []}
    try:
        user = getpass.getuser()
        if user and user not in GENERIC_USERS and len(user) >= 2:
            extra["USER"].append(user)
    except (KeyError, OSError):
        pass
    host = socket.gethostname()
    if host and host != "localhost":
        extra["HOST"].append(host)
    return extra


def redact_transcript(text: str, rel: str, extra: dict[str, list[str]]) -> tuple[str, str]:
    """Redact one JSONL transcript and its relative path; verify; return both."""
    redactor = Redactor(extra)
    lines = text.split("\n")
    parsed: list[object] = []
    strings: list[str] = [rel]
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        parsed.append(obj)
        if obj is None:
            strings.append(line)
        else:
            _strings(obj, strings)
    for s in strings:
        redactor.discover(s)
    out_lines = []
    new_rel = redactor.apply(rel)
    for line, obj in zip(lines, parsed):
        if obj is None:
            out_lines.append(redactor.apply(line))
        else:
            clean = _map(obj, redactor.apply)
            for s in _collect(clean):  # decoded strings: JSON escapes could hide an original
                redactor.verify(s, where=new_rel)
            out_lines.append(json.dumps(clean, ensure_ascii=False))
    out = "\n".join(out_lines)
    redactor.verify(out, where=new_rel)
    redactor.verify(new_rel, where="the destination path")
    return out, new_rel


def _collect(obj) -> list[str]:
    out: list[str] = []
    _strings(obj, out)
    return out


def run(args: argparse.Namespace) -> int:
    dest = (args.dest or data_dir() / "own_sessions").expanduser()
    extra = local_identity()
    if args.redact_term:
        extra["PROJECT"] = list(args.redact_term)
    n_files = 0
    for label, attr, _ in SOURCES:
        root = getattr(args, attr).expanduser()
        if not root.is_dir():
            print(f"{label}: {root} not found, nothing to import", file=sys.stderr)
            continue
        for path in sorted(root.rglob("*.jsonl")):
            rel = path.relative_to(root).as_posix()
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
                out, new_rel = redact_transcript(text, rel, extra)
            except RedactionLeak as exc:
                print(f"NOT imported {path}: {exc}", file=sys.stderr)
                return 1
            target = dest / label / new_rel
            if args.dry_run:
                print(f"would write {target}")
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(out, encoding="utf-8")
            n_files += 1
    print(f"{'would import' if args.dry_run else 'imported'} {n_files} transcript file(s) into {dest} (redacted)")
    return 0
