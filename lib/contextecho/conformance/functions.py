"""Conformance of the ``reference`` protocol with fixtures produced by the authors' code.

A fixture folder has up to five families, each one file (``PROTOCOL.md`` §11):

=============  ===========================  ============================================
family         file                         one case
=============  ===========================  ============================================
``prefix``     ``prefix_cases.jsonl``       session + turn + window -> prefix, messages,
                                            system prompt, max_tokens, filler arm
``filler``     ``filler_cases.jsonl``       n -> ``make_filler(n)``
``s2``         ``s2_cases.jsonl``           response -> S2 verdict (+ S1/S3/S4 verdicts)
``judge``      ``judge_parse_cases.jsonl``  judge text -> harness parse (+ B3 variant)
``stats``      ``stats_cases.json``         synthetic cells -> bootstrap, permutation,
                                            B7 variants, onset CIs, Holm
=============  ===========================  ============================================

Every expected field a case carries is recomputed from its inputs and compared
exactly (canonical JSON: ``2`` is not ``2.0``, ``true`` is not ``1``); an expected
field this runner does not know fails the case instead of being skipped. A missing
family file is reported as missing, never as passed (:mod:`.driver`); a line that is not
valid JSON, or lacks a needed input, fails with its file and line. Session paths in ``prefix``
cases are resolved under the corpus folder. ``meta`` fields are informational, except
``resolved_end_line`` and ``session_total_turns``, which are checked.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from ..sessions.errors import SessionFormatError
from ..stats.bootstrap import harness_clustered_bootstrap_mean, harness_onset_gap_cis, harness_paired_bootstrap_ci
from ..stats.drift import harness_drift_gap
from ..stats.multiple import harness_holm
from ..stats.paired import harness_paired_differences
from ..stats.permutation import harness_sign_flip_p
from ..stats.session_validation import HARNESS_ARMS
from ..engine.registry import UnknownNameError
from ..echo.reference.filler import filler_for, make_filler
from ..echo.reference.judge import parse_verdict, parse_verdict_b3
from ..echo.reference.requests import probe_request, stressor_request, stressor_text
from ..echo.reference.scorers import REFERENCE_SCORERS, is_no_preamble
from ..echo.reference.transcript import DEFAULT_WINDOW, Row, render_prefix, read_rows, turn_index
from .case import CaseResult, Check, FixtureError, compare_fields, differences, integer, line_cases, need, sha256_text

DEFAULT_PROBE = "C01"
PROBE_EXPERIMENTS = ("e15", "e16", "e17")
STRESSOR_EXPERIMENTS = ("e08", "e09", "e10", "e12")
HARNESS_REAL, HARNESS_FILLER = HARNESS_ARMS["real"], HARNESS_ARMS["filler"]


# ---------------------------------------------------------------- families

class CorpusSessions:
    """Rows and turn indices of the sessions the prefix cases name by their path in the corpus, read once each."""

    def __init__(self, corpus: Path) -> None:
        self.corpus = corpus
        self._cache: dict[str, tuple[list[Row], dict[int, int]]] = {}

    def get(self, relative: str) -> tuple[list[Row], dict[int, int]]:
        if relative not in self._cache:
            path = self.corpus / relative
            if not path.is_file():
                raise FileNotFoundError(f"session {relative!r} not found under {self.corpus}")
            rows = read_rows(path)
            self._cache[relative] = (rows, turn_index(rows))
        return self._cache[relative]


def _prefix_outputs(case: dict, path: Path, line: int, sessions: CorpusSessions) -> tuple[dict, dict]:
    """Recomputed ``outputs`` and checked ``meta`` of one prefix case."""
    inputs = need(case, "inputs", path, line, dict)
    experiment = str(need(case, "experiment", path, line, str))
    session = need(inputs, "session", path, line, str)
    target_turn = need(inputs, "target_turn", path, line, int)
    window = integer(inputs.get("max_chars", DEFAULT_WINDOW), "'max_chars'", path, line)
    rows, index = sessions.get(session)
    prefix = render_prefix(rows, index, target_turn, window)
    text = prefix.text
    if experiment.startswith(PROBE_EXPERIMENTS):
        request = probe_request(text, str(inputs.get("probe", inputs.get("probe_id", DEFAULT_PROBE))))
    elif experiment.startswith(STRESSOR_EXPERIMENTS):
        request = stressor_request(text, stressor_text(str(need(inputs, "stressor", path, line, str))))
    else:
        raise FixtureError(path, f"unknown experiment {experiment!r} (known prefixes: "
                                 f"{', '.join(PROBE_EXPERIMENTS + STRESSOR_EXPERIMENTS)})", line)
    filler = filler_for(text)
    outputs = {
        "prefix": text, "prefix_len": len(text), "prefix_sha256": sha256_text(text),
        "system_prompt": request.system_prompt, "messages": request.messages,
        "max_tokens": request.max_tokens, "tools": request.tools,
        "filler_arm": filler, "filler_arm_len": len(filler), "filler_arm_sha256": sha256_text(filler),
    }
    meta = {"resolved_end_line": prefix.end_line, "session_total_turns": prefix.n_turns}
    return outputs, meta


def check_prefix(path: Path, sessions: CorpusSessions) -> Iterator[CaseResult]:
    def check(case: dict, path: Path, line: int) -> list[Check]:
        try:
            actual, meta = _prefix_outputs(case, path, line, sessions)
        except (FileNotFoundError, SessionFormatError, UnknownNameError) as exc:
            raise FixtureError(path, str(exc), line) from None
        diffs = compare_fields(need(case, "outputs", path, line, dict), actual, prefix="outputs")
        expected_meta = case.get("meta") if isinstance(case.get("meta"), dict) else {}
        return diffs + differences({k: expected_meta[k] for k in meta if k in expected_meta},
                                   {k: meta[k] for k in meta if k in expected_meta}, "meta")

    return line_cases("prefix", path, check)


def _check_filler(case: dict, path: Path, line: int) -> list[Check]:
    n = need(need(case, "inputs", path, line, dict), "target_chars", path, line, int)
    text = make_filler(n)
    actual = {"output": text, "output_len": len(text), "output_sha256": sha256_text(text)}
    expected = {k: case[k] for k in case if k.startswith("output")}
    if not expected:
        raise FixtureError(path, "no expected output field", line)
    return compare_fields(expected, actual, prefix="case")


def _stressor_verdicts(text: str, expected: dict, path: Path, line: int) -> dict:
    """Our verdict for each ``S<n>_...`` key of ``expected``."""
    out = {}
    for key in expected:
        name = key.split("_", 1)[0]
        if name not in REFERENCE_SCORERS:
            raise FixtureError(path, f"no reference scorer for {key!r} "
                                     f"(known: {', '.join(REFERENCE_SCORERS.names())})", line)
        out[key] = REFERENCE_SCORERS.get(name)(text)
    return out


def _check_s2(case: dict, path: Path, line: int) -> list[Check]:
    text = need(case, "input", path, line, str)
    expected = {"expected_is_no_preamble": need(case, "expected_is_no_preamble", path, line)}
    actual = {"expected_is_no_preamble": is_no_preamble(text)}
    others = case.get("other_stressor_scorers")
    if others is not None:
        if not isinstance(others, dict):
            raise FixtureError(path, "'other_stressor_scorers' must be an object", line)
        expected["other_stressor_scorers"] = others
        actual["other_stressor_scorers"] = _stressor_verdicts(text, others, path, line)
    return differences(expected, actual)


HARNESS_PARSE = "expected_harness_judge__parse_judge"
B3_PARSE = "variant_e02_b3_parse_judge"


def _check_judge(case: dict, path: Path, line: int) -> list[Check]:
    raw = need(case, "input", path, line)  # not always text: a null reply is a case too
    expected = {HARNESS_PARSE: need(case, HARNESS_PARSE, path, line, dict)}
    actual = {HARNESS_PARSE: parse_verdict(raw).as_fixture()}
    if B3_PARSE in case:
        b3 = need(case, B3_PARSE, path, line, dict)
        parsed = parse_verdict_b3(raw)
        expected[B3_PARSE] = b3
        actual[B3_PARSE] = {k: parsed.get(k) for k in b3}
    return differences(expected, actual)


# ---------------------------------------------------------------- stats family

def _by_position(cells: list[dict], target: str, arm: str, positions: list[str]) -> dict[str, list]:
    out = {}
    for p in positions:
        scores = [c["score"] for c in cells
                  if c["target"] == target and c["arm"] == arm and c["position"] == p]
        if scores:
            out[p] = scores
    return out


def _cell_deltas(cells: list[dict], target: str) -> list:
    """filler − real per (position, probe_id, sample), in the real arm's cell order."""
    def key(c):
        return c["position"], c["probe_id"], c.get("sample", 0)
    filler = {key(c): c["score"] for c in cells if c["target"] == target and c["arm"] == HARNESS_FILLER}
    return [filler[key(c)] - c["score"] for c in cells
            if c["target"] == target and c["arm"] == HARNESS_REAL and key(c) in filler]


