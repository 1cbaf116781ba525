"""Pure claim rules (core/claims.py, core/offerings.py): ids, tokens, transitions, lifecycle and orphan decisions.

Matrix: claim id determinism (order, duplicates, generation, pool); ClientToken shape; every allowed and a
forbidden transition; `decide_lifecycle` for each state x (node present/absent, instance alive/gone, before/after
each timeout); `decide_orphans` with owned, claimed, young and old instances; unavailable-offering TTL.
"""

from __future__ import annotations

import pytest

from longshore.core import telemetry
from longshore.core.claims import (
    LAUNCH_TIMEOUT_S,
    REGISTRATION_TIMEOUT_S,
    TRANSITIONS,
    CloudInstance,
    InvalidTransitionError,
    NodeClaim,
    NodeObservation,
    claim_id_for,
    client_token,
    decide_lifecycle,
    decide_orphans,
    instance_id_of,
    provider_id,
    transition,
)
from longshore.core.model import Taint
from longshore.core.offerings import (
    UNAVAILABLE_TTL_S,
    UnavailableOfferings,
    is_unfulfillable,
    offering_keys_for_error,
)


def test_claim_id_depends_on_pool_pod_set_and_generation_only() -> None:
    a = claim_id_for("default", ["ns/b", "ns/a"], 3)
    assert a == claim_id_for("default", ["ns/a", "ns/b", "ns/a"], 3)
    assert a != claim_id_for("default", ["ns/a"], 3)
    assert a != claim_id_for("default", ["ns/a", "ns/b"], 4)
    assert a != claim_id_for("other", ["ns/a", "ns/b"], 3)
    assert a.startswith("default-")


def test_client_token_is_short_deterministic_and_per_attempt() -> None:
    token = client_token("default-abc", 1, 10.0)
    assert token == client_token("default-abc", 1, 10.0) != client_token("default-abc", 2, 10.0)
    assert token != client_token("default-abc", 1, 20.0), "a re-created claim gets new tokens"
    assert len(token) <= 64 and token.isascii()


def test_provider_id_round_trip() -> None:
    assert provider_id("us-east-1a", "i-0abc") == "aws:///us-east-1a/i-0abc"
    assert instance_id_of("aws:///us-east-1a/i-0abc") == "i-0abc"
    assert instance_id_of("kind://docker/x") is None


def test_transitions_follow_the_table() -> None:
    claim = NodeClaim("c", "p", "n")
    for state in ("launching", "launched", "registered", "initialized", "deleting"):
        claim = transition(claim, state)  # type: ignore[arg-type]
        assert claim.state == state
    with pytest.raises(InvalidTransitionError, match="cannot go from planned to registered"):
        transition(NodeClaim("c", "p", "n"), "registered")
    assert all("deleting" in targets for state, targets in TRANSITIONS.items() if state != "deleting")


def _instance(state: str = "running", claim_id: str | None = "c", created_at: float = 0.0) -> CloudInstance:
    return CloudInstance("i-1", state, "m5.large", "us-east-1a", "spot", claim_id, "p", created_at)


def _node(ready: bool = True, taints: tuple[Taint, ...] = ()) -> NodeObservation:
    return NodeObservation("ip-10-0-0-1", "aws:///us-east-1a/i-1", ready, taints)


LAUNCHING = NodeClaim("c", "p", "n", state="launching", created_at=1000.0, attempt_until=1060.0)
LAUNCHED = NodeClaim(
    "c", "p", "n", state="launched", instance_id="i-1", created_at=1000.0, launched_at=1001.0
)
REGISTERED = NodeClaim(
    "c", "p", "n", state="registered", instance_id="i-1", launched_at=1001.0, registered_at=1040.0
)
STARTUP = (Taint("example.com/agent-not-ready", "NoSchedule"),)


