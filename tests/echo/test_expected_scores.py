"""run_cells with distributions=True: expected scores, discrete fallback, failures as errors."""
import json
import math

import pytest
from litellm.types.utils import ChatCompletionTokenLogprob, ChoiceLogprobs, TopLogprob

from litellm import CustomLLM

from contextecho.engine import llm
from contextecho.engine.responses import fill_response
from contextecho.engine import token_distribution as td
from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport
from contextecho.echo import build_cells, probes, run_cells
from contextecho.echo.protocols import protocol
from contextecho.echo.runner import distribution_summary

OURS = protocol("contextecho")

# Per probe: the score distribution this judge holds after "Score:".
PROBS = {"C01": {"0": 0.1, "1": 0.2, "2": 0.3, "3": 0.4}, "C03": {"3": 0.9, "2": 0.1}}


class ProbJudge(CustomLLM):
    """Answers "Score: 2"; with logprobs and a prefilled turn, a space then the digit."""

    def __init__(self):
        super().__init__()
        self.params = []

    async def acompletion(self, model, messages, *args, optional_params, model_response, **kw):
        self.params.append(dict(optional_params))
        if model == "broken" and optional_params.get("logprobs"):
            raise llm.litellm.InternalServerError(message="boom", model=model, llm_provider="probjudge")
        probe = "C01" if probes.BY_ID["C01"].text in messages[1]["content"] else "C03"
        response = fill_response(model_response, model, " 3" if optional_params.get("logprobs") else "Score: 2",
                                     "stop", 10, 2)
        if optional_params.get("logprobs"):
            assert optional_params["continue_final_message"] and messages[-1]["content"] == "Score:"
            top = sorted(PROBS[probe].items(), key=lambda kv: -kv[1]) + [("x", 0.001)]
            response.choices[0].logprobs = ChoiceLogprobs(content=[
                ChatCompletionTokenLogprob(token=" ", logprob=-0.01, top_logprobs=[TopLogprob(token=" ", logprob=-0.01)]),
                ChatCompletionTokenLogprob(token="3", logprob=math.log(PROBS[probe]["3"]), top_logprobs=[
                    TopLogprob(token=t, logprob=math.log(p)) for t, p in top])])
        return response


@pytest.fixture
def prob_judge(monkeypatch):
    judge = ProbJudge()
    llm.register_provider("probjudge", judge)
    monkeypatch.setattr(td, "PREFILL_PROVIDERS", td.PREFILL_PROVIDERS | {"probjudge"})
    return judge


def test_expected_scores_beside_the_verdicts(sessions, tmp_path, prob_judge):
    cells = build_cells("panel", ["fake/echo", "fake/garbage"], sessions[:1], positions=[6], arms=["real", "filler"],
                        items=["C01", "C03", "S2#01"], window=2_000)
    quick = Transport(base_delay_s=0.01, max_delay_s=0.05)  # the failing calls' retries, without the wait
    discrete = run_cells(cells, ["probjudge/good"], protocol=OURS, cache=CallCache(tmp_path), transport=quick,
                         progress=False)
    frame = run_cells(cells, ["probjudge/good", "probjudge/broken", "fake/echo"], protocol=OURS,
                      cache=CallCache(tmp_path), transport=quick, progress=False, distributions=True)
    judged = frame[frame.item_kind == "probe"]
    good = judged[(judged.judge_model == "probjudge/good") & (judged.status == "ok")]
    # The verdict cells (and keys) are the discrete run's; the distribution is a call of its own.
    assert set(good.judge_key) == set(discrete[discrete.status == "ok"].judge_key.dropna())
    assert (good.distribution_status == "ok").all() and (good.score_source == "distribution").all()
    for item, p in PROBS.items():
        rows = good[good["item"] == item]
        assert rows.expected_score.tolist() == pytest.approx([sum(int(s) * q for s, q in p.items()) / sum(p.values())] * len(rows))
        assert json.loads(rows.score_probs.iloc[0]) == pytest.approx({s: p.get(s, 0) / sum(p.values()) for s in "0123"})
    assert good[good["item"] == "C01"].score_flat.all() and not good[good["item"] == "C03"].score_flat.any()
    # A failed distribution call is an error, never a score; a target failure too.
    broken = judged[(judged.judge_model == "probjudge/broken") & (judged.status == "ok")]
    assert (broken.distribution_status == "error").all() and broken.expected_score.isna().all()
    assert (broken.verdict_status == "ok").all()
    failed = judged[judged.status == "error"]
    assert (failed.distribution_status == "error").all() and failed.expected_score.isna().all()
    # No token probabilities from the provider: the parsed verdict, recorded as such.
    echo = judged[(judged.judge_model == "fake/echo") & (judged.status == "ok")]
    assert (echo.score_source == "discrete").all() and (echo.distribution_status == "discrete").all()
    assert echo.expected_score.equals(echo.score)
    summary = distribution_summary(frame).set_index("judge_model")
    assert summary.loc["probjudge/good", "n_ok"] == len(good)
    assert summary.loc["probjudge/good", "n_flat"] == (good["item"] == "C01").sum()
    # argmax 3 for both probes vs the parsed verdict 2: never agree.
    assert summary.loc["probjudge/good", "argmax_agree"] == 0 and summary.loc["probjudge/good", "n_compared"] == len(good)
    assert summary.loc["probjudge/broken", "n_error"] == len(judged[judged.judge_model == "probjudge/broken"])


