"""The confirmation a command asks for after printing its plan and before any call (``audit``,
``compare``): on a terminal, a yes/no question; without one, ``--yes`` is required."""
from __future__ import annotations

import sys


def confirm_run(command: str, what: str, stop_flag: str) -> int | None:
    """Ask on a terminal whether to run ``what`` as the plan printed above says; None: run it.
    Without a terminal to ask on: a usage error naming ``--yes`` and ``stop_flag`` (exit 2);
    declined: 1 (``<command>: not run``)."""
    if not sys.stdin.isatty():
        print(f"contextecho {command}: the plan above is what the run will call; pass --yes to run it without a "
              f"terminal to confirm on (or {stop_flag} to stop at the plan)", file=sys.stderr)
        return 2
    if input(f"Run the {what} as planned? [y/N] ").strip().lower() not in ("y", "yes"):
        print(f"{command}: not run")
        return 1
    return None
