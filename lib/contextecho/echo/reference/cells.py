"""Cells under the ``reference`` protocol: the harness's positions, prefix, filler and
requests, as :class:`~contextecho.echo.cells.Cell` records ``run_cells`` takes.

* **Positions** (:func:`named_positions`, ``PROTOCOL.md`` §8) are harness turn numbers
  of the session itself, anchored on its own compactions (the harness hard-codes those
  of its representative session): ``panel`` = ``P0_start`` (turn 100), then per
  compaction *j* ``c{j}_pre`` (the last turn before the boundary) and ``c{j}_post``
  (that turn + 100); ``onset`` = the given turns (1, 5, 25, 100, 250, 500, 1000, 1500 by
  default), every one kept as the harness keeps it: a turn past the session's end renders
  the last turn's prefix under its own label and number; ``compaction`` = the pre/post pairs alone; ``late`` = ``P5_pre_C6``, three
  turns before the session's last (e16's framing ablation and the audits read the
  harness's late position; the fixtures place it so on other sessions); ``deciles`` = the seed's
  corpus-scale grid (turns at 10 %, ..., 100 % of the session, plus the compaction
  pairs; run with ``replicates=3``). In these (not onset) turns past the session's last
  are clipped to it and a turn already listed is not repeated: the harness defines its
  named positions on its own session only, and this is the rule we apply to others.
  ``validation`` is e18's session-validation plan (:mod:`.role_rows`): ``n`` evenly
  spaced positions ``P00``... over e18's own ``[role] text`` rows of a Claude Code or Codex
  CLI session, each cell's step the row index, its prefix e18's rendering; ``crosssession`` is
  run_crosssession's plan the same way (its 12 positions over its own rows of a Claude Code
  session, its renderer). What an experiment
  asks (:func:`positions`): the first ``n`` of ``panel``, ``deciles``, ``late`` (pairs:
  ``compaction``); every ``onset`` turn; ``landmarks``, the ``panel`` positions then the ``deciles``.
* **Prefix** :func:`~.transcript.render_prefix` with the window; the ``filler`` arm is
  :func:`~.filler.filler_for` of the prefix the target sees.
* **Redaction**: for a target that is not in-process, the rendered prefix is redacted
  (:func:`contextecho.sessions.redaction.redact`) before the filler is matched to it;
  the cell records ``prefix_redacted``. Conformance (:mod:`.conformance`) checks the
  unredacted rendering.
* **Requests**: :func:`~.requests.probe_request` / :func:`~.requests.stressor_request`
  in their OpenAI-compatible form; sampling parameters are the token budget after the
  harness's provider rules (:func:`~.providers.target_params`: floors, caps, Gemini's
  temperature 0), else the provider's default temperature (the in-process model samples
  with its default, seeded from the request key by :mod:`contextecho.engine.calls`); S2
  cells follow the named rule set of the runner asked for (:mod:`.s2_requests`: e08's by
  default, or e10's plain strings at temperature 0). The protocol's name, version
  and sha256 are the request's ``tag``, so they are part of every request key, and so are
  the session, turn and arm: the harness makes one call per (position, arm, item), so
  two positions whose filler is the same text (equal lengths) are still two samples.

Only Claude Code sessions have harness turns; other formats are refused (except by ``validation``;
``crosssession`` finds no row in them and refuses the session as too short).
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ...engine.llm import is_in_process
from ...engine.model_request import ModelRequest
from ...sessions.model import CLAUDE_CODE, Session
from ...sessions.redaction import redact as redact_text
from .. import probes, stressors
from ..probes import FRAMINGS
from ..arms import ArmPrefix
from ..cells import Cell
from ..items import JUDGE, PROBE, STRESSOR, Item
from ..protocol import Positions
from ...engine.registry import UnknownNameError
from .control_arms import CONTROL_ARMS, control_text, turns_of
from .filler import filler_for
from . import negative_controls
from .providers import provider_messages, target_params
from ...sessions.positions import LATE_OFFSET, Position
from .positions import FRAMING_ABLATION_POSITION, ONSET_TURNS, POST_OFFSET, compaction_turns, onset_label
from .anchors import Anchor, anchor as anchor_named
from .requests import TargetRequest, probe_request, stressor_request
from .s2_requests import COLUMN as S2_RULES_COLUMN, S2_REQUESTS
from .texts import (E11_STRESSORS, PROBE_MAX_TOKENS, PROBES_BY_ID, S2_VARIANTS, STRESSOR_MAX_TOKENS,
                    STRESSOR_SYSTEM_PROMPT, framed)
from .role_rows import ROW_SCHEMES, line_prefix, scheme_plan, scheme_rows
from .transcript import DEFAULT_WINDOW, HarnessSession, read_rows, render_prefix, turn_index

PROTOCOL = "reference"
START_TURN = 100
SCHEMES = ("panel", "onset", "compaction", "deciles", "late")
ARMS = ("real", "filler")
#: The cells' intervention when no anchor is asked.
NO_ANCHOR = "none"
#: The S2 stressor's scorer name in :data:`.scorers.REFERENCE_SCORERS`.
S2 = "S2"


def named_positions(rows, index: dict[int, int], scheme: str,
                    turns: Sequence[int] = ONSET_TURNS) -> tuple[Position, ...]:
    """The positions of ``scheme`` (module doc) for one session's rows and turn index, each
    step a harness turn."""
    if scheme not in SCHEMES:
        raise UnknownNameError("reference position scheme", scheme, list(SCHEMES))
    last = max(index)
    pairs: list[Position] = []
    for j, c in enumerate(compaction_turns(rows, index), start=1):
        if c.last_turn_before > 0:
            pairs += [Position(c.last_turn_before, f"c{j}_pre", scheme),
                      Position(c.last_turn_before + POST_OFFSET, f"c{j}_post", scheme)]
    if scheme == "panel":
        chosen = [Position(START_TURN, "P0_start", scheme), *pairs]
    elif scheme == "onset":
        # As run_onset.py: every turn asked, each its own cell; one past the end renders the
        # last turn's prefix and keeps its label and number (README "Harness behaviours" 7).
        return tuple(Position(t, onset_label(t), scheme) for t in sorted(set(turns)) if t >= 1)
    elif scheme == "compaction":
        chosen = pairs
    elif scheme == "late":
        chosen = [Position(last - LATE_OFFSET, FRAMING_ABLATION_POSITION, scheme)]
    else:
        chosen = [Position(max(1, round(last * d / 10)), f"D{d:02d}", scheme) for d in range(1, 11)] + pairs
    out: dict[int, Position] = {}
    for p in chosen:
        turn = min(max(p.step, 1), last) if last > 0 else 0
        out.setdefault(turn, Position(turn, p.label, scheme))
    return tuple(out.values())


def _turns(session: Session) -> tuple[list, dict[int, int]]:
    """The session's rows and turn index (Claude Code only: module doc)."""
    if session.format != CLAUDE_CODE:
        raise ValueError(f"{session.path}: the reference protocol reads Claude Code sessions "
                         f"only, this one is {session.format} (the validation positions read both)")
    rows = list(session.rows) if isinstance(session, HarnessSession) else read_rows(session.path)
    return rows, turn_index(rows)


