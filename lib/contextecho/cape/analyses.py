"""The CAPE analyses, each a tidy DataFrame from answer rows (see ``administer``).

- :func:`factor_consistency` / :func:`table1`: TAR, ED, TC, OC per factor and setting
  (Table 1). Per factor, run r's three variant trajectories form one triple (stability:
  its three plain runs); the table shows the mean over runs, TAR/TC/OC ×100.
- :func:`table6`: the same metrics per setting alone, the mean over the factors of Table 1's
  values (App. E, Table 6: the reasoning models, one row per setting).
- :func:`metric_correlations`: how the pattern metrics (TC, OC) go with the point-wise
  ones (TAR, ED) over the rows of :func:`factor_consistency` (Table 3).
- :func:`score_differences`: context-dependent minus context-free score per item,
  counted in buckets −4 … 4 (§6.2, Fig. 3a).
- :func:`attack_runs`, :func:`option_frequencies`, :func:`option_shift`: the
  adversarial history attack (§6.3, history replies replaced by option C).
- :func:`ordering_runs`: the question-ordering study (§6.4); profiles via
  ``ocean_profiles(answers, by=["ordering", "run"])``.
- :func:`history_runs`, :func:`history_ablation`: the few-shot history ablation (§6.1).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .administer import SETTINGS, RunSpec
from .consistency import ocean_consistency, trajectory_consistency
from .factors import FACTORS
from .inventory import Inventory
from .metrics import NoComparableItems, pointwise_consistency
from .ordering import order_items
from .profiles import ocean_matrix, trajectory_matrix
from .prompts import LETTERS

METRICS = ("tar", "ed", "tc", "oc")


def consistency_row(answers: pd.DataFrame, run_ids: Sequence[str]) -> dict:
    """TAR, ED, TC, OC of the trajectories of ``run_ids``."""
    scores, _ = trajectory_matrix(answers, run_ids)
    point = pointwise_consistency(scores)
    tc = trajectory_consistency(scores)
    ocean = ocean_matrix(answers, run_ids)
    oc = ocean_consistency(ocean).value if not np.isnan(ocean).any() else float("nan")
    return {"tar": point.tar, "ed": point.ed, "tc": tc.value, "oc": oc,
            "n_items": point.n_items, "n_missing": point.n_missing}


def factor_consistency(answers: pd.DataFrame) -> pd.DataFrame:
    """One row per comparable (setting, factor, run) in ``answers``.

    A triple in which every item is invalid in some run cannot be compared: it gets no
    row and is counted in ``frame.attrs["n_not_comparable"]``. When no triple is
    comparable, :class:`NoComparableItems` is raised.
    """
    rows, not_comparable = [], 0
    for (setting, factor, run), group in answers.groupby(["setting", "factor", "run"], sort=False):
        variants = [v.name for v in FACTORS.get(factor)]
        ids = [group.loc[group["variant"] == v, "run_id"].iloc[0] for v in variants
               if (group["variant"] == v).any()]
        if len(ids) < 2:
            continue
        try:
            metrics = consistency_row(group, ids)
        except NoComparableItems:
            not_comparable += 1
            continue
        rows.append({"setting": setting, "factor": factor, "run": run, "n_variants": len(ids), **metrics})
    if not rows and not_comparable:
        raise NoComparableItems(f"none of {not_comparable} factor triples has an item answered "
                                "validly in every run")
    frame = pd.DataFrame(rows)
    frame.attrs["n_not_comparable"] = not_comparable
    return frame


def table1(consistency: pd.DataFrame) -> pd.DataFrame:
    """Rows: factors; columns: (setting, metric), mean over runs; TAR, TC, OC in %."""
    scaled = consistency.assign(**{m: consistency[m] * 100 for m in ("tar", "tc", "oc")})
    table = scaled.groupby(["factor", "setting"])[list(METRICS)].mean().unstack("setting")
    table = table.swaplevel(axis=1).sort_index(axis=1, level=0, sort_remaining=False)
    order = [f for f in FACTORS if f in table.index]
    present = list(table.columns.get_level_values(0).unique())
    settings = [s for s in SETTINGS if s in present] + [s for s in present if s not in SETTINGS]
    cols = [(s, m) for s in settings for m in METRICS]  # context-free first, as in Table 1
    return table.loc[order, cols]


def table6(consistency: pd.DataFrame) -> pd.DataFrame:
    """Rows: settings (context-free first), a column per metric: the mean over the factors of
    :func:`table1`'s values (each a factor's mean over its runs; TAR, TC, OC in %), as CAPE's
    Table 6 gives one row per setting. A setting no factor measured has no row; a metric no
    factor measured in a setting is NaN."""
    t = table1(consistency)
    return pd.DataFrame([{"setting": s, **{m: t[(s, m)].mean() for m in METRICS}}
                         for s in dict.fromkeys(t.columns.get_level_values(0))], columns=["setting", *METRICS])


#: Table 3's pairs: a pattern metric against a point-wise one.
CORRELATED = (("tc", "tar"), ("tc", "ed"), ("oc", "tar"), ("oc", "ed"))


def metric_correlations(consistency: pd.DataFrame) -> pd.DataFrame:
    """Pearson's r and Spearman's ρ of each pair of :data:`CORRELATED` over the rows of
    ``consistency`` (one per setting, factor and run) where both are defined: pattern, point,
    n, pearson, spearman, and a note where they are undefined (fewer than three rows, or a
    metric constant over them)."""
    rows = []
    for pattern, point in CORRELATED:
        both = consistency[[pattern, point]].dropna() if len(consistency) else pd.DataFrame(columns=[pattern, point])
        why = (f"only {len(both)} condition(s) have both metrics, and a correlation needs three" if len(both) < 3 else
               next((f"{m.upper()} is the same in all {len(both)} conditions" for m in (pattern, point)
                     if both[m].nunique() < 2), ""))
        r, rho = (float("nan"), float("nan")) if why else             (both[pattern].corr(both[point]), both[pattern].corr(both[point], method="spearman"))
        rows.append({"pattern": pattern.upper(), "point": point.upper(), "n": len(both), "pearson": r,
                     "spearman": rho, "note": f"not estimable: {why}" if why else ""})
    return pd.DataFrame(rows)


def score_differences(answers: pd.DataFrame, *, base: str = "context_free",
                      other: str = "context_dependent", by: Sequence[str] = ("run_id",)) -> pd.DataFrame:
    """Counts of (other − base) item scores in buckets −4 … 4, per group of ``by``."""
    keys = list(by) + ["item"]
    a = answers[answers["setting"] == base].set_index(keys)["score"]
    b = answers[answers["setting"] == other].set_index(keys)["score"]
    diff = (b - a).dropna().astype(int).rename("difference").reset_index()
    counts = diff.groupby(list(by) + ["difference"]).size().unstack("difference", fill_value=0)
    counts = counts.reindex(columns=range(-4, 5), fill_value=0)
    counts.columns.name = "difference"
    return counts.reset_index()


def attack_runs(runs: Iterable[RunSpec], letter: str = "C") -> list[RunSpec]:
    """The runs with every history reply replaced by ``letter`` (run ids get a suffix)."""
    return [replace(r, run_id=f"{r.run_id}/attack_{letter}", history_letter=letter,
                    labels={**r.labels, "attack": letter}) for r in runs]


def option_frequencies(answers: pd.DataFrame, by: Sequence[str] = ("run_id",)) -> pd.DataFrame:
    """Per group: how often each option A–E was chosen, and how many answers were invalid."""
    by = list(by)
    counts = answers.assign(option=answers["answer"].fillna("invalid")).groupby(
        by + ["option"]).size().unstack("option", fill_value=0)
    counts = counts.reindex(columns=list(LETTERS) + ["invalid"], fill_value=0)
    counts.columns.name = None
    return counts.reset_index()


def option_shift(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Option counts before and after the attack (summed over runs), and the change."""
    b = option_frequencies(before.assign(_all=1), by=["_all"]).drop(columns="_all").iloc[0]
    a = option_frequencies(after.assign(_all=1), by=["_all"]).drop(columns="_all").iloc[0]
    return pd.DataFrame({"option": b.index, "before": b.to_numpy(), "after": a.to_numpy(),
                         "change": (a - b).to_numpy()})


