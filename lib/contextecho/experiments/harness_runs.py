"""Run-level conformance: the harness's whole runs replayed through our own experiments.

``shared/reference/contextecho/runs/`` holds cases made by running the authors' runners
and loaders end to end with canned replies (its ``README.md`` gives the format, its
``SPEC.md`` what a runner must do). For each case this module

1. configures our experiment code from the case's ``inputs`` and ``harness_driver``
   entries — the cells are :func:`.common.build` under the ``reference`` protocol, run by
   :func:`.spine.run_grid` on a fresh call cache, exactly what a notebook's grid stage
   runs — one of our runs per harness runner we can express;
2. replays the canned replies at the transport boundary: :class:`Replay` is the run's
   network client (:attr:`contextecho.engine.calls.Transport.client`), so every request
   is captured in the form LiteLLM is given, after our provider rules; the call kind and
   key of a request come from our cell identity (the target request's key; a judge
   request's tag names its cell), never from the request text;
3. compares the requests (set, order, every ``params`` field) and the stored cells with
   the case's ``expected`` values, and the tables our analysis code computes (the onset
   curve, :func:`.onset.harness_curve`; the panel forest, :func:`.panel.harness_table`).

Our requests are LiteLLM chat requests; :func:`sdk_form` is the one documented mapping
onto the harness's SDK keyword arguments (prompt-caching markers, a hint outside the
request key, are counted apart and left out of it): Anthropic gets the leading system message as
``system`` and the rest of the messages as sent; an OpenAI-compatible endpoint gets the
messages as sent, with the API base LiteLLM uses for the provider as ``base_url``
(Cohere: LiteLLM's route is Cohere's own chat API, not its OpenAI-compatible one);
Gemini gets ``contents`` (``assistant`` re-roled ``model``, text as parts) and a
``config`` of ``max_output_tokens``, ``temperature``, ``system_instruction`` and the
transport's timeout in milliseconds. Model strings are the case's provider and model id
under LiteLLM's prefix for that provider.

A runner we cannot express (the Fig.-1 fill runner's resume-and-self-judge, the
cross-judge audit, e10's own request rules, e18's renderer, b3, consolidate) is reported
*not expressible* with the reason, and its requests, cells and tables then fail as
missing: nothing is skipped silently. A mismatch the project declares on purpose
(``data/conformance/declared_divergences.json``: family, field, reason) is reported as a
*declared divergence*, never as a pass.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator, Mapping, Sequence

import pandas as pd

from ..echo.reference.cells import NamedTurn
from ..echo.reference.scorers import REFERENCE_SCORERS
from ..echo.reference.providers import (ANTHROPIC, COHERE, GEMINI, MISTRAL, NVIDIA, OPENAI, OPENROUTER,
                                        TOGETHER, harness_provider)
from ..engine import llm
from ..engine.calls import Transport
from ..engine.model_request import ModelRequest
from ..engine.paths import REPO_ROOT
from ..sessions.loader import load_session
from ..stats import harness as harness_stats
from . import common, onset, panel, spine

FORMAT_VERSION = 1
FAMILIES = ("panel", "s2", "onset", "cross_judge_b3", "session_validation", "consolidate")
#: LiteLLM's prefix for each of the harness's providers.
LITELLM_PREFIX = {ANTHROPIC: "anthropic", OPENAI: "openai", OPENROUTER: "openrouter", GEMINI: "gemini",
                  NVIDIA: "nvidia_nim", TOGETHER: "together_ai", COHERE: "cohere_chat", MISTRAL: "mistral"}
ENDPOINTS = {ANTHROPIC: "anthropic.messages.create", GEMINI: "google.genai.models.generate_content",
             COHERE: "cohere.v2.chat"}  # LiteLLM's cohere_chat route is Cohere's own chat API
OPENAI_ENDPOINT = "openai.chat.completions.create"
#: The API base LiteLLM sends each OpenAI-compatible provider's requests to (its defaults).
API_BASES = {OPENROUTER: "https://openrouter.ai/api/v1", NVIDIA: "https://integrate.api.nvidia.com/v1",
             TOGETHER: "https://api.together.xyz/v1", MISTRAL: "https://api.mistral.ai/v1",
             COHERE: "https://api.cohere.com/v2/chat"}
ARM_NAMES = {"real": "claude_session", "filler": "filler"}
DECLARED_FILE = REPO_ROOT / "data" / "conformance" / "declared_divergences.json"
#: The harness's runners and what of ours runs them (None: not expressible, with why).
PROBE_RUNNERS = ("experiments/e15_probes_at_crosscompaction/run.py",
                 "experiments/e15_probes_at_crosscompaction/run_fig1_xtarget.py")
ONSET_RUNNER = "experiments/e17_drift_onset/run_onset.py"
S2_RUNNER = "experiments/e08_cross_compaction/run.py"
NOT_EXPRESSIBLE = {
    "run_fig1_": "the Fig.-1 fill runner resumes from the cells on disk and judges with the target "
                 "itself (run_fig1_sonnet45.py:81); our panel has no resume-and-self-judge mode",
    "run_crossjudge_audit.py": "the cross-judge audit re-judges only P5_pre_C6 C-probe cells with an "
                               "int score; our cross-judge experiment judges every cell with every judge",
    "run_xtarget_v2.py": "e10's S2 runner has its own request rules (temperature 0, 1024 tokens, "
                         "timeout 180, replies stripped); our S2 cells follow e08's",
    "e18_session_validation": "e18 renders its own [role] text rows (500-character cuts) and plans "
                              "positions over them; our reference prefix is e08's",
    "run_b3_cross_judge.py": "b3 re-judges 300-character previews of e02 cells; we hold no e02 cells",
    "consolidate_12model_perm.py": "consolidate reads e02 content-position files, which our "
                                   "experiments do not write",
}
#: Loaders and plotting code whose tables we compute (else their tables are not expressible).
TABLE_DRIVERS = ("plotting/", "analysis/")


# ---------------------------------------------------------------- reading a case
class CaseError(ValueError):
    """A case file that cannot be checked (bad JSON, an unknown family or format)."""


def read_case(path: Path) -> dict:
    try:
        case = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CaseError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise CaseError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not isinstance(case, dict):
        raise CaseError(f"{path}: a case is a JSON object")
    for name in ("id", "family", "inputs", "expected", "harness_driver"):
        if name not in case:
            raise CaseError(f"{path}: no {name!r}")
    if case.get("format_version") != FORMAT_VERSION:
        raise CaseError(f"{path}: format_version {case.get('format_version')!r} (this runner reads {FORMAT_VERSION})")
    if case["family"] not in FAMILIES:
        raise CaseError(f"{path}: unknown family {case['family']!r} (known: {', '.join(FAMILIES)})")
    return case


def decode(value: Any) -> Any:
    """``{"$float": "nan"}`` and friends as floats; everything else as it is."""
    if isinstance(value, dict):
        if set(value) == {"$float"}:
            return float(value["$float"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def known_texts(case: dict) -> dict[str, str]:
    """Every string of the case's inputs and ``expected.texts`` whose whole text is there, by
    sha256: a digested canned reply (over 1,000 characters) is one of the injections."""
    found: dict[str, str] = {}

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.setdefault(hashlib.sha256(value.encode("utf-8")).hexdigest(), value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(case.get("inputs", {}))
    for sha, text in (case["expected"].get("texts") or {}).items():
        if text.get("len", 0) <= len(text.get("head", "")):
            found.setdefault(sha, text["head"])
    return found


def resolve_digests(value: Any, texts: Mapping[str, str], where: str) -> Any:
    """``value`` with every ``{"$digest"}`` replaced by its text (a :class:`CaseError` when
    the case does not hold it)."""
    if isinstance(value, dict) and set(value) == {"$digest"}:
        sha = value["$digest"]["sha256"]
        if sha not in texts:
            raise CaseError(f"{where}: the text of digest {sha[:12]} is nowhere in the case")
        return texts[sha]
    if isinstance(value, dict):
        return {k: resolve_digests(v, texts, where) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_digests(v, texts, where) for v in value]
    return value


def key_identity(key: Mapping[str, Any]) -> tuple:
    """A target request key as a cell identity: (target, position, arm, item, replicate)."""
    return (key.get("target"), key.get("position"), key.get("arm"), key.get("item"), int(key.get("replicate", 0)))


def row_identity(row: Mapping[str, Any], target_safe: Mapping[str, str]) -> tuple:
    """One of our frame's rows as the same cell identity, in the harness's names."""
    return (target_safe[row["target"]], row["position"], ARM_NAMES[row["arm"]], _item_name(row["item"]),
            int(row["replicate"]))


def key_text(key: Mapping[str, Any]) -> str:
    return json.dumps(key, sort_keys=True)


# ---------------------------------------------------------------- the replay client
@dataclass
class Sent:
    seq: int
    call: str
    key: dict
    attempt: int
    model: str
    kwargs: dict


class UnexpectedRequest(Exception):
    """A request whose (call, key) the case has no reply for."""


@dataclass
class Replay:
    """The network client of a replayed run (module doc): canned replies by (call, key)."""

    replies: dict[tuple[str, str], list]
    identities: dict[str, tuple[str, dict]] = field(default_factory=dict)  # target request key -> (call, key)
    judge_calls: dict[str, str] = field(default_factory=dict)  # judge model -> call kind
    sent: list[Sent] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    # The last reply spec sent to each target cell, by cell identity (:func:`key_identity`).
    target_replies: dict[tuple, Mapping] = field(default_factory=dict)

    def identify(self, request: ModelRequest) -> tuple[str, dict] | None:
        if request.key in self.identities:
            return self.identities[request.key]
        cell = request.tag.get("cell")
        if cell in self.identities and request.model in self.judge_calls:
            return self.judge_calls[request.model], self.identities[cell][1]
        return None

    async def __call__(self, request: ModelRequest, kwargs: dict) -> Any:
        found = self.identify(request)
        if found is None:
            self.unexpected.append(f"{request.model} request {request.key[:12]} (tag {dict(request.tag)})")
            raise UnexpectedRequest(f"no cell identity for request {request.key[:12]}")
        call, key = found
        ident = (call, key_text(key))
        attempt = self.counts[ident]
        self.counts[ident] += 1
        self.sent.append(Sent(len(self.sent), call, key, attempt, request.model, dict(kwargs)))
        specs = self.replies.get(ident)
        if specs is None:
            self.unexpected.append(f"{call} {key_text(key)}")
            raise UnexpectedRequest(f"no canned reply for {call} {key_text(key)}")
        spec = specs[min(attempt, len(specs) - 1)]
        if call == "target":
            self.target_replies[key_identity(key)] = spec
        return render_reply(spec, request.model)


# The status codes a message names -> the LiteLLM exception that provider error becomes.
_STATUS_ERRORS = (("429", "RateLimitError"), ("529", "ServiceUnavailableError"),
                  ("503", "ServiceUnavailableError"), ("502", "ServiceUnavailableError"),
                  ("500", "InternalServerError"), ("400", "BadRequestError"),
                  ("401", "AuthenticationError"), ("403", "PermissionDeniedError"), ("404", "NotFoundError"))


def replay_error(error_type: str, message: str, model: str) -> Exception:
    """The exception LiteLLM raises for a provider error of ``error_type`` (module doc of
    :mod:`contextecho.engine.faults`: its class decides whether it is retried)."""
    litellm = llm.litellm
    name = error_type
    if not hasattr(litellm, name):
        lowered = message.lower()
        name = next((cls for code, cls in _STATUS_ERRORS if code in message), None) or \
            ("Timeout" if "timeout" in lowered else "ServiceUnavailableError" if "overloaded" in lowered else None)
    provider = llm.provider_of(model) or "unknown"
    if name in ("BadRequestError", "NotFoundError", "Timeout"):
        return getattr(litellm, name)(message, model=model, llm_provider=provider)
    if name == "PermissionDeniedError":
        import httpx
        return litellm.PermissionDeniedError(message, provider, model,
                                             response=httpx.Response(403, request=httpx.Request("POST", "http://x")))
    if name and hasattr(litellm, name):
        return getattr(litellm, name)(message, llm_provider=provider, model=model)
    return type(error_type, (Exception,), {})(message)  # no provider status: a programming fault


def render_reply(spec: Mapping[str, Any], model: str) -> Any:
    """A canned reply spec as the LiteLLM response our call site reads: text as the message
    content, Anthropic content blocks joined as LiteLLM joins them (no separator), null
    content as none, an Anthropic reply without text (no blocks, or empty ones) as none
    (LiteLLM's adapter gives ``None``), ``raise`` as the provider error."""
    if "raise" in spec:
        raise replay_error(spec["raise"]["type"], spec["raise"].get("message", ""), model)
    if "blocks" in spec:
        text = "".join(spec["blocks"])
    elif spec.get("null"):
        text = None
    else:
        text = spec["text"]
    if harness_provider(model)[0] == ANTHROPIC and not text:
        text = None  # LiteLLM's Anthropic adapter: ``content=merged_text or None``
    usage = spec.get("usage") or {}
    return SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=text), finish_reason="stop")],
        usage=SimpleNamespace(prompt_tokens=usage.get("input_tokens"), completion_tokens=usage.get("output_tokens")))


