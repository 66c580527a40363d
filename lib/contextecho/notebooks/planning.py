"""The plan of one notebook or of the whole paper, before any call (``--plan``).

Each notebook's experiment runs in-process in plan mode (``plan=True``: its stages run as
the notebook runs them, nothing is sent, the outputs stay as they are;
:mod:`contextecho.engine.plan`), every notebook under ONE planner, so a request one
notebook plans counts as cached for the next, as the shared cache answers it in a real
``make paper``. Each notebook leaves its plan in its folder (``plan.json``), which its
next real run records beside what it actually called; the paper's plan is printed and
written to ``paper/_generated/plan.json``.

``paper_scale``: each notebook at its documented ``PAPER_SCALE`` (the provider models and
sizes of the paper), then each of its ``NAMED_SETS`` (the corpus-scale grid, the ablations: a
run each), the set the README's paper-scale plan is generated from; the plan says which sets
it planned.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..engine.manifest import write_record
from ..engine.plan import Plan, Planner, planning
from ..paper.outputs import GENERATED
from .build import experiment
from .runner import check_parameters

PAPER_PLAN = GENERATED / "plan.json"


def _as_overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """A parameter set as the overrides a run is given (a tuple as its comma-separated words)."""
    return {k: ",".join(map(str, v)) if isinstance(v, tuple) else v for k, v in values.items()}


def scale_overrides(name: str, paper_scale: bool) -> dict[str, Any]:
    """The overrides that put notebook ``name`` at the paper's scale (none without ``paper_scale``)."""
    return _as_overrides(getattr(experiment(name), "PAPER_SCALE", {})) if paper_scale else {}


def plan_notebooks(names: Sequence[str], overrides: Mapping[str, Mapping[str, Any]] | None = None, *,
                   paper_scale: bool = False, concurrency: int | None = None) -> Plan:
    """Plan ``names`` in order (each with its ``overrides``, checked as a run checks them) under
    one planner; every notebook's plan is printed as it is made, then the total."""
    overrides = overrides or {}
    planner = Planner()
    runs = [(name, "", {**scale_overrides(name, paper_scale), **overrides.get(name, {})}) for name in names]
    if paper_scale:
        runs += [(name, title, {**_as_overrides(values), **overrides.get(name, {})})
                 for name in names for title, values in getattr(experiment(name), "NAMED_SETS", {}).items()]
    with planning(planner):
        for number, (name, title, own) in enumerate(runs, start=1):
            params = check_parameters(name, {**own, "plan": "true"})
            # a notebook that calls no model (published) has no concurrency of its own
            planner.concurrency = concurrency or getattr(params, "concurrency", planner.concurrency)
            print(f"[{number}/{len(runs)}] plan of {name}{f': {title}' if title else ''} ...", flush=True)
            experiment(name).run(params)
    plan = planner.plan()
    planned = [f"{name}: {title}" if title else name for name, title, _ in runs]
    title = f"{'paper-scale ' if paper_scale else ''}plan of {', '.join(planned)}"
    if len(runs) > 1:
        write_record(PAPER_PLAN, {"notebooks": list(names), "sets": planned, "paper_scale": paper_scale,
                                  **plan.as_dict()})
        print(plan.text(title), flush=True)
        print(f"plan written to {PAPER_PLAN}; nothing was sent", flush=True)
    return plan