def positions(session: Session, asked: Positions) -> tuple[Position, ...]:
    """The harness's positions of ``session`` for what is ``asked`` (module doc)."""
    if asked.chosen is not None:
        return tuple(asked.chosen[session.session_id])
    rows = scheme_rows(asked.scheme, session.path)
    if rows is not None:  # a ``[role] text`` scheme: e18's or run_crosssession's plan over its own rows
        plan = scheme_plan(asked.scheme, len(rows), asked.n)
        return tuple(Position(row, label, asked.scheme) for label, row in plan)
    rows, index = _turns(session)
    if asked.scheme == "landmarks":
        return named_positions(rows, index, "panel") + named_positions(rows, index, "deciles")
    named = named_positions(rows, index, asked.scheme, asked.steps or ONSET_TURNS)
    limit = {"onset": 0, "compaction": 2 * asked.n}.get(asked.scheme, asked.n)
    return named[:limit] if limit > 0 else named


def offered(session: Session, asked: Positions) -> tuple[int, str] | None:
    """How many named positions of ``asked``'s scheme (counted by ``n``) ``session`` offers."""
    if asked.chosen is None and asked.scheme in ("panel", "deciles", "late"):
        return len(positions(session, Positions(asked.scheme))), f"{asked.scheme} positions"
    return None


#: The e11 instruction-override stressors by our stressor name (S2 is e08's ten paraphrases).
E11_ITEMS = {"S1": "S1_ONE_WORD", "S3": "S3_NO_ACTION", "S4": "S4_STRICT_JSON"}
#: Our stressor whose scorer reads the same constraint without an expected text (our
#: score beside the harness's); S1 and S4 expect texts of our own wordings: none.
E11_OURS = {"S3": "S3#01"}


