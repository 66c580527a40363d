"""The ``reference`` protocol: the authors' ContextEcho harness (Accenture/ContextEcho 5f8dba3).

``shared/reference/contextecho/PROTOCOL.md`` and the fixtures made from the harness's
code define it; every piece lives in this package:

* cells (:mod:`.cells`): the harness's named positions, prefix rendering (:mod:`.transcript`)
  and template filler (:mod:`.filler`); Claude Code sessions only (the harness's turn
  indexer finds no turn in a Codex CLI session);
* target requests (:mod:`.requests`): one rendered user blob + acknowledgement, the
  probe or S2 system prompt, the token budget after the provider rules (:mod:`.providers`);
* replies: an empty answer (or none at all) is an answer (judged, and it fails S2),
  except a Gemini target's, which the harness's client raises on (the cell is lost); a
  judge's empty verdict is parsed (−1), a judge's reply without content loses the cell;
  an S2 reply is read as its runner reads it (:mod:`.s2_requests`: e10 strips it);
* a stored result (:meth:`ReferenceProtocol.holds_result`): a judged cell whose verdict
  the harness would have written (a score, −1 included), a scored cell whose target
  answered; a resumed run redoes every other cell, as the harness's runners do;
* judging (:mod:`.judge`): the harness's prompt (read at run time, never committed) and
  parser; one judge call per cell, as the harness makes it (the cell's request key is in
  the judge's key, so two cells with the same response are judged twice, as there);
  the judge's settings per provider (:func:`.providers.judge_params`); the b3 cross-judge
  (judge variant ``b3``) sends the same prompt with its own settings, is called again on
  any failure, three calls in all, and reads its own way (:func:`.judge.read_b3`);
* score distributions (:meth:`ReferenceProtocol.distribution_mode`): a judge call is the
  harness's and nothing is sent beside it. On a backend that returns token probabilities
  as a side channel of the call itself and that the harness never ran (the embedded
  model, vLLM-style servers) the verdict request also asks for them and the distribution
  is read at the score's position of the (JSON) verdict; elsewhere the parsed verdict is
  the score (discrete): a second reading request, or reading parameters on an Anthropic
  or OpenRouter judge's request, would change what the harness sends.
* scoring: the e11 scorer of the item (:data:`.scorers.REFERENCE_SCORERS`) is the score,
  ours beside it (``contextecho_score``);
* a verdict of −1 or one whose parse would raise is an ``invalid`` row that keeps the
  harness's value in ``reference_score`` (−1; ``None`` where the harness loses the cell),
  so a table can drop and count it (ours) or average the −1s in (the forest loader's).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Mapping, Sequence

from ...engine.model_request import ModelRequest
from ...engine.token_distribution import DISCRETE, PREFILL, VERDICT, read_mode
from ...engine.record import EMPTY_RESPONSE, NO_CONTENT, CallRecord
from ...engine.verdicts import INVALID, OK
from ...sessions.model import CLAUDE_CODE, Session
from ..cells import Cell
from ..continuation import REFERENCE as CONTINUATION
from ..items import JUDGE, Item
from ..protocol import Grid, JudgeSetup, Protocol, SamplingDefaults, Setting, Verdict
from ..rubric import Rubric
from ..scorers import score as run_scorer
from . import cells
from .control_arms import CONTROL_ARMS
from .fingerprint import REFERENCE as REFERENCE_FINGERPRINT
from . import judge as reference_judge
from .providers import judge_params, judges_empty_reply
from .s2_requests import S2_REQUESTS, rules_of
from .scorers import REFERENCE_SCORERS
from .texts import PROBE_MAX_TOKENS, STRESSOR_MAX_TOKENS, VERSION, texts
from .transcript import DEFAULT_WINDOW, HarnessSession, read_session


@dataclass(frozen=True)
class HarnessVerdict(Verdict):
    """A judge's verdict with the harness's fields for its cell: its score (−1 for a failed
    verdict; ``None`` where its parse raises and the cell is lost), label and reason."""

    reference_score: int | None = None
    reference_label: str | None = None
    reference_reason: str | None = None


@dataclass(frozen=True)
class HarnessScore(Verdict):
    """A scored item's verdict by the harness's scorer, ours beside it (NaN: no contract of ours)."""

    contextecho_score: float = math.nan


@dataclass(frozen=True, repr=False)
class ReferenceProtocol(Protocol):
    """The authors' harness (module doc); ``s2_requests``: the rule set of the harness runner
    whose S2 requests it sends (:data:`.s2_requests.S2_REQUESTS`: e08's or e10's), its one
    option a run's parameters set."""

    s2_requests: str = "e08"

    name = "reference"
    version = VERSION
    description = ("the authors' ContextEcho harness (Accenture/ContextEcho 5f8dba3): one rendered user "
                   "blob + acknowledgement, template filler, harness judge and parser, e11 scorers")
    sampling = SamplingDefaults(probe_max_tokens=PROBE_MAX_TOKENS, stressor_max_tokens=STRESSOR_MAX_TOKENS,
                                judge_max_tokens=reference_judge.JUDGE_MAX_TOKENS, temperature=None,
                                window_chars=DEFAULT_WINDOW)
    formats = (CLAUDE_CODE,)
    judge_variants = (reference_judge.B3,)
    step_unit = "harness turn"
    stored_score = "reference_score"
    answered_by_release = True
    beside_score = "contextecho_score"
    result_columns = tuple(f.name for f in fields(HarnessVerdict)[4:] + fields(HarnessScore)[4:])
    options = ("s2_requests",)
    #: The harness's real and filler, and our control arms in its rendering (:mod:`.control_arms`).
    arms = cells.ARMS + CONTROL_ARMS
    continuation = CONTINUATION
    #: The harness's Fig.-1 features (:mod:`.fingerprint`).
    fingerprint = REFERENCE_FINGERPRINT

    def __post_init__(self) -> None:
        S2_REQUESTS.get(self.s2_requests)  # an unknown rule set raises, listing the valid ones

    def texts(self) -> Mapping[str, object]:
        return texts()

    positions = staticmethod(cells.positions)  # the harness's named positions (:mod:`.cells`)
    offered = staticmethod(cells.offered)

    def build_cells(self, experiment: str, targets: Sequence[str], sessions: Sequence[Session],
                    grid: Grid) -> list[Cell]:
        return cells.build_reference_cells(
            experiment, list(targets), sessions, grid.positions, items=list(grid.items),
            replicates=grid.replicates, window=grid.window, max_tokens=grid.max_tokens,
            stressor_max_tokens=grid.stressor_max_tokens or grid.max_tokens, tag=self.key(),
            redact=grid.redact, framing=grid.framing, s2_requests=self.s2_requests, arms=grid.arms,
            anchor=grid.intervention)

    def read_session(self, path: Path, parsed: Session | None = None) -> HarnessSession:
        return read_session(path)  # the harness's rows, read once; our parser never runs

    def check_events(self, event_types: Sequence[str]) -> None:
        if set(event_types) != {"compaction"}:
            raise ValueError("the reference protocol anchors on compactions only: "
                             "set event_types=compaction or protocol=contextecho")

    def reply(self, record: CallRecord, cell: Cell) -> str | None:
        if record.ok:
            text = record.response_text
        elif record.error_type in (EMPTY_RESPONSE, NO_CONTENT) and judges_empty_reply(cell.target):
            text = ""  # the harness judges an empty answer (clients.py:309); it fails S2
        else:
            return None
        rules = rules_of(cell.versions)  # an S2 cell: as its runner reads a reply (e10 strips it)
        return rules.read(text) if rules else text

    def stored_value(self, row: Mapping[str, object]) -> int | None:
        value = row.get(self.stored_score)  # the harness's own value, its -1 included
        return None if value is None or isinstance(value, float) and math.isnan(value) else int(value)

    def holds_result(self, row: Mapping[str, object]) -> bool:
        if row.get("scorer") == JUDGE:  # the harness wrote the cell: a score, its -1 included
            return self.stored_value(row) is not None  # None: the parse raised, or it was never judged
        return row.get("verdict_status") == OK  # a scored item: its target answered

    def judge_reply(self, record: CallRecord, model: str) -> str | None:
        if record.ok:
            return record.response_text
        if record.error_type == EMPTY_RESPONSE:
            return ""  # parsed: no JSON, -1 (judge.py _parse_judge)
        # No content: the harness's judge raises on a reply without blocks (judge.py:137) and the cell
        # is lost. An Anthropic reply of one empty text block, which the harness parses (-1), reaches
        # us the same way (LiteLLM gives content=None for both, and nothing else tells them apart):
        # read as lost too (the declared divergence empty_text_verdict).
        return None

    def score(self, item: Item, response: str) -> HarnessScore:
        passed = REFERENCE_SCORERS.get(item.scorer)(response)
        ours = float(run_scorer(response, item.contract).passed) if item.contract is not None else math.nan
        return HarnessScore(OK, float(passed), f"reference {item.scorer}", passed, ours)

    def judging(self, judges: Sequence[str], rubric: Rubric, variant: str = "") -> JudgeSetup:
        self.check_variant(variant)
        if not judges:
            return JudgeSetup(rubric.version, rubric.hash, reference_judge.SCORE_PREFILL,
                              reference_judge.SCORE_LABEL)
        prompt = reference_judge.load_prompt()
        attempts = reference_judge.B3_ATTEMPTS if variant == reference_judge.B3 else 1
        return JudgeSetup(self.version, prompt.sha256, reference_judge.SCORE_PREFILL,
                          reference_judge.SCORE_LABEL, prompt=prompt, variant=variant, attempts=attempts)

    def judge_params(self, max_tokens: int) -> dict[str, object]:
        return {"max_tokens": max_tokens}  # no temperature: the provider's default, as the harness

    def judge_request(self, setup: JudgeSetup, judge: str, probe: str, response: str,
                      params: Mapping[str, object], cell_key: str) -> ModelRequest:
        if setup.variant == reference_judge.B3:  # its own settings, whatever the judge (module doc)
            sent = dict(reference_judge.B3_JUDGE_PARAMS)
        else:
            sent = judge_params(judge, int(params.get("max_tokens", reference_judge.JUDGE_MAX_TOKENS)))
        return reference_judge.judge_request(judge, probe, response, prompt=setup.prompt,
                                             params=sent, tag={**self.key(), "cell": cell_key})

    def distribution_mode(self, judge: str) -> str:
        return VERDICT if read_mode(judge) == PREFILL else DISCRETE  # module doc

    def labelled_examples(self) -> list[dict[str, object]]:
        return reference_judge.prompt_examples(reference_judge.load_prompt())

    def read_verdict(self, text: str | None, setup: JudgeSetup | None = None) -> HarnessVerdict:
        b3 = setup is not None and setup.variant == reference_judge.B3
        v = reference_judge.read_b3(text) if b3 else reference_judge.parse_verdict(text)
        stored = (v.score, None if v.raised else v.label, None if v.raised else v.reason)  # the harness's fields
        if v.valid:
            return HarnessVerdict(OK, float(v.score), v.label, None, *stored)
        reason = f"raises {v.raised}: {v.reason}" if v.raised else f"{v.label}: {v.reason}"
        return HarnessVerdict(INVALID, math.nan, reason, None, *stored)

    def shortened(self, used: Mapping[str, Setting]) -> list[str]:
        own = self.settings()
        return sorted(k for k in used if k != "temperature" and own.get(k) is not None
                      and used[k] < own[k])
