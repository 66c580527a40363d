"""``python -m contextecho import-sessions``: copy your own sessions in, redacted.

Reads Claude Code transcripts from ``~/.claude/projects`` and Codex CLI rollouts from
``~/.codex/sessions`` (both overridable) and writes them under the destination as
``claude_code/<project>/<id>.jsonl`` and ``codex_cli/YYYY/MM/DD/rollout-*.jsonl``.
Every key and string value of every record — and the relative path itself — is
redacted with one :class:`Redactor` per file (so placeholders agree within a session),
and the written text is verified to contain none of the originals before it is kept.
A file that fails verification (or cannot be read) is reported — its redacted path, the
classes and counts, never the strings — and skipped; the others are imported, and the
exit status is 1. Your login name and machine name are always redacted;
``--redact-term`` adds more.
"""
from __future__ import annotations

import argparse
import getpass
import json
import os
import socket
import sys
from collections import Counter
from pathlib import Path

from ..engine.paths import data_dir
from ..sessions.corpus import scan
from ..sessions.errors import RedactionLeak
from ..sessions.redaction import GENERIC_USERS, Redactor

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


_UNPARSED = object()


def redact_transcript(text: str, rel: str, extra: dict[str, list[str]]) -> tuple[str, str]:
    """Redact one JSONL transcript and its relative path; verify; return both.

    Every key and string value of every record is redacted (lines that are not JSON as
    plain text) with one redactor. Raises :class:`RedactionLeak` (classes, never the
    strings) when the verification pass finds an original in the decoded values, the
    written text or the path."""
    redactor = Redactor(extra)
    lines = text.split("\n")
    parsed: list[object] = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            parsed.append(_UNPARSED)
    records = [obj for obj in parsed if obj is not _UNPARSED]
    redactor.discover_object([rel, *records, *(line for line, obj in zip(lines, parsed) if obj is _UNPARSED)])
    new_rel = redactor.apply(rel)
    clean = [redactor.apply(line) if obj is _UNPARSED else redactor.apply_object(obj)
             for line, obj in zip(lines, parsed)]
    out = "\n".join(c if isinstance(c, str) and obj is _UNPARSED else json.dumps(c, ensure_ascii=False)
                     for c, obj in zip(clean, parsed))
    # decoded values (JSON escapes could hide an original), the written text, the path
    found = Counter(redactor.object_survivors([new_rel, *clean])) | Counter(redactor.survivors(out))
    if found:  # per class, the larger of the two counts (one original is found by both)
        raise RedactionLeak(list(found.elements()), "the redacted copy")
    return out, new_rel


def leak_counts(exc: RedactionLeak) -> str:
    """``2 EMAIL, 1 SECRET``: what failed verification, by class, never the strings."""
    return ", ".join(f"{n} {cls}" for cls, n in sorted(Counter(exc.classes).items()))


def _write(target: Path, text: str) -> None:
    """Write through a temporary file and a rename, so a crash leaves no half file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)


def run(args: argparse.Namespace) -> int:
    """Import every transcript; one that fails verification (or cannot be read) is
    reported and skipped, the others are imported. Exit status 1 when any was skipped."""
    dest = (args.dest or data_dir() / "own_sessions").expanduser()
    extra = local_identity()
    if args.redact_term:
        extra["PROJECT"] = list(args.redact_term)
    n_files, skipped = 0, []
    for label, attr, _ in SOURCES:
        root = getattr(args, attr).expanduser()
        if not root.is_dir():
            print(f"{label}: {root} not found, nothing to import", file=sys.stderr)
            continue
        files, problems = scan(root)  # FIFOs, devices, dangling links and loops: never opened
        for index, (rel, why) in enumerate(problems, start=len(files) + 1):
            shown = _shown_path(label, rel, index, extra)
            print(f"NOT imported {shown}: {why}; skipped", file=sys.stderr)
            skipped.append(shown)
        for index, path in enumerate(files, start=1):
            rel = path.relative_to(root).as_posix()
            # what the report names: the redacted path (the original may hold the user name)
            shown = _shown_path(label, rel, index, extra)
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
                out, new_rel = redact_transcript(text, rel, extra)
            except RedactionLeak as exc:
                print(f"NOT imported {shown}: failed verification ({leak_counts(exc)} original "
                      f"string(s) survive redaction); skipped", file=sys.stderr)
                skipped.append(shown)
                continue
            except OSError as exc:
                print(f"NOT imported {shown}: cannot read it ({type(exc).__name__}); skipped", file=sys.stderr)
                skipped.append(shown)
                continue
            target = dest / label / new_rel
            if args.dry_run:
                print(f"would write {target}")
            else:
                _write(target, out)
            n_files += 1
    verb = "would import" if args.dry_run else "imported"
    print(f"{verb} {n_files} transcript file(s) into {dest} (redacted)")
    if skipped:
        print(f"skipped {len(skipped)} file(s) that failed verification or could not be read: "
              f"{', '.join(skipped)}", file=sys.stderr)
        return 1
    return 0


def _shown_path(label: str, rel: str, index: int, extra: dict[str, list[str]]) -> str:
    redactor = Redactor(extra)
    redactor.discover(rel)
    shown = redactor.apply(rel)
    return f"{label}/{shown}" if not redactor.survivors(shown) else f"{label} file #{index}"