# ---------------------------------------------------------------- the SDK form of our requests
def _model_id(model: str) -> str:
    return harness_provider(model)[1]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))


def strip_markers(messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The messages without prompt-caching markers (``cache_control``: a hint to the
    provider, outside the request key; :func:`compare_requests` counts them apart)."""
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if k != "cache_control"}
        if isinstance(m.get("content"), list):
            m["content"] = [{k: v for k, v in part.items() if k != "cache_control"} if isinstance(part, dict)
                            else part for part in m["content"]]
        out.append(m)
    return out


def has_markers(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any("cache_control" in m or any(isinstance(p, dict) and "cache_control" in p
                                           for p in (m.get("content") if isinstance(m.get("content"), list) else []))
               for m in messages)


def sdk_form(model: str, kwargs: Mapping[str, Any]) -> dict:
    """``{endpoint, client, params}`` of one request we gave LiteLLM (module doc)."""
    provider, model_id = harness_provider(model)
    messages = strip_markers(kwargs.get("messages", []))
    sampling = {k: kwargs[k] for k in ("max_tokens", "max_completion_tokens", "temperature", "response_format",
                                       "tools", "top_p", "seed") if k in kwargs}
    if provider == ANTHROPIC:
        system = [m for m in messages if m["role"] == "system"]
        params = {"model": model_id, **({"system": _text(system[0]["content"])} if system else {}),
                  "messages": [m for m in messages if m["role"] != "system"], **sampling}
        return {"endpoint": ENDPOINTS[ANTHROPIC], "client": {}, "params": params}
    if provider == GEMINI:
        system = [m for m in messages if m["role"] == "system"]
        contents = [{"role": "model" if m["role"] == "assistant" else m["role"],
                     "parts": [{"text": _text(m["content"])}]} for m in messages if m["role"] != "system"]
        config = {"$type": "GenerateContentConfig"}
        if "max_tokens" in sampling:
            config["max_output_tokens"] = sampling["max_tokens"]
        if "temperature" in sampling:
            config["temperature"] = sampling["temperature"]
        if "timeout" in kwargs:
            config["http_options"] = {"$type": "HttpOptions", "timeout": int(1000 * kwargs["timeout"])}
        if system:
            config["system_instruction"] = _text(system[0]["content"])
        return {"endpoint": ENDPOINTS[GEMINI], "client": {},
                "params": {"model": model_id, "contents": contents, "config": config}}
    client = {"base_url": API_BASES[provider]} if provider in API_BASES else {}
    return {"endpoint": ENDPOINTS.get(provider, OPENAI_ENDPOINT), "client": client,
            "params": {"model": model_id, "messages": messages, **sampling}}


def litellm_model(provider: str, model_id: str) -> str:
    """The LiteLLM model string of a harness (provider, model id)."""
    if provider not in LITELLM_PREFIX:
        raise CaseError(f"provider {provider!r} has no LiteLLM prefix here (known: {', '.join(LITELLM_PREFIX)})")
    return f"{LITELLM_PREFIX[provider]}/{model_id}"


# ---------------------------------------------------------------- comparing
STATUSES = ("pass", "fail", "declared", "not_expressible", "not_implemented")


@dataclass
class Check:
    """One compared field: ``pass``, ``fail``, ``declared`` (a declared divergence, never a
    pass), ``not_expressible`` (an input we cannot run: fails the case) or
    ``not_implemented`` (a positions scheme we do not implement: listed, SPEC §6);
    expected and actual values for the report."""

    section: str
    field: str
    status: str
    expected: Any = None
    actual: Any = None
    note: str = ""

    def as_dict(self) -> dict:
        return {"section": self.section, "field": self.field, "status": self.status,
                "expected": _short(self.expected), "actual": _short(self.actual), "note": self.note}


def _short(value: Any, limit: int = 400) -> Any:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    return value if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def matches(expected: Any, actual: Any, tolerance: float = 0.0) -> bool:
    """Equality as SPEC §3 and §5 define it: digests by sha256 and length, exact strings,
    numbers within ``tolerance`` (NaN equals NaN), a key present on one side only differs."""
    if isinstance(expected, dict) and set(expected) == {"$digest"}:
        if not isinstance(actual, str):
            return False
        d = expected["$digest"]
        return len(actual) == d["len"] and hashlib.sha256(actual.encode("utf-8")).hexdigest() == d["sha256"]
    if isinstance(expected, dict) and set(expected) == {"$float"}:
        expected = float(expected["$float"])
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual or expected == actual and type(expected) is type(actual)
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        if math.isnan(expected) or math.isnan(actual):
            return math.isnan(expected) and math.isnan(actual)
        return abs(expected - actual) <= tolerance
    if isinstance(expected, dict) and isinstance(actual, dict):
        return set(expected) == set(actual) and all(matches(expected[k], actual[k], tolerance) for k in expected)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(matches(e, a, tolerance) for e, a in zip(expected, actual))
    return expected == actual and type(expected) is type(actual)


def field_differences(expected: Mapping, actual: Mapping, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(field, expected, actual)`` for each top-level key that differs (absent = ``<absent>``)."""
    out = []
    for k in sorted(set(expected) | set(actual)):
        e, a = expected.get(k, "<absent>"), actual.get(k, "<absent>")
        if k not in expected or k not in actual or not matches(e, a):
            out.append((f"{prefix}{k}", e, a))
    return out


def load_declared(path: Path = DECLARED_FILE) -> list[dict]:
    """The project's declared divergences: ``[{family, section, field, reason}]``; a field
    ending ``*`` matches every field it starts."""
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    for i, d in enumerate(data):
        if not isinstance(d, dict) or not {"family", "section", "field", "reason"} <= set(d):
            raise CaseError(f"{path}: entry {i} needs family, section, field and reason")
    return data


def _declared(declared: Sequence[dict], family: str, section: str, name: str) -> dict | None:
    for d in declared:
        if d["family"] in (family, "*") and d["section"] == section and \
                (d["field"] == name or d["field"].endswith("*") and name.startswith(d["field"][:-1])):
            return d
    return None


# ---------------------------------------------------------------- running a case
@dataclass
class CaseReport:
    case_id: str
    family: str
    checks: list[Check] = field(default_factory=list)
    error: str | None = None

    def add(self, section: str, name: str, ok: bool, expected: Any = None, actual: Any = None,
            declared: Sequence[dict] = (), note: str = "") -> None:
        status = "pass" if ok else "fail"
        if not ok:
            d = _declared(declared, self.family, section, name)
            if d is not None:
                status, note = "declared", d["reason"]
        self.checks.append(Check(section, name, status, expected, actual, note))

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.checks)

    @property
    def passed(self) -> bool:
        return self.error is None and not any(c.status in ("fail", "not_expressible") for c in self.checks)

    def summary(self) -> dict:
        return {"case": self.case_id, "family": self.family, "passed": self.passed, "error": self.error,
                **{s: self.count(s) for s in STATUSES}}


