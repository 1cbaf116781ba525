"""Service-level scenarios with in-memory fakes: what state the cluster, store and workflow end up in."""

from __future__ import annotations

import json

import pytest

from longshore.adapters.events.parse import parse_event
from longshore.core.claims import NodeClaim
from longshore.core.interruption import SCHEDULED_CHANGE_GRACE_SECONDS
from longshore.core.offerings import UNAVAILABLE_TTL_S
from longshore.services.interruption import MessageOutcome, rebalance_policies
from tests.interruption.fakes import World, claim, event_for, instance_id


def deliver(world: World, name: str, *ids: str, **changes: str) -> MessageOutcome:
    body = json.dumps(event_for(name, *ids, **changes))
    return world.service().handle(parse_event(body))


def five_nodes(**rebalance: str) -> World:
    return World.of(*(claim(n) for n in range(1, 6)), rebalance=rebalance)


def test_spot_warning_on_three_of_five_nodes() -> None:
    # GIVEN five spot nodes
    world = five_nodes()
    # WHEN three of them get a warning
    outcomes = [deliver(world, "spot-interruption-warning.json", instance_id(n)) for n in (1, 2, 3)]
    # THEN exactly those three are being disrupted, urgently, before the reclaim time
    assert all(o.acted for o in outcomes)
    commands = sorted(world.workflow.executions.values(), key=lambda c: c.instance_id)
    assert [c.instance_id for c in commands] == [instance_id(n) for n in (1, 2, 3)]
    assert all(c.urgent and c.reason == "interruption" and not c.replace for c in commands)
    warning_time = outcomes[0].event.time
    assert all(c.deadline_epoch == warning_time + 120 for c in commands)
    # their claims are deleting (so the provisioner plans their pods elsewhere); the others are untouched
    states = {c.instance_id: c.state for c in world.claims.list()}
    assert states == {instance_id(n): "deleting" if n <= 3 else "initialized" for n in range(1, 6)}
    # the offering is out of launches for three minutes, and the provisioner was asked to run
    now = world.clock.now()
    assert world.offerings.unavailable(now) == frozenset({("m5.large", "us-east-1a", "spot")})
    assert world.offerings.unavailable(now + UNAVAILABLE_TTL_S + 1) == frozenset()
    assert len(world.trigger.reasons) == 3
    # nothing was deleted directly: the workflow does the cordon and drain
    assert len(world.cluster.nodes) == 5


def test_the_same_warning_twice_starts_one_workflow() -> None:
    world = five_nodes()
    first = deliver(world, "spot-interruption-warning.json", instance_id(1))
    second = deliver(world, "spot-interruption-warning.json", instance_id(1))
    assert list(world.workflow.executions) == [f"interruption-{instance_id(1)}"]
    assert first.acted and not second.acted
    assert [(i.action, i.ignore_reason) for i in second.instances] == [("interrupt", "duplicate")]


def test_every_warning_like_event_for_a_node_shares_its_single_workflow() -> None:
    world = five_nodes()
    for name in (
        "health-scheduled-change-ec2.json",
        "state-change-stopping.json",
        "spot-interruption-warning.json",
        "state-change-shutting-down.json",
        "capacity-reservation-interruption-warning.json",
    ):
        deliver(world, name, instance_id(2))
    assert list(world.workflow.executions) == [f"interruption-{instance_id(2)}"]


def test_a_terminated_event_for_a_foreign_instance_is_acknowledged_and_touches_nothing() -> None:
    world = five_nodes()
    outcome = deliver(world, "state-change-terminated.json", "i-0fffffffffffffff9")
    assert not outcome.acted
    assert [(i.action, i.ignore_reason) for i in outcome.instances] == [("foreign", "foreign")]
    assert len(world.claims.list()) == 5 and len(world.cluster.nodes) == 5
    assert world.workflow.executions == {} and world.trigger.reasons == []


