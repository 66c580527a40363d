"""Credentials never echo: an endpoint URL with a credential anywhere (user info, a query
parameter, a path segment that looks like a key) or a key where its variable's name goes
is refused before any kernel starts and before any call, and every refusal shows it
masked, down the whole exception chain; a run with a key in its endpoint's variable
writes that key nowhere (executed notebook, manifest.json, runs/*.json, the cache)."""
import json
import os
from pathlib import Path

import pytest

from contextecho.engine.endpoints import EndpointError, credential_in_url, parse_endpoint
from contextecho.engine.manifest import looks_like_key, masked, masked_text
from contextecho.experiments import panel
from contextecho.experiments.parameters import ParameterError, coerce
from contextecho.notebooks import run_notebook

# (URL, the secret in it), one per place a credential can hide.
PLANTED = {
    "user and password": ("http://alice:Hunter2planted@gpu1:8000/v1", "Hunter2planted"),
    "user alone": ("http://plantedusertok3n@gpu1:8000/v1", "plantedusertok3n"),
    "api_key": ("https://gpu1/v1?api_key=PLANTEDapikey123", "PLANTEDapikey123"),
    "key": ("https://gpu1/v1?key=PLANTEDkey456", "PLANTEDkey456"),
    "code": ("https://fn.example.net/api/v1?code=PLANTEDcode789", "PLANTEDcode789"),
    "token": ("https://gpu1/v1?token=PLANTEDtoken", "PLANTEDtoken"),
    "sig": ("https://gpu1/v1?sv=2024&sig=PLANTEDsig%2Babc", "PLANTEDsig"),
    "a value that looks like a key": ("https://gpu1/v1?x=Zq8vN3kL0pR7sT2wX5yB9cF4", "Zq8vN3kL0pR7sT2wX5yB9cF4"),
    "sk- path segment": ("https://gpu1/sk-planted0123456789abcdefXYZ/v1", "planted0123456789abcdefXYZ"),
    "random path segment": ("https://gpu1/v1/9f86d081884c7d659a2feaa0c55ad015/chat",
                            "9f86d081884c7d659a2feaa0c55ad015"),
    "percent-encoded segment": ("https://gpu1/v1/sk%2Dplanted0123456789abcdefXYZ", "planted0123456789abcdefXYZ"),
}
# Where the variable's name goes, a key instead.
KEY_AS_NAME = {
    "prefixed key": ("http://gpu1:8000/v1#sk_live_PLANTED0123456789abcdef", "PLANTED0123456789abcdef"),
    "random key": ("http://gpu1:8000/v1#a1B2c3D4e5F6g7H8i9J0kLmN", "a1B2c3D4e5F6g7H8i9J0kLmN"),
    "not a name": ("http://gpu1:8000/v1#planted-secret.value", "planted-secret.value"),
}
CASES = {**PLANTED, **KEY_AS_NAME}


def chain_text(exc: BaseException) -> str:
    """Everything an exception and those down its chain (cause or context) say."""
    out, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out += [str(exc), repr(exc.args)]
        exc = exc.__cause__ or exc.__context__
    return "\n".join(out)


@pytest.mark.parametrize("case", list(CASES))
def test_an_endpoint_with_a_credential_is_refused_and_never_echoed(case):
    url, secret = CASES[case]
    with pytest.raises(EndpointError) as caught:
        parse_endpoint(f"openai/m={url}")
    assert secret not in chain_text(caught.value)
    assert "KEY_ENV" in str(caught.value) or "never the key itself" in str(caught.value)
    with pytest.raises(ParameterError) as caught:
        coerce(panel.Parameters, {"endpoints": f"openai/m={url}"})
    assert secret not in chain_text(caught.value) and "parameter 'endpoints'" in str(caught.value)


def test_a_key_given_as_any_parameter_is_not_echoed():
    key = "sk-proj-Abc123Def456Ghi789Jkl"
    for overrides in ({"n_sessions": key}, {"targets": key}, {key: "1"}):
        with pytest.raises(ParameterError) as caught:
            coerce(panel.Parameters, overrides)
        assert key not in chain_text(caught.value) and "***" in str(caught.value)


@pytest.mark.parametrize("case", list(PLANTED))
def test_what_the_refusal_says_about_where(case):
    url, _ = PLANTED[case]
    where = credential_in_url(url)
    assert where is not None and url not in where
    expected = {"user and password": "user info", "user alone": "user info", "sig": "query parameter 2",
                "sk- path segment": "path segment 1", "random path segment": "path segment 2",
                "percent-encoded segment": "path segment 2"}
    if case in expected:
        assert where == expected[case]


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/v1",
    "https://my-resource.openai.azure.com/openai/deployments/gpt-4o-2024-08-06?api-version=2024-02-01",
    "https://h/models/Meta-Llama-3.1-70B-Instruct-Turbo/v1",
    "https://h/projects/123e4567-e89b-12d3-a456-426614174000/v1",
    "http://gpu1:8000/hosted_vllm/Qwen/Qwen2.5-Coder-32B-Instruct-GPTQ-Int4/v1",
])
def test_an_api_base_without_credentials_is_accepted(url):
    assert credential_in_url(url) is None
    assert parse_endpoint(f"openai/m={url}#MY_SERVER_KEY").key_env == "MY_SERVER_KEY"


