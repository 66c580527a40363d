"""The anchor notebook's Persona Retention section: administer, tabulate, plot."""
from __future__ import annotations

import pandas as pd

from ..anchor.persona import PersonaCard
from ..anchor.retention.runs import retention_runs, retention_table
from ..engine.cache import CallCache
from ..cape.administer import CONTEXT_FREE, ANSWERS, RunSpec, administer, answer_counts, chosen_answers
from ..cape.inventory import TRAITS, load_inventory, Inventory
from ..echo.arms import matched_filler
from .spine import Run

FACETS = ("trait", "ipip")  # retention per OCEAN trait, or per IPIP facet of the inventory


def questionnaire_runs(card: PersonaCard, inventory: Inventory, sessions, *, params: dict | None = None,
                       **layout) -> list[RunSpec]:
    """CAPE's runs of the retention design: ``inventory`` asked after each of ANCHOR's retention
    prefixes (``layout``: checkpoints, window, arms, n_runs of ``retention_runs``)."""
    extra = {"params": dict(params)} if params is not None else {}
    return [RunSpec(run_id=run.run_id, items=inventory.items, prefix=run.prefix, replicate=run.replicate,
                    labels=run.labels, **extra)
            for run in retention_runs(card, sessions, filler=matched_filler, **layout)]


def run_retention(run: Run, cache: CallCache, card: PersonaCard, *, target: str, inventory: str, n_items: int,
                  checkpoints: int, window: int, n_runs: int, params: dict, facets: str = "trait",
                  answer: str = "text") -> tuple[pd.DataFrame, pd.DataFrame]:
    """``target``'s answers and per-facet retention table (sessions relabelled S1..Sn), each
    row naming the target (a batch of several targets adds up in the run log); ``facets`` is
    ``trait`` (OCEAN) or ``ipip`` (the inventory's facet labels). Every answer's option
    distribution is read too (constrained answers); ``answer`` picks which the table uses:
    ``text`` (the parsed reply) or ``constrained`` (the most probable option letter). The
    answers frame keeps the text ones with ``agrees`` comparing the two."""
    if facets not in FACETS:
        raise ValueError(f"facets must be one of {FACETS}, got {facets!r}")
    if answer not in ANSWERS:
        raise ValueError(f"answer must be one of {ANSWERS}, got {answer!r}")
    items = load_inventory(inventory).balanced(n_items)
    runs = questionnaire_runs(card, items, run.sessions, checkpoints=checkpoints, window=window, n_runs=n_runs,
                              params=params)
    answers = administer(runs, target, setting=CONTEXT_FREE, cache=cache, transport=run.transport, progress=True,
                         name="anchor:retention", constrained=True).answers
    answers["session"] = answers["session"].map(lambda s: run.labels.get(s, s))
    run.batch("anchor:retention", answer_counts(answers))
    table = retention_table(chosen_answers(answers, answer), items.ipip_facets() if facets == "ipip" else None)
    return answers.assign(target=target), table.assign(target=target)


def retention_by_checkpoint(table: pd.DataFrame) -> pd.DataFrame:
    """Mean R over sessions per (target, arm, checkpoint, facet), with how many sessions were defined."""
    grouped = table.groupby(["target", "arm", "checkpoint", "facet"])
    summary = grouped["retention"].agg(["mean", "count"]).rename(columns={"mean": "retention", "count": "n_defined"})
    summary["n_sessions"] = grouped.size()
    return summary.reset_index()


def retention_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The manuscript's table: one row per target, arm, checkpoint and facet (facets in
    :func:`ordered_facets` order), whatever the facets (five traits or thirty IPIP facets)."""
    if not len(summary):
        return summary
    rank = {f: k for k, f in enumerate(ordered_facets(set(summary["facet"])))}
    return summary.sort_values(["target", "arm", "checkpoint", "facet"], key=lambda c: c.map(rank) if c.name == "facet" else c,
                               kind="stable").reset_index(drop=True)


def ordered_facets(facets) -> list[str]:
    """OCEAN order for traits; IPIP facets ("C:Orderliness") by trait, then by name."""
    rank = {t: k for k, t in enumerate(TRAITS)}
    return sorted(facets, key=lambda f: (rank.get(f.split(":")[0], len(rank)), f))
