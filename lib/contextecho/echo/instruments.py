"""The ``contextecho`` protocol: this project's own instruments.

Multi-message chat prefixes from :mod:`contextecho.sessions` (Claude Code and Codex CLI
sessions alike), structure-matched lorem filler (:mod:`.arms`), our rubric and verdict
parser (:mod:`.rubric`, :mod:`.judge`: greedy, one ``Score: <n>`` line), our contract
scorers (:mod:`.scorers`). Its version joins the text sets' own versions and its hash is
that of :func:`.versions.instrument_versions`. An empty or whitespace-only target reply
is an error (``EmptyResponse``): stored, counted, never judged or scored.
"""
from __future__ import annotations

import json
from typing import Mapping, Sequence

from ..engine.model_request import ModelRequest
from ..engine.paths import REPO_ROOT
from ..engine.verdicts import OK
from ..engine.registry import UnknownNameError
from ..sessions.model import CLAUDE_CODE, CODEX_CLI, Session
from ..sessions.positions import Position, around_compactions, around_events, deciles, early
from ..sessions.positions import positions as scheme_positions
from . import contracts, filler, interventions, probes, rubric, stressors
from .arms import ARMS
from .cells import Cell, build_cells
from .continuation import CONTEXTECHO
from .fingerprint import CONTEXTECHO as FINGERPRINT
from .judge import SCORE_LABEL, SCORE_PREFILL, judge_request, parse_verdict
from .items import Item
from .protocol import SCHEMES, Grid, JudgeSetup, Positions, Protocol, SamplingDefaults, Verdict
from .rubric import Rubric
from .scorers import score as run_scorer
from .versions import instrument_versions


#: The schemes that ask ``n`` evenly spaced positions (our uniform agent steps).
UNIFORM_SCHEMES = ("panel", "validation", "crosssession")
#: Our rubric's labelled examples (versioned data; their sha256 is in every calibration).
RUBRIC_EXAMPLES = REPO_ROOT / "data" / "judge_labels" / "contextecho_rubric.jsonl"


class ContextEchoProtocol(Protocol):
    """This project's instruments (module doc)."""

    name = "contextecho"
    description = ("this project's instruments: chat-turn prefixes, structure-matched filler, our rubric, "
                   "parser and scorers")
    sampling = SamplingDefaults(probe_max_tokens=300, stressor_max_tokens=300, judge_max_tokens=64,
                                temperature=0.0, window_chars=30_000)
    formats = (CLAUDE_CODE, CODEX_CLI)
    continuation = CONTEXTECHO
    fingerprint = FINGERPRINT
    #: Every arm of :mod:`.arms`: real, filler and the seed's controls (shuffled_real,
    #: unrelated_session, scratch).
    arms = tuple(ARMS.names())

    @property
    def version(self) -> str:  # one version string for the whole set: the sets' own, joined
        return "+".join(m.VERSION for m in (probes, rubric, stressors, contracts, interventions, filler))

    def texts(self) -> Mapping[str, object]:
        return instrument_versions()

    def positions(self, session: Session, asked: Positions) -> tuple[Position, ...]:
        """Our positions (:mod:`contextecho.sessions.positions`): ``panel``, ``validation`` and
        ``crosssession`` ``n`` uniform agent steps (0: every one), ``onset`` the ``steps`` before the
        first compaction."""
        if asked.chosen is not None:
            return tuple(asked.chosen[session.session_id])
        if asked.scheme in UNIFORM_SCHEMES:  # n 0: every agent step
            return scheme_positions(session, "uniform", k=asked.n or session.n_agent_steps)
        if asked.scheme in ("deciles", "late"):
            return scheme_positions(session, asked.scheme)
        if asked.scheme == "onset":
            end = session.compactions[0].steps_before if session.compactions else session.n_agent_steps
            return early(end, asked.steps)
        if asked.scheme == "compaction":
            return around_events(session, asked.n, asked.events)
        if asked.scheme == "landmarks":
            return (Position(1, "start", "start"), *around_compactions(session), *deciles(session))
        raise UnknownNameError("position scheme", asked.scheme, list(SCHEMES))

    def offered(self, session: Session, asked: Positions) -> tuple[int, str] | None:
        uniform = asked.chosen is None and asked.scheme in UNIFORM_SCHEMES
        return (session.n_agent_steps, "agent steps") if uniform else None  # distinct steps

    def build_cells(self, experiment: str, targets: Sequence[str], sessions: Sequence[Session],
                    grid: Grid) -> list[Cell]:
        return build_cells(experiment, list(targets), sessions,
                           positions={s.session_id: self.positions(s, grid.positions) for s in sessions},
                           framing=grid.framing, interventions=[grid.intervention],
                           arms=list(grid.arms), items=list(grid.items), window=grid.window,
                           replicates=grid.replicates, redact=grid.redact, tag=self.key(),
                           params={"temperature": grid.temperature, "max_tokens": grid.max_tokens})

    def score(self, item: Item, response: str) -> Verdict:
        s = run_scorer(response, item.contract)
        return Verdict(OK, float(s.passed), s.reason, s.passed)

    def judging(self, judges: Sequence[str], rubric: Rubric, variant: str = "") -> JudgeSetup:
        self.check_variant(variant)
        return JudgeSetup(rubric.version, rubric.hash, SCORE_PREFILL, SCORE_LABEL, prompt=rubric)

    def judge_params(self, max_tokens: int) -> dict[str, object]:
        # Greedy: the rubric asks for one line, ``Score: <n>``.
        return {"temperature": 0, "max_tokens": max_tokens}

    def judge_request(self, setup: JudgeSetup, judge: str, probe: str, response: str,
                      params: Mapping[str, object], cell_key: str) -> ModelRequest:
        return judge_request(judge, probe, response, rubric=setup.prompt, params=params, tag=self.key())

    def labelled_examples(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in RUBRIC_EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]

    def read_verdict(self, text: str | None, setup: JudgeSetup | None = None) -> Verdict:
        return parse_verdict(text)
