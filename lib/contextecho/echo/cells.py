"""``build_cells``: the grid experiment × target × session × position × arm × intervention
× item × replicate, each cell a tidy descriptor with its :class:`ModelRequest`.

Per (session, position) the real prefix is rendered once and every arm derives from it;
per arm and intervention the prefix is built once and shared by every item, target and
replicate, and cells are listed in that order so requests sharing a prefix sit together.
Every cell carries :func:`instrument_versions` (version + hash of each text set).

The window is a parameter: the paper's 30,000 characters suit provider models; the
embedded target (8,192-token context) needs about 12,000.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..engine.model_request import ModelRequest
from ..sessions.render import DEFAULT_WINDOW, render_prefix
from ..sessions.positions import Position, positions as scheme_positions
from ..sessions.model import Session
from ..sessions.snapshot import snapshot_at
from .arms import ARMS, ArmContext, ArmPrefix, make_prefix, INSTRUMENT_SEED
from .interventions import INTERVENTIONS, InterventionContext, opening_goal, placed_distance
from .items import Item, resolve_items
from .versions import instrument_versions


#: A cell's own columns of the frame (:meth:`Cell.row`), before its instrument versions.
COLUMNS = ("experiment", "target", "session", "position", "step", "arm", "intervention", "distance",
           "placed_distance", "item",
           "item_kind", "item_group", "framing", "scorer", "probe_text", "replicate", "key", "window", "prefix_chars",
           "reference_chars", "n_turns", "arm_source", "inserted_tokens", "inserted_chars", "params")


@dataclass(frozen=True)
class Cell:
    experiment: str
    target: str
    session: str
    position: str  # position label ("u03", "c1_pre", "s25", or "t<step>")
    step: int
    arm: str
    intervention: str
    item: Item
    replicate: int
    request: ModelRequest
    prefix: ArmPrefix = field(repr=False)
    distance: int = 0  # as asked (InterventionContext.distance)
    versions: Mapping[str, str] = field(default_factory=dict, repr=False)
    placed_distance: int | None = None  # where the intervention's block really sat (None: none inserted)

    @property
    def key(self) -> str:
        return self.request.key

    def row(self) -> dict[str, Any]:
        """The tidy descriptor (one flat dict; versions and hashes included)."""
        p = self.prefix
        own = (self.experiment, self.target, self.session, self.position, self.step, self.arm, self.intervention,
               self.distance, self.placed_distance, self.item.id, self.item.kind, self.item.group, self.item.framing,
               self.item.scorer, self.item.probe_text, self.replicate, self.key, p.window, p.n_chars,
               p.reference_n_chars, len(p.turns), p.source, p.inserted_tokens, p.inserted_chars,
               dict(self.request.params))
        return {**dict(zip(COLUMNS, own, strict=True)), **self.versions}


def _positions(session: Session, spec, k: int) -> tuple[Position, ...]:
    if isinstance(spec, str):
        return scheme_positions(session, spec, k=k)
    if isinstance(spec, Mapping):
        spec = spec[session.session_id]
    out = []
    for p in spec:
        out.append(p if isinstance(p, Position) else Position(int(p), f"t{int(p)}", "steps"))
    return tuple(out)


def build_cells(experiment: str, targets: str | Sequence[str], sessions: Sequence[Session], *,
                positions: str | Sequence[int | Position] | Mapping[str, Sequence] = "uniform",
                k: int = 12, arms: Sequence[str] = ("real", "filler"),
                interventions: Sequence[str] = ("none",), items: Iterable[str] | str = "coding_self",
                replicates: int = 1, params: Mapping[str, Any] | None = None,
                window: int | None = DEFAULT_WINDOW, framing: str = "framed",
                distance: int = 0, instrument_seed: int = INSTRUMENT_SEED, preamble: str | None = None,
                others: Sequence[Session] | None = None, redact: bool = True,
                tag: Mapping[str, str] | None = None) -> list[Cell]:
    """Every cell of the grid, with its request. Unknown names raise listing valid ones.

    ``positions``: a scheme name (``"uniform"`` with ``k``, ``"deciles"``, ``"compaction"``,
    ``"early"``), a list of steps / :class:`Position` for every session, or a mapping from
    session id to such a list. ``others``: the pool for ``unrelated_session`` (default: the
    other given sessions). ``params``: sampling parameters of the target requests; ``tag``: the
    protocol's key, part of every request key (never sent).
    """
    targets = [targets] if isinstance(targets, str) else list(targets)
    resolved = resolve_items(items, framing)
    for name in arms:
        ARMS.get(name)
    for name in interventions:
        INTERVENTIONS.get(name)
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    params, tag = dict(params or {}), dict(tag or {})
    versions = instrument_versions()
    pool = tuple(others) if others is not None else tuple(sessions)
    cells: list[Cell] = []
    for session in sessions:
        needs_goal = any(i.startswith("goal_") for i in interventions)
        goal = opening_goal(session) if needs_goal else None
        ictx = InterventionContext(distance=distance, goal=goal)
        for pos in _positions(session, positions, k):
            snap = snapshot_at(session, pos.step)
            real = render_prefix(snap, window=window, preamble=preamble, redact=redact) \
                if set(arms) - {"scratch"} else None
            actx = ArmContext(window=window, instrument_seed=instrument_seed, preamble=preamble,
                              redact=redact, others=pool, real=real)
            for arm in arms:
                base = make_prefix(arm, snap, actx)
                for iv in interventions:
                    prefix = INTERVENTIONS.get(iv)(base, ictx)
                    for item in resolved:
                        messages = list(prefix.messages) + [{"role": "user", "content": item.message}]
                        for target in targets:
                            for rep in range(replicates):
                                request = ModelRequest(target, messages, params, rep, tag=tag)
                                cells.append(Cell(experiment, target, session.session_id,
                                                  pos.label, pos.step, arm, iv, item, rep,
                                                  request, prefix, distance, versions,
                                                  placed_distance(base, prefix)))
    return cells
