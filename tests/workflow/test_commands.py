"""DisruptionCommand / RotationRequest: names Step Functions accepts, round trips, and clear input errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longshore.core.commands import (
    REASONS,
    CommandError,
    DisruptionCommand,
    RotationRequest,
    execution_name_of,
)

VALID_NAME = re.compile(r"""^[^\s<>{}\[\]?*"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]{1,80}$""")


def test_execution_name_is_deterministic_and_depends_on_instance_and_reason() -> None:
    a = DisruptionCommand(instance_id="i-0123456789abcdef0", reason="drifted", requested_at=100.0)
    retried = DisruptionCommand(
        instance_id="i-0123456789abcdef0", reason="drifted", requested_at=100.0, urgent=True
    )
    c = DisruptionCommand(instance_id="i-0123456789abcdef0", reason="expired", requested_at=100.0)
    assert a.execution_name() == retried.execution_name() == "drifted-i-0123456789abcdef0-100"
    assert c.execution_name() != a.execution_name()


def test_interruptions_collapse_per_node_but_voluntary_decisions_can_be_retaken() -> None:
    warning = DisruptionCommand(instance_id="i-0abc", reason="interruption", requested_at=1.0)
    repeated = DisruptionCommand(instance_id="i-0abc", reason="interruption", requested_at=50.0)
    assert warning.execution_name() == repeated.execution_name() == "interruption-i-0abc"
    # A drift that rolled back is decided again later: the name must not collide (names stay reserved 90 days).
    first = DisruptionCommand(instance_id="i-0abc", reason="drifted", requested_at=1000.0)
    later = DisruptionCommand(instance_id="i-0abc", reason="drifted", requested_at=5000.0)
    assert first.execution_name() != later.execution_name()


@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
def test_execution_names_are_always_valid_and_distinct_inputs_stay_distinct(x: str, y: str) -> None:
    nx, ny = execution_name_of(x), execution_name_of(y)
    assert VALID_NAME.match(nx), nx
    if len(x) > 80 and len(y) > 80 and x != y:
        assert nx != ny


def test_to_input_round_trips() -> None:
    command = DisruptionCommand(
        instance_id="i-1",
        reason="interruption",
        node_name="n1",
        claim_id="c1",
        urgent=True,
        replace=True,
        deadline_epoch=1234.5,
        requested_at=1000.0,
    )
    assert DisruptionCommand.from_input(command.to_input()) == command


@pytest.mark.parametrize(
    ("data", "field", "value"),
    [
        ({"instanceId": "i-1", "reason": "bored"}, "reason", "'bored'"),
        ({"reason": "manual"}, "instanceId", "None"),
        ({"instanceId": "i-1", "reason": "manual", "urgent": "yes"}, "urgent", "'yes'"),
        ({"instanceId": "i-1", "reason": "manual", "deadlineEpoch": "soon"}, "deadlineEpoch", "'soon'"),
    ],
)
def test_bad_disruption_input_names_field_and_value(data: dict[str, object], field: str, value: str) -> None:
    with pytest.raises(CommandError) as error:
        DisruptionCommand.from_input(data, where="input.json")
    assert "input.json" in str(error.value) and repr(field) in str(error.value) and value in str(error.value)


def test_reasons_cover_the_contract() -> None:
    assert {
        "interruption",
        "expired",
        "drifted",
        "empty",
        "underutilized",
        "rotation",
        "rebalance",
        "manual",
        "deleted",
        "unhealthy",
        "static-scale-down",
    } == REASONS


def test_rotation_defaults_and_round_trip() -> None:
    request = RotationRequest.from_input({"nodes": ["a", "b", "c"]})
    assert (request.max_unavailable, request.surge, request.canary, request.reason) == (
        1,
        True,
        True,
        "rotation",
    )
    assert RotationRequest.from_input(request.to_input()) == request
    assert VALID_NAME.match(request.execution_name())


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"nodes": []}, "'nodes'"),
        ({"nodes": ["a", "a"]}, "duplicate node names ['a']"),
        ({"nodes": ["a"], "maxUnavailable": 0}, "'maxUnavailable' has value 0"),
        ({"nodes": ["a"], "maxUnavailable": "2"}, "'maxUnavailable' has value '2'"),
        ({"nodes": ["a"], "maxUnavailabel": 2}, "'maxUnavailabel' has value 2; unknown field"),
        ({"nodes": "a"}, "'nodes' has value 'a'"),
        ({"nodes": ["a"], "surge": "false"}, "'surge' has value 'false'"),
    ],
)
def test_bad_rotation_input_is_named(data: dict[str, object], needle: str) -> None:
    with pytest.raises(CommandError, match=re.escape(needle)):
        RotationRequest.from_input(data)