@contextlib.contextmanager
def _replay_environment(models: Sequence[str]) -> Iterator[None]:
    """A fresh call cache, and a dummy key for each provider whose key is missing, as the
    fixture generator gave the harness (never a real key: nothing leaves this process)."""
    saved = dict(os.environ)
    litellm = llm.ensure_providers()
    with tempfile.TemporaryDirectory(prefix="contextecho-replay-") as tmp:
        os.environ["CONTEXTECHO_CACHE"] = str(Path(tmp) / "cache")
        for model in models:
            for name in litellm.validate_environment(model).get("missing_keys") or []:
                os.environ[name] = "fixture-dummy-not-a-key"
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


def _item_name(item: str) -> str:
    """Our item id as the harness's key names it (``S2#01`` -> ``S2_v00``)."""
    if item.startswith("S2#"):
        return f"S2_v{int(item[3:]) - 1:02d}"
    return item


def _our_item(name: str) -> str:
    if re.fullmatch(r"S2_v\d\d", name):
        return f"S2#{int(name[4:]) + 1:02d}"
    return name


def _key_fields(case: dict, call: str) -> list[str]:
    """The key fields of ``call`` requests, as the case's canned replies name them."""
    for reply in case.get("canned_replies", []):
        if reply.get("call") == call:
            return list(reply["key"])
    for request in case["expected"].get("requests", []):
        if request.get("call") == call:
            return list(request["key"])
    return []


