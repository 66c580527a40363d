"""The parameter sets every experiment builds on: where the models are served
(:class:`ServingParameters`) and what every judged experiment shares (:class:`JudgedParameters`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterable

from ..engine.calls import Client, Transport, check_routes
from ..engine.endpoints import parse_endpoints
from ..engine.request_options import RequestOptions
from ..echo.protocols import PROTOCOLS
from ..echo.reference.judge import JUDGE_MODEL
from ..echo.reference.released import import_release
from ..echo.reference.released_answers import ReleasedClient
from ..echo.runner import SELF_JUDGE
from ..engine.llm import LOCAL_MODEL
from .parameters import (NON_NEGATIVE, POSITIVE, RESAMPLES, Checked, Endpoints, File, Folder, ModelOptionsText,
                         Models, NonEmpty, OneOf, Temperature, count, resolve_path)
from .scores import SCORES

PROTOCOL_NAMES = OneOf(PROTOCOLS.names, "protocol")
#: What the judges are calibrated on when ``judge_labels`` is empty (echo.calibration.calibration_set).
DEFAULT_LABELS = "the protocol's prompt examples and the 48 probe responses"
#: The harness's primary judge (``harness/judge.py:108``; e15 ``run.py:137``, e16, e17), as the
#: paper-scale parameter sets name it: not one of their targets, so no target judges itself.
REFERENCE_JUDGE = f"anthropic/{JUDGE_MODEL}"
#: The target's budget for an S2 stressor's answer in every notebook that asks S2 (the embedded
#: build's; the harness's is 1024, in each paper-scale set), and the audit's on the embedded model.
EMBEDDED_STRESSOR_MAX_TOKENS = 32


@dataclass(frozen=True)
class ServingParameters(Checked):
    """Where the models are served and how many calls run at once: transport settings,
    in every notebook and never part of a request key (see :mod:`contextecho.engine.endpoints`);
    and the models' request options, which are part of the requests they apply to
    (:mod:`contextecho.engine.request_options`)."""

    endpoints: tuple[str, ...] = ()
    model_options: str = ""
    concurrency: int = 1
    plan: bool = False
    batch: bool = False

    # (papermill cannot read a parameter line with a second equals sign, hence the words)
    HELP = {"endpoints": "models on OpenAI-compatible servers (vLLM, llama.cpp), comma-separated: "
                         "each MODEL, an equals sign, API_BASE[|API_BASE...][#KEY_ENV]; several API bases "
                         "separated by '|' are servers of one model, shared by the calls "
                         "(README: Using a real provider)",
            "model_options": "per-model request options, a JSON object: model (or pattern) to LiteLLM options "
                             "sent with its requests (extra_body, reasoning_effort, thinking) and its reasoning_budget, "
                             "tokens added to max_tokens (README: Reasoning models); part of those requests' keys",
            "concurrency": "calls in flight at once (1 for the embedded model; more for a server)",
            "plan": "true: print what the run would call (calls, cached, tokens, cost, time) and stop; "
                    "nothing is sent, no key is needed, the outputs stay as they are",
            "batch": "true: the uncached calls of OpenAI and Anthropic models go as batch jobs at the "
                     "provider's batch price (minutes to hours; a killed run resumes them), the others one "
                     "by one (README: Provider batch mode)"}
    RANGES = {"endpoints": Endpoints(), "model_options": ModelOptionsText(), "concurrency": count()}

    def transport(self, models: Iterable[str], *, client: Client | None = None, sends: bool = True) -> Transport:
        """The run's Transport; every model's route and key are checked here, before any call
        (a key only where a call may be sent: not in plan mode, nor through a ``client`` that
        never ``sends`` to a provider)."""
        transport = Transport(concurrency=self.concurrency, endpoints=parse_endpoints(self.endpoints),
                              batch=self.batch, options=RequestOptions.parse(self.model_options), client=client)
        check_routes(models, transport, sending=sends and not self.plan)
        return transport


@dataclass(frozen=True)
class JudgedParameters(ServingParameters):
    """The parameters every judged experiment shares, with one set of defaults, so the
    notebooks ask for the same cells (and reuse each other's from the cache)."""

    targets: tuple[str, ...] = (LOCAL_MODEL,)
    judges: tuple[str, ...] = (LOCAL_MODEL,)
    window: int = 2000
    max_tokens: int = 24
    judge_max_tokens: int = 32
    temperature: float = 0.0
    n_resamples: int = 2000
    resample_seed: int = 20240601
    output_dir: str = ""
    protocol: str = "reference"
    score: str = "discrete"
    require_calibrated: bool = False
    judge_labels: str = ""

    HELP = {**ServingParameters.HELP, "targets": "LiteLLM model strings", "judges": "first is primary",
            "protocol": "instrument set: reference (the authors' harness) or contextecho (ours)",
            "score": "discrete (the parsed verdict, the paper's) or expected (Σ s·p(s) from the "
                     "judge's token probabilities; the parsed verdict where the provider has none)",
            "window": "prefix characters (the embedded model's 8k context limits it)",
            "max_tokens": "the target's budget for an answer",
            "output_dir": "default paper/_generated/<notebook>",
            "n_resamples": "resamples of the bootstrap intervals and the resampling tests",
            "resample_seed": "seed of the resampling draws",
            "require_calibrated": "stop before any target call when a judge fails its calibration "
                                  "(quadratic kappa at least 0.60, at most 10% invalid)",
            "judge_labels": "labelled responses the judges are calibrated on, JSONL with probe_id, probe, "
                            "response and score per line (empty: " + DEFAULT_LABELS + ")"}
    # Per protocol (contextecho.experiments.parameters: PROTOCOL_HELP and IGNORED).
    PROTOCOL_HELP = {
        "window": {"reference": "prefix characters of the rendered transcript (the harness's 30,000; the "
                                "embedded model's 8k context limits it)"},
        "max_tokens": {"reference": "the target's budget for an answer (the harness's 600 for a probe)"},
        "temperature": {"contextecho": "the target's sampling temperature (0: greedy; the judge is greedy)"},
        "judge_max_tokens": {"reference": "the judge's budget (the harness's 400 at paper scale; a JSON verdict "
                                          "of about 20 tokens ends at its closing brace, one that runs on is "
                                          "closed within the budget)",
                             "contextecho": "the judge's budget, greedy (the rubric asks for one line, Score: n)"}}
    IGNORED = {"temperature": {"reference": "the target is sampled at the provider's default temperature, "
                                            "as the harness asks (no temperature sent)"}}
    RANGES = {**ServingParameters.RANGES, "targets": (NonEmpty(), Models()), "judges": (NonEmpty(), Models()),
              "window": POSITIVE, "max_tokens": POSITIVE, "judge_max_tokens": POSITIVE,
              "temperature": Temperature(("targets",)), "n_resamples": RESAMPLES, "resample_seed": NON_NEGATIVE,
              "protocol": PROTOCOL_NAMES, "score": OneOf(tuple(SCORES), "score"),
              "judge_labels": File(".jsonl", DEFAULT_LABELS)}

    def judge_models(self) -> tuple[str, ...]:
        """The model strings of the judges, in order (``self``, which the panel accepts: every
        target, :data:`~contextecho.echo.runner.SELF_JUDGE`)."""
        return tuple(dict.fromkeys(t for j in self.judges for t in (self.targets if j == SELF_JUDGE else (j,))))


@dataclass(frozen=True)
class ReleasedParameters(JudgedParameters):
    """A judged experiment whose cells the authors released (:data:`RELEASE_FOLDERS`): its
    calls can be answered from a release (``released``), nothing sent for a cell the release
    holds (:class:`~contextecho.echo.reference.released_answers.ReleasedClient`)."""

    released: str = ""
    released_judge: str = REFERENCE_JUDGE
    fill: bool = False

    #: The results folders of the authors' release this experiment's cells live in.
    RELEASE_FOLDERS: ClassVar[tuple[str, ...]] = ()

    HELP = {**JudgedParameters.HELP,
            "released": "the authors' released cells (a folder `released fetch` wrote): each call a released cell "
                        "answers is answered by it and nothing is sent (protocol reference, at the paper's scale; "
                        "README: Reproduce the paper from the released data); empty: none",
            "released_judge": "the judge whose verdicts the release stores (its records do not name it; the harness's "
                              "primary judge): only its calls are answered from the release",
            "fill": "with released: the calls the release lacks go to the provider (false: they are never sent; "
                    "their cells are lost, counted and said)"}
    RANGES = {**JudgedParameters.RANGES, "released": Folder("none"), "released_judge": Models(used_with="released")}

    def transport(self, models: Iterable[str], *, client: Client | None = None, sends: bool = True) -> Transport:
        """:meth:`ServingParameters.transport`; with ``released``, answered from the release's
        cells of :data:`RELEASE_FOLDERS` (no other ``client``), the keys checked only where the
        calls it lacks are sent (``fill``)."""
        if not self.released:
            return super().transport(models, client=client, sends=sends)
        if client is not None:
            raise ValueError("a run answered from a release takes no other network client")
        imported = import_release(resolve_path(self.released))
        print(imported.describe())
        client = ReleasedClient(imported, judge=self.released_judge, folders=self.RELEASE_FOLDERS, fill=self.fill)
        return super().transport(models, client=client, sends=self.fill)
