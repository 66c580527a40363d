"""Every command the README shows, tried as a newcomer tries it, cold (issue 43).

The README's shell blocks and inline code are read for commands (``make ...``,
``python -m contextecho ...``, ``.venv/bin/python -m contextecho ...``, ``papermill ...``),
and each must have its entry in :data:`TRIED` (a command without one fails, so a new one
cannot slip past; an entry no command has fails too). An entry says how the command is
tried, in this process, on a scratch cache and scratch outputs, with no key in the
environment and nothing sent over the network:

- :class:`Try`: the command's own arguments (a ``make`` target's as ``make -n`` prints its
  recipe; papermill's as ``contextecho notebook``, which validates the same parameters),
  with the swaps and additions the entry names (a plan instead of a run, a scratch folder,
  a smaller scale), and the exit statuses and message the README or ``-h`` documents for it;
- :class:`NotRun`: a command the suite cannot run cheaply or must not (it installs, opens
  a server, deletes outputs, or is this suite), with the reason and its ``make`` recipe,
  checked so a changed target is looked at again.

A try fails on a traceback (an exception out of ``main``, or "Traceback (most recent call
last)" in what it printed) and on an exit status the entry does not expect or that
``python -m contextecho -h`` does not document; a planted traceback fails it
(:func:`test_a_planted_traceback_fails_the_try`)."""
from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import pytest

from contextecho.__main__ import EXIT_STATUS, main
from contextecho.engine.paths import REPO_ROOT, shared_dir
from tests.conftest import JUDGE_LABELS

pytestmark = [pytest.mark.corpus, pytest.mark.slow]  # it reads the real corpus; half a minute

README = REPO_ROOT / "README.md"
#: What starts a command line.
COMMAND = re.compile(r"(make|(?:\.venv/bin/)?python -m contextecho|papermill)(\s|$)")
TRACEBACK = "Traceback (most recent call last)"
#: Provider keys a newcomer has not set (the README's commands name these providers).
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY", "TOGETHERAI_API_KEY",
        "OPENROUTER_API_KEY")


def readme_commands(text: str) -> list[str]:
    """Every command line ``text`` shows, once each, in order: each line of a fenced block that
    starts with a command (a trailing backslash joins the next line; a ``#`` comment outside
    quotes is dropped), and each inline code span that is a command."""
    found: list[str] = []
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S)
    for block in fenced:
        for line in block.replace("\\\n", " ").splitlines():
            if COMMAND.match(line.strip()):
                found.append(shlex.join(shlex.split(line, comments=True)))
    outside = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", outside):
        if COMMAND.match(span.strip()):
            found.append(span.strip())
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Try:
    """Run the command's own arguments with ``swap`` (a README word -> the word tried: a
    placeholder's value, a scratch path, ``--plan`` for ``--yes``) and ``add`` (options after
    them), or, for a synopsis (placeholders, optional parts in brackets), ``instead``; it must
    exit with one of ``exits`` and print ``says``. Words may name ``{tmp}`` (a scratch folder),
    ``{sessions}`` (a folder of the bundled corpus), ``{claude}`` (a home's Claude Code projects
    folder with one session), ``{own}`` (where the import writes), ``{server}`` (a loopback
    OpenAI-compatible server), ``{runs}`` (a run-level fixture folder of one case), ``{bank}``
    (an ANCHOR bank), ``{fixtures}`` (the function-level fixtures)."""

    why: str
    swap: Mapping[str, str] = field(default_factory=dict)
    add: tuple[str, ...] = ()
    instead: tuple[str, ...] = ()
    exits: frozenset[int] = frozenset({0})
    says: str = ""


@dataclass(frozen=True)
class NotRun:
    """Not run: ``why``; ``recipe``: what ``make -n`` prints for it holds this (None: prose
    that names a command, not a command line)."""

    why: str
    recipe: str | None


#: The paper's plan on its smallest notebook (and with cape, which takes --set target), at the
#: least resampling, the judges calibrated on four labelled answers, a scratch output folder.
SMALLEST = ("--set", "n_resamples=100", "--set", "judge_labels={labels}")
PLAN_ONE = ("--only", "framing", *SMALLEST, "--set", "output_dir={tmp}/framing")
PLAN_TWO = ("--only", "framing,cape", *SMALLEST, "--set", "n_items=5", "--set", "output_dir={tmp}/out")
#: A notebook's plan (the panel's, mostly) at its smallest: one session, position and probe.
NOTEBOOK_PLAN = ("--plan", "--output-dir", "{tmp}/nb", "-p", "n_sessions", "1", "-p", "n_positions", "1",
                 "-p", "probes", "C01", "-p", "n_resamples", "100", "-p", "judge_labels", "{labels}")