@dataclass
class Driven:
    """One of our runs standing in for one harness runner."""

    runner: str
    frame: pd.DataFrame
    target_safe: dict[str, str]  # model string -> the harness's folder name
    replicates: int = 1


def _targets(case: dict, driver: dict) -> list[tuple[str, str, dict]]:
    """``(model string, target_safe, target input)`` of the targets one driver ran."""
    env = driver.get("env") or {}
    inputs = case["inputs"]["targets"]
    if env.get("MODEL_ID"):
        chosen = [t for t in inputs if t["model"] == env["MODEL_ID"] and t["provider"] == env.get("PROVIDER", t["provider"])]
    elif (driver.get("substitutions") or {}).get("TARGETS"):
        names = [t[1] for t in driver["substitutions"]["TARGETS"]]
        chosen = [t for t in inputs if t["target_safe"] in names]
    else:
        chosen = list(inputs)
    return [(litellm_model(t["provider"], t["model"]), t["target_safe"], t) for t in chosen]


def _positions(case: dict, driver: dict) -> list[NamedTurn]:
    subs = driver.get("substitutions") or {}
    if subs.get("POSITIONS"):
        return [NamedTurn(label, int(turn)) for turn, label in subs["POSITIONS"]]
    if "onset_turns" in case["inputs"]:
        return [NamedTurn(f"T{t:04d}", int(t)) for t in case["inputs"]["onset_turns"]]
    return [NamedTurn(p["label"], int(p["turn"])) for p in case["inputs"].get("positions", [])]


def _items(case: dict) -> list[str]:
    inputs = case["inputs"]
    if "items" in inputs:
        return [_our_item(i) for i in inputs["items"]]
    probes = inputs.get("probes")
    if isinstance(probes, list):
        return list(probes)
    if isinstance(probes, str) and probes.startswith("all"):
        return ["all"]
    raise CaseError(f"case {case['id']}: cannot read its probes {probes!r}")


def _judge(case: dict, runner: str) -> str | None:
    for run in case["inputs"].get("runs", []):
        if run.get("runner") == runner and run.get("judge"):
            return litellm_model(run["judge"]["provider"], run["judge"]["model"])
    judge = case["inputs"].get("judge")
    return litellm_model(judge["provider"], judge["model"]) if judge else None


def _identity(cell, safe: dict[str, str], fields: Sequence[str]) -> dict:
    values = {"target": safe[cell.target], "position": cell.position, "turn": cell.step,
              "arm": ARM_NAMES[cell.arm], "item": _item_name(cell.item.id), "replicate": cell.replicate}
    return {f: values[f] for f in fields if f in values}


