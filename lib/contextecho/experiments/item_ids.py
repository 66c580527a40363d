"""The item names a notebook parameter may list: probes, stressors, contracts (see
:func:`~contextecho.echo.items.resolve_items`), questionnaire inventories, and which
answer a questionnaire analysis reads."""
from __future__ import annotations

from ..cape.administer import ANSWERS
from ..cape.inventory import inventory_names
from ..echo import contracts, probes, stressors
from ..echo.reference import negative_controls
from .parameters import OneOf

#: Our probes and batteries, and the harness's negative controls (asked under ``reference``).
PROBE_IDS = OneOf(lambda: sorted(probes.BATTERIES) + sorted(probes.BY_ID) + [negative_controls.ITEM_SET]
                  + sorted(negative_controls.BY_ID), "probe id or battery")
STRESSOR_IDS = OneOf(lambda: sorted(stressors.STRESSORS) + sorted(stressors.BY_ID), "stressor or wording id")
CONTRACT_IDS = OneOf(lambda: sorted(stressors.STRESSORS) + sorted(stressors.BY_ID) + ["hardened"]
                     + sorted(contracts.BY_ID), "stressor, wording or contract id")
INVENTORIES = OneOf(inventory_names, "inventory", files=".csv")
ANSWER_KINDS = OneOf(ANSWERS, "answer")