#: An audit's plan at its smallest: one session.
AUDIT_PLAN = ("--out", "{tmp}/audit", "-p", "n_sessions", "1", "-p", "judge_labels", "{labels}")

TRIED: dict[str, Try | NotRun] = {
    # The two commands
    "make paper": Try("its plan (what it would call), on one notebook", add=("--plan", *PLAN_ONE)),
    "make test": NotRun("this suite is what it runs", ".venv/bin/ruff check lib tests benchmarks"),
    # One notebook at a time
    "make panel TARGETS=openai/gpt-4o-mini,anthropic/claude-sonnet-4-5 JUDGE=openai/gpt-4o SESSIONS=8":
        Try("planned: no key needed, nothing sent", add=NOTEBOOK_PLAN),
    "make onset 'PARAMS=-p steps 1,5,25'": Try("planned", add=NOTEBOOK_PLAN[:3]),
    ".venv/bin/python -m contextecho notebook compaction -p window 30000":
        Try("planned; the embedded default's 8k context refuses a 30,000-character window (exit 2, the "
            "README's parameter refusal)", add=(*NOTEBOOK_PLAN[:3], *NOTEBOOK_PLAN[-3:]), exits=frozenset({2}),
            says="exceeds the 8192-token context of smollm2-135m; shorten the prefix window"),
    "python -m contextecho notebook panel -p protocol reference -p targets anthropic/claude-sonnet-4-5 "
    "-p released DIR": Try("planned on an empty release (no key: nothing is sent)", swap={"DIR": "{tmp}"},
                           add=NOTEBOOK_PLAN),
    "papermill notebooks/panel.ipynb out.ipynb -p n_sessions 2":
        Try("as contextecho notebook, which validates the same parameters; planned", add=NOTEBOOK_PLAN),
    # Using a real provider
    ".venv/bin/python -m contextecho generate --model openai/gpt-4o-mini 'Who are you?'":
        Try("as given, no key set: refused before any call, naming the variable (exit 2)",
            exits=frozenset({2}), says="needs OPENAI_API_KEY in the environment"),
    ".venv/bin/python -m contextecho paper --set targets=anthropic/claude-sonnet-4-5 --set judges=openai/gpt-4o "
    "--set window=30000":
        Try("planned, on a notebook that takes targets and on cape", add=("--plan", *PLAN_TWO)),
    "make panel TARGETS=hosted_vllm/Qwen/Qwen2.5-7B-Instruct JUDGE=hosted_vllm/Qwen/Qwen2.5-7B-Instruct "
    "'ENDPOINTS=hosted_vllm/*=http://localhost:8000/v1' CONCURRENCY=8":
        Try("planned: no server needs to be up", add=NOTEBOOK_PLAN),
    "papermill notebooks/panel.ipynb out.ipynb -p targets hosted_vllm/Qwen/Qwen2.5-7B-Instruct -p endpoints "
    "'hosted_vllm/*=http://localhost:8000/v1' -p concurrency 8": Try("as contextecho notebook; planned",
                                                                      add=NOTEBOOK_PLAN),
    "make paper 'ENDPOINTS=hosted_vllm/*=http://localhost:8000/v1' CONCURRENCY=8 'PAPER_SET=--set "
    "targets=hosted_vllm/Qwen/Qwen2.5-7B-Instruct --set judges=anthropic/claude-sonnet-4-5'": Try("planned, on a notebook that takes targets and on cape",
                                               add=("--plan", *PLAN_TWO)),
    ".venv/bin/python -m contextecho generate --api-base http://localhost:8000/v1 --model "
    "hosted_vllm/Qwen/Qwen2.5-7B-Instruct 'Who are you?'":
        Try("against a loopback OpenAI-compatible server in place of vLLM", swap={"http://localhost:8000/v1":
                                                                                 "{server}"}),
    # The plan and its cost
    "make paper PLAN=1": Try("on one notebook", add=PLAN_ONE),
    "make panel PLAN=1 TARGETS=openai/gpt-4o-mini": Try("into a scratch folder", add=NOTEBOOK_PLAN[1:]),
    ".venv/bin/python -m contextecho paper --plan --paper-scale": Try("on one notebook", add=PLAN_ONE),
    "python -m contextecho paper --plan --paper-scale": Try("on one notebook", add=PLAN_ONE),
    ".venv/bin/python -m contextecho paper --only cape --set targets=hosted_vllm/Qwen/Qwen3-8B --set "
    "'endpoints=hosted_vllm/*=http://127.0.0.1:8000/v1' --set 'model_options={\"hosted_vllm/*\": "
    "{\"extra_body\": {\"chat_template_kwargs\": {\"enable_thinking\": false}}}}'":
        Try("planned: the options are checked, no server is reached, nothing sent",
            add=("--plan", "--set", "n_items=5", "--set", "output_dir={tmp}/cape")),
    "papermill notebooks/panel.ipynb out.ipynb -p plan true": Try("as contextecho notebook --plan",
                                                                  add=NOTEBOOK_PLAN[1:]),
    # Provider batch mode
    "make paper BATCH=1 'PAPER_SET=--set targets=anthropic/claude-sonnet-4-5 --set judges=openai/gpt-4o'": Try("planned, on a notebook that takes targets and on cape",
                                       add=("--plan", *PLAN_TWO)),
    "make panel BATCH=1 TARGETS=openai/gpt-4o-mini JUDGE=anthropic/claude-sonnet-4-5": Try("planned",
                                                                                            add=NOTEBOOK_PLAN),
    "papermill notebooks/panel.ipynb out.ipynb -p batch true -p targets openai/gpt-4o-mini":
        Try("as contextecho notebook; planned", add=NOTEBOOK_PLAN),
    # Your own sessions
    ".venv/bin/python -m contextecho import-sessions":
        Try("from a home with one Claude Code session and no Codex one, into a scratch folder",
            add=("--claude-dir", "{claude}", "--codex-dir", "{tmp}/no-codex", "--dest", "{tmp}/own")),
    ".venv/bin/python -m contextecho corpus data/own_sessions":
        Try("on what the import wrote", swap={"data/own_sessions": "{own}"}),
    ".venv/bin/python -m contextecho audit --model openai/gpt-4o-mini":
        Try("imports that home's session (into a scratch data folder), then plans: no key needed",
            add=("--claude-dir", "{claude}", "--codex-dir", "{tmp}/no-codex", "--plan", *AUDIT_PLAN)),
    ".venv/bin/python -m contextecho audit --sessions ../shared/corpus/real/sword --model local/smollm2-135m "
    "--quick --yes": Try("planned (--plan for --yes)", swap={"--yes": "--plan"}, add=AUDIT_PLAN),
    "make audit 'AUDIT=--sessions DIR --model M --quick --yes'":
        Try("DIR and M given, planned (--plan for --yes)",
            swap={"DIR": "{sessions}", "M": "local/smollm2-135m", "--yes": "--plan"}, add=AUDIT_PLAN),
    # Compare two model releases
    ".venv/bin/python -m contextecho preregister --sessions DIR --baseline OLD --candidate NEW --judge J "
    "--out plan.json": Try("the embedded model against itself at another temperature (under our protocol, which "
                           "sends it) on one session of the corpus, into a scratch plan (nothing is sent)",
                           swap={"DIR": "{sessions}", "OLD": "local/smollm2-135m", "NEW": "local/smollm2-135m",
                                 "J": "local/smollm2-135m", "plan.json": "{tmp}/plan.json"},
                           add=("--candidate-temperature", "0.8", "--protocol", "contextecho", "-p", "n_sessions",
                                "1", "-p", "judge_labels", "{labels}")),
    ".venv/bin/python -m contextecho compare --plan plan.json --yes":
        Try("with no plan registered in the scratch folder: refused before any call (exit 2)",
            swap={"plan.json": "{tmp}/no-plan.json"}, exits=frozenset({2}), says="no such plan file"),
    # Calibration
    ".venv/bin/python -m contextecho judge-check --judge anthropic/claude-sonnet-4-6":
        Try("as given, no key set: refused before any call (exit 2)", exits=frozenset({2}),
            says="needs ANTHROPIC_API_KEY in the environment"),
    ".venv/bin/python -m contextecho judge-check --judge hosted_vllm/Qwen/Qwen2.5-7B-Instruct --endpoint "
    "'hosted_vllm/*=http://localhost:8000/v1' --protocol contextecho --labels my_labels.jsonl --out calibration/":
        Try("as given, with no my_labels.jsonl: refused before any call (exit 2)",
            swap={"calibration/": "{tmp}/calibration/"}, exits=frozenset({2}),
            says="my_labels.jsonl: no such labelled set"),
    # Inline: the other targets and commands the prose names
    "make setup": NotRun("it creates .venv and installs packages", "-m venv .venv"),
    "make paper-check": Try("into a scratch variables file; 1 where no notebook has run yet (its variables "
                            "do not resolve)", exits=frozenset({0, 1})),
    "make clean-results": NotRun("it deletes the checkout's generated outputs", "rm -rf paper/_generated"),
    "make data": Try("offline, into a scratch folder: every file is in ../shared",
                     add=("--offline", "--dest", "{tmp}/corpus")),
    "make lab": NotRun("it opens JupyterLab (a server) and installs its extra", ".venv/bin/python -m pip install"),
    "make notebook-filter": NotRun("it writes the clone's git configuration", "nbstripout --install"),
    "make benchmarks": NotRun("the speed measurements take minutes; they run alone", "for b in benchmarks/"),
    "make quarto": NotRun("it installs Quarto", "pip install --quiet 'quarto-cli=="),
    "make test-fast": NotRun("this suite is what it runs", ".venv/bin/python -m pytest"),
    "make paper FORCE=1": Try("its plan, on one notebook", add=("--plan", *PLAN_ONE)),
    "make paper RELEASED=DIR": Try("its plan on the published notebook, DIR an empty release tree",
                                   swap={"DIR": "{tmp}/release"},
                                   add=("--plan", "--only", "published", "--set", "output_dir={tmp}/published")),
    "python -m contextecho paper --released DIR": Try("as make paper RELEASED=DIR", swap={"DIR": "{tmp}/release"},
                                                      add=("--plan", "--only", "published", "--set",
                                                           "output_dir={tmp}/published")),
    "make anchor": Try("its -h: the notebook's plan takes half a minute", add=("-h",)),
    "make": NotRun("prose (the make targets), not a command line", None),
    "make paper --set": NotRun("prose (make paper's PAPER_SET='--set ...', tried above)", None),
    "papermill": NotRun("prose (papermill itself; its README commands are tried as contextecho notebook)", None),
    "python -m contextecho": Try("as given: no command is a usage error, argparse's one line (exit 2)",
                                 exits=frozenset({2}), says="the following arguments are required: COMMAND"),
    "python -m contextecho -h": Try("as given"),
    "python -m contextecho notebook": Try("its -h", add=("-h",)),
    "python -m contextecho notebook --build": Try("into a scratch folder"),
    "python -m contextecho anchor-score --bank DIR --model MODEL --out OUT":
        Try("the test bank, scored by a scripted model", swap={"DIR": "{bank}", "MODEL": "scripted/letters",
                                                               "OUT": "{tmp}/scores"}),
    "python -m contextecho cache": Try("on the scratch cache"),
    "python -m contextecho conformance DIR [--corpus DIR] [--out DIR]":
        Try("on the function-level fixtures, one family",
            instead=("conformance", "{fixtures}", "--family", "judge", "--corpus", "{corpus}")),
    "python -m contextecho conformance ../shared/reference/contextecho/continuation":
        Try("one family (all of them take 12 s)", add=("--family", "jaccard")),
    "python -m contextecho conformance ../shared/reference/contextecho/runs --released":
        Try("on a run-level folder of one case (all take 40 s)",
            swap={"../shared/reference/contextecho/runs": "{runs}"}),
    "python -m contextecho released fetch [--revision v1.0] [--dir DIR]":
        Try("--from a copy: nothing is downloaded (tests do not reach the network)",
            instead=("released", "fetch", "--revision", "v1.0", "--dir", "{tmp}/released", "--from", "{tmp}/release")),
}