def drive(case: dict, corpus: Path, replay: Replay, workdir: Path) -> tuple[list[Driven], list[Check]]:
    """Run each harness runner of the case we can express; the others as not expressible."""
    window = int(case["inputs"].get("max_chars", 30_000))
    driven, checks = [], []
    session = None
    for number, driver in enumerate(case["harness_driver"]):
        runner = driver["runner"]
        if runner.startswith(TABLE_DRIVERS):
            continue
        if runner not in (*PROBE_RUNNERS, ONSET_RUNNER, S2_RUNNER):
            why = next((reason for pattern, reason in NOT_EXPRESSIBLE.items() if pattern in runner), None)
            checks.append(Check("runners", runner, "not_expressible", note=why or "no experiment of ours runs it"))
            continue
        if session is None:
            if "session" not in case["inputs"]:
                raise CaseError(f"case {case['id']}: runner {runner} needs inputs.session")
            session = load_session(corpus / case["inputs"]["session"])
        targets = _targets(case, driver)
        judge = None if runner == S2_RUNNER else _judge(case, runner)
        replicates = int((driver.get("env") or {}).get("N_REPLICATES", 1))
        experiment = "onset" if runner == ONSET_RUNNER else "panel"
        params = panel.Parameters(
            # The S2 runner judges nothing: its parameters name a judge no cell asks.
            targets=tuple(m for m, _, _ in targets), judges=(judge or targets[0][0],),
            window=window, max_tokens=panel.PAPER_SCALE["max_tokens"],
            stressor_max_tokens=panel.PAPER_SCALE["stressor_max_tokens"],
            judge_max_tokens=panel.PAPER_SCALE["judge_max_tokens"], protocol="reference",
            output_dir=str(workdir / f"{number:02d}"), n_resamples=10_000, resample_seed=42,
            concurrency=1)
        chosen = [session]
        run = spine.start(experiment, params, models=params.targets + params.judges,
                          protocol=common.protocol_record(params), sessions=lambda: chosen)
        run.transport = Transport(concurrency=1, max_attempts=run.transport.max_attempts, base_delay_s=0.0,
                                  max_delay_s=0.0, timeout_s=run.transport.timeout_s, client=replay)
        positions = {session.session_id: _positions(case, driver)}
        cells = common.build(params, experiment, [session], _items(case), positions="uniform",
                             reference_positions=positions, replicates=replicates,
                             stressor_max_tokens=params.stressor_max_tokens, redact=False)
        safe = {m: s for m, s, _ in targets}
        fields = _key_fields(case, "target")
        for cell in cells:
            replay.identities[cell.request.key] = ("target", _identity(cell, safe, fields))
        if judge:
            replay.judge_calls[judge] = "judge"
        frame = spine.run_grid(run, cells, judges=[judge] if judge else [], judge_max_tokens=params.judge_max_tokens,
                               protocol=params.protocol)
        driven.append(Driven(runner, frame, safe, replicates))
    return driven, checks


def compare_requests(case: dict, replay: Replay, report: CaseReport, declared: Sequence[dict]) -> None:
    expected = case["expected"].get("requests", [])
    index = {(r["call"], key_text(r["key"]), r["attempt"]): r for r in expected}
    ours = {(s.call, key_text(s.key), s.attempt): s for s in replay.sent}
    missing = sorted(set(index) - set(ours))
    extra = sorted(set(ours) - set(index))
    report.add("requests", "set.missing", not missing, [list(k) for k in missing[:20]], len(missing), declared)
    report.add("requests", "set.extra", not extra, len(extra), [list(k) for k in extra[:20]], declared)
    report.add("requests", "unexpected", not replay.unexpected, [], replay.unexpected[:20], declared)
    shared = [k for k in index if k in ours]
    order_e = [k for k in sorted(shared, key=lambda k: index[k]["seq"])]
    order_a = [k for k in sorted(shared, key=lambda k: ours[k].seq)]
    report.add("requests", "order", order_e == order_a, len(order_e),
               sum(a != b for a, b in zip(order_e, order_a)), declared,
               note="" if order_e == order_a else "requests in another order (content compared apart)")
    first_target = {}
    for s in replay.sent:
        if s.call == "target":
            first_target.setdefault(key_text(s.key), s.seq)
    early = [[s.call, s.key] for s in replay.sent
             if s.call != "target" and s.seq < first_target.get(key_text(s.key), -1)]
    report.add("requests", "target_before_judge", not early, [], early[:10], declared,
               note="within each cell the target request comes before its judge requests")
    marked = sum(has_markers(s.kwargs.get("messages", [])) for s in replay.sent)
    report.add("requests", "cache_control", not marked, 0, marked, declared,
               note=f"{marked} requests mark their shared prefix for the provider's prompt cache")
    diffs: Counter = Counter()
    examples: dict[str, tuple] = {}
    seen: set[str] = {"params.model", "params.messages"}
    for k in shared:
        exp, got = index[k], sdk_form(ours[k].model, ours[k].kwargs)
        provider = harness_provider(ours[k].model)[0]
        for part in ("endpoint", "client"):
            name = f"{part}[{provider}]"
            seen.add(name)
            if not matches(exp[part], got[part]):
                diffs[name] += 1
                examples.setdefault(name, (k, exp[part], got[part]))
        for name, e, a in field_differences(exp["params"], got["params"], "params."):
            if name == "params.config" and isinstance(e, dict) and isinstance(a, dict):
                found = field_differences(e, a, "params.config.")  # Gemini's: each setting apart
            else:
                found = [(name, e, a)]
            for sub, e_, a_ in found:
                diffs[sub] += 1
                examples.setdefault(sub, (k, e_, a_))
    for name in sorted(set(diffs) | seen):
        k, e, a = examples.get(name, (None, None, None))
        report.add("requests", name, diffs[name] == 0, e, a, declared,
                   note=f"{diffs[name]} of {len(shared)} requests differ; first {list(k) if k else ''}"
                   if diffs[name] else f"{len(shared)} requests")


