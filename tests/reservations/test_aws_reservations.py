"""Capacity reservations against moto, with `longshore_sim.reservations` serving what moto lacks
(DescribeCapacityReservations, reservation-targeted fleets, `CapacityReservationId` on instances): selection by
term (aws provider `pkg/providers/capacityreservation/types.go`), the launch into a reservation (aws provider
`pkg/providers/instance/`), its labels, room and capacity errors, and the instance that outlives its
reservation."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from longshore.adapters.aws.reservations import Ec2CapacityReservations, query
from longshore.adapters.aws.userdata import parse_bootstrap
from longshore.core import labels as wk
from longshore.core.claims import KubeletSettings, LaunchOption
from longshore.core.karpenter_objects import nodeclaim_object
from longshore.core.model import SelectorTerm
from longshore_sim.reservations import ReservationStore
from tests.adapters.conftest import World, node_class, request, world  # noqa: F401

NOW = time.time()
ML = (("team", "ml"),)


@pytest.fixture
def store(world: World) -> ReservationStore:  # noqa: F811
    return ReservationStore(time.time).attach(world.ec2)


def reader(world: World) -> Ec2CapacityReservations:  # noqa: F811
    return Ec2CapacityReservations(
        world.ec2, lambda _c: frozenset({"us-east-1a", "us-east-1b", "us-east-1c"})
    )


def reserved_option(rid: str, kind: str = "default", zone: str = "us-east-1a") -> LaunchOption:
    return LaunchOption(
        "m5.large",
        zone,
        "reserved",
        0.096 / 10_000_000,
        kubelet=KubeletSettings(max_pods=29),
        reservation_id=rid,
        reservation_type=kind,
    )


def spot_option() -> LaunchOption:
    return LaunchOption("c5.large", "us-east-1a", "spot", 0.031, kubelet=KubeletSettings(max_pods=29))


def _template_data(world: World, name: str) -> dict[str, Any]:  # noqa: F811
    versions = world.ec2.describe_launch_template_versions(LaunchTemplateName=name)  # type: ignore[attr-defined]
    return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])


def test_a_term_becomes_karpenters_query() -> None:
    assert query(SelectorTerm(id="cr-1")) == {
        "Filters": [{"Name": "state", "Values": ["active"]}],
        "CapacityReservationIds": ["cr-1"],
    }
    tagged = query(
        SelectorTerm(
            tags=(("team", "ml"), ("any", "*")), owner="123456789012", instance_match_criteria="open"
        )
    )
    assert tagged["MaxResults"] == 1000
    assert tagged["Filters"] == [
        {"Name": "state", "Values": ["active"]},
        {"Name": "owner-id", "Values": ["123456789012"]},
        {"Name": "tag:team", "Values": ["ml"]},
        {"Name": "tag-key", "Values": ["any"]},
        {"Name": "instance-match-criteria", "Values": ["open"]},
    ]


def test_selection_keeps_active_reservations_of_the_terms_in_the_node_class_zones(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    store.add("m5.large", "us-east-1a", 2, id="cr-tagged", tags={"team": "ml"})
    store.add("m5.large", "us-east-1b", 1, id="cr-byid")
    store.add("m5.large", "us-east-1c", 1, id="cr-other", tags={"team": "web"})
    store.add("m5.large", "us-east-1a", 1, id="cr-ended", tags={"team": "ml"}, end=NOW - 60)
    store.add("m5.large", "us-east-1a", 1, id="cr-open", tags={"team": "ml"}, instance_match_criteria="open")
    store.cancel("cr-open")
    zones_ab = Ec2CapacityReservations(world.ec2, lambda _c: frozenset({"us-east-1a", "us-east-1b"}))
    cls = node_class(capacity_reservation_selector_terms=(SelectorTerm(tags=ML), SelectorTerm(id="cr-byid")))
    found = zones_ab.list(cls, NOW)
    assert [(r.id, r.zone, r.available, r.state) for r in found] == [
        ("cr-byid", "us-east-1b", 1, "active"),
        ("cr-tagged", "us-east-1a", 2, "active"),
    ]
    assert found[1].status() == {
        "availabilityZone": "us-east-1a",
        "id": "cr-tagged",
        "instanceMatchCriteria": "targeted",
        "instanceType": "m5.large",
        "ownerID": "123456789012",
        "reservationType": "default",
        "state": "active",
    }
    gone = node_class(capacity_reservation_selector_terms=(SelectorTerm(id="cr-missing"),))
    assert zones_ab.list(gone, NOW) == ()  # InvalidCapacityReservationId.NotFound: nothing selected
    assert zones_ab.list(node_class(), NOW) == ()  # no terms, no call


def test_room_is_decremented_on_launch_and_read_again_after_the_cache_ttl(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    store.add("m5.large", "us-east-1a", 2, id="cr-1", tags={"team": "ml"})
    found = reader(world)
    cls = node_class(capacity_reservation_selector_terms=(SelectorTerm(tags=ML),))
    assert found.list(cls, NOW)[0].available == 2
    found.mark_launched("cr-1")
    assert found.list(cls, NOW + 1)[0].available == 1  # cached answer, decremented
    assert found.list(cls, NOW + 61)[0].available == 2  # EC2 read again: nothing was really launched


def test_a_capacity_block_is_expiring_forty_minutes_before_its_end(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    store.add("m5.large", "us-east-1a", 1, id="cr-block", reservation_type="capacity-block", end=NOW + 3600)
    cls = node_class(capacity_reservation_selector_terms=(SelectorTerm(id="cr-block"),))
    (block,) = reader(world).list(cls, NOW)
    assert (block.reservation_type, block.state) == ("capacity-block", "active")
    assert block.end_time == pytest.approx(NOW + 3600, abs=1)
    (late,) = reader(world).list(cls, NOW + 3600 - 40 * 60 + 1)
    assert late.state == "expiring"


def test_a_reserved_launch_targets_the_reservation_and_labels_the_node(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    store.add("m5.large", "us-east-1a", 1, id="cr-1")
    result = world.launcher().launch(request(opts=(reserved_option("cr-1"), spot_option())), NOW)
    assert result.status == "launched" and result.claim is not None
    claim = result.claim
    assert (claim.capacity_type, claim.reservation_id, claim.reservation_type) == (
        "reserved",
        "cr-1",
        "default",
    )
    [fleet] = world.ec2.describe_fleets()["Fleets"]  # type: ignore[attr-defined]
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    data = _template_data(world, str(claim.launch_template))
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": "cr-1"},
    }
    attribute = world.ec2.describe_instance_attribute(InstanceId=claim.instance_id, Attribute="userData")  # type: ignore[attr-defined]
    labels = dict(parse_bootstrap(str(attribute["UserData"]["Value"])).labels)
    assert labels[wk.CAPACITY_TYPE] == "reserved"
    assert labels[wk.CAPACITY_RESERVATION_ID] == "cr-1"
    assert labels[wk.CAPACITY_RESERVATION_TYPE] == "default"
    assert labels[wk.CAPACITY_RESERVATION_INTERRUPTIBLE] == "false"
    (instance,) = world.instances.describe([str(claim.instance_id)])
    assert (instance.capacity_type, instance.reservation_id, instance.reservation_type) == (
        "reserved",
        "cr-1",
        "default",
    )
    assert store.reservations["cr-1"].available == 0


def test_a_full_reservation_refuses_and_the_claim_falls_back_in_the_same_launch(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    store.add("m5.large", "us-east-1a", 0, id="cr-full")
    result = world.launcher().launch(request(opts=(reserved_option("cr-full"), spot_option())), NOW)
    assert result.status == "launched" and result.claim is not None
    assert (result.claim.capacity_type, result.claim.reservation_id) == ("spot", None)
    assert [(f.capacity_type, f.code) for f in result.failures] == [
        ("reserved", "ReservationCapacityExceeded")
    ]
    assert ("m5.large", "us-east-1a", "reserved") in world.offerings.unavailable(NOW)


def test_a_capacity_block_launches_as_karpenter_launches_one(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    store.add("m5.large", "us-east-1a", 1, id="cr-block", reservation_type="capacity-block", end=NOW + 7200)
    result = world.launcher().launch(request(opts=(reserved_option("cr-block", "capacity-block"),)), NOW)
    assert result.status == "launched" and result.claim is not None
    sent = store.fleet_requests
    assert sent[0]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "capacity-block"
    assert "OnDemandOptions" not in sent[0]
    data = _template_data(world, str(result.claim.launch_template))
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    (instance,) = world.instances.describe([str(result.claim.instance_id)])
    assert (instance.capacity_type, instance.reservation_type) == ("reserved", "capacity-block")


def test_an_instance_whose_reservation_ended_reads_as_on_demand(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    store.add("m5.large", "us-east-1a", 1, id="cr-1")
    result = world.launcher().launch(request(opts=(reserved_option("cr-1"),)), NOW)
    instance_id = str(result.instance_id)
    store.cancel("cr-1")
    (instance,) = world.instances.describe([instance_id])
    assert (instance.capacity_type, instance.reservation_id) == ("on-demand", None)


def test_the_nodeclaim_object_of_a_reserved_launch_carries_the_three_reservation_labels(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    """aws provider `pkg/cloudprovider/cloudprovider.go` (`instanceToNodeClaim`): a reserved NodeClaim is labelled
    with `capacity-reservation-id`, `-type` and `-interruptible`, as its node is."""
    store.add("m5.large", "us-east-1a", 1, id="cr-int", interruptible=True)
    option = replace(reserved_option("cr-int"), reservation_interruptible=True)
    result = world.launcher().launch(request(opts=(option,)), NOW)
    assert result.status == "launched" and result.claim is not None
    stored = world.store.get(result.claim.id)
    assert stored is not None and stored.reservation_interruptible is True  # kept in the claim record
    labels = nodeclaim_object(stored, None, None, NOW)["metadata"]["labels"]
    assert labels[wk.CAPACITY_RESERVATION_ID] == "cr-int"
    assert labels[wk.CAPACITY_RESERVATION_TYPE] == "default"
    assert labels[wk.CAPACITY_RESERVATION_INTERRUPTIBLE] == "true"
    spot = world.launcher().launch(request(pods=("default/web-2",), opts=(spot_option(),)), NOW)
    assert spot.claim is not None
    spot_labels = nodeclaim_object(spot.claim, None, None, NOW)["metadata"]["labels"]
    assert wk.CAPACITY_RESERVATION_INTERRUPTIBLE not in spot_labels


def test_a_failed_read_is_reported_per_term_until_a_read_succeeds(
    world: World,  # noqa: F811
    store: ReservationStore,
) -> None:
    """What `CapacityReservationsReady` says (`ports.cloud.CapacityReservations.failure`): the term that could
    not be read and EC2's error, while the last answer is still used; gone once a read succeeds."""
    store.add("m5.large", "us-east-1a", 2, id="cr-1", tags={"team": "ml"})
    found = reader(world)
    cls = node_class(
        capacity_reservation_selector_terms=(SelectorTerm(id="cr-missing"), SelectorTerm(tags=ML))
    )
    assert [r.id for r in found.list(cls, NOW)] == ["cr-1"]
    assert found.failure(cls) == ""  # an id EC2 does not know selects nothing: not a failure
    store.failing = "UnauthorizedOperation"
    assert [r.id for r in found.list(cls, NOW + 61)] == ["cr-1"]  # the last answer, still used
    problem = found.failure(cls)
    assert problem.startswith("capacityReservationSelectorTerms[0]: DescribeCapacityReservations failed: ")
    assert "capacityReservationSelectorTerms[1]" in problem and "UnauthorizedOperation" in problem
    store.failing = None
    assert [r.id for r in found.list(cls, NOW + 62)] == ["cr-1"]
    assert found.failure(cls) == ""
    broken = Ec2CapacityReservations(world.ec2, lambda _c: (_ for _ in ()).throw(RuntimeError("no subnets")))
    assert broken.list(cls, NOW) == ()
    assert broken.failure(cls) == "the node class's subnet zones could not be read: no subnets"