# ---------------------------------------------------------------- how a command is tried
def readme_arguments(command: str) -> list[str]:
    """The ``python -m contextecho`` arguments ``command`` runs: a ``make`` target's recipe (as
    ``make -n`` prints it, without remaking the environment), papermill's parameters as
    ``contextecho notebook``'s (``-p plan true`` as ``--plan``), or the command's own."""
    words = shlex.split(command)
    if words[0] == "make":
        return recipe_words(words[1:])
    if words[0] == "papermill":
        name = Path(words[1]).stem
        pairs = [tuple(words[i + 1:i + 3]) for i in range(3, len(words), 3)]
        return ["notebook", name] + [w for k, v in pairs for w in (("--plan",) if (k, v) == ("plan", "true")
                                                                    else ("-p", k, v))]
    return words[words.index("contextecho") + 1:]


def make_recipe(arguments: list[str], *, setup: bool = False) -> str:
    """What ``make -n ARGUMENTS`` prints: the target's own recipe, the environment's taken as
    made (``setup``: as to be remade, so a target that only sets up prints its recipe)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    environment = ["-W", "pyproject.toml"] if setup else ["-o", ".venv/.installed"]
    done = subprocess.run([make, "-n", "--no-print-directory", *environment, *arguments], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def recipe_words(arguments: list[str]) -> list[str]:
    recipe = make_recipe(arguments)
    words = shlex.split(recipe)
    assert words[:3] == [".venv/bin/python", "-m", "contextecho"] and "\n" not in recipe, recipe
    return words[3:]


@dataclass(frozen=True)
class Tried:
    arguments: list[str]
    status: int
    output: str
    traceback: str  # what ended in a traceback, or ""


def run_command(arguments: list[str], capfd) -> Tried:
    """``python -m contextecho ARGUMENTS`` in this process: its exit status, what it printed, and
    whether it ended in a traceback (an exception out of main, or one printed)."""
    capfd.readouterr()
    traceback = ""
    try:
        status = main(arguments)
    except SystemExit as exc:  # argparse (a usage error, or -h)
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # noqa: BLE001 - the interpreter would print its traceback
        status, traceback = 1, f"{type(exc).__name__}: {exc}"
    out, err = capfd.readouterr()
    output = out + err
    if not traceback and TRACEBACK in output:
        traceback = output[output.index(TRACEBACK):][:2000]
    return Tried(arguments, status, output, traceback)


def problems(entry: Try, tried: Tried) -> list[str]:
    """What is wrong with one try: a traceback, an exit status not expected or not documented,
    the documented message missing."""
    found = []
    if tried.traceback:
        found.append(f"ended in a traceback: {tried.traceback}")
    if tried.status not in entry.exits:
        found.append(f"exit status {tried.status}, expected {sorted(entry.exits)}")
    if not documented(tried.status):
        found.append(f"exit status {tried.status} is not documented in python -m contextecho -h")
    if entry.says and entry.says not in tried.output:
        found.append(f"does not say {entry.says!r}")
    return found


def documented(status: int) -> bool:
    return re.search(rf"(?<!\d){status} [a-z(]", EXIT_STATUS) is not None


# ---------------------------------------------------------------- the scratch world
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def scratch(tmp_path, monkeypatch, scripted_models, corpus_dir):
    """The words' values (:class:`Try`), outputs kept out of the checkout (the paper's merged
    plan and variables, the audit's imported sessions, the notebooks --build writes), no key."""
    import contextecho.cli.audit as audit_cli
    import contextecho.cli.notebook as notebook_cli
    import contextecho.notebooks.planning as planning
    from contextecho.notebooks.build import write_all
    from contextecho.paper import manuscript
    from tests.engine.conftest import FaultServer

    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(REPO_ROOT)  # the README's relative paths (../shared/...) are the checkout's
    monkeypatch.setattr(planning, "PAPER_PLAN", tmp_path / "paper-plan.json")
    variables = tmp_path / "_variables.yml"
    monkeypatch.setattr(manuscript.write_variables, "__defaults__", (variables,))
    monkeypatch.setattr(manuscript.check_sources, "__defaults__", (manuscript.PAPER_DIR, variables))
    monkeypatch.setattr(notebook_cli, "write_all", lambda: write_all(tmp_path / "notebooks"))
    monkeypatch.setattr(audit_cli, "data_dir", lambda: tmp_path / "data")
    claude = tmp_path / "home" / ".claude" / "projects"
    session = next(corpus_dir.glob("sword/projects/*/a7cf1760-*.jsonl"))
    (claude / "-home-me-project").mkdir(parents=True)
    shutil.copyfile(session, claude / "-home-me-project" / session.name)
    release = tmp_path / "release"
    (release / "results").mkdir(parents=True)
    runs = tmp_path / "runs-one-case"
    reference = shared_dir() / "reference" / "contextecho"
    shutil.copytree(reference / "runs", runs, ignore=lambda folder, names: [
        n for n in names if n.endswith(".json") and Path(folder).name == "cases" and n != "framing_e16.json"])
    server = FaultServer()
    server.thread.start()
    words = {"tmp": str(tmp_path), "sessions": str(corpus_dir / "sword"), "claude": str(claude),
             "own": str(tmp_path / "own"), "server": server.url, "runs": str(runs),
             "bank": str(REPO_ROOT / "tests" / "fixtures" / "anchor_bank"),
             "fixtures": str(reference / "fixtures"), "corpus": str(corpus_dir), "labels": str(JUDGE_LABELS)}
    yield words
    server.release.set()
    server.httpd.shutdown()
    server.httpd.server_close()