class JsonJudge(CustomLLM):
    """The harness's JSON verdict, as tokens; asked for logprobs, each token with its
    log-probability and the top tokens at its position (at the score: 1, 0 and 3).
    Keeps every request's parameters and last message."""

    TOKENS = ['{"', 'score', '":', ' 1', ',', ' "label": "drift", "reason": "r"}']

    def __init__(self):
        super().__init__()
        self.requests = []

    async def acompletion(self, model, messages, *args, optional_params, model_response, **kw):
        self.requests.append((dict(optional_params), messages[-1]["role"]))
        response = fill_response(model_response, model, "".join(self.TOKENS), "stop", 10, 12)
        if optional_params.get("logprobs"):
            score = [(" 1", 0.5), (" 0", 0.25), (" 3", 0.25)]
            response.choices[0].logprobs = ChoiceLogprobs(content=[ChatCompletionTokenLogprob(
                token=t, logprob=math.log(0.5) if t == " 1" else -0.01,
                top_logprobs=[TopLogprob(token=c, logprob=math.log(p)) for c, p in score] if t == " 1"
                else [TopLogprob(token=t, logprob=-0.01)]) for t in self.TOKENS])
        return response


def _reference_cells():
    from contextecho.experiments import selection
    from contextecho.echo.protocol import Positions
    from contextecho.echo.reference.cells import build_reference_cells
    from contextecho.engine.paths import shared_dir

    if not (shared_dir() / "corpus" / "real").is_dir():
        pytest.skip("the real corpus is not beside the checkout")
    sessions = selection.select_sessions(1, protocol=protocol("reference"))
    return build_reference_cells("panel", "fake/echo", sessions, Positions("panel", n=1), items=["C01"], window=3000,
                                 tag=protocol("reference").key())


@pytest.mark.corpus
def test_the_reference_judge_is_read_in_its_own_json_verdict(tmp_path, monkeypatch):
    """Under the reference protocol, on a backend whose calls return token probabilities
    (the embedded model, vLLM), the distribution is read at the score's position of the
    judge's own JSON verdict: the verdict request asks for them, and no second request
    (no prefill) is sent; the parsed verdict is the harness's."""
    judge = JsonJudge()
    llm.register_provider("jsonjudge", judge)
    monkeypatch.setattr(td, "PREFILL_PROVIDERS", td.PREFILL_PROVIDERS | {"jsonjudge"})
    cells = _reference_cells()
    frame = run_cells(cells, ["jsonjudge/j"], cache=CallCache(tmp_path), progress=False,
                      protocol=protocol("reference"), distributions=True)
    judged = frame[frame.status == "ok"]
    assert len(judged) and len(judge.requests) == len(judged)  # one call per verdict, none beside it
    assert all(params.get("logprobs") and role == "user" for params, role in judge.requests)
    assert (judged.verdict_status == "ok").all() and (judged.score == 1).all()
    assert (judged.distribution_status == "ok").all() and (judged.score_source == "verdict").all()
    assert (judged.distribution_key == judged.judge_key).all()
    assert judged.expected_score.tolist() == pytest.approx([(0.5 * 1 + 0.25 * 3) / 1.0] * len(judged))
    assert (judged.score_argmax.astype(float) == 1).all()
    # A judge whose provider the harness ran gets the harness's request alone: discrete.
    plain = JsonJudge()
    llm.register_provider("plainjudge", plain)
    frame = run_cells(cells, ["plainjudge/j"], cache=CallCache(tmp_path), progress=False,
                      protocol=protocol("reference"), distributions=True)
    judged = frame[frame.status == "ok"]
    assert len(plain.requests) == len(judged) and not any(params.get("logprobs") for params, _ in plain.requests)
    assert (judged.score_source == "discrete").all() and judged.expected_score.equals(judged.score)
