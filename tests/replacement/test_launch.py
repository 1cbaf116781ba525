"""Launching replacements against moto: what exists afterwards (instances, claim records, ICE marks, metrics).

Matrix: a node with pods gets one instance of the cheapest type that fits them, recorded with the pool hashes;
a retried call (and a call after the replacement is up) launches nothing; a different reason is a different
replacement; capacity errors on every offering end in `ReplacementUnavailableError` with the reason and
nothing left behind; capacity errors on the node's own pool move the replacement to the other pools by weight;
the workflow's surge step drives the real launcher end to end.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from longshore.adapters.aws import tags as tagnames
from longshore.core import telemetry
from longshore.core.allocatable import allocatable
from longshore.core.commands import DisruptionCommand
from longshore.core.disruption.drift import claim_hashes
from longshore.core.model import ClusterConfig
from longshore.core.resources import Resources
from longshore.ports.workflow import ReplacementUnavailableError
from longshore.services.replacement import replacement_claim_id
from longshore.workflow import steps
from tests.replacement.conftest import (
    CLUSTER,
    NOW,
    TYPES,
    ZONES,
    World,
    catalog,
    cluster_config,
    node_manifest,
    pool,
    running_pod,
)

pytestmark = pytest.mark.slow


def cheapest_fitting(config: ClusterConfig, pool_name: str, requests: Resources) -> str:
    """The oracle: the pool's cheapest on-demand type (in the seeded zones) whose allocatable holds `requests`."""
    the_pool = config.pool(pool_name)
    klass = config.node_class_of(the_pool)
    allowed = dict((r.key, r.values) for r in the_pool.requirements)["node.kubernetes.io/instance-type"]
    priced: list[tuple[float, str]] = []
    for it in catalog().instance_types:
        if it.name not in allowed:
            continue
        room = allocatable(it, the_pool.effective_kubelet(klass), klass, config.settings)
        if not requests.fits(room):
            continue
        prices = [o.price for o in it.offerings if o.capacity_type == "on-demand" and o.zone in ZONES]
        priced.append((min(prices), it.name))
    return min(priced)[1]


def tags(instance: dict[str, object]) -> dict[str, str]:
    return tagnames.from_ec2(instance.get("Tags"))  # type: ignore[arg-type]


def busy_node(world: World, name: str = "old", pods: int = 3) -> None:
    node = node_manifest(name, "i-0000000000000old1", instance_type="m5.large")
    world.add_node(node)
    for index in range(pods):
        world.cluster.add_pod(running_pod(f"web-{index}", name, cpu="1", memory="1Gi", labels={"app": "web"}))


@pytest.mark.slow
def test_a_node_with_pods_is_replaced_by_the_cheapest_type_that_fits_them(world: World) -> None:
    busy_node(world)
    claim = world.store.get("general-old")
    node = world.cluster.get_node("old")

    claim_id = world.replacements().launch_replacement(claim, node, "rotation", NOW)

    [instance] = world.live_instances()
    needed = Resources.parse({"cpu": "3", "memory": "3Gi", "pods": "3"})
    assert instance["InstanceType"] == cheapest_fitting(world.config, "general", needed)
    assert tags(instance)[tagnames.NODECLAIM] == claim_id == replacement_claim_id("general-old", "rotation")
    assert tags(instance)[tagnames.NODEPOOL] == "general"
    record = world.store.get(claim_id)
    assert record is not None and record.state == "launched" and record.instance_id == instance["InstanceId"]
    assert set(record.pods) == {"default/web-0", "default/web-1", "default/web-2"}
    the_pool = world.config.pool("general")
    assert (record.nodepool_hash, record.nodeclass_hash) == claim_hashes(
        the_pool, world.config.node_class_of(the_pool)
    )
    assert "old" in record.reason and "rotation" in record.reason
    # the record names the node it replaces, so the planner (warm or cold) counts that node as going away and
    # this claim's room as taken by its pods, not free for another decision (chaos seed 25)
    assert record.replaces == ("old",)
    assert world.metrics.total(telemetry.REPLACEMENTS_LAUNCHED, Reason="rotation") == 1
    assert world.metrics.total(telemetry.CLAIMS_CREATED, NodePool="general") == 1


def test_a_retried_call_launches_nothing_and_returns_the_same_claim(world: World) -> None:
    busy_node(world)
    claim, node = world.store.get("general-old"), world.cluster.get_node("old")
    replacements = world.replacements()

    first = replacements.launch_replacement(claim, node, "drifted", NOW)
    again = replacements.launch_replacement(claim, node, "drifted", NOW + 5)
    record = world.store.get(first)
    assert record is not None
    world.store.put(replace(record, state="initialized", initialized_at=NOW + 60))
    after_ready = replacements.launch_replacement(claim, None, "drifted", NOW + 90)

    assert first == again == after_ready
    assert len(world.live_instances()) == 1
    assert world.fleet.calls == 1

    other = replacements.launch_replacement(claim, node, "rotation", NOW + 100)
    assert other != first and len(world.live_instances()) == 2