def arguments_tried(command: str, entry: Try, words: Mapping[str, str]) -> list[str]:
    own = list(entry.instead) or [entry.swap.get(w, w) for w in readme_arguments(command)]
    # only the {name} placeholders of ``words``: a README word may hold JSON braces of its own
    return [re.sub(r"\{(\w+)\}", lambda m: words.get(m[1], m[0]), w) for w in own + list(entry.add)]


# ---------------------------------------------------------------- the tests
def test_every_readme_command_has_an_entry_and_every_entry_a_command():
    shown = readme_commands(README.read_text(encoding="utf-8"))
    assert len(shown) > 30
    missing = [c for c in shown if c not in TRIED]
    assert not missing, f"README commands with no entry in TRIED (say how each is tried): {missing}"
    stale = [c for c in TRIED if c not in shown]
    assert not stale, f"entries no README command has: {stale}"


def test_a_new_readme_command_without_an_entry_is_found():
    text = README.read_text(encoding="utf-8") + "\n```sh\nmake brand-new \\\n    X=1   # new\n```\nOr `python -m contextecho nova`.\n"
    shown = readme_commands(text)
    assert [c for c in shown if c not in TRIED] == ["make brand-new X=1", "python -m contextecho nova"]


@pytest.mark.parametrize("command", [c for c, e in TRIED.items() if isinstance(e, NotRun) and e.recipe is not None])
def test_a_make_target_not_run_is_the_recipe_it_says(command):
    assert TRIED[command].recipe in make_recipe(shlex.split(command)[1:], setup=True)


