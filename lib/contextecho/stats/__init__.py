"""Statistics for ContextEcho: drift gaps, clustered bootstrap CIs, paired tests,
Holm, equivalence (TOST), variance decomposition, judge agreement, attrition.

Every analysis returns a frozen record (``records.py``) with ``to_dict()``; every
random step takes an int seed or a ``numpy.random.Generator``; degenerate inputs raise
a named :class:`StatsInputError` subclass or return a documented result, never NaN.
"""
from .agreement import direction_agreement, judge_agreement, score_agreement
from .attrition import attrition_contrast
from .bootstrap import bootstrap_mean, run_bootstrap
from .drift import drift_gap, drift_gap_table
from .equivalence import (COMPACTION_MARGIN, equivalence_bootstrap, tost_independent,
                          tost_paired)
from .errors import (DegenerateDataError, EmptyArmError, InvalidScoreError,
                     MissingColumnError, StatsInputError, TooFewClustersError)
from .judge_free import compliance_gap, log_verbosity_ratios, verbosity_ratio
from .multiple import holm
from .paired import arm_pairs, paired_contrast
from .permutation import sign_flip_test, wilcoxon_test
from .records import (AttritionReport, BootstrapEstimate, DirectionAgreement, DriftGap,
                      EquivalenceResult, HolmResult, JudgeAgreement, PairedContrast,
                      PermutationTest, RatioEstimate, Record, VarianceDecomposition)
from .resampling import Resampling
from .variance import variance_decomposition

__all__ = [
    "AttritionReport", "BootstrapEstimate", "COMPACTION_MARGIN", "DegenerateDataError",
    "DirectionAgreement", "DriftGap", "EmptyArmError", "EquivalenceResult", "HolmResult",
    "InvalidScoreError", "JudgeAgreement", "MissingColumnError", "PairedContrast",
    "PermutationTest", "RatioEstimate", "Record", "Resampling", "StatsInputError",
    "TooFewClustersError", "VarianceDecomposition", "arm_pairs", "attrition_contrast",
    "bootstrap_mean", "compliance_gap", "direction_agreement", "drift_gap",
    "drift_gap_table", "equivalence_bootstrap", "holm", "judge_agreement", "score_agreement",
    "log_verbosity_ratios", "paired_contrast", "run_bootstrap", "sign_flip_test",
    "tost_independent", "tost_paired", "variance_decomposition", "verbosity_ratio",
    "wilcoxon_test",
]
