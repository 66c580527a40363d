"""The pre-registration of a release comparison: what is fixed before any call, and the check
that a run asks nothing else.

:func:`register` computes, from the comparison's parameters and the code as it stands, with
no call made: the **targets** (baseline and candidate, each with its temperature), the
**judge** (its model, its budget, the sha256 of the request it is sent for a probe and a
response, and the calibration threshold it is held to), the **protocol** (its key, version
and sha256), the **instruments** (the sha256 of each committed text set of the protocol:
probes, stressors, rubric, filler ...), the **sessions** (each file's sha256) and the
**positions** asked, the **cells** each target is asked (how many, and the sha256 of their
request keys, which hold every text sent), the **endpoints** with their margins, **alpha**,
the **multiplicity** correction and the **parameters** themselves.

:func:`write` adds the time it was written and the plan's own ``sha256`` (of its canonical
JSON without that field, :func:`~contextecho.engine.hashing.content_hash`); :func:`read`
refuses a plan whose sha256 does not match its content (edited after registration).
:func:`deviations` names every field (:data:`FIELDS`) where the plan and what the code would
now ask differ, with the sub-fields that differ. A comparison whose two targets would be sent
the same requests (one model, at a temperature the protocol does not send) is refused.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..echo.calibration import MAX_INVALID_RATE, MIN_KAPPA
from ..echo.protocol import Protocol
from ..echo.rubric import RUBRIC
from ..engine.hashing import canonical_json, content_hash
from ..engine.record import utc_now
from ..engine.usage import UsageError
from ..sessions.selection import session_labels
from .scores import headline_ids
from .selection import build
from .session_positions import Sessions, asked_positions, positions_frame

FORMAT = "contextecho-preregistration/1"
#: The fields a run under a plan must match (``--allow-deviation`` names them).
FIELDS = ("targets", "judge", "protocol", "instruments", "sessions", "positions", "cells", "endpoints", "alpha",
          "multiplicity", "parameters")
#: The parameters that do not change what is asked or how it is analysed (where a run goes,
#: how fast, through which server): not registered.
UNREGISTERED = ("output_dir", "plan", "concurrency", "endpoints", "batch", "preregistration",
                "allow_deviation")
#: The endpoints, in the order of the report; each one's margin parameter.
ENDPOINTS = (
    {"name": "drift_gap", "margin_parameter": "drift_margin", "unit": "judge points (0-3)",
     "what": "the drift gap (filler - real judge score on the headline battery), candidate - baseline; "
             "above zero the candidate drifts more"},
    {"name": "s2_compliance_gap", "margin_parameter": "s2_margin", "unit": "percentage points",
     "what": "the S2 compliance gap (filler - real compliance with the bare-command contract), "
             "candidate - baseline; above zero the candidate breaks the contract more after a session"},
)


class PlanError(UsageError, ValueError):
    """A plan file that cannot be used: unreadable, of another format, edited after it was
    written, or one a run deviates from without leave."""


@dataclass(frozen=True)
class Deviation:
    """A registered field the run would ask otherwise: which, and the sub-fields that differ."""

    field: str
    paths: tuple[str, ...]

    def text(self) -> str:
        return f"{self.field} ({', '.join(self.paths[:6])}{' ...' if len(self.paths) > 6 else ''})"


def judge_prompt_sha256(protocol: Protocol, judge: str, max_tokens: int) -> str:
    """The sha256 of the request the judge is sent for a placeholder probe and response
    (its prompt, its parameters and its model)."""
    setup = protocol.judging([judge], RUBRIC)
    request = protocol.judge_request(setup, judge, "{probe}", "{response}", protocol.judge_params(max_tokens),
                                     "preregistration")
    return content_hash({"model": judge, "messages": list(request.messages), "params": dict(request.params)})


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def role_params(p: Any, role: str) -> Any:
    """The parameters one target's cells are built with: its model alone, its temperature."""
    model, temperature = p.roles()[role]
    return dataclasses.replace(p, targets=(model,), temperature=temperature)


def role_cells(p: Any, chosen: Sessions, positions, who: str) -> dict[str, list]:
    """Each target's cells (``baseline``, ``candidate``) at the ``positions`` asked: the same
    sessions, positions, items and samples, each with its own model and temperature."""
    return {role: build(chosen.protocol, role_params(p, role), who, chosen.read, p.items,
                        positions=asked_positions(positions), replicates=p.samples,
                        stressor_max_tokens=p.stressor_max_tokens)
            for role in ("baseline", "candidate")}


