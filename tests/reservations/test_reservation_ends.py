"""When a reservation ends: nodes that left it are relabelled on-demand (aws provider
`pkg/controllers/capacityreservation/capacitytype/controller.go`), Capacity Block nodes are removed from 40 min
before the block's end through the disruption workflow (aws provider
`pkg/controllers/capacityreservation/expiration/controller.go`), consolidation prices reserved nodes at their
reserved price, and the EC2NodeClass reports its reservations in `status.capacityReservations`."""

from __future__ import annotations

from dataclasses import replace

from longshore.adapters.memory import MemoryClaimStore
from longshore.core import labels as wk
from longshore.core.claims import CloudInstance, NodeClaim, NodeObservation
from longshore.core.karpenter_objects import pool_status
from longshore.core.reservations import EXPIRATION_WINDOW_S, Reservation
from longshore.services.reservation_sync import relabel_left_reservations
from longshore_sim.clock import VirtualClock
from tests.disruption.test_planner import HOUR, NOW, a_pool, managed, run
from tests.fakes import FakeCluster

RESERVED_LABELS = {
    wk.CAPACITY_TYPE: "reserved",
    wk.CAPACITY_RESERVATION_ID: "cr-1",
    wk.CAPACITY_RESERVATION_TYPE: "default",
}


def _node(name: str, instance_id: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {"providerID": f"aws:///us-east-1a/{instance_id}"},
    }


def _instance(instance_id: str, capacity_type: str) -> CloudInstance:
    return CloudInstance(instance_id, "running", "m5.large", "us-east-1a", capacity_type)


def test_a_node_whose_instance_left_its_reservation_is_relabelled_on_demand() -> None:
    cluster = FakeCluster(VirtualClock())
    store = MemoryClaimStore()
    cluster.add_node(_node("left", "i-left", RESERVED_LABELS))
    cluster.add_node(_node("still", "i-still", RESERVED_LABELS))
    claim = NodeClaim(
        "c-left",
        "default",
        "default",
        instance_id="i-left",
        capacity_type="reserved",
        price=1e-8,
        state="registered",
        reservation_id="cr-1",
        reservation_type="default",
    )
    store.create_if_absent(claim)
    observed = [
        NodeObservation("left", "aws:///us-east-1a/i-left", True, labels=tuple(RESERVED_LABELS.items())),
        NodeObservation("still", "aws:///us-east-1a/i-still", True, labels=tuple(RESERVED_LABELS.items())),
    ]
    instances = {"i-left": _instance("i-left", "on-demand"), "i-still": _instance("i-still", "reserved")}
    done = relabel_left_reservations(cluster, store, observed, instances, store.list())
    assert done == ("left",)
    labels = cluster.nodes["left"]["metadata"]["labels"]
    assert labels[wk.CAPACITY_TYPE] == "on-demand"
    assert wk.CAPACITY_RESERVATION_ID not in labels
    assert labels[wk.CAPACITY_RESERVATION_TYPE] == "default"  # Karpenter removes only the id
    assert cluster.nodes["still"]["metadata"]["labels"][wk.CAPACITY_TYPE] == "reserved"
    record = store.get("c-left")
    assert record is not None
    assert (record.capacity_type, record.reservation_id, record.price) == ("on-demand", None, None)


def test_a_deleting_node_is_left_alone() -> None:
    cluster = FakeCluster(VirtualClock())
    cluster.add_node(_node("going", "i-1", RESERVED_LABELS))
    observed = [
        NodeObservation(
            "going", "aws:///us-east-1a/i-1", True, labels=tuple(RESERVED_LABELS.items()), deleting=True
        )
    ]
    done = relabel_left_reservations(
        cluster, MemoryClaimStore(), observed, {"i-1": _instance("i-1", "on-demand")}, ()
    )
    assert done == ()


def test_a_capacity_block_node_drains_forty_minutes_before_the_block_ends_and_not_before() -> None:
    end = NOW + EXPIRATION_WINDOW_S + 60
    block = managed(
        "block", capacity_type="reserved", price=1e-8, reservation_drain_at=end - EXPIRATION_WINDOW_S
    )
    early = run(block, pools=(a_pool(after=None),))
    assert early.decisions == ()
    on_time = replace(block, reservation_drain_at=NOW)
    (decision,) = run(on_time, pools=(a_pool(after=None),)).decisions
    assert decision.reason == "expired" and decision.forceful
    assert [n.name for n in decision.nodes] == ["block"]
    assert "Capacity Block" in decision.explanation and "40 min" in decision.explanation


def test_consolidation_prices_a_reserved_node_at_its_reserved_price() -> None:
    reserved = managed("reserved", capacity_type="reserved", price=0.192 / 10_000_000, created=NOW - 3 * HOUR)
    on_demand = managed("od", created=NOW - 3 * HOUR)
    result = run(reserved, on_demand, pools=(a_pool(),))
    # both are empty; the one decision removes both, saving the on-demand price and next to nothing more
    assert result.decisions and round(sum(d.savings_per_hour for d in result.decisions), 6) == 0.192


def test_the_ec2nodeclass_status_lists_its_capacity_reservations() -> None:
    block = Reservation(
        "cr-b",
        "p5.48xlarge",
        "us-east-1a",
        1,
        1,
        "123456789012",
        "targeted",
        "capacity-block",
        1_800_000_000.0,
    )
    status = pool_status(True, "", None, None, NOW, None, (block,))
    assert status["capacityReservations"] == [
        {
            "availabilityZone": "us-east-1a",
            "id": "cr-b",
            "instanceMatchCriteria": "targeted",
            "instanceType": "p5.48xlarge",
            "ownerID": "123456789012",
            "reservationType": "capacity-block",
            "state": "active",
            "endTime": "2027-01-15T08:00:00Z",
        }
    ]
    assert "capacityReservations" not in pool_status(True, "", None, None, NOW)