def _string_keyed(cells: list[dict], target: str, arm: str) -> dict[str, float]:
    return {f"{c['position']}|{c['probe_id']}|{c.get('sample', 0)}": c["score"]
            for c in cells if c["target"] == target and c["arm"] == arm}


def _stats_target(cells: list[dict], positions: list[str], expected: dict,
                  onset_rngs: dict[int, np.random.Generator]) -> dict[str, dict]:
    """Recomputed blocks for one target, shaped like the fixture's. ``onset_rngs``: the
    case's onset generators by seed, shared across its targets in order (the harness's
    onset figure keeps one module generator, ``plotting/fig_app_onset.py:25``)."""
    target = expected["target"]
    out: dict[str, dict] = {}
    if "fig2_clustered_bootstrap" in expected:
        e = expected["fig2_clustered_bootstrap"]
        n_boot, seed = e.get("n_boot", 10_000), e.get("seed", 42)
        by_arm = {arm: _by_position(cells, target, arm, positions) for arm in (HARNESS_REAL, HARNESS_FILLER)}
        arms = {arm: harness_clustered_bootstrap_mean(by_arm[arm], n_boot=n_boot, seed=seed)
                for arm in (HARNESS_REAL, HARNESS_FILLER)}
        out["fig2_clustered_bootstrap"] = {
            "inputs_by_position": by_arm,
            **{arm: {"mean": r.mean, "lo": r.lo, "hi": r.hi, "n": r.n} for arm, r in arms.items()},
            "drift_gap_point": harness_drift_gap(arms[HARNESS_FILLER], arms[HARNESS_REAL]),
            "n_boot": n_boot, "seed": seed}
    if "consolidate_paired_permutation" in expected:
        e = expected["consolidate_paired_permutation"]
        n, seed = e.get("n_resamples", 10_000), e.get("seed", 42)
        deltas = _cell_deltas(cells, target)
        observed, p = harness_sign_flip_p(deltas, n_resamples=n, seed=seed)
        out["consolidate_paired_permutation"] = {
            "deltas_filler_minus_claude": deltas, "observed_mean": observed,
            "p_two_sided": p, "n_resamples": n, "seed": seed}
    if "b7_variants" in expected:
        e = expected["b7_variants"]
        n, seed = e.get("n", 10_000), e.get("seed", 42)
        deltas = harness_paired_differences(_string_keyed(cells, target, HARNESS_REAL),
                                            _string_keyed(cells, target, HARNESS_FILLER))
        delta, p = harness_sign_flip_p(deltas, n_resamples=n, seed=seed, plus_one=True)
        lo, hi = harness_paired_bootstrap_ci(deltas, n_boot=n, seed=seed)
        out["b7_variants"] = {"perm_p_plus_one": {"delta": delta, "p": p},
                              "paired_bootstrap_ci": {"lo": lo, "hi": hi},
                              "pair_key": e.get("pair_key"), "n": n, "seed": seed}
    if "onset_boot_gap_ci_per_position" in expected:
        e = expected["onset_boot_gap_ci_per_position"]
        seed = e.get("seed", 42)
        rng = onset_rngs.setdefault(seed, np.random.default_rng(seed))
        cis = harness_onset_gap_cis(_by_position(cells, target, HARNESS_FILLER, positions),
                                    _by_position(cells, target, HARNESS_REAL, positions), positions,
                                    rng=rng, n_boot=e.get("n_boot", 10_000))
        out["onset_boot_gap_ci_per_position"] = {
            "rng": e.get("rng"),
            "values": {p: {"gap": g, "lo": lo, "hi": hi}
                       for p, (g, lo, hi) in cis.items()}}
    return out