def register(p: Any, chosen: Sessions, who: str = "compare") -> dict[str, Any]:
    """The registered fields of a comparison with parameters ``p`` on ``chosen`` (module doc)."""
    proto = chosen.protocol
    labels = session_labels(chosen.read)
    positions = positions_frame(chosen.read, proto, labels, p.size, p.n_positions)
    asked = positions[positions["asked"]]
    cells = role_cells(p, chosen, positions, who)
    if sorted(c.key for c in cells["baseline"]) == sorted(c.key for c in cells["candidate"]):
        raise PlanError(f"{who}: the baseline and the candidate would be sent the same requests: the same model, "
                        f"and a temperature the {proto.name} protocol does not send (it samples at the provider's "
                        "default); compare two models, or one at two temperatures under --protocol contextecho")
    judge = p.judge_models()[0]
    roles = p.roles()
    head = headline_ids(p.headline)
    real = [c for c in cells["baseline"] if c.arm == "real"]
    units = {"drift_gap": sum(c.item.kind == "probe" and c.item.id in head for c in real),
             "s2_compliance_gap": sum(c.item.kind == "stressor" for c in real)}
    values = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name not in UNREGISTERED}
    return {
        "format": FORMAT,
        "targets": {role: {"model": model, "temperature": t} for role, (model, t) in roles.items()},
        "judge": {"model": judge, "max_tokens": p.judge_max_tokens,
                  "prompt_sha256": judge_prompt_sha256(proto, judge, p.judge_max_tokens),
                  "calibration": {"min_kappa_quadratic": MIN_KAPPA, "max_invalid_pct": 100 * MAX_INVALID_RATE},
                  "labels": p.judge_labels or "the protocol's"},
        "protocol": proto.key(),
        "instruments": {name: content_hash(value) for name, value in proto.texts().items()},
        "sessions": [{"session": labels[s.session_id], "file": chosen.shown(f), "sha256": file_sha256(f)}
                     for f, s in zip(chosen.files, chosen.read)],
        "positions": [{"session": r.session, "position": r.position, "step": int(r.step)} for r in asked.itertuples()],
        "cells": {"items": list(p.items), "samples": p.samples, "arms": ["real", "filler"], "units": units,
                  **{role: {"n": len(c), "sha256": content_hash(sorted(x.key for x in c))} for role, c in cells.items()}},
        "endpoints": [{"name": e["name"], "unit": e["unit"], "what": e["what"],
                       "margin": float(getattr(p, e["margin_parameter"]))} for e in ENDPOINTS],
        "alpha": p.alpha,
        "multiplicity": "holm (each family of tests over the endpoints)",
        "parameters": json.loads(json.dumps(values, default=str)),
    }


def sealed(plan: Mapping[str, Any]) -> dict[str, Any]:
    """``plan`` with its ``sha256`` (of everything else, canonical JSON)."""
    body = {k: v for k, v in plan.items() if k != "sha256"}
    return {**body, "sha256": content_hash(body)}


def write(path: Path, registered: Mapping[str, Any]) -> dict[str, Any]:
    """Write the plan (with the time and its sha256) to ``path``; the plan written."""
    plan = sealed({**registered, "registered": utc_now()})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json.loads(canonical_json(plan)), indent=2, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return plan


def read(path: Path) -> dict[str, Any]:
    """The plan at ``path``, its format and sha256 checked (:class:`PlanError` naming the file)."""
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file (write one with `python -m contextecho preregister`)") from None
    except json.JSONDecodeError as exc:
        raise PlanError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(plan, dict) or plan.get("format") != FORMAT:
        raise PlanError(f"{path}: not a pre-registration of this version (format {FORMAT!r} expected)")
    if sealed(plan)["sha256"] != plan.get("sha256"):
        raise PlanError(f"{path}: its sha256 does not match its content: the plan was edited after it was "
                        "registered; register again (preregister) rather than edit it")
    return plan


def _paths(a: Any, b: Any, at: str) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b)) for p in _paths(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in _paths(x, y, f"{at}[{i}]")]
    return [] if a == b else [at]


def deviations(plan: Mapping[str, Any], now: Mapping[str, Any]) -> tuple[Deviation, ...]:
    """Every registered field (:data:`FIELDS`) where ``plan`` and what the code asks ``now``
    differ, each with the sub-fields that do."""
    out = []
    for name in FIELDS:
        paths = _paths(plan.get(name), now.get(name), name)
        if paths:
            out.append(Deviation(name, tuple(paths)))
    return tuple(out)
