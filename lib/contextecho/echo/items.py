"""Items: what a cell asks after the prefix — a probe, a stressor wording or a contract.

:func:`resolve_items` turns notebook-friendly names into :class:`Item` records:

- a probe id (``"C01"``) or a battery (``"coding_self"``, ``"all"``, ``"identity"``, ...);
- a stressor (``"S2"``: all ten wordings) or one wording (``"S2#03"``);
- a hardened contract (``"C1_csv"``) or ``"hardened"`` (all four).

Probes are asked with the framing prompt (or bare); the judge scores them. Stressors and
contracts are sent as they are and scored by their deterministic scorer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from . import contracts, probes, stressors
from .contracts import Contract
from ..engine.registry import UnknownNameError

PROBE, STRESSOR, CONTRACT = "probe", "stressor", "contract"
JUDGE = "judge"


@dataclass(frozen=True)
class Item:
    id: str
    kind: str  # probe | stressor | contract
    group: str  # probe category, stressor name ("S2") or contract id
    message: str  # the user message sent after the prefix
    scorer: str  # "judge" for probes, else a name in scorers.SCORERS
    probe_text: str | None = None  # the bare probe (all the judge sees besides the response)
    framing: str | None = None
    contract: Contract | None = None


def probe_item(p: probes.Probe, framing: str = "framed") -> Item:
    return Item(p.id, PROBE, p.category, probes.probe_message(p, framing), JUDGE, p.text, framing)


def contract_item(c: Contract) -> Item:
    kind = STRESSOR if c.family == "stressor" else CONTRACT
    return Item(c.id, kind, c.base, c.instruction, c.scorer, contract=c)


def valid_names() -> list[str]:
    return (sorted(probes.BATTERIES) + sorted(probes.BY_ID) + sorted(stressors.STRESSORS)
            + sorted(stressors.BY_ID) + ["hardened"] + sorted(contracts.BY_ID))


def resolve_items(names: Iterable[str] | str, framing: str = "framed") -> tuple[Item, ...]:
    """Items for ``names`` in the order given, without duplicates."""
    if isinstance(names, str):
        names = [names]
    out: dict[str, Item] = {}
    for name in names:
        if name in probes.BATTERIES:
            found = [probe_item(p, framing) for p in probes.battery(name)]
        elif name in probes.BY_ID:
            found = [probe_item(probes.BY_ID[name], framing)]
        elif name in stressors.STRESSORS:
            found = [contract_item(c) for c in stressors.STRESSORS[name]]
        elif name == "hardened":
            found = [contract_item(c) for c in contracts.HARDENED]
        elif name in stressors.BY_ID or name in contracts.BY_ID:
            found = [contract_item(stressors.contract(name))]
        else:
            raise UnknownNameError("item", name, valid_names())
        for item in found:
            out.setdefault(item.id, item)
    return tuple(out.values())