def ordering_runs(inventory: Inventory, rng: np.random.Generator,
                  orderings: Sequence[str] = ("random", "trait_grouped", "cyclic"),
                  n_runs: int = 1, **run_kwargs) -> list[RunSpec]:
    """One run per (ordering, run); ``rng`` draws the random order (seed it explicitly)."""
    runs = []
    for name in orderings:
        items = order_items(inventory, name, rng).items
        for r in range(n_runs):
            runs.append(RunSpec(run_id=f"ordering/{name}/r{r + 1}", items=items, replicate=r,
                                labels={"ordering": name, "run": r + 1}, **run_kwargs))
    return runs


def history_runs(inventory: Inventory, history_pairs: Sequence[int | None], **run_kwargs) -> dict:
    """One run per history length k (administer each with ``history_pairs=k``); returns {k: [RunSpec]}."""
    return {k: [RunSpec(run_id=f"history_pairs/{'full' if k is None else k}", items=inventory.items,
                        labels={"history_pairs": "full" if k is None else k}, **run_kwargs)]
            for k in history_pairs}


def history_ablation(answers_by_history: dict, reference=None) -> pd.DataFrame:
    """Each history length's trajectory against the reference (default: full history, ``None``).

    ``answers_by_history`` maps k → answer rows of one run administered with ``history_pairs=k``.
    A length whose run and the reference share no validly answered item has NaN values and a
    ``note`` that says so (empty where estimated).
    """
    ref = answers_by_history[reference]
    rows = []
    for k, answers in answers_by_history.items():
        both = pd.concat([ref.assign(run_id="__ref"), answers.assign(run_id="__k")])
        scores, _ = trajectory_matrix(both, ["__ref", "__k"])
        row = {"history_pairs": "full" if k is None else k}
        try:
            point = pointwise_consistency(scores)
        except NoComparableItems as exc:
            rows.append({**row, "agreement": np.nan, "mean_abs_difference": np.nan, "tc": np.nan, "n_items": 0,
                         "note": f"not estimable: {exc} (this length's run and the full history's)"})
            continue
        rows.append({**row, "agreement": point.tar, "mean_abs_difference": point.ed,
                     "tc": trajectory_consistency(scores).value, "n_items": point.n_items, "note": ""})
    return pd.DataFrame(rows)
