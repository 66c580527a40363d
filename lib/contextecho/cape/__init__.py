"""CAPE: context-aware personality evaluation (MPI-120; TAR, ED, TC, OC; five factors).

    from contextecho.cape import (load_inventory, factor_runs, administer, factor_consistency,
                                  table1, CONTEXT_FREE, CONTEXT_DEPENDENT)
    inv = load_inventory("mpi_120")
    runs = [r for f in ("stability", "temperature") for r in factor_runs(f, inv)]
    answers = pd.concat([administer(runs, model, setting=s).answers
                         for s in (CONTEXT_FREE, CONTEXT_DEPENDENT)])
    table1(factor_consistency(answers))

Spec: ``shared/seeds/003_3df89b0edf37349e.txt``; each module says what is verbatim
from it and what is our reading.
"""
from .administer import (CONTEXT_DEPENDENT, CONTEXT_FREE, DEFAULT_PARAMS, LOCAL_HISTORY_PAIRS,
                         Administration, RunSpec, administer, answer_counts, default_history_pairs)
from .analyses import (attack_runs, consistency_row, factor_consistency, option_frequencies, option_shift,
                       ordering_runs, score_differences, table1, history_ablation, history_runs)
from .bridge import PrefixProvider, bridge_runs, bridge_summary, session_prefix_provider
from .consistency import TrajectoryConsistency, ocean_consistency, ocean_series, trajectory_consistency
from .factors import FACTORS, MissingParaphrases, Variant, factor_runs
from .inventory import TRAITS, Inventory, InventoryItem, InventoryNotFound, load_inventory
from .metrics import NoComparableItems, PointwiseConsistency, euclidean_distance, pointwise_consistency, total_agreement_rate
from .ordering import ORDERINGS, order_items
from .paraphrase import generate_paraphrases, load_paraphrases, paraphrase_path, write_paraphrases
from .parsing import ParsedAnswer, item_score, parse_answer
from .profiles import ocean_matrix, ocean_profiles, trajectory_matrix
from .prompts import ORDERS, Instruction, Options, render_question

__all__ = [
    "load_inventory", "Inventory", "InventoryItem", "InventoryNotFound", "TRAITS", "order_items", "ORDERINGS",
    "render_question", "Instruction", "Options", "ORDERS",
    "parse_answer", "ParsedAnswer", "item_score",
    "RunSpec", "administer", "answer_counts", "Administration", "CONTEXT_FREE", "CONTEXT_DEPENDENT", "DEFAULT_PARAMS",
    "LOCAL_HISTORY_PAIRS", "default_history_pairs",
    "FACTORS", "Variant", "factor_runs", "MissingParaphrases",
    "NoComparableItems", "total_agreement_rate", "euclidean_distance", "pointwise_consistency", "PointwiseConsistency",
    "trajectory_consistency", "ocean_consistency", "ocean_series", "TrajectoryConsistency",
    "trajectory_matrix", "ocean_profiles", "ocean_matrix",
    "consistency_row", "factor_consistency", "table1", "score_differences", "attack_runs",
    "option_frequencies", "option_shift", "ordering_runs", "history_runs", "history_ablation",
    "bridge_runs", "bridge_summary", "session_prefix_provider", "PrefixProvider",
    "generate_paraphrases", "load_paraphrases", "write_paraphrases", "paraphrase_path",
]
