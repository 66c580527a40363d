"""The plan of one notebook or of the whole paper, before any call (``--plan``).

Each notebook's experiment runs in-process in plan mode (``plan=True``: its stages run as
the notebook runs them, nothing is sent, the outputs stay as they are;
:mod:`contextecho.engine.plan`), every notebook under ONE planner, so a request one
notebook plans counts as cached for the next, as the shared cache answers it in a real
``make paper``. Each notebook leaves its plan in its folder (``plan.json``), which its
next real run records beside what it actually called; the paper's plan is printed and
written to ``paper/_generated/plan.json``.

``paper_scale``: each notebook at its documented ``PAPER_SCALE`` (the provider models and
sizes of the paper), the set the README's paper-scale plan is generated from.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..engine.manifest import write_record
from ..engine.plan import Plan, Planner, planning
from ..paper.outputs import GENERATED
from .build import experiment
from .runner import check_parameters

PAPER_PLAN = GENERATED / "plan.json"


def scale_overrides(name: str, paper_scale: bool) -> dict[str, Any]:
    """The overrides that put notebook ``name`` at the paper's scale (none without ``paper_scale``)."""
    if not paper_scale:
        return {}
    return {k: ",".join(map(str, v)) if isinstance(v, tuple) else v
            for k, v in getattr(experiment(name), "PAPER_SCALE", {}).items()}


def plan_notebooks(names: Sequence[str], overrides: Mapping[str, Mapping[str, Any]] | None = None, *,
                   paper_scale: bool = False, concurrency: int | None = None) -> Plan:
    """Plan ``names`` in order (each with its ``overrides``, checked as a run checks them) under
    one planner; every notebook's plan is printed as it is made, then the total."""
    overrides = overrides or {}
    planner = Planner()
    with planning(planner):
        for number, name in enumerate(names, start=1):
            own = {**scale_overrides(name, paper_scale), **overrides.get(name, {}), "plan": "true"}
            params = check_parameters(name, own)
            planner.concurrency = concurrency or params.concurrency
            print(f"[{number}/{len(names)}] plan of {name} ...", flush=True)
            experiment(name).run(params)
    plan = planner.plan()
    title = f"{'paper-scale ' if paper_scale else ''}plan of {', '.join(names)}"
    if len(names) > 1:
        write_record(PAPER_PLAN, {"notebooks": list(names), "paper_scale": paper_scale, **plan.as_dict()})
        print(plan.text(title), flush=True)
        print(f"plan written to {PAPER_PLAN}; nothing was sent", flush=True)
    return plan