def test_every_readme_command_runs_cold_without_a_traceback(scratch, capfd):
    """Each :class:`Try` in turn, in the README's order (the import before the corpus of what it wrote)."""
    failed = {}
    shown = readme_commands(README.read_text(encoding="utf-8"))
    for command in shown:
        entry = TRIED.get(command)
        if not isinstance(entry, Try):
            continue
        tried = run_command(arguments_tried(command, entry, scratch), capfd)
        found = problems(entry, tried)
        if found:
            failed[command] = found + [f"ran: {' '.join(tried.arguments)}", tried.output[-1500:]]
    assert not failed, "\n\n".join(f"{c}\n  " + "\n  ".join(p) for c, p in failed.items())


def test_a_planted_traceback_fails_the_try(monkeypatch, capfd):
    import contextecho.cli.cache as cache_cli

    entry = TRIED["python -m contextecho cache"]
    monkeypatch.setattr(cache_cli, "run", lambda args: 1 / 0)
    assert problems(entry, run_command(["cache"], capfd))[0].startswith("ended in a traceback: ZeroDivisionError")

    def printed(args):
        print('Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom')
        return 0

    monkeypatch.setattr(cache_cli, "run", printed)
    assert problems(entry, run_command(["cache"], capfd))[0].startswith("ended in a traceback: Traceback")
    monkeypatch.setattr(cache_cli, "run", lambda args: 3)
    assert problems(entry, run_command(["cache"], capfd)) == [
        "exit status 3, expected [0]", "exit status 3 is not documented in python -m contextecho -h"]


def test_every_exit_status_an_entry_expects_is_documented():
    assert all(documented(s) for e in TRIED.values() if isinstance(e, Try) for s in e.exits)
    assert documented(130) and not documented(3)
