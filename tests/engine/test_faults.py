"""Provider faults are never scores: empty answers, exceptions inside a provider, permanent
errors; and the manifest says what was skipped and never shows a credential."""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contextecho.engine import llm
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import RETRY_ERRORS_ENV, ModelConfigError, Transport, generate
from contextecho.engine.record import EMPTY_RESPONSE, OK, SCHEMA, CallRecord
from contextecho.engine.faults import PERMANENT, PROGRAMMING, TRANSIENT, classify, is_permanent
from contextecho.engine.manifest import masked
from contextecho.engine.model_request import ModelRequest

FAST = Transport(base_delay_s=0.001, max_delay_s=0.01, max_attempts=4)


def ask(model: str, text: str = "hi") -> ModelRequest:
    return ModelRequest(model, [{"role": "user", "content": text}])


@pytest.fixture
def fake():
    return llm.ensure_providers() and llm.registered_providers()["fake"]


def run(requests, root, **kwargs):
    return generate(requests, cache=CallCache(root), transport=FAST, progress=False, **kwargs)


# ---------------------------------------------------------------- one run
@pytest.mark.parametrize("model, error_type, attempts", [
    ("fake/empty", EMPTY_RESPONSE, 1),             # no text: an error of its own type, not a success
    ("fake/whitespace", EMPTY_RESPONSE, 1),
    ("fake/value-error", "ValueError", 1),         # a bug inside the provider: LiteLLM wraps it in an
    ("fake/type-error", "TypeError", 1),           # APIConnectionError, but it is no connection fault
    ("fake/http-400", "BadRequestError", 1),       # permanent: never retried within the run
    ("fake/http-401", "AuthenticationError", 1),
    ("fake/http-404", "NotFoundError", 1),
    ("fake/http-422", "BadRequestError", 1),      # (LiteLLM maps 422 of such a provider so)
    ("fake/http-500", "InternalServerError", 4),   # transient: retried up to max_attempts
    ("fake/http-503", "ServiceUnavailableError", 4),
])
def test_each_fault_is_an_error_record_with_its_type_and_attempts(tmp_path, fake, model, error_type, attempts):
    before = fake.calls[model.split("/", 1)[1]]
    result = run([ask(model)], tmp_path)
    record, = result.records
    assert (record.status, record.error_type, record.attempts) == ("error", error_type, attempts)
    assert fake.calls[model.split("/", 1)[1]] - before == attempts
    assert record.response_text is None and result.texts() == [None]
    assert result.manifest["errors_by_type"] == {error_type: 1} and result.manifest["status"] == "complete"


def test_a_wrapped_provider_bug_names_the_bug_not_the_wrapper(tmp_path):
    record, = run([ask("fake/value-error")], tmp_path).records
    assert "a bug inside the provider" in record.error_message
    assert "reported it as APIConnectionError" in record.error_message
    # A round run while the caller handles an exception is classified the same way
    # (the provider's exception must not chain to the caller's).
    try:
        raise KeyError("the caller's own")
    except KeyError:
        inside, = run([ask("fake/type-error")], tmp_path).records
    assert (inside.error_type, inside.attempts) == ("TypeError", 1)


def wrapped(cause: Exception) -> Exception:
    """What LiteLLM raises for ``cause``: an APIConnectionError raised while handling it."""
    try:
        try:
            raise cause
        except type(cause):
            raise llm.litellm.APIConnectionError(message="wrapped", model="m", llm_provider="p")
    except Exception as exc:
        return exc


def test_classify_looks_through_wrappers_and_keeps_real_connection_faults_transient():
    litellm = llm.litellm
    kw = dict(model="m", llm_provider="p")
    assert classify(wrapped(ConnectionResetError("peer reset"))).kind == TRANSIENT
    assert classify(wrapped(TimeoutError())).kind == TRANSIENT
    bug = classify(wrapped(KeyError("choices")))
    assert (bug.kind, bug.error_type) == (PROGRAMMING, "KeyError")
    assert classify(litellm.RateLimitError(message="429", **kw)).kind == TRANSIENT
    assert classify(litellm.ContextWindowExceededError(message="too long", **kw)).kind == PERMANENT
    assert classify(TimeoutError()).kind == TRANSIENT and classify(RuntimeError("x")).kind == PROGRAMMING
    assert is_permanent("ContextWindowExceededError") and is_permanent("AuthenticationError")
    assert not is_permanent("RateLimitError") and not is_permanent(EMPTY_RESPONSE)
    assert not is_permanent("ValueError") and not is_permanent(None)


# ---------------------------------------------------------------- later runs
FAULTS = ["fake/empty", "fake/whitespace", "fake/value-error", "fake/http-400", "fake/http-401",
          "fake/http-404", "fake/echo"]


def test_later_runs_retry_empty_answers_and_bugs_but_not_permanent_errors(tmp_path, fake, monkeypatch):
    monkeypatch.delenv(RETRY_ERRORS_ENV, raising=False)
    requests = [ask(m) for m in FAULTS]
    first = run(requests, tmp_path)
    assert [r.ok for r in first.records] == [False] * 6 + [True]
    counted = CallCache(tmp_path)
    assert counted.n_errors == 6 and counted.last_error(requests[0].key).error_type == EMPTY_RESPONSE

    calls = sum(fake.calls.values())
    second = run(requests, tmp_path)
    assert sum(fake.calls.values()) - calls == 3  # empty, whitespace, value-error: asked again
    assert second.cached == [False, False, False, True, True, True, True]
    assert second.skipped == [False, False, False, True, True, True, False]
    assert [r.error_type for r in second.records[3:6]] == ["BadRequestError", "AuthenticationError",
                                                           "NotFoundError"]
    saved = json.loads(Path(second.manifest["path"]).read_text())
    assert saved["skipped_permanent_errors"] == 3 and saved["retry_errors"] is False
    assert saved["cached"] == 4 and saved["failed"] == 6  # the skipped ones are still errors

    # Asked: by argument, or through the environment (what --retry-errors sets).
    calls = sum(fake.calls.values())
    asked = run(requests, tmp_path, retry_errors=True)
    assert sum(fake.calls.values()) - calls == 6 and asked.n_skipped == 0
    assert asked.manifest["retry_errors"] is True
    monkeypatch.setenv(RETRY_ERRORS_ENV, "1")
    calls = sum(fake.calls.values())
    run(requests, tmp_path)
    assert sum(fake.calls.values()) - calls == 6