def check_stats(path: Path) -> Iterator[CaseResult]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        yield CaseResult("stats", path.name, error=f"{path}:{exc.lineno}: not valid JSON ({exc.msg})")
        return
    except UnicodeDecodeError as exc:
        yield CaseResult("stats", path.name, error=f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})")
        return
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, list) or not cases:
        yield CaseResult("stats", path.name, error=f"{path}: needs a non-empty 'cases' list")
        return
    for i, case in enumerate(cases):
        label = str(case.get("label", i)) if isinstance(case, dict) else str(i)
        try:
            cells = case["cells"]
            positions = list(case["positions_order"])
            targets = case["per_target"]
            for c in cells:
                for k in ("target", "position", "arm", "probe_id", "score"):
                    if k not in c:
                        raise KeyError(f"cell without {k!r}")
        except (KeyError, TypeError) as exc:
            yield CaseResult("stats", label, error=f"{path}: cases[{i}] ({label}): malformed: {exc}")
            continue
        p_values = []
        onset_rngs: dict[int, np.random.Generator] = {}
        for j, expected in enumerate(targets):
            if not isinstance(expected, dict) or "target" not in expected:
                yield CaseResult("stats", f"{label}/per_target[{j}]",
                                 error=f"{path}: cases[{i}].per_target[{j}] needs a 'target'")
                continue
            target = expected["target"]
            try:
                actual = _stats_target(cells, positions, expected, onset_rngs)
            except Exception as exc:  # fails this target's case, not the run
                yield CaseResult("stats", f"{label}/{target}", error=f"{type(exc).__name__}: {exc}")
                continue
            for block, value in actual.items():
                yield CaseResult("stats", f"{label}/{target}/{block}",
                                 differences(expected[block], value, block))
            unknown = [k for k in expected if k != "target" and k not in actual]
            if unknown:
                yield CaseResult("stats", f"{label}/{target}", error=f"no rule for {unknown}")
            if "consolidate_paired_permutation" in actual:
                p_values.append((target, actual["consolidate_paired_permutation"]["p_two_sided"]))
        if "holm_over_targets" in case:
            expected = case["holm_over_targets"]
            # the harness's Holm, which takes a NaN p-value (a target without pairs) as it does
            actual = {"inputs": [list(tp) for tp in p_values], "adjusted": harness_holm(p_values)}
            yield CaseResult("stats", f"{label}/holm_over_targets",
                             differences(expected, actual, "holm_over_targets"))


# ---------------------------------------------------------------- the families

FAMILIES: dict[str, str] = {
    "prefix": "prefix_cases.jsonl",
    "filler": "filler_cases.jsonl",
    "s2": "s2_cases.jsonl",
    "judge": "judge_parse_cases.jsonl",
    "stats": "stats_cases.json",
}


Checker = Callable[[Path, CorpusSessions], Iterator[CaseResult]]
#: family -> the check of its file.
CHECKERS: dict[str, Checker] = {
    "prefix": check_prefix,
    "filler": lambda path, _: line_cases("filler", path, _check_filler),
    "s2": lambda path, _: line_cases("s2", path, _check_s2),
    "judge": lambda path, _: line_cases("judge", path, _check_judge),
    "stats": lambda path, _: check_stats(path),
}
