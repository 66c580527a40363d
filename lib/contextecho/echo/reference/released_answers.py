"""Released cells as answers: a call under ``reference`` answered by the released cell it asks for.

Two users read the authors' released cells (:mod:`.released`) as the answers to our calls:
the run-level conformance's replay from a release (:mod:`contextecho.conformance.released`)
and a notebook run with ``released`` set (:class:`ReleasedClient`, the network client of its
:class:`~contextecho.engine.calls.Transport`).

A call's identity is its cell's (:func:`cell_identity`: the target, the position, the arm and
the item as the harness's request keys name them, the replicate); a judge call has its target
cell's (its request's ``cell`` tag names the target request). :class:`ReleasedReplies` finds
the released cell for an identity:

* a **target** call gets the cell's ``response_text`` (and its token counts where stored);
* a **judge** call gets a verdict text that the reference verdict reader parses back to the
  cell's ``score``/``label``/``reason`` (:func:`~.judge.verdict_text`: a −1 cell as the reply
  that fails the same way), a **cross_judge** call the audit record's second verdict
  (``gpt5_*``) the same way;
* a call whose cell the release lacks is **missing** and never answered.

The target of a key is matched against the names the release gives a cell's target (its
folder, the record's ``target`` and ``model_id``), as written or, for a LiteLLM model string,
without its provider prefix (``anthropic/claude-sonnet-4-5`` is ``claude-sonnet-4-5``); each
of position, arm, replicate, session, cut index and length that both the key and the cell's
layout name (:data:`MATCHED`) must agree. Where several cells fit, the one naming the most of
the key's fields answers; a tie is *ambiguous* and is not answered either.

The release stores one judge's verdicts (its records do not name it: the harness's primary judge,
``released_judge``); only that judge's calls are answered. A notebook's client reads only the
results folders its notebook's cells live in
(``folders``); a call the release cannot answer raises :class:`NotInRelease` (a fault the
engine never retries within the run: the cell is lost, counted, and said), unless the run
asks to ``fill`` it, when the call goes to the provider as any other. What it answered and
what it could not are counted (:meth:`ReleasedClient.summary`).
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any, Iterable, Sequence

from ...stats.session_validation import HARNESS_ARMS
from .judge import verdict_text
from .released import CROSS_JUDGE, PROBE, STRESSOR, ImportReport, ReleasedCell

#: The key fields compared with a cell's identity where both name one (module doc).
MATCHED = ("position", "arm", "replicate", "session", "cut_index", "length")
#: The cells that answer each call kind.
ANSWERS = {"target": (PROBE, STRESSOR), "judge": (PROBE,), "cross_judge": (CROSS_JUDGE,)}


def item_name(item: str) -> str:
    """Our item id as the harness's key names it (``S2#01`` -> ``S2_v00``)."""
    if item.startswith("S2#"):
        return f"S2_v{int(item[3:]) - 1:02d}"
    return item


def key_text(key: Mapping[str, Any]) -> str:
    """A call's key as one text (sorted JSON): what identifies it among the replies."""
    return json.dumps(key, sort_keys=True)


def cell_identity(cell: Any) -> dict[str, Any]:
    """One of our cells (:class:`~contextecho.echo.cells.Cell`) as the key of its target
    call, in the harness's names; its target as our model string."""
    return {"target": cell.target, "position": cell.position, "arm": HARNESS_ARMS.get(cell.arm, cell.arm),
            "item": item_name(cell.item.id), "replicate": cell.replicate}


def _names(cell: ReleasedCell) -> set[str]:
    """The names a request key may give the cell's target: its folder's, the record's own."""
    return {cell.identity.target} | {v for k in ("target", "model_id") if isinstance(v := cell.stored.get(k), str)}


def _key_names(target: Any) -> set[str]:
    """A key's target as written and, for a LiteLLM model string, without its provider prefix."""
    return {target, target.split("/", 1)[-1]} if isinstance(target, str) else {target}


