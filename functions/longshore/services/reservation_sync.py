"""Capacity reservations as the provisioner's passes see them: which reservations each node class selects
(`reservations_by_class`; for the EC2NodeClass status, with why they could not be read: `class_reservations`),
and nodes whose instance left its capacity reservation become on-demand (aws/karpenter-provider-aws
`pkg/controllers/capacityreservation/capacitytype/controller.go`).

Rule: when a reservation expires or is cancelled, EC2 keeps its instances running as on-demand and
DescribeInstances no longer shows their `CapacityReservationId` (`adapters.aws.instances.capacity_type_of`
then reads them as on-demand). On every lifecycle pass that reads EC2, a registered node still labelled
`karpenter.sh/capacity-type=reserved` whose instance now reads as on-demand is relabelled
`capacity-type=on-demand` and loses `karpenter.k8s.aws/capacity-reservation-id`, as Karpenter does (it keeps
`-type`); its claim record follows (capacity type, no reservation, no end), so the planner prices it at
on-demand from then on and never drains it for a Capacity Block's end. Deleting nodes are left alone (they
are already draining). Only reserved → on-demand is synced: an instance never becomes reserved later.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace

from longshore.core import labels as wk
from longshore.core.claims import CloudInstance, NodeClaim, NodeObservation, instance_id_of
from longshore.core.model import ClusterConfig
from longshore.core.reservations import ByClass, Reservation
from longshore.ports.cloud import CapacityReservations
from longshore.ports.kube import Cluster, NodePatch
from longshore.ports.store import ClaimStore

log = logging.getLogger(__name__)


def relabel_left_reservations(
    cluster: Cluster,
    store: ClaimStore,
    nodes: Iterable[NodeObservation],
    instances: Mapping[str, CloudInstance],
    claims: Iterable[NodeClaim],
) -> tuple[str, ...]:
    """Relabel the nodes whose instance left its reservation (module docstring); their names."""
    done: list[str] = []
    for node in nodes:
        if node.deleting or dict(node.labels).get(wk.CAPACITY_TYPE) != wk.CAPACITY_TYPE_RESERVED:
            continue
        instance = instances.get(instance_id_of(node.provider_id) or "")
        if instance is None or instance.capacity_type != wk.CAPACITY_TYPE_ON_DEMAND:
            continue
        cluster.patch_node(
            node.name,
            NodePatch(
                labels=((wk.CAPACITY_TYPE, wk.CAPACITY_TYPE_ON_DEMAND), (wk.CAPACITY_RESERVATION_ID, None))
            ),
        )
        log.info(
            "updated capacity type for node: its capacity reservation ended",
            extra={"node": node.name, "instance": instance.instance_id},
        )
        done.append(node.name)
    for claim in claims:  # apart from the node: a lost write is retried on the next pass
        instance = instances.get(claim.instance_id or "")
        if claim.capacity_type != wk.CAPACITY_TYPE_RESERVED or claim.state == "deleting" or instance is None:
            continue
        if instance.capacity_type == wk.CAPACITY_TYPE_ON_DEMAND:
            store.compare_and_put(
                replace(  # price None: priced at on-demand from the catalog from now on
                    claim,
                    capacity_type=wk.CAPACITY_TYPE_ON_DEMAND,
                    price=None,
                    reservation_id=None,
                    reservation_end=None,
                )
            )
    return tuple(done)


def reservations_by_class(
    reservations: CapacityReservations | None, config: ClusterConfig, now: float
) -> ByClass:
    """The active capacity reservations of the node classes that select some, of the pools the provisioner
    plans (not static pools)."""
    if reservations is None:
        return ()
    wanted = {p.node_class for p in config.node_pools if p.replicas is None}
    return tuple(
        sorted(
            (node_class.name, reservations.list(node_class, now))
            for node_class in config.node_classes
            if node_class.name in wanted and node_class.capacity_reservation_selector_terms
        )
    )


def class_reservations(
    reservations: CapacityReservations | None, config: ClusterConfig, now: float
) -> tuple[dict[str, tuple[Reservation, ...]], dict[str, str]]:
    """For the EC2NodeClass status: the reservations of every node class that selects some, and why the lookup
    failed for the classes where it did (`ports.cloud.CapacityReservations.failure`; an unexpected error names
    its type). A class without terms has neither: its `CapacityReservationsReady` is True."""
    found: dict[str, tuple[Reservation, ...]] = {}
    failures: dict[str, str] = {}
    if reservations is None:
        return found, failures
    for node_class in config.node_classes:
        if not node_class.capacity_reservation_selector_terms:
            continue
        try:
            found[node_class.name] = reservations.list(node_class, now)
        except Exception as error:  # the status says so; provisioning is not stopped by it
            failures[node_class.name] = (
                f"capacity reservations could not be read: {type(error).__name__}: {error}"
            )
            continue
        if problem := reservations.failure(node_class):
            failures[node_class.name] = problem
    return found, failures
