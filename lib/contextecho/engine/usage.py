"""Errors the user fixes: a parameter, a file or folder, a key, an input that cannot be read.

Each such error class derives from :class:`UsageError` where it is defined, beside its own
base (``class ParameterError(UsageError, ValueError)``), so the command line tells them from
a failed run or a bug without a list to keep: ``python -m contextecho`` prints the message
alone, naming the cause and the fix, and exits with status 2 (:mod:`contextecho.__main__`)."""
from __future__ import annotations


class UsageError(Exception):
    """An error the user fixes (its message names the cause and the fix), not a failure of
    the run: the command line prints it without a traceback and exits 2."""
