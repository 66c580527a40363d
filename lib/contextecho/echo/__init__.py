"""The measuring devices of ContextEcho: arms, probes, stressors and contracts, scorers,
interventions, the judge and the fingerprint — registered by name, versioned, hashed.

    from contextecho.echo import build_cells, run_cells
    from contextecho.echo.protocols import protocol
    cells = build_cells("panel", "local/smollm2-135m", sessions, positions="uniform", k=3,
                        arms=["real", "filler"], interventions=["none", "a_anchor"],
                        items=["coding_self", "S2"], window=12_000,
                        params={"temperature": 0, "max_tokens": 64})
    frame = run_cells(cells, judges=["local/smollm2-135m"], protocol=protocol("contextecho"))
"""
from .arms import ARMS, ArmContext, ArmPrefix, Insertion, make_prefix, INSTRUMENT_SEED
from .cells import Cell, build_cells
from .contracts import HARDENED, Contract
from .fingerprint import FEATURES, Projection, fingerprint, fingerprint_frame, fit_pca, project
from .interventions import INTERVENTIONS, InterventionContext, intervene, opening_goal
from .items import Item, resolve_items
from .judge import judge_request, parse_verdict
from .protocol import Verdict
from .probes import PROBE_FRAMING, PROBES, probe_message
from .rubric import RUBRIC, Rubric
from .runner import run_cells, verdict_counts
from .scorers import SCORERS, Score, is_no_preamble, score
from .stressors import STRESSORS
from .versions import instrument_versions

__all__ = [
    "build_cells", "run_cells", "verdict_counts", "Cell", "instrument_versions",
    "ARMS", "INTERVENTIONS", "SCORERS", "ArmContext", "ArmPrefix", "Insertion", "make_prefix",
    "InterventionContext", "intervene", "opening_goal", "Item", "resolve_items",
    "PROBES", "PROBE_FRAMING", "probe_message", "STRESSORS", "HARDENED", "Contract",
    "Score", "score", "is_no_preamble", "RUBRIC", "Rubric", "Verdict", "parse_verdict",
    "judge_request", "fingerprint", "fingerprint_frame", "fit_pca", "project", "Projection",
    "FEATURES",
    "INSTRUMENT_SEED",
]
