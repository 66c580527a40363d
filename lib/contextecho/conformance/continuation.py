"""Conformance of the e07 tool-call continuation rules with the harness's fixtures.

The fixture folder (``shared/reference/contextecho/continuation``, README there) has eight
families, one JSONL file each (:data:`FAMILIES`); one case per line, ``id``,
``inputs``, ``expected`` (``meta`` is fixture-writer diagnostics and is not checked). Each
family's checker (:data:`CHECKERS`) recomputes every expected field from the case's inputs
with :mod:`contextecho.echo.reference.continuation` and compares it exactly (canonical
JSON, :func:`~contextecho.conformance.case.differences`); an expected field with
no rule fails the case. Conventions of the fixtures:

* A long text may be stored as a digest ``{"__digest__": true, "sha256", "len", "head",
  "tail"}``: those fields are recomputed from our text (sha256 of the UTF-8 bytes, length
  in code points, first/last 300 code points) and compared.
* ``{"raises": CLASS, "message": str(e)}`` where the harness raises; our
  :class:`~contextecho.echo.reference.continuation.TooFewCutpoints` stands for the
  harness's ``SystemExit``.
* Sessions are named ``{"corpus", "file", "path_from_steering_root", "format", "sha256"}``;
  :class:`ReferencedSessions` resolves them (first candidate that exists with that sha256: ``corpus /
  file`` when a corpus folder is given, ``shared_dir().parent / path_from_steering_root``,
  ``shared_dir()/corpus/real/file``), hashes each file once and parses it once.

What each checker compares beyond ``expected``: ``cutpoints`` also the full candidate list
(``candidates``: ``n`` and its rows; ``how`` is a description); ``prefixes`` also that
``inputs.cut_index`` and ``inputs.ground_truth_tool`` are the selection's cut ``cut_number``;
in ``prefixes``, a ``filler3K_*``/``gpt5_3K`` block's ``rule`` names the computation (an
unknown rule fails), and ``source``/``adapter_variant``/``case_id`` of ``gpt5_3K`` are its
inputs; ``gpt5_prefix`` adapter cases also the adapted record count and the sha256 of the
adapted records as JSON lines (``json.dumps(record, ensure_ascii=False)`` + newline), raw
cases the file's line count. A transcript the harness reads from a file (a raw Codex CLI file, a
case's ``raw_lines`` written one per line) is read as its loop reads it (:func:`harness_lines`),
so a bad line raises the harness's own message, at its line, column and character.
"""
from __future__ import annotations

import ast
import asyncio
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pandas as pd

from ..echo.continuation import ARMS, REFERENCE, Cut, gpt_source
from .case import (NO_RULE, CaseResult, Check, FixtureError, case_id, compare_fields, differences, integer, line_cases,
                   need, read_cases, sha256_text)
from ..echo.reference.continuation import (N_CUTPOINTS, SKIP_INITIAL, TARGET_CHARS, TooFewCutpoints, candidates,
                                           codex_records, context_sections, flatten_content, gpt5_prefix,
                                           immediate_context, jaccard_args, argument_tokens, recent_prefix,
                                           select_cutpoints)
from ..echo.reference.filler import make_filler
from ..echo.reference.transcript import Row, read_rows
from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.paths import shared_dir
from .replay import replay_environment, sdk_form

FAMILIES: dict[str, str] = {
    "cutpoints": "cutpoints.jsonl",
    "prefixes": "prefixes.jsonl",
    "prefix_edge_cases": "prefix_edge_cases.jsonl",
    "gpt5_prefix": "gpt5_prefix.jsonl",
    "requests": "requests.jsonl",
    "scoring": "scoring.jsonl",
    "jaccard": "jaccard.jsonl",
    "analysis": "analysis.jsonl",
}

DIGEST_EDGE = 300
#: ``gpt5_3K`` adapter variants (README §2): A = output in a ``tool_result`` block, B = as a string.
ADAPTER_VARIANTS = {"A": "blocks", "B": "string"}
_ADAPTER_ARG = re.compile(r"tool_result_as='(\w+)'")


# ---------------------------------------------------------------- sessions