def _cell_identity(path: str, record: dict) -> tuple | None:
    m = re.search(r"/([^/]+)/([^/]+)/v(\d\d)/(claude|filler)\.json$", path)
    if m:  # S2: <target>/<position>/vNN/<arm>.json
        return (m.group(1), m.group(2), "claude_session" if m.group(4) == "claude" else "filler",
                f"S2_v{m.group(3)}", 0)
    if {"probe_id", "target", "position", "arm"} <= set(record):
        return (record["target"], record["position"], record["arm"], record["probe_id"],
                int(record.get("replicate", 0)))
    return None


def compare_cells(case: dict, driven: Sequence[Driven], replay: Replay, report: CaseReport,
                  declared: Sequence[dict]) -> None:
    ours: dict[tuple, dict] = {}
    for d in driven:
        rows = d.frame[(d.frame["judge_model"].isna()) | (d.frame["judge_model"].isin(
            [j for j, kind in replay.judge_calls.items() if kind == "judge"]))]
        for row in rows.to_dict("records"):
            ident = row_identity(row, d.target_safe)
            row["response"] = row["response"] if isinstance(row["response"], str) else None
            ours[ident] = row
    expected = {}
    for cell in case["expected"].get("cells", []):
        ident = _cell_identity(cell["path"], cell["record"])
        if ident is None:
            unexpressed = [c.field for c in report.checks if c.section == "runners"]
            if unexpressed:
                report.checks.append(Check("cells", cell["path"], "not_expressible",
                                           note=f"not a probe or S2 cell; written by one of {unexpressed}"))
            else:
                report.add("cells", cell["path"], False, "a probe or S2 cell", None, declared,
                           note="unknown cell layout")
            continue
        expected[ident] = cell["record"]
    diffs: Counter = Counter()
    examples: dict[str, tuple] = {}
    missing = [i for i in expected if i not in ours or ours[i]["response"] is None]
    for ident, record in expected.items():
        row = ours.get(ident)
        if row is None or row["response"] is None:
            continue
        actual = {"response_text": row["response"], "response_len": len(row["response"])}
        spec = replay.target_replies.get(ident, {})
        if len(spec.get("blocks") or []) > 1 and row["response"] == "".join(spec["blocks"]):
            # LiteLLM joined the blocks without a separator: compared apart (declared or not)
            joined = record.get("response_text") == "\n".join(spec["blocks"])
            report.add("cells", "multi_block_join", False, record.get("response_text"), row["response"],
                       declared, note=f"{list(ident)}; the harness's text is the blocks joined by newlines: {joined}")
            continue
        if row.get("item_kind") == "probe":
            score = row.get("reference_score")
            actual.update(score=None if score is None or (isinstance(score, float) and math.isnan(score))
                          else int(score), label=row.get("reference_label"), reason=row.get("reference_reason"))
        for name in ("response_text", "response_len", "score", "label", "reason"):
            if name in record and name in actual and not matches(record[name], actual[name]):
                diffs[name] += 1
                examples.setdefault(name, (ident, record[name], actual[name]))
    report.add("cells", "stored", not missing, len(expected), len(expected) - len(missing), declared,
               note=f"missing or failed: {[list(i) for i in missing[:10]]}" if missing else f"{len(expected)} cells")
    for name in ("response_text", "response_len", "score", "label", "reason"):
        ident, e, a = examples.get(name, (None, None, None))
        report.add("cells", name, diffs[name] == 0, e, a, declared,
                   note=f"{diffs[name]} cells differ; first {list(ident) if ident else ''}" if diffs[name] else "")
    # Lost cells: requested, no expected cell; ours must not carry a score or a length to a table.
    requested = {key_identity(s.key) for s in replay.sent if s.call == "target"}
    lost = [i for i in requested if i not in expected and i in ours]
    scored = [i for i in lost if _contributes(ours[i])]
    report.add("cells", "lost_cells_contribute_nothing", not scored, [], [list(i) for i in scored[:10]], declared,
               note=f"{len(lost)} lost cells")


def _contributes(row: dict) -> bool:
    if row.get("item_kind") == "probe":
        score = row.get("reference_score")
        return score is not None and not (isinstance(score, float) and math.isnan(score))
    return row.get("verdict_status") == "ok"


# ---------------------------------------------------------------- tables
def _primary(driven: Sequence[Driven], replay: Replay) -> pd.DataFrame:
    judges = [j for j, kind in replay.judge_calls.items() if kind == "judge"]
    frames = [d.frame.assign(target=d.frame["target"].map(d.target_safe)) for d in driven]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not len(frame):
        return frame
    return frame[(frame["item_kind"] == "probe") & frame["judge_model"].isin(judges)]


def compare_tables(case: dict, driven: Sequence[Driven], replay: Replay, report: CaseReport,
                   declared: Sequence[dict]) -> None:
    tables = case["expected"].get("tables") or {}
    computed = set()
    primary = _primary(driven, replay)
    if "onset_rows" in tables:
        computed |= {"onset_rows", "onset_loader", "onset_gap_calls", "onset_return", "onset_stdout"}
        order = [t for t in case["inputs"].get("plot_targets", [])]
        curve = onset.harness_curve(primary, n_resamples=10_000, seed=42, failures="in", targets=order) \
            if len(primary) else pd.DataFrame()
        for target, rows in decode(tables["onset_rows"]).items():
            for row in rows:
                got = curve[(curve["target"] == target) & (curve["step"] == row["turn"])] if len(curve) else curve
                actual = {"g_m": float(got["harness_gap"].iloc[0]), "g_lo": float(got["harness_lo"].iloc[0]),
                          "g_hi": float(got["harness_hi"].iloc[0]), "n": int(got["harness_n"].iloc[0])} if len(got) \
                    else {"g_m": math.nan, "g_lo": math.nan, "g_hi": math.nan, "n": 0}
                for name in ("g_m", "g_lo", "g_hi", "n"):
                    tol = 0.0 if name == "n" else 1e-9
                    report.add("tables", f"onset_rows.{name}", matches(row[name], actual[name], tol),
                               row[name], actual[name], declared, note=f"{target} turn {row['turn']}")
    if "fig2_forest_rows" in tables:
        computed |= {"fig2_forest_rows", "fig2_loader", "fig2_bootstrap_calls", "fig2_return", "fig2_stdout"}
        forest = primary[primary["item"].isin(panel.headline_ids(panel.Parameters.headline))] \
            if len(primary) else primary  # the forest loader reads C01-C05 only (:103)
        table = panel.harness_table(forest, n_resamples=10_000, seed=42, failures="in",
                                    positions=panel.FOREST_POSITIONS) if len(primary) else pd.DataFrame()
        for row in decode(tables["fig2_forest_rows"]):
            got = table[table["target"] == row["target"]] if len(table) else table
            for name, column in (("n_cl", "n_real"), ("n_fi", "n_filler"), ("n_pos_cl", "n_positions_real"),
                                 ("n_pos_fi", "n_positions_filler"), ("cl_m", "real_mean"), ("cl_lo", "real_lo"),
                                 ("cl_hi", "real_hi"), ("fi_m", "filler_mean"), ("fi_lo", "filler_lo"),
                                 ("fi_hi", "filler_hi"), ("gap", "gap")):
                actual = (int if name.startswith("n_") else float)(got[column].iloc[0]) if len(got) else None
                report.add("tables", f"fig2_forest_rows.{name}",
                           actual is not None and matches(row[name], actual, 0.0 if name.startswith("n_") else 1e-9),
                           row[name], actual, declared, note=row["target"])
    if "audit_compliance" in tables or "forest_stressors_no_anchor" in tables:
        computed |= _compare_s2_tables(tables, driven, replay, report, declared)
    for name in tables:
        if name not in computed:
            report.checks.append(Check("tables", name, "not_expressible",
                                       note="no analysis of ours computes this table"))


