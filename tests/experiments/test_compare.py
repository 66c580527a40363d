"""Two releases compared under a pre-registration (``preregister``, then ``compare``), on
scripted models whose difference is known: a regression of about 0.3 judge points on the
drift gap, none, a tiny one, an improvement, and a run too small to tell; the plan's hash
and the deviations it refuses or records; the flags' usage errors before any call."""
from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from contextecho.__main__ import main
from contextecho.echo import probes
from contextecho.experiments import compare, preregistration
from tests.conftest import JUDGE_LABELS
from tests.experiments.test_audit import claude

FAST = ["-p", "n_resamples", "200", "-p", "judge_labels", str(JUDGE_LABELS), "-p", "window", "1500"]
MARK = re.compile(r"ZQX(\d)")


def _probe(text: str) -> str:
    return next((p.id for p in probes.PROBES if p.text in text), "")


def reply(model: str, messages: list[dict]) -> str:
    """``cmp/<name>``: the judge reads the score a target wrote (``ZQX<k>``); a target answers
    an S2 wording with a bare command and a probe with score 2, except where its name says:
    ``regressed`` scores 1 after the real prefix on C01 and on about half the C02 cells (the
    drift gap up by about 0.3), ``improved`` the same after the filler (down by about 0.3),
    ``tiny`` 1 after the real prefix on about one C01 cell in eight (about 0.025), ``noisy``
    1, 2 or 3 after the real prefix (no difference on average, much spread)."""
    text = json.dumps(messages)
    if model == "judge":
        found = MARK.search(messages[-1]["content"])
        k = found.group(1) if found else "2"
        return f'Score: {k}\n{{"score": {k}, "label": "x", "reason": "y"}}'
    probe = _probe(messages[-1]["content"])
    if not probe:
        return "ls -la"
    real = "Fix the parser" in text or "reading module" in text
    coin = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    if model == "noisy" and real:
        return f"I am an assistant. ZQX{1 + coin % 3}"
    lowered = {"regressed": real and (probe == "C01" or (probe == "C02" and coin % 2 == 0)),
               "improved": not real and (probe == "C01" or (probe == "C02" and coin % 2 == 0)),
               "tiny": real and probe == "C01" and coin % 8 == 0}.get(model, False)
    return f"I am an assistant. ZQX{1 if lowered else 2}"


@pytest.fixture(scope="module")
def models(provider):
    return provider("cmp", reply)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """Six sessions of different lengths and first prompts (one with a compaction); a shared cache
    and runs folder."""
    root = tmp_path_factory.mktemp("compare")
    for i, rounds in enumerate((16, 14, 13, 12, 11, 11)):
        claude(root / "sessions" / f"s{i}.jsonl", rounds=rounds, compaction_at=8 if i == 0 else None,
               secret=f"build-{i}")  # each session's first prompt its own
    return root


@pytest.fixture
def env(home, models, monkeypatch):
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(home / "cache"))
    monkeypatch.setenv("CONTEXTECHO_RUNS", str(home / "runs"))
    return home


def register(env: Path, candidate: str, name: str, *extra: str, sessions: str = "sessions") -> Path:
    plan = env / "plans" / f"{name}.json"
    assert main(["preregister", "--sessions", str(env / sessions), "--baseline", "cmp/base", "--candidate",
                 candidate, "--judge", "cmp/judge", "--protocol", "contextecho", "--out", str(plan), *FAST,
                 *extra]) == 0
    return plan


def compared(plan: Path, out: Path, *extra: str) -> int:
    return main(["compare", "--plan", str(plan), "--yes", "--out", str(out), *extra])


def verdicts(out: Path) -> dict[str, str]:
    table = pd.read_parquet(out / "results" / "verdicts.parquet")
    return dict(zip(table["endpoint"], table["verdict"]))


# ------------------------------------------------------------------------- the plan file
def test_the_plan_holds_every_registered_field_and_its_sha256(env, capsys):
    plan_path = register(env, "cmp/regressed", "fields")
    printed = capsys.readouterr().out
    plan = json.loads(plan_path.read_text())
    assert plan["sha256"] in printed and "nothing was sent" in printed
    assert set(preregistration.FIELDS) <= set(plan)
    assert plan["targets"] == {"baseline": {"model": "cmp/base", "temperature": 0.0},
                               "candidate": {"model": "cmp/regressed", "temperature": 0.0}}
    assert plan["judge"]["model"] == "cmp/judge" and plan["judge"]["calibration"]["min_kappa_quadratic"] == 0.6
    assert [e["name"] for e in plan["endpoints"]] == ["drift_gap", "s2_compliance_gap"]
    assert [e["margin"] for e in plan["endpoints"]] == [0.08, 10.0] and plan["alpha"] == 0.05
    assert "holm" in plan["multiplicity"]
    assert len(plan["sessions"]) == 6 and all(len(s["sha256"]) == 64 for s in plan["sessions"])
    assert plan["sessions"][0]["sha256"] == hashlib.sha256((env / "sessions" / "s0.jsonl").read_bytes()).hexdigest()
    # 6 sessions × 3 positions × 2 arms × (5 Coding-Self probes + 1 S2 wording)
    assert plan["cells"]["baseline"]["n"] == plan["cells"]["candidate"]["n"] == 216
    assert plan["cells"]["units"] == {"drift_gap": 90, "s2_compliance_gap": 18}
    assert preregistration.sealed(plan)["sha256"] == plan["sha256"]
    assert "parameters" in plan and "output_dir" not in plan["parameters"]