class ReferencedSessions:
    """The sessions cases name by reference (file and sha256), resolved, hashed once and parsed once each.

    A reference ``{"corpus", "file", "path_from_steering_root", "format", "sha256"}`` is
    looked for at, in order: ``corpus / file`` (only when a corpus folder was given),
    ``shared_dir().parent / path_from_steering_root``, ``shared_dir()/corpus/real/file``;
    the first that exists with the given sha256 is used. None: a :class:`FixtureError`
    naming the fixture file and line and every candidate tried (and why it was refused).
    """

    def __init__(self, corpus: str | Path | None = None) -> None:
        self.corpus = Path(corpus) if corpus is not None else None
        self._hashes: dict[Path, str] = {}
        self._resolved: dict[tuple, Path] = {}
        self._rows: dict[Path, list[Row]] = {}
        self._lines: dict[Path, list[str]] = {}

    def candidates(self, ref: dict) -> list[Path]:
        """Where ``ref`` may be, in the order tried (duplicates dropped)."""
        found: list[Path] = []
        if self.corpus is not None and ref.get("file"):
            found.append(self.corpus / ref["file"])
        if ref.get("path_from_steering_root"):
            found.append(shared_dir().parent / ref["path_from_steering_root"])
        if ref.get("file"):
            found.append(shared_dir() / "corpus" / "real" / ref["file"])
        return list(dict.fromkeys(found))

    def path(self, ref: dict, fixture: Path, line: int) -> Path:
        """The file ``ref`` names (see the class doc)."""
        if not isinstance(ref, dict) or not isinstance(ref.get("file"), str) or not isinstance(ref.get("sha256"), str):
            raise FixtureError(fixture, f"a session reference needs 'file' and 'sha256', got {ref!r}", line)
        key = (ref.get("file"), ref.get("path_from_steering_root"), ref["sha256"])
        if key in self._resolved:
            return self._resolved[key]
        tried: list[str] = []
        for candidate in self.candidates(ref):
            if not candidate.is_file():
                tried.append(f"{candidate} (missing)")
                continue
            if candidate not in self._hashes:
                self._hashes[candidate] = hashlib.sha256(candidate.read_bytes()).hexdigest()
            got = self._hashes[candidate]
            if got == ref["sha256"]:
                self._resolved[key] = candidate
                return candidate
            tried.append(f"{candidate} (sha256 mismatch: {got}, case says {ref['sha256']})")
        raise FixtureError(fixture, f"session {ref['file']!r} not found; tried: " + "; ".join(tried), line)

    def rows(self, ref: dict, fixture: Path, line: int) -> list[Row]:
        """The session's rows (:func:`~contextecho.echo.reference.transcript.read_rows`)."""
        path = self.path(ref, fixture, line)
        if path not in self._rows:
            self._rows[path] = read_rows(path)
        return self._rows[path]

    def lines(self, ref: dict, fixture: Path, line: int) -> list[str]:
        """The session's lines as the harness reads them (:func:`harness_lines`)."""
        path = self.path(ref, fixture, line)
        if path not in self._lines:
            self._lines[path] = harness_lines(path.read_bytes())
        return self._lines[path]


def harness_lines(data: bytes) -> list[str]:
    """A transcript file's lines as the harness reads them (``for line in path.open()``): UTF-8,
    a BOM kept (U+FEFF); universal newlines, a line ending at ``\\n``, ``\\r`` or ``\\r\\n``, read
    as ``\\n`` and kept (U+2028, U+0085, a form feed and the other ``str.splitlines`` breaks end
    none); nothing stripped."""
    with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8") as handle:
        return list(handle)


# ---------------------------------------------------------------- comparing

def text_digest(text: str) -> dict:
    """The fixtures' digest object of ``text``."""
    return {"__digest__": True, "sha256": sha256_text(text), "len": len(text),
            "head": text[:DIGEST_EDGE], "tail": text[-DIGEST_EDGE:] if text else ""}


def stored_text(expected: object, text: str) -> object:
    """``text`` as the fixture stores it: a digest when ``expected`` is one, else the text."""
    return text_digest(text) if isinstance(expected, dict) and expected.get("__digest__") else text


def raised(exc: BaseException) -> dict:
    """The fixtures' form of an exception; :class:`TooFewCutpoints` is the harness's
    ``SystemExit``."""
    name = "SystemExit" if isinstance(exc, TooFewCutpoints) else type(exc).__name__
    return {"raises": name, "message": str(exc)}


# ---------------------------------------------------------------- cutpoints

CUTPOINT_FIELDS = ("CUTPOINTS_json", "raises", "message")


def check_cutpoints(path: Path, sessions: ReferencedSessions) -> Iterator[CaseResult]:
    def check(case: dict, path: Path, line: int) -> list[Check]:
        inputs = need(case, "inputs", path, line, dict)
        rows = sessions.rows(need(inputs, "session", path, line, dict), path, line)
        params = inputs.get("params") or {}
        n = integer(params.get("N_CUTPOINTS", N_CUTPOINTS), "N_CUTPOINTS", path, line)
        skip = integer(params.get("SKIP_INITIAL", SKIP_INITIAL), "SKIP_INITIAL", path, line)
        try:
            actual = {"CUTPOINTS_json": select_cutpoints(rows, n, skip).as_json()}
        except TooFewCutpoints as exc:
            actual = raised(exc)
        diffs = compare_fields(need(case, "expected", path, line, dict), actual, CUTPOINT_FIELDS)
        if "candidates" in case:
            listed = need(case, "candidates", path, line, dict)
            found = candidates(rows)
            mine = {"n": len(found), "rows_cut_index_tool_preceding_user_msg_idx":
                    [[c.cut_index, c.tool, c.preceding_user_msg_idx] for c in found]}
            diffs += compare_fields({k: v for k, v in listed.items() if k != "how"}, mine, mine, "candidates")
        return diffs

    return line_cases("cutpoints", path, check)