def _case_models(case: dict) -> list[str]:
    """The LiteLLM model strings of the case's targets and judges (those it names as a
    provider and a model)."""
    inputs = case["inputs"]
    named = list(inputs.get("targets") or []) + [inputs.get("judge")] + \
        [r.get("judge") for r in inputs.get("runs") or [] if isinstance(r, dict)]
    return [litellm_model(m["provider"], m["model"]) for m in named
            if isinstance(m, dict) and m.get("provider") in LITELLM_PREFIX and m.get("model")]


#: Our arms under the harness's names in its S2 tables.
S2_ARM_NAMES = {"real": "claude", "filler": "filler"}
#: The one session a replayed case runs, as the harness's S2 audit labels its own.
S2_SESSION = "Session 1"


def _stressor_cells(driven: Sequence[Driven], replay: Replay | None = None) -> list[harness_stats.StressorCell]:
    """The stored S2 cells of our runs (a failed target call stored nothing). With
    ``replay``: as they would be had a reply of several text blocks been joined as the
    harness joins them (newlines; the declared ``multi_block_join``), its S2 verdict
    recomputed by the same scorer."""
    cells = []
    for d in driven:
        rows = d.frame[(d.frame["item_kind"] == "stressor") & d.frame["response"].map(lambda v: isinstance(v, str))]
        for row in rows.to_dict("records"):
            ident = row_identity(row, d.target_safe)
            text, compliant = row["response"], bool(row["passed"])
            if replay is not None:
                blocks = replay.target_replies.get(ident, {}).get("blocks") or []
                if len(blocks) > 1:
                    text = "\n".join(blocks)
                    compliant = bool(REFERENCE_SCORERS.get(row["scorer"])(text))
            cells.append(harness_stats.StressorCell(ident[0], S2_SESSION, row["position"], ident[3],
                                                    row["arm"], compliant, len(text)))
    return cells


def _explained(report: CaseReport, name: str, expected: Any, ours: Any, joined: Any, declared: Sequence[dict],
               tolerance: float = 0.0, note: str = "") -> None:
    """A table field: a pass when ours agrees; a declared divergence when it agrees only
    with multi-block replies joined the harness's way (and ``multi_block_join`` is
    declared); else a failure."""
    if matches(expected, ours, tolerance):
        report.add("tables", name, True, expected, ours, declared, note=note)
        return
    why = _declared(declared, report.family, "cells", "multi_block_join")
    if why is not None and matches(expected, joined, tolerance):
        report.checks.append(Check("tables", name, "declared", expected, ours,
                                   f"{note}: agrees once multi-block replies are joined as the harness joins "
                                   f"them ({why['reason'][:120]})".lstrip(": ")))
        return
    report.add("tables", name, False, expected, ours, declared, note=note)


def _harness_arms(counts: Mapping[str, Any]) -> dict:
    return {S2_ARM_NAMES[arm]: value for arm, value in counts.items()}


def _compare_s2_tables(tables: Mapping, driven: Sequence[Driven], replay: Replay, report: CaseReport,
                       declared: Sequence[dict]) -> set[str]:
    """The S2 audit (counts and length ratios) and the stressor forest's points, computed
    by :func:`~contextecho.stats.harness.compliance_audit` and
    :func:`~contextecho.stats.harness.stressor_forest_points` from our cells. The targets
    and sessions the harness's audit lists are its inputs (one without cells counts
    zero); the forest's bootstrap bounds are reported as *resampling differs*."""
    versions = {"ours": _stressor_cells(driven), "joined": _stressor_cells(driven, replay)}
    done = set()
    if "audit_compliance" in tables:
        done.add("audit_compliance")
        expected = decode(tables["audit_compliance"])
        audits = {k: harness_stats.compliance_audit(cells, targets=list(expected.get("per_target", {})),
                                                    sessions=list(expected.get("per_session", {})))
                  for k, cells in versions.items()}
        shaped = {k: {"overall": _harness_arms(a["overall"]),
                      "per_target": {t: _harness_arms(v) for t, v in a["per_target"].items()},
                      "per_session": {s_: _harness_arms(v) for s_, v in a["per_session"].items()}}
                  for k, a in audits.items()}
        for name in ("overall", "per_target", "per_session"):
            _explained(report, f"audit_compliance.{name}", expected.get(name), shaped["ours"][name],
                       shaped["joined"][name], declared)
        for session, ratios in (expected.get("ratios_by_session") or {}).items():
            got = {k: a["ratios_by_session"].get(session, {}) for k, a in audits.items()}
            for name in ("raw_ratio", "n_raw", "cond_ratio", "n_cond"):
                _explained(report, f"audit_compliance.ratios_by_session.{name}", ratios.get(name),
                           got["ours"].get(name), got["joined"].get(name), declared,
                           0.0 if name.startswith("n_") else 1e-9, session)
    if "forest_stressors_no_anchor" in tables:
        done.add("forest_stressors_no_anchor")
        for row in decode(tables["forest_stressors_no_anchor"]):
            got = {k: harness_stats.stressor_forest_points([c for c in cells if c.target == row["target"]],
                                                           row.get("positions") or [])
                   for k, cells in versions.items()}
            for name in ("fi_c", "cl_c", "cl_r"):
                point, lo, hi = row[name]
                _explained(report, f"forest_stressors_no_anchor.{name}", point, got["ours"][name],
                           got["joined"][name], declared, 1e-9, row["target"])
                report.add("tables", f"forest_stressors_no_anchor.{name}.bounds", False, [lo, hi], None, declared,
                           note=f"{row['target']}: resampling differs (the fixtures give the bounds of "
                                "fig_forest_stressors.py:156-204, not its resampling)")
            for name in ("compliance_drop", "length_inflation"):
                _explained(report, f"forest_stressors_no_anchor.{name}", row[name], got["ours"][name],
                           got["joined"][name], declared, 1e-9, row["target"])
    return done