@pytest.mark.parametrize("token, key", [
    ("sk-proj-Abc123Def456Ghi789Jkl", True), ("ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", True),
    ("AKIAIOSFODNN7EXAMPLE", True), ("0123456789abcdef0123456789abcdef", True),
    ("key-3ax6xnjp29jd6fds4gc373sgvjxteol0", True),
    ("Meta-Llama-3.1-70B-Instruct-Turbo", False), ("123e4567-e89b-12d3-a456-426614174000", False),
    ("OPENAI_API_KEY", False), ("CE_TEST_SERVER_KEY_2", False), ("gpt-4o-2024-08-06", False),
    ("sk-learn-tutorial-notebooks", False), ("smollm2-135m-instruct-q8_0.gguf", False),
])
def test_looks_like_key(token, key):
    assert looks_like_key(token) is key


def test_manifests_and_messages_mask_key_like_path_segments():
    assert masked({"api_base": "https://gpu1/v1/sk-planted0123456789abcdefXYZ/chat"}) == \
        {"api_base": "https://gpu1/v1/***/chat"}
    assert masked_text("refused 'openai/m=http://h/v1?code=abc#K' (token a1B2c3D4e5F6g7H8i9J0kLmN)") == \
        "refused 'openai/m=http://h/v1?code=***#***' (token ***)"


@pytest.mark.parametrize("case", ["user and password", "code", "sk- path segment", "random key"])
def test_the_commands_refuse_before_any_kernel_or_call_and_write_no_secret(case, tmp_path, capsys, written_text):
    from contextecho.__main__ import main

    url, secret = CASES[case]
    api_base, _, key_env = url.partition("#")
    args = ["generate", "--model", "openai/m", "--api-base", api_base, "hi"]
    assert main(args + (["--api-key-env", key_env] if key_env else [])) == 2
    assert main(["notebook", "panel", "-p", "endpoints", f"openai/m={url}", "-p", "targets", "openai/m",
                 "--output-dir", str(tmp_path / "out")]) == 2
    with pytest.raises(ParameterError) as caught:
        run_notebook("panel", {"endpoints": f"openai/m={url}"}, output_dir=tmp_path / "direct")
    said = capsys.readouterr()
    assert secret not in said.out + said.err + chain_text(caught.value)
    assert "contextecho notebook: " in said.err and "contextecho generate: " in said.err
    assert not list(tmp_path.rglob("*.ipynb"))  # no kernel started: papermill wrote nothing
    written = written_text(tmp_path, Path(os.environ["CONTEXTECHO_RUNS"]), Path(os.environ["CONTEXTECHO_CACHE"]))
    assert secret not in written


PLANTED_KEY = "sk-planted-e2e-Q7w9E3r5T1y8U4i6O2p0"


@pytest.mark.corpus
@pytest.mark.timeout(600)
def test_a_notebook_run_writes_its_key_nowhere(openai_server, corpus_dir, tmp_path, monkeypatch, written_text):
    """The panel notebook for real (a kernel, papermill's injected parameters), its target
    and judge on the loopback server, the key in the endpoint's variable; then every file
    the run wrote is scanned for the key."""
    monkeypatch.setenv("CE_PLANTED_KEY", PLANTED_KEY)
    done = run_notebook("panel", {"targets": "openai/planted-target", "judges": "openai/planted-judge",
                                  "endpoints": f"openai/*={openai_server.url}#CE_PLANTED_KEY",
                                  "n_sessions": 1, "n_positions": 1, "probes": "C01", "stressors": "S2#01",
                                  "n_resamples": 200, "max_tokens": 16, "window": 3000},
                        output_dir=tmp_path / "panel", log_output=False)
    assert openai_server.keys_sent() == {PLANTED_KEY}  # the key was used: the scan below means something
    assert openai_server.received["planted-target"] >= 4 and openai_server.received["planted-judge"] >= 1
    runs, cache = Path(os.environ["CONTEXTECHO_RUNS"]), Path(os.environ["CONTEXTECHO_CACHE"])
    for root in (done.output_dir, runs, cache):
        assert any(p.is_file() for p in root.rglob("*")), root  # the run wrote there
    written = written_text(done.output_dir, runs, cache)
    assert PLANTED_KEY not in written and "Q7w9E3r5T1y8U4i6O2p0" not in written
    # what the run did write: the variable's name, and the HTTP requests it sent
    manifest = json.loads((done.output_dir / "manifest.json").read_text())
    assert manifest["parameters"]["endpoints"] == [f"openai/*={openai_server.url}#***"]
    assert "CE_PLANTED_KEY" in (done.output_dir / "panel.ipynb").read_text()
    traffic = manifest["traffic"]
    assert sum(t["http_requests"] for t in traffic.values()) == sum(openai_server.received.values())