def test_a_cell_that_is_only_skipped_needs_no_model_check(tmp_path, monkeypatch):
    """A stored permanent error answers its cell before the preflight: a key that is gone
    now (the reason for the 401) does not stop a rerun that has nothing to call."""
    monkeypatch.delenv(RETRY_ERRORS_ENV, raising=False)
    request = ask("fake/http-401")
    run([request], tmp_path)
    again = run([request], tmp_path)
    assert again.skipped == [True] and again.records[0].error_type == "AuthenticationError"


def test_an_empty_success_in_an_older_cache_is_not_a_hit(tmp_path, fake):
    """Caches written before this rule stored "" as a success; it is read as the error it is."""
    blank, good = ask("fake/echo", "blank"), ask("fake/echo", "good")
    rows = [CallRecord(key=r.key, model=r.model, request_json=r.to_json(), status=OK,
                       response_text=text, finish_reason="stop").to_row()
            for r, text in ((blank, " \n"), (good, "fine"))]
    (tmp_path / "cells").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp_path / "cells" / "old.parquet")
    cache = CallCache(tmp_path)
    assert cache.lookup(blank.key) is None and cache.last_error(blank.key).error_type == EMPTY_RESPONSE
    assert cache.lookup(good.key).response_text == "fine" and len(cache) == 1
    calls = fake.calls["echo"]
    result = generate([blank, good], cache=cache, transport=FAST, progress=False)
    assert fake.calls["echo"] - calls == 1 and result.cached == [False, True]
    assert result.records[0].response_text.startswith("echo:blank")


# ---------------------------------------------------------------- the manifest
def test_manifest_is_written_at_start_and_marked_failed_when_the_round_cannot_start(tmp_path):
    runs = Path(__import__("os").environ["CONTEXTECHO_RUNS"])
    with pytest.raises(ModelConfigError):
        run([ask("nonsense-model-xyz")], tmp_path, name="doomed")
    saved, = [json.loads(p.read_text()) for p in runs.glob("*-doomed-*.json")]
    assert saved["status"] == "failed" and saved["failure"].startswith("ModelConfigError")
    assert saved["n_requests"] == 1 and saved["finished"]


@pytest.mark.parametrize("api_base, secrets", [
    ("http://alice:hunter2@gpu.example.org:8000/v1", ["alice", "hunter2"]),
    ("https://proxy.example.org/v1?key=sk-abc123&region=eu", ["sk-abc123", "eu"]),
    ("https://tok3n@proxy.example.org/v1#sig=zzz999", ["tok3n", "zzz999"]),
])
def test_credentials_in_transport_settings_are_masked_in_the_manifest(tmp_path, api_base, secrets):
    transport = Transport(api_base=api_base, base_delay_s=0.001)
    result = generate([ask("fake/echo")], cache=CallCache(tmp_path), transport=transport,
                      progress=False, parameters={"endpoint": api_base, "api_key": "sk-live-42"})
    text = Path(result.manifest["path"]).read_text()
    for secret in [*secrets, "sk-live-42"]:
        assert secret not in text, secret
    host = api_base.split("@")[-1].split("//")[-1].split("/")[0]
    saved = json.loads(text)
    assert host in saved["transport"]["api_base"] and saved["transport"]["api_base"].startswith(api_base[:4])
    assert saved["parameters"]["api_key"] == "***" and saved["transport"]["concurrency"] == 4


def test_masked_keeps_what_is_not_a_credential():
    settings = {"api_base": "http://localhost:8000/v1", "timeout_s": 600.0, "max_tokens": 64,
                "headers": {"Authorization": "Bearer abc", "X-Trace": "on"}, "note": "see http://u:p@h/x ok",
                "keys": ["a", "b"], "api_key": None, "api_keys": {"openai/gpt-4o": "sk-1", "x": {"y": "sk-2"}}}
    assert masked(settings) == {"api_base": "http://localhost:8000/v1", "timeout_s": 600.0, "max_tokens": 64,
                                "headers": {"Authorization": "***", "X-Trace": "on"},
                                "note": "see http://***@h/x ok", "keys": ["***", "***"], "api_key": None,
                                "api_keys": {"openai/gpt-4o": "***", "x": {"y": "***"}}}


def test_generate_command_skips_a_stored_permanent_error_unless_asked(capsys, monkeypatch):
    from contextecho.__main__ import main

    monkeypatch.delenv(RETRY_ERRORS_ENV, raising=False)
    assert main(["generate", "--model", "fake/http-404", "hello"]) == 1
    assert "NotFoundError" in capsys.readouterr().out
    assert main(["generate", "--model", "fake/http-404", "hello"]) == 1
    assert "stored error, not retried: --retry-errors to call again" in capsys.readouterr().out
    assert main(["generate", "--model", "fake/http-404", "hello", "--retry-errors"]) == 1
    assert "error after 1 attempt(s)] NotFoundError" in capsys.readouterr().out
