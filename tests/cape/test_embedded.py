"""End-to-end on the embedded model: a few MPI items, context-free and context-dependent."""
import json

import pytest

from contextecho.cape.administer import CONTEXT_DEPENDENT, CONTEXT_FREE, LOCAL_HISTORY_PAIRS, RunSpec, administer
from contextecho.cape.prompts import INSTRUCTION_2, WORDING_2, render_question
from contextecho.engine.llm import LOCAL_MODEL

pytestmark = pytest.mark.embedded
PARAMS = {"temperature": 0.0, "max_tokens": 8}


def test_history_is_carried_only_when_context_dependent(mpi120, cache):
    items = mpi120.items[:3]
    spec = RunSpec("e2e", items, params=PARAMS)
    free = administer([spec], LOCAL_MODEL, setting=CONTEXT_FREE, cache=cache)
    dep = administer([spec], LOCAL_MODEL, setting=CONTEXT_DEPENDENT, cache=cache)
    for result in (free, dep):
        assert len(result.answers) == 3 and result.answers["error_type"].isna().all()
    keys = dep.answers["request_key"].tolist()
    requests = [json.loads(cache.lookup(k).request_json)["messages"] for k in keys]
    free_requests = [json.loads(cache.lookup(k).request_json)["messages"] for k in free.answers["request_key"]]
    assert all(len(m) == 1 for m in free_requests)
    last = requests[-1]
    assert len(last) == 5
    assert [m["content"] for m in last[1:-1:2]] == dep.answers["response"].tolist()[:2]
    assert [m["content"] for m in last[0:-1:2]] == [render_question(i.text) for i in items[:2]]
    assert dep.answers.loc[0, "response"] == free.answers.loc[0, "response"]  # same first request


def test_default_history_pairs_fit_the_embedded_context(mpi120):
    """The worst case the default history admits: the longest prompt, full-length replies."""
    from contextecho.engine.local_model import shared_model

    model = shared_model()
    reply = "(D) Partially Misaligned, because I am"  # about max_tokens=16 tokens
    items = sorted(mpi120.items, key=lambda i: -len(i.text))[:LOCAL_HISTORY_PAIRS + 1]
    messages = [m for i in items[:-1] for m in (
        {"role": "user", "content": render_question(i.text, INSTRUCTION_2, WORDING_2)},
        {"role": "assistant", "content": reply})]
    messages.append({"role": "user", "content": render_question(items[-1].text, INSTRUCTION_2, WORDING_2)})
    n = model.check_fits(messages, 16)
    assert n < model.n_ctx - 1000  # room left for a short session prefix