# ---------------------------------------------------------------- prefixes

FILLER_SONNET_RULE = "make_filler(len(extract_recent3K(rows, cut_index)))"
FILLER_XTARGET_RULE = "make_filler(TARGET_CHARS=3000), same for every cut"
GPT5_RULE = "extract_gpt5_recent3K(): one text for every cut"
#: Fields of a ``gpt5_3K`` block that say which text it is (inputs of the computation).
GPT5_BLOCK_INPUTS = ("source", "adapter_variant", "case_id")


def _rule_block(expected: object, rule: str, make: Callable[[], str], where: str) -> list[Check]:
    """An expected ``{rule, len, sha256, [text]}`` block against the text ``make()`` gives,
    when the block's ``rule`` is ``rule`` (another rule text has no rule here)."""
    if not isinstance(expected, dict):
        return [Check(where, expected, "<a rule block object>")]
    if expected.get("rule") != rule:
        return [Check(f"{where}.rule", expected.get("rule"), f"{NO_RULE} (known: {rule!r})")]
    text = make()
    block = {"rule": rule, "len": len(text), "sha256": sha256_text(text)}
    if "text" in expected:
        block["text"] = stored_text(expected["text"], text)
    inputs = GPT5_BLOCK_INPUTS if rule == GPT5_RULE else ()
    return compare_fields({k: v for k, v in expected.items() if k not in inputs}, block, block, where)


def check_prefixes(path: Path, sessions: ReferencedSessions) -> Iterator[CaseResult]:
    selections: dict[str, object] = {}
    gpt5_texts: dict[tuple[str, str], str] = {}

    def gpt5_text(block: dict, path: Path, line: int) -> str:
        source = need(block, "source", path, line, dict)
        variant = need(block, "adapter_variant", path, line, str)
        if variant not in ADAPTER_VARIANTS:
            raise FixtureError(path, f"unknown adapter_variant {variant!r} (known: {', '.join(ADAPTER_VARIANTS)})",
                               line)
        key = (need(source, "sha256", path, line, str), variant)
        if key not in gpt5_texts:
            gpt5_texts[key] = gpt5_prefix(codex_records(sessions.rows(source, path, line), ADAPTER_VARIANTS[variant]))
        return gpt5_texts[key]

    def check(case: dict, path: Path, line: int) -> list[Check]:
        inputs = need(case, "inputs", path, line, dict)
        expected = need(case, "expected", path, line, dict)
        ref = need(inputs, "session", path, line, dict)
        rows = sessions.rows(ref, path, line)
        cut_index = need(inputs, "cut_index", path, line, int)
        diffs: list[Check] = []
        if "cut_number" in inputs:
            if ref["sha256"] not in selections:
                selections[ref["sha256"]] = select_cutpoints(rows)
            cuts = selections[ref["sha256"]].cutpoints
            number = need(inputs, "cut_number", path, line, int)
            if not 0 <= number < len(cuts):
                raise FixtureError(path, f"cut_number {number} outside the {len(cuts)} cut points", line)
            diffs += differences({k: inputs[k] for k in ("cut_index", "ground_truth_tool") if k in inputs},
                                 {"cut_index": cuts[number].cut_index, "ground_truth_tool": cuts[number].tool},
                                 "inputs")
        recent = recent_prefix(rows, cut_index)
        scratch = immediate_context(rows, cut_index)
        actual = {
            "recent3K": stored_text(expected.get("recent3K"), recent),
            "recent3K_len": len(recent), "recent3K_sha256": sha256_text(recent),
            "scratch_user_msg": stored_text(expected.get("scratch_user_msg"), scratch),
            "scratch_user_msg_len": len(scratch), "scratch_user_msg_sha256": sha256_text(scratch),
            "scratch_user_msg_sections": [header for header, _ in context_sections(rows, cut_index)],
        }
        blocks = {"filler3K_sonnet": (FILLER_SONNET_RULE, lambda: make_filler(len(recent))),
                  "filler3K_xtarget": (FILLER_XTARGET_RULE, lambda: make_filler(TARGET_CHARS)),
                  "gpt5_3K": (GPT5_RULE, lambda: gpt5_text(expected["gpt5_3K"], path, line))}
        for name, (rule, make) in blocks.items():
            if name in expected:
                diffs += _rule_block(expected[name], rule, make, f"expected.{name}")
        plain = {k: v for k, v in expected.items() if k not in blocks}
        return diffs + compare_fields(plain, actual, actual)

    return line_cases("prefixes", path, check)


# ---------------------------------------------------------------- prefix edge cases

EDGE_FIELDS = ("recent3K", "recent3K_len", "scratch_user_msg")


def _edge_outcome(rows: list, cut: int, target_chars: int) -> dict:
    out: dict = {}
    try:
        recent = recent_prefix(rows, cut, target_chars)
        out.update(recent3K=recent, recent3K_len=len(recent))
    except Exception as exc:  # the harness's own exception is expected here
        out["recent3K"] = raised(exc)
    try:
        out["scratch_user_msg"] = immediate_context(rows, cut)
    except Exception as exc:
        out["scratch_user_msg"] = raised(exc)
    return out


