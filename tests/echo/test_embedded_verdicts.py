"""The embedded judge with ``response_format`` (end to end on the model): under the reference
protocol every verdict on every labelled example is one valid JSON object, and a
``response_format`` the model cannot honour is refused, never ignored."""
from __future__ import annotations

import json

import pytest

from contextecho.echo.calibration import calibrate, calibration_set
from contextecho.echo.protocols import protocol
from contextecho.engine.calls import generate
from contextecho.engine.llm import LOCAL_MODEL
from contextecho.engine.model_request import ModelRequest
from contextecho.experiments.parameter_sets import JudgedParameters

pytestmark = pytest.mark.embedded


#: The judge's budget on the embedded build, which every judged notebook's calibration asks
#: (the harness's 400 is the paper scale's).
BUDGET = JudgedParameters.judge_max_tokens


def test_every_reference_verdict_of_the_embedded_judge_is_valid_json(cache):
    items = calibration_set(protocol("reference"))
    result = calibrate(LOCAL_MODEL, items, protocol=protocol("reference"), max_tokens=BUDGET, cache=cache, progress=False)
    assert len(result.items) == len(items) >= 40
    for row in result.items:
        verdict = json.loads(row["verdict"])  # raises on anything but valid JSON
        assert isinstance(verdict, dict), row["verdict"]
    # Within the budget, and the verdicts that ran on were closed at its end (the constraint's
    # closing path was taken, not only verdicts that end by themselves).
    spent = [cache.lookup(row["key"]).completion_tokens for row in result.items]
    assert max(spent) <= BUDGET and any(n >= BUDGET - 16 for n in spent), spent
    # what the judge is worth is reported, whatever it is
    assert result.verdict in ("calibrated", "not calibrated")
    assert result.agreement.n == len(items)


def test_a_format_the_embedded_model_cannot_honour_is_refused(cache):
    request = ModelRequest(LOCAL_MODEL, ({"role": "user", "content": "Say hi."},),
                           {"max_tokens": 8, "response_format": {"type": "json_schema", "json_schema": {}}})
    record = generate([request], cache=cache, progress=False).records[0]
    assert not record.ok and "json_object" in record.error_message
