"""The sensitivity factors (CAPE §3.1): 3 variants each, 3 runs per variant.

=================  =============================================================
factor             variants
=================  =============================================================
stability          three plain runs (paper prompt, paper options, temperature 0)
temperature        0.5, 1.0, 1.5 (paper prompt and options)
option_wording     Wording 1, 2, 3 of Appendix D
option_order       original (A–E), reversed (E–A), random (C B E A D), Wording 1
instruction        Instruction 1, 2, 3 of Appendix D, Wording 1 in original order
paraphrasing       the original item, paraphrase 1, paraphrase 2 (paper prompt)
=================  =============================================================

Our reading where the paper leaves a choice open: the option wording and order
variants are slotted into the paper's main prompt ("This instruction can be treated
as a function that accepts {Item} and an option (A–E)", Appendix D); the order and
instruction variants list Wording 1, which is how Appendix D writes them.

Replicates: runs of different variants are independent calls anyway (their requests
differ); within a variant, run r is replicate r. Stability's three variants are the
same request, so its variant v, run r is replicate 3v + r — and stability's first
variant shares its calls with the original-item variant of paraphrasing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..engine.registry import Registry
from ..engine.usage import UsageError
from .administer import DEFAULT_PARAMS, RunSpec
from .inventory import Inventory
from .prompts import (INSTRUCTION_1, INSTRUCTION_2, INSTRUCTION_3, ORDERS, PAPER_INSTRUCTION,
                      PAPER_OPTIONS, WORDING_1, WORDING_2, WORDING_3, Instruction, Options)

ORIGINAL = "original"


@dataclass(frozen=True)
class Variant:
    name: str
    instruction: Instruction = PAPER_INSTRUCTION
    options: Options = PAPER_OPTIONS
    temperature: float = 0.0
    text_version: str = ORIGINAL  # "original" or "paraphrase_1" / "paraphrase_2"


FACTORS: Registry[tuple[Variant, Variant, Variant]] = Registry("factor", keep_order=True)
FACTORS.add("stability", tuple(Variant(f"plain_{k}") for k in (1, 2, 3)))
FACTORS.add("temperature", tuple(Variant(f"t{t}", temperature=t) for t in (0.5, 1.0, 1.5)))
FACTORS.add("option_wording", tuple(Variant(o.name, options=o) for o in (WORDING_1, WORDING_2, WORDING_3)))
FACTORS.add("option_order", tuple(Variant(name, options=WORDING_1.reordered(order, f"wording_1/{name}"))
                                  for name, order in ORDERS.items()))
FACTORS.add("instruction", tuple(Variant(i.name, instruction=i, options=WORDING_1)
                                 for i in (INSTRUCTION_1, INSTRUCTION_2, INSTRUCTION_3)))
FACTORS.add("paraphrasing", (Variant(ORIGINAL), Variant("paraphrase_1", text_version="paraphrase_1"),
                             Variant("paraphrase_2", text_version="paraphrase_2")))


class MissingParaphrases(UsageError, ValueError):
    """The paraphrasing factor was asked for without a paraphrase for every item."""


def factor_runs(factor: str, inventory: Inventory, *, n_runs: int = 3,
                paraphrases: Mapping[int, tuple[str, ...]] | None = None,
                params: Mapping[str, Any] = DEFAULT_PARAMS, prefix: tuple[dict, ...] = (),
                labels: Mapping[str, Any] | None = None) -> list[RunSpec]:
    """The runs of one factor, items in the inventory's order.

    ``paraphrases`` maps item index → (paraphrase 1, paraphrase 2); needed only for
    ``paraphrasing`` (see :mod:`.paraphrase`). ``params`` are the sampling parameters
    of every run; the temperature factor overrides only ``temperature``.
    """
    variants = FACTORS.get(factor)  # an unknown name raises, listing the factors
    runs = []
    for v, variant in enumerate(variants):
        texts = _texts(variant, inventory, paraphrases)
        run_params = {**params, "temperature": variant.temperature}
        for r in range(n_runs):
            replicate = v * n_runs + r if factor == "stability" else r
            runs.append(RunSpec(
                run_id=f"{factor}/{variant.name}/r{r + 1}", items=inventory.items,
                instruction=variant.instruction, options=variant.options, params=run_params,
                replicate=replicate, item_texts=texts, prefix=prefix,
                labels={**(labels or {}), "factor": factor, "variant": variant.name, "run": r + 1}))
    return runs


def _texts(variant: Variant, inventory: Inventory,
           paraphrases: Mapping[int, tuple[str, ...]] | None) -> dict[int, str] | None:
    if variant.text_version == ORIGINAL:
        return None
    k = int(variant.text_version.rsplit("_", 1)[1]) - 1
    missing = [i.index for i in inventory.items
               if not paraphrases or i.index not in paraphrases
               or len(paraphrases[i.index]) <= k or not paraphrases[i.index][k]]
    if missing:
        raise MissingParaphrases(
            f"{len(missing)} item(s) lack {variant.text_version} (e.g. items {missing[:5]}); "
            "generate and review them with contextecho.cape.paraphrase first")
    return {i.index: paraphrases[i.index][k] for i in inventory.items}
