"""``python -m contextecho <command>``: the project's command line.

Each command lives in its own module exposing ``configure(parser)`` and
``run(args) -> int``; this file only dispatches, so adding a command is one line. It also
keeps the exit statuses every command shares (:data:`EXIT_STATUS`, in every ``-h``): an
error the user fixes (:class:`~contextecho.engine.usage.UsageError`, a file or folder that
cannot be read or written) that a command does not report itself is printed here as its
message alone, without a traceback, and Ctrl-C ends a command in one line.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .engine.usage import UsageError

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help)
    "corpus": ("contextecho.cli.corpus", "summarise the transcripts in a folder"),
    "data": ("contextecho.cli.data", "fill data/ with the corpus and inventories, verifying every sha256"),
    "import-sessions": ("contextecho.cli.import_sessions", "import your own Claude Code / Codex sessions (redacted)"),
    "generate": ("contextecho.cli.generate", "ask the target model a prompt through the cached call site"),
    "cache": ("contextecho.cli.cache", "inspect the call cache"),
    "anchor-score": ("contextecho.cli.anchor_score", "score ANCHOR banks (released layout) through the causal window"),
    "notebook": ("contextecho.cli.notebook", "run one parameterized notebook with papermill (validated parameters)"),
    "paper": ("contextecho.cli.paper", "regenerate every result of the manuscript, check and render it"),
    "conformance": ("contextecho.cli.conformance", "check the 'reference' protocol against the authors' fixtures"),
    "audit": ("contextecho.cli.audit", "audit your own sessions against your model: plan, run, one HTML report"),
    "paraphrases": ("contextecho.cli.paraphrases", "write the CAPE items' candidate paraphrases for review"),
    "released": ("contextecho.cli.released", "fetch and verify the authors' released per-cell dataset (Hugging Face)"),
    "judge-check": ("contextecho.cli.judge_check", "calibrate a judge against labelled verdicts (kappa, confusion)"),
    "preregister": ("contextecho.cli.preregister", "register a comparison of two model releases before any call"),
    "compare": ("contextecho.cli.compare", "compare two model releases under a pre-registration: a verdict for CI"),
}

#: The exit statuses of every command, by meaning.
DONE, FAILED, USAGE, INTERRUPTED = 0, 1, 2, 130
EXIT_STATUS = (f"exit status: {DONE} done (or planned: nothing sent); {FAILED} the command ran and found a failure "
               "(a call, run, check, case or file that failed: which, the command says); "
               f"{USAGE} a usage error, found before any model call where it can be (a flag or parameter, a file or "
               "folder missing or that cannot be read or written, a session that cannot be read, a model without "
               "its key or route, a refused plan): one message on stderr names the cause and the fix; "
               f"{INTERRUPTED} interrupted (Ctrl-C)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="contextecho", epilog=EXIT_STATUS,
                                     description="contextecho: persona drift in long agentic-coding sessions")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        # The command's own parser answers -h, with its real arguments.
        sub_parser = sub.add_parser(name, help=help_text, description=help_text, add_help=False)
        sub_parser.set_defaults(_module=module_name)
    # Parse the command name first so only that command's module is imported
    # (LiteLLM alone costs seconds to import).
    args, rest = parser.parse_known_args(argv)
    module = importlib.import_module(args._module)
    command_parser = argparse.ArgumentParser(prog=f"contextecho {args.command}",
                                             description=COMMANDS[args.command][1], epilog=EXIT_STATUS)
    module.configure(command_parser)
    options = command_parser.parse_args(rest)
    try:
        return int(module.run(options) or 0)
    except KeyboardInterrupt:
        return _stop(args.command, "interrupted (what was finished is kept: every answer is in the cache, "
                                   "and a rerun resumes)", INTERRUPTED)
    except UsageError as exc:
        return _stop(args.command, str(exc), USAGE)
    except OSError as exc:
        if exc.filename is None:  # not a path the user gave (a connection, say): not a usage error
            raise
        return _stop(args.command, f"{exc.filename}: {exc.strerror}; give a path that exists and may be "
                                   "read or written", USAGE)


def _stop(command: str, message: str, status: int) -> int:
    print(f"contextecho {command}: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