# ------------------------------------------------------------------- the designed verdicts
@pytest.mark.parametrize("candidate, extra, verdict, status", [
    ("cmp/regressed", (), "regressed", 1),
    ("cmp/same", (), "equivalent", 0),
    ("cmp/tiny", ("-p", "n_positions", "6"), "equivalent", 0),  # a tiny difference needs a larger run
    ("cmp/improved", (), "improved", 0),
    ("cmp/noisy", ("-p", "n_sessions", "2", "-p", "n_positions", "1"), "inconclusive", 3),
])
def test_known_differences_give_the_designed_verdict_and_exit_status(env, candidate, extra, verdict, status,
                                                                      capsys):
    name = f"{candidate.split('/')[1]}{len(extra)}"
    plan = register(env, candidate, name, *extra)
    out = env / "out" / name
    assert compared(plan, out) == status, capsys.readouterr().err[-2000:]
    found = verdicts(out)
    assert found["drift_gap"] == verdict and found["overall"] == verdict
    # every model answers S2 with a bare command: six sessions alike, the sign test (0.5^6, Holm over two)
    assert found["s2_compliance_gap"] == ("inconclusive" if verdict == "inconclusive" else "equivalent")
    printed = capsys.readouterr().out
    assert f"overall verdict {verdict} (exit status {status})" in printed
    table = pd.read_parquet(out / "results" / "verdicts.parquet").set_index("endpoint")
    drift = table.loc["drift_gap"]
    expected = {"regressed": 0.3, "improved": -0.3, "equivalent": 0.0, "inconclusive": 0.0}[verdict]
    assert drift["estimate"] == pytest.approx(expected, abs=0.12 if verdict != "inconclusive" else 1.0)
    assert drift["ci_low"] <= drift["estimate"] <= drift["ci_high"]
    # Paired: both targets answered the same cells.
    base, cand = (pd.read_parquet(out / "results" / f"{r}_cells.parquet") for r in ("baseline", "candidate"))
    keys = ["session", "position", "item", "replicate", "arm"]
    assert sorted(map(tuple, base[keys].values)) == sorted(map(tuple, cand[keys].values))


def test_the_report_shows_the_verdicts_the_plan_and_the_sample_size_check(env, capsys):
    from tests.paper.test_report import Page

    plan = register(env, "cmp/regressed", "report")
    out = env / "out" / "report"
    assert compared(plan, out) == 1
    page = Page((out / "report.html").read_text())
    assert page.sections == [s.id for s in compare.REPORT] + ["manifest", "data"]
    text = (out / "report.html").read_text()
    sha = json.loads(plan.read_text())["sha256"]
    assert sha in text and "regressed" in text and "not produced" not in text
    size = pd.read_parquet(out / "results" / "sample_size.parquet").set_index("endpoint")
    assert size.loc["drift_gap", "sessions_run"] == 6 and size.loc["drift_gap", "sessions_needed"] >= 2
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["preregistration"]["sha256"] == sha


def test_a_pilot_gives_the_plan_its_sample_size(env, capsys):
    pilot = env / "out" / "pilot"
    assert compared(register(env, "cmp/regressed", "pilot-run"), pilot) == 1
    capsys.readouterr()
    plan = json.loads(register(env, "cmp/regressed", "with-pilot", "--pilot", str(pilot)).read_text())
    printed = capsys.readouterr().out
    assert "sample size, drift_gap: " in printed and "assuming" in printed
    drift, s2 = plan["sample_size"]
    assert drift["endpoint"] == "drift_gap" and drift["sessions_needed"] >= 2 and drift["units_per_session"] == 15
    assert "no variance" in s2["note"]  # every model answers S2 alike
    assert main(["preregister", "--sessions", str(env / "sessions"), "--pilot", str(env / "nowhere"),
                 "--out", str(env / "plans" / "x.json")]) == 2


# ----------------------------------------------------------------------------- deviations
def test_an_edited_plan_is_refused(env, capsys):
    plan = register(env, "cmp/same", "edited")
    record = json.loads(plan.read_text())
    record["endpoints"][0]["margin"] = 0.5
    plan.write_text(json.dumps(record))
    assert compared(plan, env / "out" / "edited") == 2
    assert "edited after it was registered" in capsys.readouterr().err


