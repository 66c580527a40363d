"""One counts type for every round: what a round came to, as the round counts itself."""
import json

from contextecho.engine.cache import CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.counts import Counts
from contextecho.engine.model_request import ModelRequest

FAST = Transport(base_delay_s=0.001, max_delay_s=0.01, max_attempts=2)


def ask(model: str, text: str = "hi") -> ModelRequest:
    return ModelRequest(model, [{"role": "user", "content": text}], {}, 0)


def test_counts_add_up_and_keep_one_set_of_names():
    a = Counts(calls=3, cached=1, computed=2, failed=1, invalid=0)
    b = Counts(calls=2, cached=2, computed=0, failed=0, invalid=1)
    assert a + b == Counts(calls=5, cached=3, computed=2, failed=1, invalid=1)
    assert list((a + b).as_dict()) == ["calls", "cached", "computed", "failed", "invalid", "constrained"]
    assert a.line("panel:targets") == \
        "[panel:targets] calls=3, cached=1, computed=2, failed=1, invalid=0, constrained=0, attempts=0, http_requests=0"


def test_traffic_adds_up_but_is_not_part_of_what_a_round_came_to():
    a = Counts(calls=2, computed=2, attempts=5, http_requests=5)
    b = Counts(calls=1, computed=1, attempts=1, http_requests=0)
    assert (a + b).traffic() == {"attempts": 6, "http_requests": 5}
    assert a == Counts(calls=2, computed=2)  # the same calls, however many retries they took
    assert "attempts" not in a.as_dict() and a.line("x").endswith("attempts=5, http_requests=5")


def test_a_round_counts_itself_one_call_per_distinct_request(tmp_path):
    requests = [ask("fake/echo", "a"), ask("fake/echo", "a"), ask("fake/echo", "b"), ask("fake/auth"), ask("fake/auth")]
    first = generate(requests, cache=CallCache(tmp_path), transport=FAST, progress=False)
    assert first.counts() == Counts(calls=3, cached=0, computed=3, failed=1)
    # three calls made one attempt each (authentication is never retried); none went over HTTP
    assert first.counts().traffic() == {"attempts": 3, "http_requests": 0}
    again = generate(requests, cache=CallCache(tmp_path), transport=FAST, progress=False)
    # the stored permanent error answers its cell from the cache, and is still a failure
    assert again.counts(invalid=1) == Counts(calls=3, cached=3, computed=0, failed=1, invalid=1)
    manifest = json.loads(open(again.manifest["path"]).read())
    assert {k: manifest[k] for k in Counts().as_dict()} == Counts(calls=3, cached=3, failed=1).as_dict()
    assert manifest["errors_by_type"] == {"AuthenticationError": 1} and manifest["n_requests"] == 5
    assert (manifest["attempts"], manifest["http_requests"]) == (0, 0)  # nothing was called again


def test_a_round_counts_its_constrained_calls_and_each_record_names_its_format(tmp_path):
    """A request for a structured answer (response_format json_object / json_schema) is a
    constrained call: its record names the format, the round counts it; text is none."""
    def asked(fmt, text):
        return ModelRequest("fake/echo", [{"role": "user", "content": text}], {"response_format": fmt} if fmt else {}, 0)

    requests = [asked({"type": "json_object"}, "a"), asked({"type": "json_schema", "json_schema": {}}, "b"),
                asked({"type": "text"}, "c"), asked(None, "d")]
    result = generate(requests, cache=CallCache(tmp_path), transport=FAST, progress=False)
    assert [r.constrained for r in result.records] == ["json_object", "json_schema", None, None]
    assert result.counts().constrained == 2
