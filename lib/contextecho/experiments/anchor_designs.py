"""The harness's e04 A-anchor family under the ``reference`` protocol: its cells and its tables.

The harness (Accenture/ContextEcho) tests anchors on its own prefix (one rendered user blob):
candidate A (``A_COMBINED``) before the S2 paraphrases and the coding probes, the variants
V0-V3 on S2, the placement ablation, the anchor's size and its decay
(:mod:`contextecho.echo.reference.anchors` holds the instruments,
:mod:`contextecho.echo.reference.anchor_runners` what each runner asks). Here:

* :func:`anchored_cells`: a runner's cells, built by :func:`.selection.build` with the
  anchor as the grid's intervention (the real prefix only), run by
  :func:`.spine.run_grid` like any grid;
* the tables its analysis and plotting scripts compute from the stored cells, from our
  frames: :func:`variant_results` (``analyze_anchor_variants.py``; the V2 trajectory of
  ``analyze_v2_full_trajectory.py`` is the same ratio), :func:`stressor_forest_rows`
  (``fig_forest_stressors.py``, with the anchor arm), :func:`size_means`
  (``fig_app_anchor_size.py``), :func:`decay_curve` (``fig_app_anchor_decay.py``).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..echo.protocol import Positions, Protocol
from ..sessions.model import Session
from ..sessions.positions import Position
from .selection import build

#: The arm every anchored runner asks: the session's own prefix.
ANCHORED_ARMS = ("real",)


def anchored_cells(protocol: Protocol, p: Any, experiment: str, session: Session, positions: Sequence[Position],
                   items: Sequence[str], anchor: str, *, redact: bool = True) -> list:
    """The cells of one anchored run (``p``: the run's judged parameters): ``items`` at
    ``positions`` of ``session``, the real prefix, ``anchor`` (in the protocol's names)
    between the prefix and every item."""
    return build(protocol, p, experiment, [session], items, positions=Positions(chosen={session.session_id:
                                                                                          list(positions)}),
                 stressor_max_tokens=getattr(p, "stressor_max_tokens", None), redact=redact, arms=ANCHORED_ARMS,
                 intervention=anchor)