def test_capacity_errors_on_every_offering_raise_with_the_reason_and_leave_nothing(world: World) -> None:
    busy_node(world)
    for instance_type in TYPES:
        for zone in ZONES:
            world.fleet.make_unavailable(instance_type, zone, "on-demand")
    claim, node = world.store.get("general-old"), world.cluster.get_node("old")

    with pytest.raises(ReplacementUnavailableError) as raised:
        world.replacements().launch_replacement(claim, node, "rotation", NOW)

    message = str(raised.value)
    assert "node old" in message and "rotation" in message
    assert "InsufficientCapacity" in message  # the launch's reason
    assert "default/web-" in message  # and why the re-plan found nothing for the pods
    assert world.live_instances() == []
    assert [c.id for c in world.store.list()] == ["general-old"]  # the failed claim was forgotten
    marked = world.offerings.unavailable(NOW)
    assert {(t, z, "on-demand") for t in ("c5.xlarge", "m5.xlarge") for z in ZONES} <= marked
    assert world.metrics.total(telemetry.REPLACEMENTS_UNAVAILABLE, Reason="rotation") == 1


def test_capacity_errors_on_the_own_pool_move_the_replacement_to_the_heaviest_other_pool(
    world: World,
) -> None:
    config = cluster_config(
        pool("general", types=("c5.xlarge", "m5.xlarge")),
        pool("spare-light", weight=10, types=("c5.xlarge", "m5.xlarge", "r5.xlarge")),
        pool("spare-heavy", weight=50, types=("r5.xlarge",)),
    )
    world.config = config
    busy_node(world)
    for zone in ZONES:
        for instance_type in ("c5.xlarge", "m5.xlarge"):
            world.fleet.make_unavailable(instance_type, zone, "on-demand")
    claim, node = world.store.get("general-old"), world.cluster.get_node("old")

    claim_id = world.replacements(config).launch_replacement(claim, node, "expired", NOW)

    [instance] = world.live_instances()
    assert (instance["InstanceType"], tags(instance)[tagnames.NODEPOOL]) == ("r5.xlarge", "spare-heavy")
    record = world.store.get(claim_id)
    assert record is not None and record.nodepool == "spare-heavy" and record.state == "launched"


def _rotation_surge(world: World) -> tuple[steps.StepPorts, dict[str, object]]:
    """The workflow step ports over `world`, and a validated rotation surge of the busy node `old`."""
    busy_node(world)
    ports = steps.StepPorts(
        cluster_name=CLUSTER,
        cluster=world.cluster,
        claims=world.store,
        instances=world.instances,
        replacements=world.replacements(),
        clock=world.clock,
    )
    state = DisruptionCommand("i-0000000000000old1", "rotation", replace=True).to_input()
    state["executionName"] = "rotation-i-0000000000000old1"
    return ports, steps.validate(state, ports)


def test_the_surge_step_launches_through_the_real_launcher(world: World) -> None:
    ports, validated = _rotation_surge(world)

    launched = steps.launch_replacement(validated, ports)

    claim_id = launched["replacement"]["claimId"]
    assert claim_id == replacement_claim_id("general-old", "rotation")
    [instance] = world.live_instances()
    assert tags(instance)[tagnames.NODECLAIM] == claim_id
    checked = steps.check_replacement(launched, ports)
    assert checked["replacement"]["status"] == "launching"  # launched, not yet a Ready node
    assert steps.launch_replacement(launched, ports) == launched and len(world.live_instances()) == 1


def _surge_up_to_its_replacement(world: World) -> tuple[steps.StepPorts, dict[str, object], str]:
    """A rotation surge of `old` (3 pods of 1 CPU) whose replacement is up as node `new`, initialized."""
    ports, validated = _rotation_surge(world)
    launched = steps.launch_replacement(validated, ports)
    claim_id = str(launched["replacement"]["claimId"])  # type: ignore[index]
    [instance] = world.live_instances()
    world.add_node(
        node_manifest("new", instance["InstanceId"], instance_type=instance["InstanceType"]),
        claim_id=claim_id,
    )
    return ports, launched, claim_id


def test_a_replacement_with_room_for_the_pods_lets_the_node_be_tainted(world: World) -> None:
    ports, launched, claim_id = _surge_up_to_its_replacement(world)

    checked = steps.check_replacement(launched, ports)

    assert checked["replacement"]["status"] == "initialized"
    assert checked["replacement"]["claimId"] == claim_id and len(world.live_instances()) == 1


def test_a_replacement_whose_room_pods_took_while_it_booted_gets_another_before_the_taint(
    world: World,
) -> None:
    """Chaos seed 32: pods of a scale-up were bound to the surge's replacement while it booted; tainting then
    would evict the node's pods with nowhere to run. The step launches a further replacement for them."""
    ports, launched, claim_id = _surge_up_to_its_replacement(world)
    for index in range(3):  # the scale-up's pods fill the replacement
        world.cluster.add_pod(
            running_pod(f"batch-{index}", "new", cpu="1", memory="1Gi", labels={"app": "b"})
        )

    checked = steps.check_replacement(launched, ports)

    assert checked["replacement"]["status"] == "launching"
    assert checked["replacement"]["claimId"] == f"{claim_id}-more"
    assert len(world.live_instances()) == 2
    assert steps.check_replacement(launched, ports) == checked  # a retried step launches nothing more
    assert len(world.live_instances()) == 2
    assert "Pods took the room of replacement" in " ".join(e.message for e in world.cluster.events)
