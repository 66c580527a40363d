"""What each of the harness's anchored runners asks (its e04 family, and e15's 12-position A arm).

Every one of them asks the real prefix only (no filler arm) at its positions, one anchor
(:mod:`.anchors`) before every item, items in the harness's order, one target at a time:

========================================  ======  ============  ==========================================
runner                                    items   provider      anchors (from the runner's environment)
========================================  ======  ============  ==========================================
``e04 run_anchor_variants.py``            S2      anthropic     V0-V3, in ``VARIANTS`` order
``e04 run_a_stressors_xtarget.py``        S2      ``PROVIDER``  A_COMBINED
``e04 run_a_probes_xtarget.py``           probes  ``PROVIDER``  A_COMBINED
``e04 run_placement_ablation.py``         probes  anthropic     PLACEMENT_V3 (model: ``TARGET``)
``e04 run_anchor_size_sweep.py``          probes  ``PROVIDER``  A_<SIZE>, at P5_pre_C6 only
``e04 run_anchor_decay.py``               probes  anthropic     A_COMBINED+n per ``N_OFFSETS``, at P5_pre_C6
``e15 run_12pos_with_a.py`` (its A arm)   probes  anthropic     A_COMBINED_E15
``e08 run.py`` (the no-anchor baseline)   S2      anthropic     none, real and filler arms
========================================  ======  ============  ==========================================

The harness files a cell under the anchor's own name for the variants, ``A_COMBINED`` for
candidate A, ``V3_SYSTEM_INJECT`` for the placement ablation, ``SIZE`` for a size and the
folder ``N%02d`` for a decay offset (:func:`harness_arm`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ...engine.registry import Registry
from .anchors import (A_COMBINED, A_COMBINED_E15, DECAY_OFFSETS, DECAY_PREFIX, PLACEMENT, SIZE_PREFIX, SIZES,
                      VARIANTS, size_name)

ANTHROPIC = "anthropic"
#: The runners whose position is hard-coded: the late one.
LATE = "P5_pre_C6"
S2_ITEMS = "S2"
PROBE_ITEMS = "probes"
E04 = "experiments/e04_path_y/"
#: The family's baseline runner asks no anchor.
NO_ANCHOR = "none"


@dataclass(frozen=True)
class AnchorRunner:
    """One anchored runner (module doc): ``anchors(env)`` the anchors it asks in its order,
    ``items`` S2 or probes, ``provider`` its hard-coded provider (``None``: env ``PROVIDER``),
    ``model_env`` the environment variable naming its model (``None``: its ``TARGETS`` list),
    ``position`` its one hard-coded position label (``None``: its ``POSITIONS``)."""

    runner: str
    items: str
    anchors: Callable[[Mapping[str, str]], tuple[str, ...]]
    provider: str | None = None
    model_env: str | None = "MODEL_ID"
    position: str | None = None
    arms: tuple[str, ...] = ("real",)


def decay_offsets(env: Mapping[str, str | None]) -> tuple[int, ...]:
    """run_anchor_decay.py's ``N_OFFSETS``: the environment's comma list, else its default."""
    given = env.get("N_OFFSETS") or ""
    return tuple(int(x) for x in given.split(",") if x.strip()) if given else DECAY_OFFSETS


ANCHOR_RUNNERS: Registry[AnchorRunner] = Registry("anchored harness runner", keep_order=True)
for _r in (
        AnchorRunner(E04 + "run_anchor_variants.py", S2_ITEMS, lambda env: tuple(v.name for v in VARIANTS),
                     ANTHROPIC, None),
        AnchorRunner(E04 + "run_a_stressors_xtarget.py", S2_ITEMS, lambda env: (A_COMBINED.name,)),
        AnchorRunner(E04 + "run_a_probes_xtarget.py", PROBE_ITEMS, lambda env: (A_COMBINED.name,)),
        AnchorRunner(E04 + "run_placement_ablation.py", PROBE_ITEMS, lambda env: (PLACEMENT.name,), ANTHROPIC,
                     "TARGET"),
        AnchorRunner(E04 + "run_anchor_size_sweep.py", PROBE_ITEMS, lambda env: (size_name(env["SIZE"]),),
                     position=LATE),
        AnchorRunner(E04 + "run_anchor_decay.py", PROBE_ITEMS,
                     lambda env: tuple(f"{DECAY_PREFIX}{n}" for n in decay_offsets(env)), ANTHROPIC, "TARGET", LATE),
        AnchorRunner("experiments/e15_probes_at_crosscompaction/run_12pos_with_a.py", PROBE_ITEMS,
                     lambda env: (A_COMBINED_E15.name,), ANTHROPIC, None),
        AnchorRunner("experiments/e08_cross_compaction/run.py", S2_ITEMS, lambda env: (NO_ANCHOR,), ANTHROPIC, None,
                     arms=("real", "filler"))):
    ANCHOR_RUNNERS.add(_r.runner, _r)


def anchor_runner(runner: str) -> AnchorRunner | None:
    """The anchored runner at harness path ``runner``, if it is one."""
    return ANCHOR_RUNNERS.get(runner) if runner in ANCHOR_RUNNERS else None


def decay_offset(anchor: str) -> int | None:
    """The offset of decay's anchor ``A_COMBINED+<n>``; None for another anchor."""
    rest = anchor[len(DECAY_PREFIX):] if anchor.startswith(DECAY_PREFIX) else ""
    return int(rest) if rest.isdigit() else None


def anchor_size(anchor: str) -> str | None:
    """The size sweep's ``SIZE`` of anchor ``A_SMALL`` ...; None for another anchor."""
    return next((size for size in SIZES if size_name(size) == anchor), None) if anchor.startswith(SIZE_PREFIX) \
        else None


def harness_arm(anchor: str) -> str:
    """The name the harness files an anchored cell under (module doc)."""
    if (n := decay_offset(anchor)) is not None:
        return f"N{n:02d}"
    if (size := anchor_size(anchor)) is not None:
        return size
    return {A_COMBINED_E15.name: A_COMBINED.name, PLACEMENT.name: VARIANTS[3].name}.get(anchor, anchor)
