"""``python -m contextecho <command>``: the project's command line.

Each command lives in its own module exposing ``configure(parser)`` and
``run(args) -> int``; this file only dispatches, so adding a command is one line.
"""
from __future__ import annotations

import argparse
import importlib
import sys

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
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="contextecho", description="contextecho: persona drift in long agentic-coding sessions")
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
                                             description=COMMANDS[args.command][1])
    module.configure(command_parser)
    return int(module.run(command_parser.parse_args(rest)) or 0)


if __name__ == "__main__":
    sys.exit(main())
