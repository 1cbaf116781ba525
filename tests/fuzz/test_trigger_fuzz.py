"""Fuzzing the trigger function's request handling: whatever arrives, the answer is a 2xx/4xx, never a traceback.

Seeds are the function URL events in tests/events/admission; Hypothesis mutates them (any JSON value at any
place in the event or in its AdmissionReview body, bodies as text, base64 or garbage, paths with and
without the secret). Self-contained so a fuzz runner can drive it: `trigger_events()` is the strategy and
`check_trigger(event)` the target (raises AssertionError on a bad answer). The suite runs a short pass;
`LONGSHORE_FUZZ_EXAMPLES=5000 pytest -p no:xdist tests/fuzz/test_trigger_fuzz.py` runs a long one.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longshore.adapters.memory import MemoryLease
from longshore.adapters.wake_gate import LeaseWakeGate
from longshore.core.triggers import PLANNER, PROVISIONER
from longshore.wiring.trigger import TriggerPorts, serve
from longshore_sim.clock import VirtualClock
from tests.fakes import FakeTrigger

SAMPLES = Path(__file__).resolve().parents[1] / "events" / "admission"
SEEDS = tuple(json.loads(path.read_text()) for path in sorted(SAMPLES.glob("*.json")))
SECRET = "fuzz-secret"
EXAMPLES = int(os.environ.get("LONGSHORE_FUZZ_EXAMPLES", "150"))
ALLOWED_STATUS = {200, 400, 403}


class _Secret:
    def current(self) -> str:
        return SECRET


def _ports() -> TriggerPorts:
    return TriggerPorts(
        secret=_Secret(),
        gate=LeaseWakeGate(MemoryLease(), VirtualClock(0.0).now),
        triggers={PROVISIONER: FakeTrigger(), PLANNER: FakeTrigger()},
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def _paths(document: Any) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON document (dict keys and list indexes)."""
    found: list[tuple[Any, ...]] = [()]
    if isinstance(document, dict):
        for key, value in document.items():
            found += [(key, *rest) for rest in _paths(value)]
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += [(index, *rest) for rest in _paths(value)]
    return found


def _replace(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, *rest = path
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[head] = _replace(document[head], tuple(rest), value)
    return copy


@st.composite
def _mutated(draw: st.DrawFn, document: Any) -> Any:
    for _ in range(draw(st.integers(0, 3))):
        paths = _paths(document)
        document = _replace(document, draw(st.sampled_from(paths)), draw(json_values))
    return document


@st.composite
def trigger_events(draw: st.DrawFn) -> Any:
    """A function URL event derived from a seed: mutated envelope and/or body, any path."""
    event = json.loads(json.dumps(draw(st.sampled_from(SEEDS))))
    if isinstance(event, dict):
        event["rawPath"] = draw(st.sampled_from([f"/{SECRET}", "/", f"/{SECRET}x"]) | st.text(max_size=30))
        body = event.get("body")
        if isinstance(body, str) and draw(st.booleans()):
            try:
                review = json.loads(body)
            except ValueError:
                review = body
            text = json.dumps(draw(_mutated(review)))
            encoding = draw(st.sampled_from(["text", "base64", "garbage"]))
            if encoding == "base64":
                event["body"], event["isBase64Encoded"] = base64.b64encode(text.encode()).decode(), True
            elif encoding == "garbage":
                event["body"] = draw(st.text(max_size=40))
            else:
                event["body"] = text
    return draw(_mutated(event)) if draw(st.booleans()) else event


def check_trigger(event: Any) -> None:
    """The fuzz target: one request through the handler's `serve`; a bad answer raises AssertionError."""
    response = serve(event, _ports())
    assert isinstance(response, dict) and response.get("statusCode") in ALLOWED_STATUS, response
    body = json.loads(response["body"])
    if response["statusCode"] == 200:
        assert body["response"]["allowed"] is True
    else:
        assert isinstance(body.get("error"), str) and body["error"]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trigger_events())
@pytest.mark.slow
def test_the_trigger_answers_every_request_with_a_status_never_a_traceback(event: Any) -> None:
    check_trigger(event)


def test_every_seed_with_the_secret_is_answered_200_or_400() -> None:
    for seed in SEEDS:
        event = dict(seed, rawPath=f"/{SECRET}")
        assert serve(event, _ports())["statusCode"] in {200, 400}