@pytest.mark.parametrize(
    ("claim", "node", "instance", "now", "action", "metric"),
    [
        (LAUNCHING, None, _instance(), 1010.0, "adopt", None),
        (LAUNCHING, None, None, 1010.0, "none", None),
        (LAUNCHING, None, None, 1000.0 + LAUNCH_TIMEOUT_S, "launch_timeout", telemetry.LAUNCH_TIMEOUTS),
        (
            LAUNCHING,
            None,
            _instance("terminated"),
            1000.0 + LAUNCH_TIMEOUT_S,
            "launch_timeout",
            telemetry.LAUNCH_TIMEOUTS,
        ),
        (LAUNCHED, None, _instance(), 1001.0 + REGISTRATION_TIMEOUT_S - 1, "none", None),
        (
            LAUNCHED,
            None,
            _instance(),
            1001.0 + REGISTRATION_TIMEOUT_S,
            "registration_timeout",
            telemetry.REGISTRATION_TIMEOUTS,
        ),
        (LAUNCHED, _node(ready=False), _instance(), 1030.0, "register", telemetry.NODES_REGISTERED),
        (LAUNCHED, None, _instance("terminated"), 1030.0, "instance_gone", None),
        (LAUNCHED, None, None, 1030.0, "instance_gone", None),
        (REGISTERED, _node(ready=False), _instance(), 1050.0, "none", None),
        (REGISTERED, _node(taints=STARTUP), _instance(), 1050.0, "none", None),
        (
            REGISTERED,
            _node(taints=(Taint("node.kubernetes.io/not-ready", "NoSchedule"),)),
            _instance(),
            1050.0,
            "none",
            None,
        ),
        (
            REGISTERED,
            _node(taints=(Taint("dedicated", "NoSchedule", "web"),)),
            _instance(),
            1050.0,
            "initialize",
            telemetry.NODES_INITIALIZED,
        ),
        (REGISTERED, None, _instance("shutting-down"), 1050.0, "instance_gone", None),
    ],
)
def test_decide_lifecycle(
    claim: NodeClaim,
    node: NodeObservation | None,
    instance: CloudInstance | None,
    now: float,
    action: str,
    metric: str | None,
) -> None:
    decision = decide_lifecycle(claim, node, instance, now, STARTUP)
    assert (decision.action, decision.metric) == (action, metric)


def test_launching_claim_is_not_timed_out_while_its_attempt_lease_runs() -> None:
    claim = NodeClaim("c", "p", "n", state="launching", created_at=0.0, attempt_until=LAUNCH_TIMEOUT_S + 30)
    assert decide_lifecycle(claim, None, None, LAUNCH_TIMEOUT_S + 10).action == "none"
    assert decide_lifecycle(claim, None, None, LAUNCH_TIMEOUT_S + 30).action == "launch_timeout"


def test_orphans_are_unowned_unclaimed_and_older_than_the_grace() -> None:
    claims = [LAUNCHED, NodeClaim("pending-claim", "p", "n", state="launching")]
    instances = [
        CloudInstance("i-1", "running", "m5.large", "a", "spot", "c", "p", 0.0),  # owned by id
        CloudInstance(
            "i-2", "running", "m5.large", "a", "spot", "pending-claim", "p", 0.0
        ),  # its claim adopts it
        CloudInstance("i-3", "running", "m5.large", "a", "spot", "forgotten", "p", 0.0),  # orphan
        CloudInstance("i-4", "running", "m5.large", "a", "spot", None, "p", 0.0),  # orphan, untagged claim
        CloudInstance("i-5", "running", "m5.large", "a", "spot", "forgotten", "p", 95.0),  # too young
        CloudInstance("i-6", "terminated", "m5.large", "a", "spot", "forgotten", "p", 0.0),  # already gone
    ]
    assert [i.instance_id for i in decide_orphans(instances, claims, now=100.0, grace_s=60.0)] == [
        "i-3",
        "i-4",
    ]


def test_unavailable_offerings_expire_after_the_ttl() -> None:
    key = ("m5.large", "us-east-1a", "spot")
    offerings = UnavailableOfferings().mark(key, 100.0 + UNAVAILABLE_TTL_S)
    assert offerings.active(100.0) == {key}
    assert offerings.active(100.0 + UNAVAILABLE_TTL_S) == frozenset()
    assert offerings.mark(key, 150.0).active(200.0) == {key}, "a shorter mark must not shorten the first"


def test_unfulfillable_codes_and_their_scope() -> None:
    key = ("m5.large", "a", "on-demand")
    spot = [("m5.large", "a", "spot"), ("c5.large", "b", "spot"), key]
    assert is_unfulfillable("InsufficientInstanceCapacity") and not is_unfulfillable("InvalidParameterValue")
    assert offering_keys_for_error("InsufficientInstanceCapacity", key, spot) == {key}
    assert offering_keys_for_error("InvalidParameterValue", key, spot) == frozenset()
    assert offering_keys_for_error("AuthFailure.ServiceLinkedRoleCreationNotPermitted", key, spot) == {
        *spot[:2],
        key,
    }


def test_an_instance_tagged_with_a_claim_that_records_another_instance_is_an_orphan() -> None:
    instances = [
        CloudInstance("i-1", "running", "m5.large", "a", "spot", "c", "p", 0.0),  # the claim's own
        CloudInstance("i-9", "running", "m5.large", "a", "spot", "c", "p", 0.0),  # a duplicate launch
    ]
    assert [i.instance_id for i in decide_orphans(instances, [LAUNCHED], now=100.0, grace_s=60.0)] == ["i-9"]