def check_prefix_edge_cases(path: Path, sessions: ReferencedSessions) -> Iterator[CaseResult]:
    def check(case: dict, path: Path, line: int) -> list[Check]:
        inputs = need(case, "inputs", path, line, dict)
        expected = need(case, "expected", path, line, dict)
        rows = need(inputs, "rows", path, line, list)
        target_chars = integer(inputs.get("target_chars", TARGET_CHARS), "target_chars", path, line)
        if "cut_idxs" in inputs:
            cuts = [integer(c, "a cut_idxs entry", path, line) for c in need(inputs, "cut_idxs", path, line, list)]
            per_cut = need(expected, "per_cut", path, line, list)
            unknown = {k: v for k, v in expected.items() if k != "per_cut"}
            mine = [{"cut_idx": c, **_edge_outcome(rows, c, target_chars)} for c in cuts]
            diffs = compare_fields(unknown, {}, ())
            if len(per_cut) != len(mine):
                return diffs + [Check("expected.per_cut", f"{len(per_cut)} cuts", f"{len(mine)} cuts")]
            for i, (want, got) in enumerate(zip(per_cut, mine)):
                if not isinstance(want, dict):
                    raise FixtureError(path, f"per_cut[{i}] must be an object", line)
                diffs += compare_fields(want, got, ("cut_idx", *EDGE_FIELDS), f"expected.per_cut[{i}]")
            return diffs
        cut = need(inputs, "cut_idx", path, line, int)
        return compare_fields(expected, _edge_outcome(rows, cut, target_chars), EDGE_FIELDS)

    return line_cases("prefix_edge_cases", path, check)


# ---------------------------------------------------------------- gpt5_prefix

TEXT_FIELDS = ("text", "len", "sha256", "raises", "message")


def _text_outcome(expected: dict, make: Callable[[], str]) -> dict:
    try:
        text = make()
    except Exception as exc:  # a bad line: the harness raises too
        return raised(exc)
    return {"text": stored_text(expected.get("text"), text), "len": len(text), "sha256": sha256_text(text)}


def _adapter(inputs: dict, path: Path, line: int) -> str:
    match = _ADAPTER_ARG.search(need(inputs, "adapter", path, line, str))
    if not match or match.group(1) not in ADAPTER_VARIANTS.values():
        raise FixtureError(path, f"unknown adapter {inputs['adapter']!r}", line)
    return match.group(1)


def check_gpt5_prefix(path: Path, sessions: ReferencedSessions) -> Iterator[CaseResult]:
    def check(case: dict, path: Path, line: int) -> list[Check]:
        kind = need(case, "kind", path, line, str)
        inputs = need(case, "inputs", path, line, dict)
        expected = need(case, "expected", path, line, dict)
        if kind == "_flatten_content":
            return compare_fields(expected, {"output": flatten_content(need(inputs, "content", path, line))},
                                   ("output",))
        if kind == "verbatim_on_harness_shape_transcript":
            if "raw_lines" in inputs:  # the lines of the file the harness read, each written with a newline
                written = "".join(f"{raw}\n" for raw in need(inputs, "raw_lines", path, line, list))
                records = harness_lines(written.encode("utf-8"))
            else:
                records = need(inputs, "records", path, line, list)
            return compare_fields(expected, _text_outcome(expected, lambda: gpt5_prefix(records)), TEXT_FIELDS)
        ref = need(inputs, "session", path, line, dict)
        if kind == "verbatim_on_raw_codex_cli_file":
            lines = sessions.lines(ref, path, line)
            diffs = differences({k: inputs[k] for k in ("file_lines",) if k in inputs}, {"file_lines": len(lines)},
                                "inputs")
            return diffs + compare_fields(expected, _text_outcome(expected, lambda: gpt5_prefix(lines)), TEXT_FIELDS)
        if kind == "verbatim_on_adapted_codex_cli_session":
            records = codex_records(sessions.rows(ref, path, line), _adapter(inputs, path, line))
            jsonl = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            mine = {"adapted_records": len(records), "adapted_jsonl_sha256": sha256_text(jsonl)}
            diffs = differences({k: inputs[k] for k in mine if k in inputs}, mine, "inputs")
            return diffs + compare_fields(expected, _text_outcome(expected, lambda: gpt5_prefix(records)),
                                           TEXT_FIELDS)
        raise FixtureError(path, f"unknown kind {kind!r}", line)

    return line_cases("gpt5_prefix", path, check)


# ---------------------------------------------------------------- jaccard

JACCARD_FIELDS = ("value", "tokens_a", "tokens_b", "symmetric", "raises", "message")


