"""Reliability of the questionnaire (CAPE Table 4): Cronbach's α per trait, and test–retest.

Cronbach's α of one trait, from one setting's answers: the *respondents* are the runs (each
a full pass through the items, whatever its factor and variant), the *items* the trait's
items, each cell an item score (1–5, reverse keys already applied)::

    α = k / (k − 1) · (1 − Σ_i var(item_i) / var(total)),   total = Σ_i item_i per run,

sample variances (``ddof=1``), as ``pingouin.cronbach_alpha`` computes it; a run with an
invalid answer to one of the trait's items is left out for that trait (pingouin's
``nan_policy="listwise"``). α is undefined with fewer than two items or two complete runs,
or when every run gave the trait the same total (no variance: what a greedy model does when
it is asked the same prompts), and then says so.

Test–retest: Pearson's r of the item scores of two runs of the same items in the same order
and wording (the stability factor's first two runs), per setting, over the items both
answered; undefined without two such runs or where a run answered every item alike.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .inventory import TRAITS

RETEST_FACTOR = "stability"
#: Why test–retest is undefined without two runs of the same items, and what it needs.
NO_RETEST = "no two runs of the same items were asked"
RETEST_NEEDS = f"the {RETEST_FACTOR} factor, which asks the same items three times,"


def cronbach_alpha(scores: pd.DataFrame) -> tuple[float, str]:
    """α of ``scores`` (rows: respondents, columns: items; module doc), and why it is
    undefined (``""`` where it is not)."""
    complete = scores.dropna()
    k, n = complete.shape[1], complete.shape[0]
    if k < 2:
        return float("nan"), f"only {k} item(s), and α needs two"
    if n < 2:
        return float("nan"), f"only {n} run(s) answered every item validly, and α needs two"
    total = complete.sum(axis=1).var(ddof=1)
    if total == 0:
        return float("nan"), f"all {n} runs gave the same total score, so there is no variance to explain"
    return float(k / (k - 1) * (1 - complete.var(ddof=1).sum() / total)), ""


def trait_alphas(answers: pd.DataFrame, setting: str) -> pd.DataFrame:
    """Cronbach's α per trait from ``setting``'s answers: trait, items, runs (complete ones),
    alpha, and a note where α is undefined."""
    asked = answers[answers["setting"] == setting]
    rows = []
    for trait in TRAITS:
        scores = asked[asked["trait"] == trait].pivot(index="run_id", columns="item", values="score")
        alpha, why = cronbach_alpha(scores)
        rows.append({"trait": trait, "n_items": scores.shape[1], "n_runs": len(scores.dropna()), "alpha": alpha,
                     "note": f"not estimable: {why}" if why else ""})
    return pd.DataFrame(rows)


def _retest_pairs(answers: pd.DataFrame, setting: str) -> pd.DataFrame | None:
    """The item scores of the stability factor's first two runs in ``setting``, one column per
    run, the items both answered validly; None without two such runs."""
    asked = answers[(answers["setting"] == setting) & (answers["factor"] == RETEST_FACTOR)] \
        if "factor" in answers.columns else answers.iloc[:0]
    runs = list(dict.fromkeys(asked["run_id"]))[:2]
    if len(runs) < 2:
        return None
    return asked.pivot(index="item", columns="run_id", values="score")[runs].dropna()


def retest_identical(answers: pd.DataFrame, setting: str) -> bool:
    """Whether the two test–retest runs in ``setting`` gave every item they both answered the
    same score (an r of 1 that shows repeatable decoding, not a reliability across occasions:
    the same requests at temperature 0 to a model that decodes greedily)."""
    pairs = _retest_pairs(answers, setting)
    return pairs is not None and len(pairs) > 0 and bool((pairs.iloc[:, 0] == pairs.iloc[:, 1]).all())


def retest_correlation(answers: pd.DataFrame, setting: str) -> tuple[float, int, str]:
    """Pearson's r of the stability factor's first two runs in ``setting`` (module doc), the
    items compared, and why it is undefined (``""`` where it is not)."""
    pairs = _retest_pairs(answers, setting)
    if pairs is None:
        return float("nan"), 0, NO_RETEST
    runs = list(pairs.columns)
    if len(pairs) < 3:
        return float("nan"), len(pairs), f"only {len(pairs)} item(s) answered validly in both runs, and r needs three"
    if (pairs.std(ddof=0) == 0).any():
        return float("nan"), len(pairs), "a run gave every item the same score, so r is undefined"
    return float(np.corrcoef(pairs[runs[0]], pairs[runs[1]])[0, 1]), len(pairs), ""
