"""Constrained questionnaire answers: the most probable option letter beside the text answer."""
import hashlib
import json
import math

import pytest
from litellm.types.utils import ChatCompletionTokenLogprob, ChoiceLogprobs, TopLogprob

from litellm import CustomLLM

from contextecho.engine import llm
from contextecho.engine.responses import fill_response
from contextecho.engine import token_distribution as td
from contextecho.cape.administer import CONTEXT_DEPENDENT, CONTEXT_FREE, RunSpec, administer, constrained_answers
from contextecho.cape.parsing import item_score
from contextecho.cape.prompts import INSTRUCTION_1


def letters(question: str) -> dict[str, float]:
    """The scripted distribution for one question: favours a letter from its hash."""
    best = "ABCDE"[int(hashlib.sha256(question.encode()).hexdigest(), 16) % 5]
    return {letter: (0.6 if letter == best else 0.1) for letter in "ABCDE"}


class Respondent(CustomLLM):
    """Writes "B. Very Inaccurate" (a letter with another option's words: invalid text);
    asked for token probabilities on a prefilled turn, gives :func:`letters`."""

    def __init__(self):
        super().__init__()
        self.prefills: list[str] = []

    async def acompletion(self, model, messages, *args, optional_params, model_response, **kw):
        if not optional_params.get("logprobs"):
            return fill_response(model_response, model, "B. Very Inaccurate", "stop", 1, 1)
        assert optional_params["continue_final_message"] and messages[-1]["role"] == "assistant"
        self.prefills.append(messages[-1]["content"])
        probs = letters(messages[-2]["content"])
        best = max(probs, key=probs.get)
        response = fill_response(model_response, model, best + ")", "stop", 1, 1)
        top = [TopLogprob(token=letter, logprob=math.log(p)) for letter, p in probs.items()]
        response.choices[0].logprobs = ChoiceLogprobs(content=[
            ChatCompletionTokenLogprob(token=best, logprob=math.log(probs[best]), top_logprobs=top)])
        return response


@pytest.fixture
def respondent(monkeypatch):
    handler = Respondent()
    llm.register_provider("respondent", handler)
    monkeypatch.setattr(td, "PREFILL_PROVIDERS", td.PREFILL_PROVIDERS | {"respondent"})
    return handler


@pytest.mark.parametrize("setting", [CONTEXT_FREE, CONTEXT_DEPENDENT])
def test_constrained_answers_beside_the_text_ones(synthetic_inventory, respondent, cache, setting):
    runs = [RunSpec("paper", tuple(synthetic_inventory.items)),
            RunSpec("inline", tuple(synthetic_inventory.items), instruction=INSTRUCTION_1)]
    a = administer(runs, "respondent/x", setting=setting, cache=cache, constrained=True).answers
    assert (a["status"] == "conflict").all() and a["score"].isna().all()  # the text stays as it was
    assert (a["constrained_status"] == "ok").all()
    for _, row in a.iterrows():
        probs = letters(row["question"])
        assert row["constrained_answer"] == max(probs, key=probs.get)
        assert json.loads(row["constrained_probs"]) == pytest.approx({k: v / sum(probs.values()) for k, v in probs.items()})
        assert row["constrained_score"] == item_score(row["constrained_answer"], row["key"])
        assert not row["constrained_flat"] and row["agrees"] is None  # no valid text answer to compare
    # The prefill is what the prompt writes before a letter: "(" for "(A) ...", nothing for "A) ...".
    assert set(respondent.prefills) == {"(", ""}
    used = constrained_answers(a)
    assert (used["status"] == "ok").all() and used["score"].tolist() == a["constrained_score"].tolist()
    assert (used["text_status"] == "conflict").all()
    with pytest.raises(ValueError, match="constrained=True"):
        constrained_answers(a.drop(columns=["constrained_answer"]))


def test_without_token_probabilities_the_text_answer_is_used_as_such(synthetic_inventory, likert, cache):
    a = administer([RunSpec("r", tuple(synthetic_inventory.items))], "cape/hash", cache=cache,
                   constrained=True).answers
    assert (a["constrained_status"] == "discrete").all()
    assert a["constrained_answer"].tolist() == a["answer"].tolist() and a["agrees"].all()