class _NonFinite(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in ("inf", "nan"):
            return ast.copy_location(ast.Constant(float(node.id)), node)
        return node


def python_literal(text: str) -> object:
    """A Python literal as ``repr`` writes it (``inf`` and ``nan`` included)."""
    return ast.literal_eval(_NonFinite().visit(ast.parse(text, mode="eval")))


def _argument(inputs: dict, name: str, path: Path, line: int) -> object:
    if name in inputs:
        return inputs[name]
    key = f"py_repr_{name}"
    try:
        return python_literal(need(inputs, key, path, line, str))
    except (SyntaxError, ValueError) as exc:
        raise FixtureError(path, f"{key} is not a Python literal: {exc}", line) from None


def check_jaccard(path: Path, sessions: ReferencedSessions) -> Iterator[CaseResult]:
    def check(case: dict, path: Path, line: int) -> list[Check]:
        inputs = need(case, "inputs", path, line, dict)
        a, b = _argument(inputs, "a", path, line), _argument(inputs, "b", path, line)
        try:
            actual = {"value": jaccard_args(a, b), "tokens_a": sorted(argument_tokens(a)),
                      "tokens_b": sorted(argument_tokens(b)), "symmetric": jaccard_args(a, b) == jaccard_args(b, a)}
        except Exception as exc:  # the harness raises on a truthy non-dict
            actual = raised(exc)
        return compare_fields(need(case, "expected", path, line, dict), actual, JACCARD_FIELDS)

    return line_cases("jaccard", path, check)


# ---------------------------------------------------------------- requests, scoring, analysis
# These three go through the experiment's own code (:mod:`contextecho.echo.continuation`'s
# ``reference`` protocol, the engine's one call site with a replay client in place of the
# network, :func:`contextecho.conformance.replay.sdk_form`, and
# :func:`contextecho.experiments.continuation.harness_analysis`).

#: The harness's continuation targets (a case's ``target_dir``) as LiteLLM model strings:
#: Sonnet on the Anthropic path; the Mistral models through Mistral's API and Kimi K2.6
#: through Together's (the ``make_mistral_client`` / ``make_together_client`` of the runners'
#: TARGETS tables).
HARNESS_TARGETS = {"claude-sonnet-4-6": "anthropic/claude-sonnet-4-6",
                   "mistral-small-latest": "mistral/mistral-small-latest",
                   "mistral-medium-latest": "mistral/mistral-medium-latest",
                   "mistral-large-latest": "mistral/mistral-large-latest",
                   "magistral-medium-latest": "mistral/magistral-medium-latest",
                   "moonshotai-Kimi-K2-6": "together_ai/moonshotai/Kimi-K2.6"}
E07 = "experiments/e07_downstream_pilot"
#: Which harness function sends an arm's request, per runner ``main``.
HARNESS_CALLS = {
    ("run_continuation.main", "scratch"): f"{E07}/run_continuation.py run_one_cut (scratch_messages)",
    ("run_continuation.main", "recent3K"): f"{E07}/run_continuation.py run_one_cut (recent3K_messages)",
    ("run_clean_control.main", "filler3K"): f"{E07}/run_clean_control.py run_filler3K_arm",
    ("run_gpt5_arm.main", "gpt5_3K"): f"{E07}/run_gpt5_arm.py run_gpt5_arm",
    ("run_clean_xtarget.main", "filler3K"): f"{E07}/run_clean_xtarget.py run_arm -> call_mistral_with_tools",
    ("run_clean_xtarget.main", "gpt5_3K"): f"{E07}/run_clean_xtarget.py run_arm -> call_mistral_with_tools",
    ("run_continuation_mistral.main", "scratch"):
        f"{E07}/run_continuation_mistral.py run_one_cut_mistral -> call_mistral_with_tools",
    ("run_continuation_mistral.main", "recent3K"):
        f"{E07}/run_continuation_mistral.py run_one_cut_mistral -> call_mistral_with_tools",
    ("run_continuation_plan2.main", "scratch"):
        f"{E07}/run_continuation_plan2.py -> run_one_cut_mistral -> call_mistral_with_tools",
    ("run_continuation_plan2.main", "recent3K"):
        f"{E07}/run_continuation_plan2.py -> run_one_cut_mistral -> call_mistral_with_tools",
}
#: The SDK method behind each of our endpoint names (:data:`contextecho.conformance.replay.ENDPOINTS`).
SDK_CALLS = {"anthropic.messages.create": "anthropic.Anthropic(...).messages.create",
             "openai.chat.completions.create": "openai.OpenAI(...).chat.completions.create"}
#: The harness's client timeout on the OpenAI-compatible path (``MISTRAL_DEFAULT_TIMEOUT_SEC``).
HARNESS_TIMEOUT_S = 120.0
REQUEST_FIELDS = ("runner", "sdk_call", "client_base_url", "kwargs")


def _replayed(requests: list, answer: Callable[[object, dict], object]) -> tuple[dict, list]:
    """Send ``requests`` through the engine's call site on a fresh cache with ``answer`` as
    the network client (:func:`~contextecho.conformance.replay.replay_environment`: a dummy
    key where a provider's is missing; nothing leaves the process): ``({request key: the
    kwargs LiteLLM was given}, records)``."""
    sent: dict[str, dict] = {}

    async def client(request, kwargs):
        sent[request.key] = kwargs
        await asyncio.sleep(0)
        return answer(request, kwargs)

    with replay_environment(sorted({r.model for r in requests})), CallCache() as cache:
        result = generate(requests, cache=cache, progress=False, name="conformance:continuation",
                          transport=Transport(client=client, timeout_s=HARNESS_TIMEOUT_S, max_attempts=1,
                                              concurrency=8))
    return sent, result.records


def _digested(expected: object, actual: object) -> object:
    """``actual`` with every part the fixture stores as a digest replaced by its digest."""
    if isinstance(expected, dict) and expected.get("__digest__"):
        if "canonical_sha256" in expected and isinstance(actual, list):
            canonical = json.dumps(actual, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
            return {"__digest__": True, "canonical_sha256": sha256_text(canonical), "n": len(actual),
                    "names": [(t.get("function") or t).get("name") for t in actual if isinstance(t, dict)]}
        return text_digest(actual) if isinstance(actual, str) else actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return {k: _digested(expected.get(k), v) for k, v in actual.items()}
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [_digested(e, a) for e, a in zip(expected, actual)]
    return actual


def _model_of(target_dir: str, fixture: Path, line: int) -> str:
    if target_dir not in HARNESS_TARGETS:
        raise FixtureError(fixture, f"unknown target_dir {target_dir!r} (known: {', '.join(HARNESS_TARGETS)})",
                           line)
    return HARNESS_TARGETS[target_dir]


def check_requests(path: Path, sessions: ReferencedSessions) -> Iterator[CaseResult]:
    """Each case's request built by the ``reference`` continuation protocol for the case's
    target, cut and arm, sent through the engine's call site, and compared in the
    harness's SDK form (:func:`~contextecho.conformance.replay.sdk_form`, with the harness's
    120 s client timeout on the OpenAI-compatible path)."""
    jobs: list[tuple[str, dict, object, str]] = []
    results: dict[str, CaseResult] = {}
    gpts: dict[str, object] = {}
    for line, case in read_cases(path):
        if isinstance(case, FixtureError):
            results[f"{path.name}:{line}"] = CaseResult("requests", f"{path.name}:{line}", error=str(case))
            continue
        name = case_id(case, path, line)
        try:
            inputs = need(case, "inputs", path, line, dict)
            expected = need(case, "expected", path, line, dict)
            rows = sessions.rows(need(inputs, "session", path, line, dict), path, line)
            number = integer(inputs.get("cut_number"), "inputs.cut_number", path, line)
            selection = select_cutpoints(rows)
            if not 0 <= number < len(selection.cutpoints):
                raise FixtureError(path, f"cut_number {number} outside the session's "
                                         f"{len(selection.cutpoints)} cutpoints", line)
            cutpoint = selection.cutpoints[number]
            arm = need(inputs, "arm", path, line, str)
            source = (inputs.get("gpt5_3K") or {}).get("source")
            if source is None and arm == "gpt5_3K":
                raise FixtureError(path, "a gpt5_3K request needs inputs.gpt5_3K.source", line)
            if source is not None:
                ref = json.dumps(source, sort_keys=True)
                if ref not in gpts:
                    gpts[ref] = gpt_source(source["file"], sessions.rows(source, path, line))
                gpt = gpts[ref]
            else:
                gpt = gpt_source("none", [])
            model = _model_of(need(inputs, "target_dir", path, line, str), path, line)
            cut = REFERENCE.cut("case", rows, cutpoint, number, gpt)
            request = REFERENCE.request(model, cut, arm)
            runner = HARNESS_CALLS.get((inputs.get("runner_main"), arm))
            jobs.append((name, expected, request, runner, cutpoint, inputs))
        except (FixtureError, TooFewCutpoints, KeyError, ValueError) as exc:
            results[name] = CaseResult("requests", name, error=str(exc))
    sent, _ = _replayed([j[2] for j in jobs], lambda request, kwargs: _ok_reply())
    for name, expected, request, runner, cutpoint, inputs in jobs:
        form = sdk_form(request.model, sent[request.key], with_timeout=True)
        actual = {"runner": runner if runner is not None else NO_RULE,
                  "sdk_call": SDK_CALLS.get(form["endpoint"], form["endpoint"]),
                  "client_base_url": form["client"].get("base_url"), "kwargs": form["params"]}
        found = compare_fields(expected, _digested(expected, actual), REQUEST_FIELDS)
        if inputs.get("cut_index") is not None and inputs["cut_index"] != cutpoint.cut_index:
            found.append(Check("inputs.cut_index", inputs["cut_index"], cutpoint.cut_index))
        results[name] = CaseResult("requests", name, found)
    yield from results.values()


def _ok_reply() -> object:
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="ok", tool_calls=None),
                                                    finish_reason="stop")],
                           usage=SimpleNamespace(prompt_tokens=1, completion_tokens=1))