def run_case(path: Path, corpus: Path, declared: Sequence[dict] | None = None) -> CaseReport:
    """Replay one case through our experiments and compare (module doc)."""
    declared = load_declared() if declared is None else declared
    case = read_case(path)
    report = CaseReport(case["id"], case["family"])
    try:
        texts = known_texts(case)
        replies = {(r["call"], key_text(r["key"])): resolve_digests(r["reply"], texts, f"{path}: canned reply")
                   for r in case.get("canned_replies", [])}
    except CaseError as exc:
        report.error = str(exc)
        return report
    replay = Replay(replies)
    try:
        with _replay_environment(_case_models(case)), tempfile.TemporaryDirectory(prefix="contextecho-runs-") as tmp:
            driven, checks = drive(case, corpus, replay, Path(tmp))
            report.checks += checks
            compare_requests(case, replay, report, declared)
            compare_cells(case, driven, replay, report, declared)
            compare_tables(case, driven, replay, report, declared)
    except (CaseError, FileNotFoundError) as exc:
        report.error = str(exc)
    except Exception as exc:  # a case that cannot be run fails, with what stopped it; the next one runs
        report.error = f"{path}: {type(exc).__name__}: {exc}"
    return report


#: The positions schemes of ``positions/*.json`` we implement: the harness's hard-coded turn
#: lists resolved on a session (our reference prefix at each turn). e18's position plan and
#: run_crosssession's plan index their own row lists with their own renderers.
POSITION_LISTS = ("e08_POSITIONS", "e17_ONSET_TURNS")
UNIMPLEMENTED_PLANS = {"e18_session_validation_plan": "e18's position_plan over its own [role] text rows",
                       "e15_run_crosssession_plan": "run_crosssession's 12 evenly spaced rows of its own renderer",
                       "select_cutpoints": "downstream cut points, not probe positions"}


def check_positions(path: Path, corpus: Path, declared: Sequence[dict] = ()) -> CaseReport:
    """One ``positions/*.json``: the session's turn count and compactions as the harness
    derives them, and our reference prefix (sha256, length) at every hard-coded turn."""
    from ..echo.reference.positions import compaction_turns
    from ..echo.reference.transcript import read_rows, render_prefix, turn_index

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        session = data["inputs"]["session"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        return CaseReport(path.stem, "positions", error=f"{path}: unreadable positions file ({exc})")
    report = CaseReport(data.get("id", path.stem), "positions")
    rows = read_rows(corpus / session)
    index = turn_index(rows)
    expected_index = data.get("e08_turn_index") or {}
    if "total_turns" in expected_index:
        report.add("positions", "e08_turn_index.total_turns", expected_index["total_turns"] == max(index),
                   expected_index["total_turns"], max(index), declared)
    if "compactions_derived" in expected_index:
        ours = [{"boundary_line": c.boundary_line, "pre_turn": c.last_turn_before, "summary_turn": c.first_turn_after}
                for c in compaction_turns(rows, index)]
        theirs = [{k: c.get(k) for k in ("boundary_line", "pre_turn", "summary_turn")}
                  for c in expected_index["compactions_derived"]]
        report.add("positions", "e08_turn_index.compactions", theirs == ours, theirs, ours, declared)
    lists = data.get("hard_coded_positions_resolved_on_this_session") or {}
    for name in POSITION_LISTS:
        for entry in (lists.get(name) or {}).get("values", []):
            rendered = render_prefix(rows, index, int(entry["turn"]))
            ok = len(rendered.text) == entry["prefix_len"] and \
                hashlib.sha256(rendered.text.encode("utf-8")).hexdigest() == entry["prefix_sha256"]
            report.add("positions", f"{name}.prefix", ok, [entry["prefix_len"], entry["prefix_sha256"][:12]],
                       [len(rendered.text), hashlib.sha256(rendered.text.encode("utf-8")).hexdigest()[:12]],
                       declared, note=f"{entry['label']} (turn {entry['turn']})")
    for name, why in UNIMPLEMENTED_PLANS.items():
        if name in data:
            report.checks.append(Check("positions", name, "not_implemented", note=f"scheme not implemented: {why}"))
    return report


def run_cases(folder: Path, corpus: Path) -> list[CaseReport]:
    """Every ``cases/*.json`` of a run-fixture folder, then every ``positions/*.json``."""
    cases = sorted((folder / "cases").glob("*.json"))
    if not cases:
        raise CaseError(f"{folder}: no cases/*.json")
    declared = load_declared()
    reports = []
    for path in cases:
        try:
            reports.append(run_case(path, corpus, declared))
        except CaseError as exc:
            reports.append(CaseReport(path.stem, "?", error=str(exc)))
    for path in sorted((folder / "positions").glob("*.json")):
        reports.append(check_positions(path, corpus, declared))
    return reports