def reference_items(names: Iterable[str] | str, framing: str = "framed") -> tuple[Item, ...]:
    """Probe ids/batteries and the negative controls (:mod:`.negative_controls`: the set
    ``negative_controls`` or ``N01``...; each asked ``framing`` — the harness's framing line,
    or ``bare`` as e16's ablation asks them — and judged on the unframed text), the S2 stressor (``S2``:
    the ten e08 paraphrases ``S2#01``...; or one of them) and the e11 stressors ``S1``,
    ``S3``, ``S4`` (one wording each, scored by the e11 scorers), in order, unique."""
    if framing not in FRAMINGS:
        raise UnknownNameError("framing", framing, list(FRAMINGS))
    names = [names] if isinstance(names, str) else list(names)
    out: dict[str, Item] = {}
    for name in names:
        if name in probes.BATTERIES:
            ids = [p.id for p in probes.battery(name)]
        elif name in probes.BY_ID or name in negative_controls.BY_ID:
            ids = [name]
        elif name == negative_controls.ITEM_SET:
            ids = list(negative_controls.BY_ID)
        elif name == S2:
            ids = [f"S2#{i:02d}" for i in range(1, len(S2_VARIANTS) + 1)]
        elif name.startswith("S2#") and name[3:].isdigit() and 1 <= int(name[3:]) <= len(S2_VARIANTS):
            ids = [name]
        elif name in E11_ITEMS:
            ids = [name]
        else:
            valid = sorted(probes.BATTERIES) + sorted(probes.BY_ID) + [negative_controls.ITEM_SET] + \
                sorted(negative_controls.BY_ID) + [S2] + sorted(E11_ITEMS) + \
                [f"S2#{i:02d}" for i in range(1, len(S2_VARIANTS) + 1)]
            raise UnknownNameError("reference item", name, valid)
        for item_id in ids:
            if item_id.startswith("S2#"):
                # Our contract of the same wording id: its scorer is the alternative S2 scorer.
                item = Item(item_id, STRESSOR, S2, S2_VARIANTS[int(item_id[3:]) - 1], S2,
                            contract=stressors.contract(item_id))
            elif item_id in E11_ITEMS:
                ours = E11_OURS.get(item_id)
                item = Item(item_id, STRESSOR, item_id, E11_STRESSORS[E11_ITEMS[item_id]], item_id,
                            contract=stressors.contract(ours) if ours else None)
            else:
                p = PROBES_BY_ID.get(item_id) or negative_controls.BY_ID[item_id]
                message = framed(p) if framing == "framed" else p.text
                item = Item(p.id, PROBE, p.category, message, JUDGE, p.text, framing)
            out.setdefault(item.id, item)
    return tuple(out.values())


def target_request(prefix: str, item: Item, anchor: Anchor | None = None) -> TargetRequest:
    """The request of ``item`` after ``prefix``; with an ``anchor``, as the harness's anchored
    runners send it (:mod:`.anchors`: its exchanges, its system prompt, the runner's budget)."""
    if anchor is not None:
        base, budget = (anchor.probe_system_prompt, PROBE_MAX_TOKENS) if item.kind == PROBE \
            else (STRESSOR_SYSTEM_PROMPT, STRESSOR_MAX_TOKENS)
        return anchor.request(prefix, item.message, base, budget)
    return probe_request(prefix, item.id, item.message) if item.kind == PROBE \
        else stressor_request(prefix, item.message)


def _rendered(session: Session, chosen: Sequence[Position], window: int) -> list[tuple[str, int | None]]:
    """The prefix at each position and the turn it resolved to (at ``validation`` e18's
    rendering of its rows, at ``crosssession`` run_crosssession's)."""
    schemes = {p.scheme for p in chosen}
    rows = scheme_rows(schemes.pop(), session.path) if len(schemes) == 1 else None
    if rows is not None:
        return [(line_prefix(rows, p.step, window), p.step) for p in chosen]
    rows, index = _turns(session)
    out = []
    for p in chosen:
        rendered = render_prefix(rows, index, p.step, window)
        out.append((rendered.text, rendered.resolved_turn))
    return out