#: A scoring case's two paths: the model that takes each, the case's SDK response field,
#: and the harness's runners of the path with the arms each scores (scratch and recent3K
#: share one runner and one metrics file).
SCORING_PATHS = {
    "anthropic": ("anthropic/claude-sonnet-4-6", "anthropic_sdk_response",
                  {"run_one_cut": ("scratch", "recent3K"), "run_filler3K_arm": ("filler3K",),
                   "run_gpt5_arm": ("gpt5_3K",)}),
    "openai_compat": ("mistral/mistral-small-latest", "openai_compat_sdk_response",
                      {"run_one_cut_mistral": ("scratch", "recent3K"), "run_arm_filler3K": ("filler3K",),
                       "run_arm_gpt5_3K": ("gpt5_3K",)}),
}
SCORING_FIELDS = ("M1", "M2", "model_tool", "first_tool_call_scored", "runner_metrics", "raises", "message")


def sdk_response(path_name: str, response: dict, model: str) -> object:
    """A case's SDK response object as LiteLLM hands it to our call site: an Anthropic
    Messages response through LiteLLM's own Anthropic transformation, an OpenAI-compatible
    chat completion through LiteLLM's own conversion of one (a reply without ``usage`` gives
    a response without usage, as from a real server)."""
    # LiteLLM only here, where a case is replayed (and after the engine, which sets its offline
    # environment before LiteLLM is first imported): the other families and ``--help`` need none.
    import litellm
    from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import (
        convert_to_model_response_object)
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    if path_name == "anthropic":
        body = {"id": "msg_fixture", "type": "message", "role": "assistant", "model": model.split("/", 1)[1],
                "content": response.get("content") or [], "stop_reason": response.get("stop_reason"),
                "usage": response.get("usage") or {}}
        raw = httpx.Response(200, request=httpx.Request("POST", "https://api.anthropic.com/v1/messages"))
        return AnthropicConfig().transform_parsed_response(completion_response=body, raw_response=raw,
                                                           model_response=litellm.ModelResponse())
    calls = [{"id": c.get("id"), "type": "function",
              "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
             for c in response.get("tool_calls") or []]
    message = {"role": "assistant", "content": response.get("content"), **({"tool_calls": calls} if calls else {})}
    body = {"id": "chatcmpl-fixture", "object": "chat.completion", "created": 0, "model": model.split("/", 1)[1],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": response.get("usage")}
    return convert_to_model_response_object(response_object=body, model_response_object=litellm.ModelResponse())


def _runner_metrics(outcomes: dict, arms: tuple, gt_tool: str, record) -> dict:
    lost = [o.raised for o in outcomes.values() if o.raised]
    if lost:
        return {"raises": lost[0][0], "message": lost[0][1]}
    metrics: dict = {"cut_index": 0, "ground_truth_tool": gt_tool}
    for arm in arms:
        metrics[f"{arm}_tool"] = outcomes[arm].tool
    for arm in arms:
        metrics[f"M1_{arm}_match"] = outcomes[arm].match
    for arm in arms:
        metrics[f"M2_{arm}_arg_sim"] = outcomes[arm].similarity
    for arm in arms:
        metrics[f"{arm}_input_tokens"] = record.prompt_tokens
        metrics[f"{arm}_output_tokens"] = record.completion_tokens
    first = outcomes[arms[-1]]
    return {"metrics": metrics, "first_tool_call_saved": {"name": first.tool, "input": first.args}
            if first.tool is not None else None}


def check_scoring(path: Path, sessions: ReferencedSessions) -> Iterator[CaseResult]:
    """Each case's SDK response, on each path it has, given to the engine's call site as
    LiteLLM gives it (:func:`sdk_response`), read back from the call record and scored by
    the ``reference`` continuation protocol (:meth:`~contextecho.echo.continuation.
    ContinuationRules.outcome`) for every arm, then composed into each runner's metrics."""
    jobs = []
    results: dict[str, CaseResult] = {}
    for line, case in read_cases(path):
        if isinstance(case, FixtureError):
            results[f"{path.name}:{line}"] = CaseResult("scoring", f"{path.name}:{line}", error=str(case))
            continue
        name = case_id(case, path, line)
        try:
            inputs = need(case, "inputs", path, line, dict)
            expected = need(case, "expected", path, line, dict)
            if not expected:
                raise FixtureError(path, f"expected names no path (one of {', '.join(SCORING_PATHS)})", line)
            cut = Cut("case", 0, 0, 0, inputs.get("ground_truth_tool"), inputs.get("ground_truth_args"),
                      f"scoring case {name}", {arm: "" for arm in ARMS}, {arm: False for arm in ARMS}, "", "")
            for path_name, want in expected.items():
                if path_name not in SCORING_PATHS:
                    raise FixtureError(path, f"unknown scoring path {path_name!r}", line)
                model, field, _ = SCORING_PATHS[path_name]
                response = need(inputs, field, path, line, dict)
                request = REFERENCE.request(model, cut, "scratch")
                jobs.append((name, path_name, want, cut, request, sdk_response(path_name, response, model)))
        except (FixtureError, KeyError, ValueError, TypeError) as exc:
            results[name] = CaseResult("scoring", name, error=str(exc))
    replies = {j[4].key: j[5] for j in jobs}
    _, records = _replayed([j[4] for j in jobs], lambda request, kwargs: replies[request.key])
    found: dict[str, list[Check]] = {}
    for (name, path_name, want, cut, request, _), record in zip(jobs, records):
        model, _, runners = SCORING_PATHS[path_name]
        outcomes = {arm: REFERENCE.outcome(record, cut, model) for arm in ARMS}
        o = outcomes["scratch"]
        actual: dict = ({"raises": o.raised[0], "message": o.raised[1]} if o.raised else
                        {"M1": o.match, "M2": o.similarity, "model_tool": o.tool,
                         "first_tool_call_scored": {"name": o.tool, "input": o.args} if o.tool is not None else None})
        actual["runner_metrics"] = {runner: _runner_metrics({a: outcomes[a] for a in arms}, arms, cut.tool, record)
                                    for runner, arms in runners.items()}
        found.setdefault(name, []).extend(compare_fields(want, actual, SCORING_FIELDS, f"expected.{path_name}"))
    for name, diffs in found.items():
        results.setdefault(name, CaseResult("scoring", name, diffs))
    yield from results.values()


#: Each arm's fields in the harness's metrics files (``<file>: M2 / tool / M1``).
METRICS_FIELDS = {"scratch": ("metrics.json", "M2_scratch_arg_sim", "scratch_tool", "M1_scratch_match"),
                  "recent3K": ("metrics.json", "M2_recent3K_arg_sim", "recent3K_tool", "M1_recent3K_match"),
                  "filler3K": ("metrics_filler3K.json", "M2_filler3K_arg_sim", "filler3K_tool",
                               "M1_filler3K_match"),
                  "gpt5_3K": ("metrics_gpt5_3K.json", "M2_gpt5_3K_arg_sim", "gpt5_3K_tool", "M1_gpt5_3K_match")}


def metrics_frame(per_cut: list, labels: dict, fixture: Path, line: int):
    """The harness's per-cut metrics files as the experiment's cell frame: one row per cut
    and arm, ``generated`` when the arm's metrics file exists, the stratum from ``labels``
    (keyed by cut number as text)."""
    rows = []
    for entry in per_cut:
        number = integer(entry.get("cut_number"), "cut_number", fixture, line)
        files = entry.get("files") or {}
        for arm, (file, m2, tool, m1) in METRICS_FIELDS.items():
            metrics = files.get(file)
            made = isinstance(metrics, dict) and m2 in metrics
            rows.append({"target": "case", "session": "S1", "cut": number, "arm": arm, "generated": made,
                         "tool": metrics.get(tool) if made else None,
                         "called": bool(made and metrics.get(tool) is not None),
                         "match": bool(made and metrics.get(m1)),
                         "similarity": metrics.get(m2) if made else None,
                         "stratum": (labels or {}).get(str(number))})
    frame = pd.DataFrame(rows, columns=["target", "session", "cut", "arm", "generated", "tool", "called", "match",
                                        "similarity", "stratum"])
    frame["similarity"] = pd.to_numeric(frame["similarity"], errors="raise").astype(float)
    return frame


def check_analysis(path: Path, sessions: ReferencedSessions) -> Iterator[CaseResult]:
    """Each case's per-cut metrics (per target for the end-to-end cases) as the experiment's
    cell frame (:func:`metrics_frame`), analysed by the experiment's
    :func:`~contextecho.experiments.continuation.harness_analysis`."""
    from ..experiments.continuation import harness_analysis  # the experiment (and its figures) only here

    def check(case: dict, fixture: Path, line: int) -> list[Check]:
        inputs = need(case, "inputs", fixture, line, dict)
        labels = inputs.get("task_type_labels") or {}
        if "targets" in case:
            found = []
            for target, block in need(case, "targets", fixture, line, dict).items():
                frame = metrics_frame(block.get("inputs_per_cut_metrics") or [], labels, fixture, line)
                found += compare_fields(need(block, "expected", fixture, line, dict), harness_analysis(frame),
                                        prefix=f"targets.{target}.expected")
            return found
        frame = metrics_frame(need(inputs, "per_cut_metrics", fixture, line, list), labels, fixture, line)
        return compare_fields(need(case, "expected", fixture, line, dict), harness_analysis(frame))

    return line_cases("analysis", path, check)


# ---------------------------------------------------------------- the checkers

Checker = Callable[[Path, ReferencedSessions], Iterator[CaseResult]]


#: family -> checker.
CHECKERS: dict[str, Checker] = {
    "cutpoints": check_cutpoints,
    "prefixes": check_prefixes,
    "prefix_edge_cases": check_prefix_edge_cases,
    "gpt5_prefix": check_gpt5_prefix,
    "jaccard": check_jaccard,
    "requests": check_requests,
    "scoring": check_scoring,
    "analysis": check_analysis,
}