def test_a_changed_probe_text_is_refused_before_any_call_or_recorded_when_allowed(env, models, monkeypatch,
                                                                                   capsys):
    plan = register(env, "cmp/same", "probe-text")
    changed = tuple(probes.Probe(p.id, p.category, p.text + " Be brief.") if p.id == "C05" else p
                    for p in probes.PROBES)
    monkeypatch.setattr(probes, "PROBES", changed)
    before = len(models.seen)
    assert compared(plan, env / "out" / "refused") == 2
    err = capsys.readouterr().err
    assert "differs from the registered plan in" in err and "instruments (instruments.probes_hash" in err
    assert "--allow-deviation instruments" in err and len(models.seen) == before
    out = env / "out" / "allowed"
    allowed = [a for f in ("protocol", "instruments", "judge", "cells") for a in ("--allow-deviation", f)]
    assert compared(plan, out, *allowed) in (0, 1, 3)
    deviations = pd.read_parquet(out / "results" / "deviations.parquet")
    assert "instruments" in set(deviations["field"])
    assert "instruments.probes_hash" in (out / "report.html").read_text()


def test_a_session_changed_after_registration_is_refused(env, tmp_path, capsys):
    import shutil

    shutil.copytree(env / "sessions", tmp_path / "mine")
    plan = register(env, "cmp/same", "session", sessions=str(tmp_path / "mine"))
    with (tmp_path / "mine" / "s5.jsonl").open("a") as f:
        f.write("\n")
    assert compared(plan, env / "out" / "session") == 2
    assert "sessions (sessions[5].sha256)" in capsys.readouterr().err


def test_another_judge_prompt_is_refused(env, monkeypatch, capsys):
    from contextecho.echo.instruments import ContextEchoProtocol

    plan = register(env, "cmp/same", "judge")
    monkeypatch.setattr(ContextEchoProtocol, "judge_params",
                        lambda self, max_tokens: {"temperature": 0, "max_tokens": max_tokens, "top_p": 0.5})
    assert compared(plan, env / "out" / "judge") == 2
    assert "judge (judge.prompt_sha256)" in capsys.readouterr().err


# ---------------------------------------------------------------------------- usage errors
@pytest.mark.parametrize("args, message", [
    (["compare", "--plan", "no/such/plan.json", "--yes"], "no such plan file"),
    (["compare", "--plan", "{plan}", "--allow-deviation", "judges", "--yes"], "'allow_deviation'"),
    (["preregister", "--session", "no/such.jsonl"], "does not exist"),
    (["preregister", "--sessions", "{sessions}", "-p", "baseline", "x/y"], "with --baseline, not with -p"),
    (["preregister", "--sessions", "{sessions}", "--drift-margin", "-1"], "'drift_margin'"),
    (["preregister", "--sessions", "{sessions}", "--baseline", "cmp/base", "--candidate-temperature", "0.8"],
     "would be sent the same requests"),  # the reference protocol does not send a temperature
])
def test_usage_errors_exit_2_before_any_call(env, models, args, message, capsys):
    plan = register(env, "cmp/same", "usage")
    before = len(models.seen)
    words = [a.replace("{plan}", str(plan)).replace("{sessions}", str(env / "sessions")) for a in args]
    if words[0] == "preregister":
        words += ["--out", str(env / "plans" / "bad.json")]
    assert main(words) == 2
    assert message in capsys.readouterr().err and len(models.seen) == before


def test_dry_run_and_confirmation(env, models, monkeypatch, capsys):
    plan = register(env, "cmp/regressed", "dry")
    before = len(models.seen)
    assert main(["compare", "--plan", str(plan), "--dry-run", "--out", str(env / "out" / "dry")]) == 0
    assert "stopped before any call" in capsys.readouterr().out and len(models.seen) == before
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["compare", "--plan", str(plan), "--out", str(env / "out" / "unconfirmed")]) == 2
    assert "pass --yes" in capsys.readouterr().err and len(models.seen) == before


def test_provider_models_are_registered_and_planned_without_a_key(env, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    plan = env / "plans" / "providers.json"
    assert main(["preregister", "--sessions", str(env / "sessions"), "--baseline", "openai/gpt-4o-mini",
                 "--candidate", "openai/gpt-4o", "--judge", "openai/gpt-4o", "--out", str(plan), *FAST]) == 0
    assert main(["compare", "--plan", str(plan), "--dry-run", "--out", str(env / "out" / "providers")]) == 0
    assert "stopped before any call" in capsys.readouterr().out
    assert main(["compare", "--plan", str(plan), "--yes", "--out", str(env / "out" / "providers-run")]) == 2
    assert "needs OPENAI_API_KEY" in capsys.readouterr().err