def test_a_health_event_naming_two_instances_drains_both() -> None:
    world = five_nodes()
    outcome = deliver(world, "health-scheduled-change-ec2.json", instance_id(4), instance_id(5))
    assert [i.action for i in outcome.instances] == ["drain", "drain"]
    commands = world.workflow.executions.values()
    assert sorted(c.instance_id for c in commands) == [instance_id(4), instance_id(5)]
    start = outcome.event.deadline
    assert start is not None
    assert all(c.deadline_epoch == start - SCHEDULED_CHANGE_GRACE_SECONDS and c.urgent for c in commands)
    assert (
        world.offerings.unavailable(world.clock.now()) == frozenset()
    )  # health events do not mark offerings
    assert len(world.trigger.reasons) == 1  # one provisioner run per message


def test_a_health_event_naming_one_owned_and_one_foreign_instance() -> None:
    world = five_nodes()
    outcome = deliver(world, "health-scheduled-change-ec2.json", instance_id(1), "i-0fffffffffffffff9")
    assert [(i.action, i.acted) for i in outcome.instances] == [("drain", True), ("foreign", False)]
    assert list(world.workflow.executions) == [f"interruption-{instance_id(1)}"]


@pytest.mark.parametrize("policy", ["ignore", "notify", "replace"])
def test_rebalance_under_each_pool_setting(policy: str) -> None:
    world = five_nodes(default=policy)
    outcome = deliver(world, "rebalance-recommendation.json", instance_id(3))
    (result,) = outcome.instances
    untouched = {c.instance_id: c.state for c in world.claims.list()} == {
        instance_id(n): "initialized" for n in range(1, 6)
    }
    assert untouched and len(world.cluster.nodes) == 5 and world.trigger.reasons == []
    assert world.offerings.unavailable(world.clock.now()) == frozenset()
    if policy == "ignore":
        assert (result.action, result.acted, result.ignore_reason) == ("ignore", False, "rebalance-ignored")
        assert world.workflow.executions == {} and world.cluster.events == []
    elif policy == "notify":
        assert (result.action, result.acted) == ("notify", True)
        assert world.workflow.executions == {}
        (posted,) = world.cluster.events
        assert (posted.involved.kind, posted.involved.name) == ("Node", "ip-10-0-0-3.ec2.internal")
        assert posted.reason == "RebalanceRecommendation" and instance_id(3) in posted.message
    else:
        assert (result.action, result.acted) == ("replace", True)
        (command,) = world.workflow.executions.values()
        assert (command.reason, command.replace, command.urgent) == ("rebalance", True, False)
        assert world.cluster.events == []


def test_rebalance_policy_is_per_pool() -> None:
    world = World.of(claim(1, nodepool="batch"), claim(2, nodepool="web"), rebalance={"web": "replace"})
    deliver(world, "rebalance-recommendation.json", instance_id(1))
    deliver(world, "rebalance-recommendation.json", instance_id(2))
    assert [c.instance_id for c in world.workflow.executions.values()] == [instance_id(2)]


def test_rebalance_policies_from_the_cluster_config() -> None:
    from longshore.core.model import ClusterConfig, InterruptionSettings, NodePool, Origin

    origin = Origin("karpenter.sh/v1", "NodePool")
    config = ClusterConfig(
        name="demo",
        region="us-east-1",
        kubernetes_version="1.30",
        node_pools=(
            NodePool("web", origin, "default", rebalance="replace"),
            NodePool("batch", origin, "default"),
        ),
        node_classes=(),
        interruption=InterruptionSettings(rebalance_default="notify"),
    )
    policy = rebalance_policies(config)
    assert (policy("web"), policy("batch"), policy("deleted-pool")) == ("replace", "ignore", "notify")


@pytest.mark.parametrize(
    ("state", "terminated"), [("terminated", set()), ("stopped", {"i-00000000000000002"})]
)
def test_a_gone_instance_is_cleaned_up_and_its_pods_get_capacity(state: str, terminated: set[str]) -> None:
    world = five_nodes()
    outcome = deliver(world, f"state-change-{state}.json", instance_id(2))
    assert [i.action for i in outcome.instances] == ["clean-up"]
    assert "ip-10-0-0-2.ec2.internal" not in world.cluster.nodes
    assert world.claims.by_instance(instance_id(2)) is None
    assert world.instances.terminated == terminated
    assert world.workflow.executions == {}
    assert len(world.trigger.reasons) == 1