def build_reference_cells(experiment: str, targets: str | Sequence[str], sessions: Sequence[Session],
                          asked: Positions = Positions(), *, items: Iterable[str] | str = "coding_self",
                          replicates: int = 1, window: int = DEFAULT_WINDOW,
                          max_tokens: int | None = None, stressor_max_tokens: int | None = None,
                          redact: bool = True, framing: str = "framed", s2_requests: str = "e08",
                          arms: Sequence[str] = ARMS, anchor: str = NO_ANCHOR,
                          tag: Mapping[str, str]) -> list[Cell]:
    """Every reference cell of the grid (module doc) at the positions ``asked`` (:func:`positions`).
    ``max_tokens`` / ``stressor_max_tokens`` shorten the protocol's 600 / 1024 (the
    embedded build); the provider rules of :func:`.providers.target_params` apply to them;
    S2 cells are asked by the rule set ``s2_requests`` (:mod:`.s2_requests`: e08's, or
    e10's own), which their ``versions`` name. ``arms``: the harness's real and filler (the
    default), and any of our control arms (:mod:`.control_arms`: shuffled_real,
    unrelated_session, scratch; the pool of unrelated sessions is ``sessions``); ``anchor``:
    the harness anchor (:func:`.anchors.anchor`) put between the prefix and every item, the
    cells' ``intervention`` and part of their request keys (``none``: no anchor). ``tag``: the
    protocol's key (name, version, sha256), part of every request key."""
    targets = [targets] if isinstance(targets, str) else list(targets)
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    for arm in arms:
        if arm not in ARMS + CONTROL_ARMS:
            raise UnknownNameError("reference arm", arm, list(ARMS + CONTROL_ARMS))
    resolved = reference_items(items, framing)
    s2_rules = S2_REQUESTS.get(s2_requests)
    anchored = None if anchor == NO_ANCHOR else anchor_named(anchor)
    tag = dict(tag)
    controls = [arm for arm in arms if arm in CONTROL_ARMS]
    pool = [turns_of(s.session_id, _turns(s)[0]) for s in sessions] if controls else []
    cells: list[Cell] = []
    for session in sessions:
        chosen = positions(session, asked)
        if controls and any(p.scheme in ROW_SCHEMES for p in chosen):
            raise ValueError("our control arms are built on the harness's turns, not on the rows of e18's or "
                             "run_crosssession's plan: ask real and filler only")
        own = next((t for t in pool if t.session_id == session.session_id), None)
        for pos, (rendered, resolved_turn) in zip(chosen, _rendered(session, chosen, window)):
            contexts = {arm: control_text(arm, own, pos.step, window, len(rendered), pool) for arm in controls}
            for target in targets:
                hosted = redact and not is_in_process(target)
                redacted = hosted and bool(rendered)
                real = redact_text(rendered)[0] if redacted else rendered
                for arm in arms:
                    if arm in contexts:
                        context = contexts[arm]
                        text = redact_text(context.text)[0] if hosted and context.text else context.text
                        source, seed = context.source, context.seed
                    else:
                        text = real if arm == "real" else filler_for(real)
                        source = f"{session.session_id}@{pos.step}" if arm == "real" else "reference_filler"
                        seed = None
                    prefix = ArmPrefix(arm=arm, messages=(), turns=(), n_chars=len(text),
                                       session_id=session.session_id, step=pos.step, window=window,
                                       source=source, seed=seed, reference_n_chars=len(real),
                                       truncated=len(rendered) >= window)
                    for item in resolved:
                        request = target_request(text, item, anchored)
                        cap = stressor_max_tokens if item.kind == STRESSOR else max_tokens
                        rules = s2_rules if item.scorer == S2 else None
                        params = (rules.params if rules else target_params)(target, cap or request.max_tokens)
                        messages = (rules.messages if rules else provider_messages)(target, request)
                        versions = {**tag, "prefix_redacted": str(redacted).lower(),
                                    "resolved_turn": str(resolved_turn),
                                    **({S2_RULES_COLUMN: rules.name} if rules else {})}
                        cell_tag = {**tag, "session": session.session_id, "turn": str(pos.step), "arm": arm,
                                    **({"anchor": anchor} if anchored else {})}
                        for rep in range(replicates):
                            cells.append(Cell(experiment, target, session.session_id, pos.label,
                                              pos.step, arm, anchor, item, rep,
                                              ModelRequest(target, messages, params, rep, tag=cell_tag),
                                              prefix, 0, versions))
    return cells
