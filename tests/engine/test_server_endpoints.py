"""Endpoints and keys without a server: parsing, matching, preflight, what reaches LiteLLM."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from contextecho.engine import calls, llm
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import ModelConfigError, Transport, check_routes, generate
from contextecho.engine.endpoints import (PLACEHOLDER_KEY, Endpoint, EndpointError, endpoint_for, parse_endpoint,
                                   parse_endpoints)
from contextecho.experiments import cape, anchor, panel
from contextecho.engine.model_request import ModelRequest
from contextecho.experiments.parameters import ParameterError, coerce
from contextecho.notebooks import run_notebook

pytestmark = pytest.mark.slow  # a notebook run or two: run early under xdist

VLLM = "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"
REPO = Path(__file__).resolve().parents[2]


def ask(model: str, text: str = "hi") -> ModelRequest:
    return ModelRequest(model, [{"role": "user", "content": text}], {"temperature": 0, "max_tokens": 4})


# ---------------------------------------------------------------- syntax
def test_endpoint_syntax_model_api_base_and_key_variable():
    assert parse_endpoint(f"{VLLM}=http://gpu1:8000/v1") == Endpoint(VLLM, "http://gpu1:8000/v1")
    assert parse_endpoint(" openai/m=https://llm.example.org/v1#MY_KEY ") == \
        Endpoint("openai/m", "https://llm.example.org/v1", "MY_KEY")
    # a comma-separated string and a sequence (the notebook parameter's tuple) say the same
    both = parse_endpoints(f"{VLLM}=http://a:1/v1, hosted_vllm/*=http://b:2/v1#K")
    assert both == parse_endpoints([f"{VLLM}=http://a:1/v1", "hosted_vllm/*=http://b:2/v1#K"])
    assert parse_endpoints("") == parse_endpoints(()) == ()
    assert Endpoint("openai/m", "https://h/v1", "K").text() == "openai/m=https://h/v1#K"


@pytest.mark.parametrize("text, message", [
    ("hosted_vllm/x", "expected MODEL=API_BASE"),
    ("=http://h:1/v1", "expected MODEL=API_BASE"),
    ("hosted_vllm/x=", "expected MODEL=API_BASE"),
    ("hosted_vllm/x=localhost:8000/v1", "http\\(s\\) URL"),
    ("hosted_vllm/x=ftp://h/v1", "http\\(s\\) URL"),
    ("hosted_vllm/x=http://h:99999999/v1", "not a URL"),
    ("hosted_vllm/x=http://h:1/v1#", "nothing after '#'"),
    ("hosted_vllm/x=http://h:1/v1#sk-live-123", "not an environment variable name"),
    ("hosted_vllm/x=http://h:1/v1#A#B", "not an environment variable name"),
])
def test_a_malformed_endpoint_is_an_error_naming_it(text, message):
    with pytest.raises(EndpointError, match=message):
        parse_endpoint(text)


@pytest.mark.parametrize("api_base", ["http://user:hunter2@gpu1:8000/v1", "http://user@gpu1:8000/v1",
                                      "https://gpu1/v1?api_key=sk-abc123", "https://gpu1/v1?X-Token=t0k"])
def test_an_api_base_with_credentials_is_refused_without_echoing_them(api_base):
    with pytest.raises(EndpointError, match="KEY_ENV") as caught:
        parse_endpoint(f"openai/m={api_base}")
    assert "hunter2" not in str(caught.value) and "sk-abc123" not in str(caught.value)
    assert "t0k" not in str(caught.value)


def test_the_same_model_twice_is_an_error():
    with pytest.raises(EndpointError, match="two endpoints"):
        parse_endpoints("openai/m=http://a:1/v1,openai/m=http://b:1/v1")


def test_an_exact_model_wins_over_a_pattern_and_patterns_match_in_order():
    endpoints = parse_endpoints(f"hosted_vllm/*=http://any:1/v1,{VLLM}=http://qwen:1/v1,hosted_vllm/Q*=http://q:1/v1")
    assert endpoint_for(endpoints, VLLM).api_bases == ("http://qwen:1/v1",)
    assert endpoint_for(endpoints, "hosted_vllm/Qwen/other").api_bases == ("http://any:1/v1",)
    assert endpoint_for(endpoints, "openai/gpt-4o") is None
    # in-process models never go to a server, whatever a pattern says
    assert Transport(endpoints=parse_endpoints("*=http://h:1/v1")).endpoint(llm.LOCAL_MODEL) is None
    # --api-base: one server for every model not named
    assert Transport(api_base="http://h:1/v1").endpoint("openai/x") == Endpoint("openai/x", "http://h:1/v1")


# ---------------------------------------------------------------- preflight and keys
def test_hosted_provider_without_key_stops_before_any_call_naming_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    sent = []
    monkeypatch.setattr(llm.litellm, "acompletion", lambda **kw: sent.append(kw))
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        generate([ask("fake/echo"), ask("openai/gpt-4o-mini")], cache=CallCache(tmp_path), progress=False)
    assert sent == []


def test_an_endpoint_whose_key_variable_is_unset_stops_before_any_call(monkeypatch):
    monkeypatch.delenv("CE_TEST_SERVER_KEY", raising=False)
    transport = Transport(endpoints=parse_endpoints("openai/m=http://h:1/v1#CE_TEST_SERVER_KEY"))
    with pytest.raises(ModelConfigError, match="CE_TEST_SERVER_KEY"):
        check_routes(["openai/m"], transport)
    monkeypatch.setenv("CE_TEST_SERVER_KEY", "s3cret")
    check_routes(["openai/m"], transport)


def test_a_bad_api_base_given_to_the_transport_is_a_configuration_error():
    with pytest.raises(ModelConfigError, match="http\\(s\\) URL"):
        check_routes(["openai/m"], Transport(api_base="localhost:8000"))


def test_a_server_provider_without_endpoint_says_to_give_one(monkeypatch):
    monkeypatch.delenv("HOSTED_VLLM_API_BASE", raising=False)
    with pytest.raises(ModelConfigError, match="endpoints='hosted_vllm/x=http"):
        check_routes(["hosted_vllm/x"], Transport())
    monkeypatch.setenv("HOSTED_VLLM_API_BASE", "http://h:1/v1")  # LiteLLM's own variable still works
    check_routes(["hosted_vllm/x"], Transport())


class _Answer:
    def __init__(self):
        message = type("M", (), {"content": "ok"})()
        self.choices = [type("C", (), {"message": message, "finish_reason": "stop"})()]
        self.usage = None


def _sent_kwargs(monkeypatch, tmp_path, model: str, transport: Transport) -> dict:
    sent = []

    async def fake_acompletion(**kwargs):
        sent.append(kwargs)
        return _Answer()

    monkeypatch.setattr(llm.litellm, "acompletion", fake_acompletion)
    result = generate([ask(model)], cache=CallCache(tmp_path), transport=transport, progress=False)
    assert result.n_errors == 0 and len(sent) == 1
    return sent[0]


def test_what_reaches_litellm_on_an_endpoint(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("CE_TEST_SERVER_KEY", "s3cret")
    endpoints = parse_endpoints("openai/m=http://h:1/v1,openai/k=http://h:2/v1#CE_TEST_SERVER_KEY")
    # no key configured: a placeholder, so a local server answers (OpenAI clients insist on a key)
    sent = _sent_kwargs(monkeypatch, tmp_path / "a", "openai/m", Transport(endpoints=endpoints))
    assert sent["api_base"] == "http://h:1/v1" and sent["api_key"] == PLACEHOLDER_KEY
    # a named variable: its value
    sent = _sent_kwargs(monkeypatch, tmp_path / "b", "openai/k", Transport(endpoints=endpoints))
    assert sent["api_base"] == "http://h:2/v1" and sent["api_key"] == "s3cret"
    # the provider's own variable, where set, is left to LiteLLM
    monkeypatch.setenv("OPENAI_API_KEY", "sk-own")
    sent = _sent_kwargs(monkeypatch, tmp_path / "c", "openai/m", Transport(endpoints=endpoints))
    assert "api_key" not in sent and sent["api_base"] == "http://h:1/v1"


def test_transport_settings_are_not_in_the_key_and_the_manifest_holds_no_key(monkeypatch, tmp_path):
    monkeypatch.setenv("CE_TEST_SERVER_KEY", "s3cret-value")
    async def fake_acompletion(**kwargs):
        return _Answer()

    monkeypatch.setattr(llm.litellm, "acompletion", fake_acompletion)
    a = Transport(endpoints=parse_endpoints("openai/m=http://a:1/v1#CE_TEST_SERVER_KEY"), concurrency=8)
    b = Transport(endpoints=parse_endpoints("openai/m=http://b:1/v1"))
    results = [generate([ask("openai/m")], cache=CallCache(tmp_path), transport=t, progress=False) for t in (a, b)]
    assert results[1].cached == [True]  # the same cell, served elsewhere
    manifest = Path(results[0].manifest["path"]).read_text()
    assert "s3cret-value" not in manifest
    recorded = json.loads(manifest)["transport"]["endpoints"]
    assert recorded == [{"model": "openai/m", "api_bases": ["http://a:1/v1"], "key_env": "CE_TEST_SERVER_KEY"}]


def test_a_refused_call_on_a_configuration_error_is_not_retried(monkeypatch, tmp_path):
    attempts = []

    async def unauthorised(**kwargs):
        attempts.append(1)
        raise llm.litellm.AuthenticationError(message="bad key", llm_provider="openai", model="m")

    monkeypatch.setattr(llm.litellm, "acompletion", unauthorised)
    transport = Transport(endpoints=parse_endpoints("openai/m=http://h:1/v1"), base_delay_s=0.001)
    result = generate([ask("openai/m")], cache=CallCache(tmp_path), transport=transport, progress=False)
    assert len(attempts) == 1 and result.records[0].error_type == "AuthenticationError"
    assert result.manifest["errors_by_type"] == {"AuthenticationError": 1}


# ---------------------------------------------------------------- notebooks and CLIs
@pytest.mark.parametrize("experiment", [panel, cape, anchor])
def test_every_notebook_takes_endpoints_and_concurrency(experiment):
    p = coerce(experiment.Parameters, {"endpoints": f"{VLLM}=http://h:1/v1,openai/m=http://g:2/v1#K",
                                       "concurrency": "8"})
    assert p.endpoints == (f"{VLLM}=http://h:1/v1", "openai/m=http://g:2/v1#K") and p.concurrency == 8
    assert "endpoints" in experiment.Parameters.HELP
    with pytest.raises(ParameterError, match="endpoints.*credentials"):
        coerce(experiment.Parameters, {"endpoints": "openai/m=http://u:pw@h:1/v1"})
    with pytest.raises(ParameterError, match="concurrency"):
        coerce(experiment.Parameters, {"concurrency": 0})


def test_parameters_transport_checks_every_model_before_any_call(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    p = coerce(panel.Parameters, {"endpoints": f"{VLLM}=http://h:1/v1", "concurrency": 3})
    transport = p.transport({VLLM, llm.LOCAL_MODEL})
    assert transport.concurrency == 3 and transport.endpoint(VLLM).api_bases == ("http://h:1/v1",)
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        p.transport({VLLM, "anthropic/claude-sonnet-4-5"})


def test_a_bad_endpoint_fails_the_notebook_before_the_kernel_starts(tmp_path):
    with pytest.raises(ParameterError, match="endpoints"):
        run_notebook("panel", {"endpoints": "hosted_vllm/x"}, output_dir=tmp_path)
    assert not (tmp_path / "panel.ipynb").exists()


def _cli(*args: str, env_drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k not in env_drop}
    env["PYTHONPATH"] = str(REPO / "lib") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "contextecho", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)


def test_generate_cli_exits_2_for_a_hosted_model_without_key_and_for_a_bad_api_base():
    done = _cli("generate", "--model", "anthropic/claude-sonnet-4-5", "hi", env_drop=("ANTHROPIC_API_KEY",))
    assert done.returncode == 2 and "ANTHROPIC_API_KEY" in done.stderr, done.stderr
    done = _cli("generate", "--model", "openai/m", "--api-base", "http://u:pw@h:1/v1", "hi")
    assert done.returncode == 2 and "credentials" in done.stderr and "pw@" not in done.stderr


def test_a_notebook_whose_judge_has_no_key_exits_2_before_any_call(tmp_path):
    done = _cli("notebook", "panel", "--output-dir", str(tmp_path), "-p", "targets", "fake/echo",
                "-p", "judges", "anthropic/claude-sonnet-4-5", "-p", "n_sessions", "1",
                env_drop=("ANTHROPIC_API_KEY",))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "ANTHROPIC_API_KEY" in done.stderr and "Traceback" not in done.stderr


def test_route_kwargs_leave_in_process_models_alone():
    transport = Transport(endpoints=parse_endpoints("*=http://h:1/v1"))
    assert calls._route_kwargs(llm.LOCAL_MODEL, transport) == {}
    assert calls._route_kwargs("fake/echo", transport) == {}
