"""Shared test set-up.

- No test writes run manifests or cache cells into the checkout.
- ``provider(name, reply)`` registers a scripted in-process model that keeps what it saw;
  ``cache`` is a fresh call cache in the test's folder.
- Shared data (the real corpus, the MPI inventory) must be present under CI, where a
  missing ``../shared`` is a broken set-up: there the tests that need it fail; on a
  developer machine without it they are skipped, saying why.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable, NoReturn

import pytest

from contextecho.engine.paths import shared_dir

#: Four labelled responses, one per score 0-3 (from data/judge_labels/probe_responses.jsonl): the
#: judge_labels of a test whose notebook calibrates a judge it does not test, so that a real model
#: scores 4 of them, not the 65 of the reference calibration.
JUDGE_LABELS = Path(__file__).parent / "fixtures" / "judge_labels.jsonl"

# Under pytest-xdist each worker's embedded model (in process, in a notebook's kernel, on a local
# server: all read CONTEXTECHO_THREADS) gets its share of the cores: two workers with two threads
# each on two cores spin at llama.cpp's barriers waiting for each other.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault("CONTEXTECHO_THREADS",
                          str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


@pytest.fixture(scope="session", autouse=True)
def _isolated_session_outputs(tmp_path_factory):
    """The same for what module- and session-scoped fixtures run, before any test's own; and
    at the end, the checkout's own outputs (a ``make paper``'s) are as they were: a test that
    wrote or removed anything there fails the session."""
    before = _checkout_outputs()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONTEXTECHO_RUNS", str(tmp_path_factory.mktemp("session-runs")))
        mp.setenv("CONTEXTECHO_CACHE", str(tmp_path_factory.mktemp("session-cache")))
        yield
    after = _checkout_outputs()
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert not changed, f"tests changed the checkout's outputs: {[path for path, _ in changed][:10]}"


def _checkout_outputs() -> dict[str, tuple[int, int]]:
    """Every file of the checkout's run manifests, call cache, generated results and merged
    variables: path -> (size, modification time)."""
    from contextecho.engine.paths import REPO_ROOT

    roots = [REPO_ROOT / "runs", REPO_ROOT / "cache", REPO_ROOT / "paper" / "_generated", REPO_ROOT / "_variables.yml"]
    files = [p for root in roots for p in ([root] if root.is_file() else root.rglob("*") if root.is_dir() else [])
             if p.is_file()]
    return {str(p.relative_to(REPO_ROOT)): (p.stat().st_size, p.stat().st_mtime_ns) for p in files}


@pytest.fixture(autouse=True)
def _isolated_outputs(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CONTEXTECHO_RUNS", str(tmp_path_factory.mktemp("runs")))
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path_factory.mktemp("cache")))


def _missing_shared_data(message: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{message} (CI needs ../shared beside the checkout)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def missing_shared_data() -> Callable[[str], NoReturn]:
    """Call with a reason when shared data is absent: fails under CI, skips elsewhere."""
    return _missing_shared_data


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The real corpus folder (``shared/corpus/real`` with its MANIFEST.csv)."""
    path = shared_dir() / "corpus" / "real"
    if not (path / "MANIFEST.csv").is_file():
        _missing_shared_data(f"real corpus not found at {path} (set CONTEXTECHO_SHARED to the "
                             "folder holding corpus/real)")
    return path


def scripted_reply(model: str, messages: list[dict]) -> tuple[str, int, int]:
    """``scripted/<name>``: a deterministic model whose answers vary with the request, so
    estimates are numbers: ``scripted/judge`` answers a 0–3 score in both the reference's
    JSON and our rubric's line; ``scripted/command`` always a bare shell command
    (S2-compliant), ``scripted/chatty`` always a preamble before it (not compliant),
    ``scripted/letters`` an option letter A–E; any other name one of a few answers (an option
    letter, a command, a chatty reply); the choices, and the prompt tokens, picked by the
    request's hash."""
    h = int(hashlib.sha256((json.dumps(messages, sort_keys=True) + model).encode()).hexdigest(), 16)
    if model == "judge":
        text = f'Score: {h % 4}\n{{"score": {h % 4}, "label": "x", "reason": "y"}} HELD'
    else:
        text = {"command": "ls -la", "chatty": "Sure! Here is the command you asked for:\n\nls -la",
                "letters": "ABCDE"[h % 5]}.get(model, SCRIPTED_ANSWERS[h % len(SCRIPTED_ANSWERS)])
    return text, 10 + h % 50, 3


SCRIPTED_ANSWERS = ("B", "ls -la", "I think C is right.\n\nBecause I feel it.", "A. sure", "D")


@pytest.fixture
def scripted_models(provider):
    """Register the ``scripted/...`` provider (:func:`scripted_reply`)."""
    provider("scripted", scripted_reply)
    return "scripted"


@pytest.fixture(scope="session")
def provider():
    """``provider(name, reply, tokens=(10, 2))``: register ``name/...`` as an in-process model
    answering ``reply(model, messages)``: a text (with ``tokens`` as its prompt and completion
    tokens), a ``(text, prompt_tokens, completion_tokens)`` tuple, or an exception, which is
    raised. Returns the handler, whose ``seen`` holds every request's messages."""
    from litellm import CustomLLM

    from contextecho.engine import llm
    from contextecho.engine.responses import fill_response

    class Recording(CustomLLM):
        def __init__(self, reply, tokens):
            super().__init__()
            self.reply, self.tokens, self.seen = reply, tokens, []

        async def acompletion(self, model, messages, *args, optional_params, model_response, **kw):
            self.seen.append([dict(m) for m in messages])
            answer = self.reply(model, messages)
            if isinstance(answer, BaseException):
                raise answer
            text, *tokens = answer if isinstance(answer, tuple) else (answer, *self.tokens)
            return fill_response(model_response, model, text, "stop", *tokens)

    def register(name: str, reply, tokens: tuple[int, int] = (10, 2)):
        llm.ensure_providers()
        handler = Recording(reply, tokens)
        llm.register_provider(name, handler)
        return handler

    return register


@pytest.fixture
def cache(tmp_path):
    """A fresh call cache in the test's own folder, closed afterwards."""
    from contextecho.engine.cache import CallCache

    with CallCache(tmp_path / "cache") as c:
        yield c


#: Markers of the slow tests, slowest first: their modules are run first, so that under
#: pytest-xdist (``make test``: ``--dist loadscope``, one module to one worker) the long ones
#: never start last while the other worker has run out of work.
SLOW_FIRST = ("server", "embedded", "corpus", "slow")


def pytest_collection_modifyitems(config, items):
    def weight(item) -> int:
        names = {m.name for m in item.iter_markers()}
        return next((i for i, name in enumerate(SLOW_FIRST) if name in names), len(SLOW_FIRST))

    by_module: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        by_module[module] = min(by_module.get(module, len(SLOW_FIRST)), weight(item))
    first_seen = {m: i for i, m in enumerate(dict.fromkeys(item.nodeid.split("::", 1)[0] for item in items))}
    items.sort(key=lambda item: (by_module[item.nodeid.split("::", 1)[0]],
                                 first_seen[item.nodeid.split("::", 1)[0]]))
