"""What every LLM judge shares, whatever the design: the statuses of a verdict and the
sampling parameters of a judge call.

A verdict is ``ok`` (read from the judge's reply), ``invalid`` (a reply that names no
verdict, or several: recorded with its reason, never a score) or ``error`` (the judge call
failed). ContextEcho's 0–3 judge (:mod:`contextecho.echo.judge`) and ANCHOR's axis judges
(:mod:`contextecho.anchor.axes`) both use these.
"""
from __future__ import annotations

from typing import Any, Mapping

OK, INVALID, ERROR = "ok", "invalid", "error"
DEFAULT_JUDGE_PARAMS: Mapping[str, Any] = {"temperature": 0, "max_tokens": 64}
