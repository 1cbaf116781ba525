"""The scheduler's answer: new node claims, placements on existing nodes, and why the rest cannot run.

Theory of operation: a `Plan` is a pure value. Each `ClaimPlan` is one node to launch: the pool and node
class it comes from, the narrowed requirements, the compatible instance types cheapest first (at most 60,
so a fleet request can fall back), every (type, zone, capacity type) offering it may launch with, cheapest
first, and the offering the plan priced (`instance_type`, `zone`, `capacity_type`, `price_per_hour`).
`Plan.cost_per_hour` is the sum of the priced offerings. A claim priced `reserved` names its reservation
(`reservation_id`, `core.scheduling.solver_reserved`). `to_dict` renders the stable JSON schema of
`longshore plan --json` (quantities as Kubernetes quantity strings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longshore.core.model import Pairs, Taint
from longshore.core.requirements import Requirements
from longshore.core.resources import EMPTY, Resources


@dataclass(frozen=True, slots=True)
class OfferingOption:
    """One way to launch a claim: an instance type in a zone with a capacity type, at an hourly price."""

    instance_type: str
    zone: str
    capacity_type: str
    price: float
    reservation_id: str | None = None  # reserved offerings: the reservation the claim was given
    reservation_type: str | None = None
    reservation_end: float | None = None  # a capacity block's end (epoch seconds)
    reservation_interruptible: bool | None = None


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    """One new node: what it may be, what it was priced as, and the pods it will run."""

    name: str  # placeholder hostname, unique within the plan ("<pool>-<n>")
    nodepool: str
    node_class: str
    requirements: Requirements
    instance_types: tuple[str, ...]  # cheapest first, at most `max_instance_types`
    # cheapest first (a claim spot diversity moved lists its priced offering first)
    offerings: tuple[OfferingOption, ...]
    instance_type: str
    zone: str
    capacity_type: str
    price_per_hour: float
    pods: tuple[str, ...]  # "namespace/name"
    allocatable: Resources  # of `instance_type`, before DaemonSets
    daemonset_overhead: Resources  # DaemonSet pods that would land on `instance_type`
    requests: Resources = EMPTY  # sum of the pods' requests (with one `pods` slot each)
    labels: Pairs = ()
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    # a `minValues` lowered under `minValuesPolicy: BestEffort` (None: the claim has no minValues)
    min_values_relaxed: bool | None = None

    @property
    def reservation_id(self) -> str | None:
        """The capacity reservation the claim is priced in (None unless it is priced `reserved`)."""
        if self.capacity_type != "reserved":
            return None
        priced = (self.instance_type, self.zone, self.capacity_type)
        return next(
            (
                o.reservation_id
                for o in self.offerings
                if o.reservation_id and (o.instance_type, o.zone, o.capacity_type) == priced
            ),
            None,
        )


@dataclass(frozen=True, slots=True)
class ExistingPlacement:
    """Pods planned onto a node that exists (or an in-flight claim)."""

    node: str
    pods: tuple[str, ...]
    in_flight: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    new_claims: tuple[ClaimPlan, ...] = ()
    existing: tuple[ExistingPlacement, ...] = ()
    unschedulable: tuple[tuple[str, str], ...] = ()  # (pod key, reason)

    @property
    def cost_per_hour(self) -> float:
        return round(sum(claim.price_per_hour for claim in self.new_claims), 6)

    def placements(self) -> dict[str, str]:
        """Pod key -> node name (existing node, or the claim's placeholder name)."""
        found: dict[str, str] = {}
        for placement in self.existing:
            found.update(dict.fromkeys(placement.pods, placement.node))
        for claim in self.new_claims:
            found.update(dict.fromkeys(claim.pods, claim.name))
        return found

    def reason_for(self, pod_key: str) -> str | None:
        return dict(self.unschedulable).get(pod_key)

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON schema of `longshore plan --json`."""
        return {
            "nodeclaims": [
                {
                    "name": claim.name,
                    "nodepool": claim.nodepool,
                    "node_class": claim.node_class,
                    "instance_type": claim.instance_type,
                    "instance_types": list(claim.instance_types),
                    "zone": claim.zone,
                    "capacity_type": claim.capacity_type,
                    "price_per_hour": claim.price_per_hour,
                    "allocatable": claim.allocatable.to_quantities(),
                    "daemonset_overhead": claim.daemonset_overhead.to_quantities(),
                    "requests": claim.requests.to_quantities(),
                    "labels": dict(claim.labels),
                    "offerings": [
                        {
                            "instance_type": o.instance_type,
                            "zone": o.zone,
                            "capacity_type": o.capacity_type,
                            "price": o.price,
                            **(
                                {"reservation_id": o.reservation_id, "reservation_type": o.reservation_type}
                                if o.reservation_id
                                else {}
                            ),
                        }
                        for o in claim.offerings[:20]
                    ],
                    "pods": list(claim.pods),
                    **(
                        {}
                        if claim.min_values_relaxed is None
                        else {"min_values_relaxed": claim.min_values_relaxed}
                    ),
                    **({"reservation_id": claim.reservation_id} if claim.reservation_id else {}),
                }
                for claim in self.new_claims
            ],
            "existing": [
                {"node": placement.node, "in_flight": placement.in_flight, "pods": list(placement.pods)}
                for placement in self.existing
            ],
            "unschedulable": [{"pod": pod, "reason": reason} for pod, reason in self.unschedulable],
            "cost_per_hour": self.cost_per_hour,
        }