def test_a_terminated_event_after_the_warning_leaves_the_running_workflow_alone() -> None:
    world = five_nodes()
    deliver(world, "spot-interruption-warning.json", instance_id(1))
    outcome = deliver(world, "state-change-terminated.json", instance_id(1))
    assert [(i.action, i.acted) for i in outcome.instances] == [("defer", True)]
    # the workflow's node and claim are still there for it to finish with
    assert "ip-10-0-0-1.ec2.internal" in world.cluster.nodes
    assert world.claims.by_instance(instance_id(1)) is not None
    assert list(world.workflow.executions) == [f"interruption-{instance_id(1)}"]


def test_a_warning_that_arrives_after_the_terminated_event_is_a_no_op() -> None:
    world = five_nodes()
    deliver(world, "state-change-terminated.json", instance_id(1))
    late = deliver(world, "spot-interruption-warning.json", instance_id(1))
    assert not late.acted
    assert world.workflow.executions == {}


def test_a_message_retried_after_a_transient_failure_finishes_the_job_once() -> None:
    world = five_nodes()
    world.workflow.failures_left = 1
    with pytest.raises(ConnectionError):
        deliver(world, "spot-interruption-warning.json", instance_id(1))
    retried = deliver(world, "spot-interruption-warning.json", instance_id(1))
    assert retried.acted
    assert list(world.workflow.executions) == [f"interruption-{instance_id(1)}"]
    assert world.claims.by_instance(instance_id(1)).state == "deleting"  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["state-change-running.json", "state-change-pending.json"])
def test_other_states_change_nothing(name: str) -> None:
    world = five_nodes()
    outcome = deliver(world, name, instance_id(1))
    assert [(i.action, i.ignore_reason) for i in outcome.instances] == [("ignore", "no-op-state")]
    assert world.workflow.executions == {} and world.trigger.reasons == [] and len(world.cluster.nodes) == 5


def test_a_warning_for_a_tagged_instance_whose_claim_is_not_linked_yet_is_acted_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The crash window before adoption: the claim is still `launching` (no instance id), the instance
    carries the cluster and claim tags. The warning must start the reclaim drain, never be dropped as foreign."""
    world = World.of(claim(1))
    launching = NodeClaim(id="default-claim0002", nodepool="default", node_class="default", state="launching")
    world.claims.put(launching)
    world.tag(2, claim_id=launching.id)
    with caplog.at_level("WARNING"):
        outcome = deliver(world, "spot-interruption-warning.json", instance_id(2))
    assert [(i.action, i.acted) for i in outcome.instances] == [("interrupt", True)]
    (command,) = world.workflow.executions.values()
    assert (command.instance_id, command.reason, command.urgent) == (instance_id(2), "interruption", True)
    assert command.claim_id == launching.id
    assert "without a linked node claim" in caplog.text


def test_a_warning_for_a_tagged_instance_with_no_claim_at_all_still_drains_it() -> None:
    """The claim index lags (or the record is gone): the cluster tag alone makes the instance ours."""
    world = World.of(claim(1))
    world.tag(3)
    outcome = deliver(world, "health-scheduled-change-ec2.json", instance_id(3))
    assert [i.action for i in outcome.instances] == ["drain"]
    (command,) = world.workflow.executions.values()
    assert command.instance_id == instance_id(3) and command.claim_id is None
    assert world.trigger.reasons, "the provisioner plans the pods' new home"


def test_an_untagged_instance_without_a_claim_is_still_foreign() -> None:
    world = World.of(claim(1))
    outcome = deliver(world, "spot-interruption-warning.json", instance_id(9))
    assert [(i.action, i.acted) for i in outcome.instances] == [("foreign", False)]
    assert world.workflow.executions == {}
