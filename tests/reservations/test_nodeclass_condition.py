"""The EC2NodeClass `CapacityReservationsReady` condition (aws/karpenter-provider-aws `pkg/apis/v1/
ec2nodeclass_status.go`, `pkg/controllers/nodeclass/capacityreservation.go`): True once the selector terms are
resolved (also without terms, or when they select nothing), False with the failed term and error while a
lookup fails, and part of the class's `Ready` as in Karpenter's ready conditions."""

from __future__ import annotations

from typing import Any

from longshore.core.karpenter_objects import pool_status
from longshore.core.model import ClusterConfig, NodeClass, SelectorTerm
from longshore.core.reservations import Reservation
from longshore.services.reservation_sync import class_reservations
from tests import builders as b

NOW = 1_800_000_000.0
ODCR = Reservation("cr-1", "m5.large", "us-east-1a", 2)


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def test_a_node_class_without_a_failed_lookup_has_the_condition_true() -> None:
    for reservations in (None, (), (ODCR,)):  # no terms, terms selecting nothing, terms selecting one
        shown = conditions(pool_status(True, "", None, None, NOW, None, reservations))
        ready = shown["CapacityReservationsReady"]
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "True",
            "CapacityReservationsReady",
            "",
        )
        assert shown["Ready"]["status"] == "True"


def test_a_failed_lookup_makes_the_condition_false_and_the_class_not_ready() -> None:
    problem = (
        "capacityReservationSelectorTerms[0]: DescribeCapacityReservations failed: UnauthorizedOperation"
    )
    status = pool_status(True, "", None, None, NOW, None, (ODCR,), problem)
    shown = conditions(status)
    failed = shown["CapacityReservationsReady"]
    assert (failed["status"], failed["reason"], failed["message"]) == (
        "False",
        "CapacityReservationResolutionFailed",
        problem,
    )
    assert (shown["Ready"]["status"], shown["Ready"]["message"]) == ("False", problem)
    assert [r["id"] for r in status["capacityReservations"]] == ["cr-1"]  # what was last read
    # the lookup succeeds again: True, its lastTransitionTime moves; unchanged conditions keep theirs
    later = conditions(pool_status(True, "", None, {"status": status}, NOW + 60, None, (ODCR,)))
    assert later["CapacityReservationsReady"]["status"] == "True"
    assert later["CapacityReservationsReady"]["lastTransitionTime"] != failed["lastTransitionTime"]
    assert (
        later["ValidationSucceeded"]["lastTransitionTime"]
        == shown["ValidationSucceeded"]["lastTransitionTime"]
    )


def test_a_node_pool_has_no_capacity_reservation_condition() -> None:
    assert "CapacityReservationsReady" not in conditions(pool_status(True, "", True, None, NOW))


class Reader:
    """`ports.cloud.CapacityReservations` that fails as told, per node class."""

    def __init__(self, broken: dict[str, str], raising: frozenset[str] = frozenset()) -> None:
        self.broken, self.raising = broken, raising

    def list(self, node_class: NodeClass, now: float) -> tuple[Reservation, ...]:
        if node_class.name in self.raising:
            raise TimeoutError("connect timeout on endpoint URL")
        return (ODCR,)

    def mark_launched(self, reservation_id: str) -> None:
        raise AssertionError("not launched here")

    def failure(self, node_class: NodeClass) -> str:
        return self.broken.get(node_class.name, "")


def test_class_reservations_reports_each_class_that_selects_some() -> None:
    terms = (SelectorTerm(id="cr-1"),)
    classes = ("ok", "denied", "down")
    config = ClusterConfig(
        name="demo",
        region="us-east-1",
        kubernetes_version="1.33",
        node_pools=tuple(b.pool(name, node_class_name=name) for name in (*classes, "plain")),
        node_classes=(
            *(b.node_class(name, capacity_reservation_selector_terms=terms) for name in classes),
            b.node_class("plain"),
        ),
    )
    reader = Reader({"denied": "capacityReservationSelectorTerms[0]: ..."}, frozenset({"down"}))
    found, failures = class_reservations(reader, config, NOW)
    assert found == {"ok": (ODCR,), "denied": (ODCR,)}
    assert failures == {
        "denied": "capacityReservationSelectorTerms[0]: ...",
        "down": "capacity reservations could not be read: TimeoutError: connect timeout on endpoint URL",
    }
    assert class_reservations(None, config, NOW) == ({}, {})