class ReleasedReplies:
    """Reply specs (``(call, key text) -> [reply spec]``) read from released cells (module doc);
    what it could not answer is kept in ``missing``, ``ambiguous`` and ``unrenderable`` (each
    ``(call, key text)``, with the candidate paths for an ambiguous one)."""

    def __init__(self, cells: Iterable[ReleasedCell]) -> None:
        self._index: dict[tuple[str, str], list[ReleasedCell]] = defaultdict(list)
        for cell in cells:
            self._index[(cell.kind, cell.identity.item)].append(cell)
        self.missing: list[tuple[str, str]] = []
        self.ambiguous: list[tuple[str, str, list[str]]] = []
        self.unrenderable: list[tuple[str, str, str]] = []

    def cell(self, call: str, key: Mapping[str, Any]) -> ReleasedCell | list[ReleasedCell] | None:
        """The cell that answers ``call`` for ``key``; a list where several fit equally; None where none."""
        best, found = -1, []
        names = _key_names(key.get("target"))
        for kind in ANSWERS.get(call, ()):
            for cell in self._index.get((kind, key.get("item")), ()):
                ident = cell.identity
                if not names & _names(cell) or ident.replicate != int(key.get("replicate", 0)):
                    continue
                named = [f for f in MATCHED if f in key and getattr(ident, f) is not None]
                if any(getattr(ident, f) != key[f] for f in named):
                    continue
                if len(named) > best:
                    best, found = len(named), [cell]
                elif len(named) == best:
                    found.append(cell)
        return found[0] if len(found) == 1 else found or None

    def reply(self, call: str, cell: ReleasedCell) -> dict | None:
        """The reply spec of ``cell`` for ``call``; None where its verdict reads back otherwise."""
        if call == "target":
            spec: dict[str, Any] = {"text": cell.response_text}
            if cell.input_tokens is not None or cell.output_tokens is not None:
                spec["usage"] = {"input_tokens": cell.input_tokens, "output_tokens": cell.output_tokens}
            return spec
        text = verdict_text(cell.score, cell.label, cell.reason)
        return None if text is None else {"text": text}

    def get(self, ident: tuple[str, str], default: Any = None) -> list | None:
        call, text = ident
        found = self.cell(call, json.loads(text))
        if isinstance(found, list):
            self.ambiguous.append((call, text, [c.provenance.path for c in found]))
            return default
        if found is None:
            self.missing.append(ident)
            return default
        spec = self.reply(call, found)
        if spec is None:
            self.unrenderable.append((call, text, found.provenance.path))
            return default
        return [spec]


#: What the counts call a request that is no call of a grid's cell (a judge's calibration, another
#: judge's verdict).
OTHER = "other (no cell of a grid, or not the release's judge: a judge's calibration, another judge)"


class NotInRelease(Exception):
    """A call whose cell the release does not answer (missing, ambiguous or unrenderable):
    never sent (module doc)."""


class ReleasedClient:
    """The network client of a run answered from a release (module doc): ``expect(cells)``
    names the target calls of a grid before it runs; ``await client(request, kwargs)``
    answers one attempt."""

    def __init__(self, imported: ImportReport, *, judge: str, folders: Sequence[str] = (), fill: bool = False) -> None:
        self.root, self.judge, self.folders, self.fill = imported.root, judge, tuple(folders), fill
        chosen = [c for c in imported.cells
                  if not folders or any(c.identity.experiment == f or c.identity.experiment.startswith(f + "/")
                                        for f in folders)]
        self.n_cells = len(chosen)
        self.replies = ReleasedReplies(chosen)
        self.identities: dict[str, dict[str, Any]] = {}  # target request key -> its cell's key
        self.answered: Counter = Counter()  # call kind -> calls answered from the release
        self.filled: Counter = Counter()  # call kind -> calls the release lacked, sent to the provider
        self.refused: Counter = Counter()  # call kind (or OTHER) -> calls the release lacked, never sent

    def expect(self, cells: Iterable[Any]) -> None:
        """Name the target call of each cell (:func:`cell_identity`), and so its judges' calls."""
        for cell in cells:
            self.identities[cell.key] = cell_identity(cell)

    def identify(self, request: Any) -> tuple[str, dict[str, Any]] | None:
        """``(call kind, key)`` of a request: a target call, or a call of the release's ``judge``
        on a named cell (another judge's verdicts are not the release's)."""
        if request.key in self.identities:
            return "target", self.identities[request.key]
        cell = request.tag.get("cell")
        return ("judge", self.identities[cell]) if cell in self.identities and request.model == self.judge else None

    async def __call__(self, request: Any, kwargs: dict[str, Any]) -> Any:
        found = self.identify(request)
        specs = self.replies.get((found[0], key_text(found[1]))) if found else None
        if specs is None:
            call = found[0] if found else OTHER
            if self.fill:
                self.filled[call] += 1
                import litellm

                return await litellm.acompletion(**kwargs)
            self.refused[call] += 1
            what = f"{call} call {key_text(found[1])}" if found else \
                f"{request.model} call (tag {dict(request.tag)}) that is no cell of the grid"
            raise NotInRelease(f"not in the release at {self.root}: {what} (fill asks the provider)")
        self.answered[found[0]] += 1
        return _response(request.model, specs[0])

    def summary(self) -> str:
        """One line: what was answered from the release, and what it lacked."""
        lacked = self.filled if self.fill else self.refused
        told = ", ".join(f"{n} {call}" for call, n in sorted(lacked.items())) or "none"
        return (f"released: {sum(self.answered.values())} calls answered from {self.n_cells} cells of {self.root} "
                f"({', '.join(f'{n} {c}' for c, n in sorted(self.answered.items())) or 'none'}); not in the "
                f"release: {told} ({'sent to the provider: fill' if self.fill else 'never sent; fill asks the provider'}"
                f"; {len(self.replies.ambiguous)} ambiguous, {len(self.replies.unrenderable)} unrenderable)")


def _response(model: str, spec: Mapping[str, Any]) -> Any:
    """A reply spec as the LiteLLM response our call site reads."""
    from litellm.types.utils import ModelResponse

    from ...engine.responses import fill_response

    usage = spec.get("usage") or {}
    return fill_response(ModelResponse(), model, spec["text"], "stop", int(usage.get("input_tokens") or 0),
                         int(usage.get("output_tokens") or 0))
