"""Node claims: the record of one node we decided to launch, its state machine, and the lifecycle decisions.

Theory of operation: a `NodeClaim` is the durable promise "a node of this pool will exist for these pods". Its
id is deterministic from the plan (`claim_id_for(pool, pods, generation)`), so a retried, crashed or
concurrent provisioner run that plans the same thing computes the same id, and the store's conditional write
(`ClaimStore.create_if_absent`) lets exactly one run own the launch. The claim is written in state
`launching` *before* CreateFleet, with a launch-attempt lease (`attempt_until`): another run that finds the
record in `launching` does nothing while the lease runs, and afterwards may take the attempt over (compare
and set on `version`), first looking for an instance already tagged with the claim id (adopt) before
launching again with the same `ClientToken` (`client_token(claim_id, attempt)`).

States move along `TRANSITIONS` only (a table, one rule per row):

    planned -> launching -> launched -> registered -> initialized
    any non-final state -> deleting

`decide_lifecycle` turns what is observed (the node with the claim's providerID, the instance) into one
`LifecycleDecision` per claim; `decide_orphans` picks instances tagged for the cluster that no claim owns.
Both are pure: adapters carry the decisions out, and the handler emits the metric names they return.
Timeouts follow Karpenter's liveness controller: launch 5 min, registration 15 min; orphan instances are
collected only after a grace period so a just-launched instance whose record is being written is adopted,
not killed (Karpenter's instance GC waits 30 s).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from longshore.core import telemetry
from longshore.core.model import Pairs, Requirement, Taint
from longshore.core.taints import is_ephemeral

ClaimState = Literal["planned", "launching", "launched", "registered", "initialized", "deleting"]
CapacityType = Literal["spot", "on-demand", "reserved"]

LAUNCH_TIMEOUT_S: Final = 5 * 60.0
REGISTRATION_TIMEOUT_S: Final = 15 * 60.0
LAUNCH_ATTEMPT_LEASE_S: Final = 60.0
ORPHAN_GRACE_S: Final = 60.0

#: Rule: a claim only moves along these edges; `deleting` is reachable from every live state.
TRANSITIONS: Final[Mapping[ClaimState, frozenset[ClaimState]]] = {
    "planned": frozenset({"launching", "deleting"}),
    "launching": frozenset({"launched", "deleting"}),
    "launched": frozenset({"registered", "deleting"}),
    "registered": frozenset({"initialized", "deleting"}),
    "initialized": frozenset({"deleting"}),
    "deleting": frozenset(),
}

#: States in which the claim stands for capacity that will exist (counted by the next plan).
IN_FLIGHT_STATES: Final = frozenset({"launching", "launched", "registered"})


class InvalidTransitionError(ValueError):
    """A claim was asked to move along an edge that `TRANSITIONS` does not have."""


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """One node we launch (or launched) for a pool; the store keeps one record per claim."""

    id: str
    nodepool: str
    node_class: str
    requirements: tuple[Requirement, ...] = ()
    instance_types: tuple[str, ...] = ()
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    price: float | None = None
    instance_id: str | None = None
    node_name: str | None = None
    provider_id: str | None = None
    state: ClaimState = "planned"
    launched_at: float | None = None
    registered_at: float | None = None
    initialized_at: float | None = None
    created_at: float = 0.0
    pods: tuple[str, ...] = ()
    image_id: str | None = None
    launch_template: str | None = None
    attempt_until: float | None = None  # launch-attempt lease: nobody else launches this claim before it
    attempts: int = 0  # CreateFleet attempts so far; part of the ClientToken
    reason: str = ""  # why the claim is in its state (last launch failure, timeout...)
    version: int = 0  # optimistic concurrency: the store compares it on `compare_and_put`
    # Drift: the hashes of the pool and node class the node was built from (`core.disruption.drift`),
    # set when the claim is created; None for claims written before they existed (never drifted by hash).
    nodepool_hash: str | None = None
    nodeclass_hash: str | None = None
    # The nodes a planner decision launched this claim to take over from (surge replacements): read back by
    # every later pass, so a cold planner still knows those nodes are being disrupted.
    replaces: tuple[str, ...] = ()
    disruption_reason: str = ""  # for a replacement: why the nodes it `replaces` are disrupted (drifted...)
    # The planner's consolidateAfter clock, kept here so a cold container decides what a warm one would:
    # when a (non-DaemonSet) pod last arrived on or left the node, and whether the node had such pods then.
    last_pod_event_at: float | None = None
    had_pods: bool = False
    # `minValuesPolicy: BestEffort` lowered a `minValues` to launch it (None: the pool has none); shown as
    # Karpenter's `karpenter.sh/nodeclaim-min-values-relaxed` annotation
    min_values_relaxed: bool | None = None
    # Capacity reservations (`core.reservations`): the reservation the instance runs in, its type, and for a
    # capacity block its end (epoch seconds; the planner drains the node 40 min before it); whether the
    # reservation is interruptible (None: not launched into one)
    reservation_id: str | None = None
    reservation_type: str | None = None
    reservation_end: float | None = None
    reservation_interruptible: bool | None = None
    # A static pool's scale-down chose this claim's node for removal then (written before its workflow starts),
    # so every provisioner, a cold one too, counts it as leaving (`services.static_pools`).
    removal_started_at: float | None = None

    @property
    def in_flight(self) -> bool:
        return self.state in IN_FLIGHT_STATES


def claim_id_for(nodepool: str, pod_keys: Iterable[str], generation: int | str = 0) -> str:
    """A deterministic claim id: the same pool, pod set and plan generation always give the same id."""
    digest = hashlib.sha256()
    digest.update(nodepool.encode())
    for key in sorted(set(pod_keys)):
        digest.update(b"\0" + key.encode())
    digest.update(b"\0#" + str(generation).encode())
    return f"{nodepool}-{digest.hexdigest()[:10]}"


def client_token(claim_id: str, attempt: int = 0, created_at: float = 0.0) -> str:
    """The CreateFleet ClientToken (<= 64 ASCII chars) for one launch attempt of one incarnation of a claim.

    The same claim, creation time and attempt always give the same token, so EC2 de-duplicates a request that
    botocore re-sends after a lost response. A new attempt (other overrides) or a claim re-created after it was
    forgotten (same id, new `created_at`) needs a new token: EC2 would otherwise answer with the old fleet.
    """
    return "longshore-" + hashlib.sha256(f"{claim_id}#{created_at!r}#{attempt}".encode()).hexdigest()[:40]


def provider_id(zone: str, instance_id: str) -> str:
    """Kubernetes `spec.providerID` of an EC2 node: `aws:///<zone>/<instance-id>`."""
    return f"aws:///{zone}/{instance_id}"


def instance_id_of(provider_id_value: str) -> str | None:
    """The instance id in an `aws:///<zone>/<id>` providerID, or None when it is not one."""
    if not provider_id_value.startswith("aws:///"):
        return None
    tail = provider_id_value.rsplit("/", 1)[-1]
    return tail if tail.startswith("i-") else None


def transition(claim: NodeClaim, to: ClaimState, **changes: object) -> NodeClaim:
    """The claim in state `to` with `changes` applied; raises `InvalidTransitionError` off the table."""
    if to != claim.state and to not in TRANSITIONS[claim.state]:
        raise InvalidTransitionError(f"node claim {claim.id}: cannot go from {claim.state} to {to}")
    return replace(claim, state=to, **changes)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------------------
# Launching


@dataclass(frozen=True, slots=True)
class KubeletSettings:
    """The kubelet values baked into user data for one instance type (they must agree with the plan)."""

    max_pods: int | None = None
    kube_reserved: Pairs = ()
    system_reserved: Pairs = ()
    eviction_hard: Pairs = ()


@dataclass(frozen=True, slots=True)
class LaunchOption:
    """One (instance type, zone, capacity type) the claim may launch as, with what the launch needs to know."""

    instance_type: str
    zone: str
    capacity_type: str
    price: float
    arch: str = "x86_64"  # "x86_64" | "arm64"
    accelerator: str = ""  # "" | "nvidia" | "neuron": picks the AMI variant
    kubelet: KubeletSettings = field(default_factory=KubeletSettings)
    efa: int = 0  # EFA interfaces to attach: the type's vpc.amazonaws.com/efa when the claim requests it
    reservation_id: str | None = None  # reserved options: the capacity reservation the launch targets
    reservation_type: str | None = None  # "default" | "capacity-block"
    reservation_end: float | None = None
    reservation_interruptible: bool | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.instance_type, self.zone, self.capacity_type)


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """Launch one claim: the claim (id fixed by the plan), its options cheapest first, and the node's labels.

    `labels` are the node labels beyond the pool's own (single-valued requirements of the plan); the pool's
    labels, taints and startup taints and the node class come from the cluster config by name.
    """

    claim: NodeClaim
    options: tuple[LaunchOption, ...]
    labels: Pairs = ()


@dataclass(frozen=True, slots=True)
class OfferingFailure:
    """One override EC2 could not fulfil, with EC2's error code."""

    instance_type: str
    zone: str
    capacity_type: str
    code: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class FleetOutcome:
    """One fleet call: the instance it launched (if any), its launch template and image, and the overrides
    it refused."""

    instance_id: str | None
    instance_type: str | None
    zone: str | None
    launch_template: str | None
    failures: tuple[OfferingFailure, ...]
    image_id: str | None = None


@dataclass(frozen=True, slots=True)
class MetricPoint:
    """A metric to emit: a name from `core.telemetry`, a value, and its dimensions."""

    name: str
    value: float = 1.0
    dimensions: Pairs = ()


LaunchStatus = Literal["launched", "adopted", "exists", "in_progress", "failed"]


@dataclass(frozen=True, slots=True)
class LaunchResult:
    """What became of a launch request.

    `launched`: this call created the instance. `adopted`: an instance tagged with the claim id already existed
    (a crashed run launched it) and the record now points at it. `exists`: the claim was already launched.
    `in_progress`: another run holds the launch attempt. `failed`: no instance; the claim was forgotten so its
    pods are planned again (`reason` says why, `failures` lists the overrides EC2 refused).
    """

    claim_id: str
    status: LaunchStatus
    claim: NodeClaim | None = None
    failures: tuple[OfferingFailure, ...] = ()
    reason: str = ""
    fleet_calls: int = 0
    metrics: tuple[MetricPoint, ...] = ()

    @property
    def instance_id(self) -> str | None:
        return self.claim.instance_id if self.claim else None

    @property
    def ok(self) -> bool:
        return self.status in ("launched", "adopted", "exists")


def launch_metrics(
    result_claim: NodeClaim | None, failures: Iterable[OfferingFailure], reason: str
) -> tuple[MetricPoint, ...]:
    """Metric points for a launch: one `NodeClaimsCreated` on success, one `LaunchFailures` per failure code."""
    points: list[MetricPoint] = []
    for failure in failures:
        points.append(MetricPoint(telemetry.LAUNCH_FAILURES, 1.0, ((telemetry.DIM_REASON, failure.code),)))
    if result_claim is not None and result_claim.instance_id is not None:
        dims = (
            (telemetry.DIM_CAPACITY_TYPE, result_claim.capacity_type or ""),
            (telemetry.DIM_INSTANCE_TYPE, result_claim.instance_type or ""),
            (telemetry.DIM_NODEPOOL, result_claim.nodepool),
        )
        points.append(MetricPoint(telemetry.CLAIMS_CREATED, 1.0, dims))
    elif reason:
        points.append(MetricPoint(telemetry.LAUNCH_FAILURES, 1.0, ((telemetry.DIM_REASON, reason),)))
    return tuple(points)


# --------------------------------------------------------------------------------------------------------------
# Lifecycle


@dataclass(frozen=True, slots=True)
class CloudInstance:
    """An EC2 instance as the lifecycle sees it (read from DescribeInstances and its tags)."""

    instance_id: str
    state: str  # pending | running | shutting-down | terminated | stopping | stopped
    instance_type: str
    zone: str
    capacity_type: str
    claim_id: str | None = None
    nodepool: str | None = None
    created_at: float = 0.0  # the `longshore.io/created-at` tag (our clock), else EC2's LaunchTime
    image_id: str | None = None
    reservation_id: str | None = None  # `CapacityReservationId` while the instance runs in a reservation
    reservation_type: str | None = None  # "default" | "capacity-block" (`InstanceLifecycle: capacity-block`)
    partition: int | None = None  # `Placement.PartitionNumber` in a partition placement group

    @property
    def alive(self) -> bool:
        return self.state in ("pending", "running", "stopping", "stopped")


@dataclass(frozen=True, slots=True)
class NodeObservation:
    """A Kubernetes node as the lifecycle sees it."""

    name: str
    provider_id: str
    ready: bool
    taints: tuple[Taint, ...] = ()
    labels: Pairs = ()
    deleting: bool = False  # metadata.deletionTimestamp is set (`kubectl delete node`), finalizers hold it
    finalizers: tuple[str, ...] = ()


LifecycleAction = Literal[
    "none",
    "adopt",  # a launching claim whose instance exists: record it
    "register",  # the node appeared: record it, sync labels/taints, remove the unregistered taint
    "initialize",  # the node is Ready and its startup/ephemeral taints are gone
    "launch_timeout",  # no instance 5 min after the claim was written: forget the claim
    "registration_timeout",  # no node 15 min after launch: terminate the instance, forget the claim
    "instance_gone",  # the instance terminated under us (interruption, manual): forget the claim
    "node_deleted",  # the Node is being deleted: drain and terminate through the workflow (reason `deleted`)
    "node_gone",  # the Node vanished while the instance runs: terminate the instance, forget the claim
]


@dataclass(frozen=True, slots=True)
class LifecycleDecision:
    claim_id: str
    action: LifecycleAction
    instance_id: str | None = None
    node_name: str | None = None
    reason: str = ""
    metric: str | None = None  # a `core.telemetry` name to count once when the action is carried out


def _startup_taints_gone(node: NodeObservation, startup_taints: Iterable[Taint]) -> bool:
    startup = {(t.key, t.effect) for t in startup_taints}
    return not any(is_ephemeral(t) or (t.key, t.effect) in startup for t in node.taints)


def decide_lifecycle(
    claim: NodeClaim,
    node: NodeObservation | None,
    instance: CloudInstance | None,
    now: float,
    startup_taints: Iterable[Taint] = (),
) -> LifecycleDecision:
    """The one thing to do next for `claim`, given its node (by providerID) and its instance (by id or tag).

    Rules, in order:
    1. `launching` with an instance found: adopt it; without one, forget the claim once `LAUNCH_TIMEOUT_S`
       has passed since it was written (and its attempt lease ran out).
    2. `launched`/`registered`/`initialized` whose instance is gone: forget the claim.
    3. `registered`/`initialized` whose Node is being deleted: drain and terminate (`node_deleted`); whose
       Node is gone while the instance lives: terminate and forget (`node_gone`): nothing else would ever
       stop that instance.
    4. `launched` with a node: register; without one after `REGISTRATION_TIMEOUT_S`: terminate and forget.
    5. `registered` whose node is Ready without startup or ephemeral taints: initialize.
    """
    if claim.state == "launching":
        if instance is not None and instance.alive:
            return LifecycleDecision(
                claim.id, "adopt", instance_id=instance.instance_id, reason="instance found by claim tag"
            )
        lease_over = claim.attempt_until is None or claim.attempt_until <= now
        if lease_over and now - claim.created_at >= LAUNCH_TIMEOUT_S:
            return LifecycleDecision(
                claim.id,
                "launch_timeout",
                reason="no instance within the launch timeout",
                metric=telemetry.LAUNCH_TIMEOUTS,
            )
        return LifecycleDecision(claim.id, "none")
    if claim.state in ("launched", "registered", "initialized") and (instance is None or not instance.alive):
        state = instance.state if instance else "not found"
        return LifecycleDecision(
            claim.id, "instance_gone", instance_id=claim.instance_id, reason=f"instance {state}"
        )
    if claim.state in ("registered", "initialized"):
        if node is not None and node.deleting:
            return LifecycleDecision(
                claim.id, "node_deleted", instance_id=claim.instance_id, node_name=node.name, reason="deleted"
            )
        if node is None and claim.node_name:
            return LifecycleDecision(
                claim.id,
                "node_gone",
                instance_id=claim.instance_id,
                node_name=claim.node_name,
                reason=f"node {claim.node_name} is gone while its instance runs",
            )
    if claim.state == "launched":
        if node is not None:
            return LifecycleDecision(
                claim.id,
                "register",
                instance_id=claim.instance_id,
                node_name=node.name,
                metric=telemetry.NODES_REGISTERED,
            )
        since = claim.launched_at if claim.launched_at is not None else claim.created_at
        if now - since >= REGISTRATION_TIMEOUT_S:
            return LifecycleDecision(
                claim.id,
                "registration_timeout",
                instance_id=claim.instance_id,
                reason="no node registered within the registration timeout",
                metric=telemetry.REGISTRATION_TIMEOUTS,
            )
        return LifecycleDecision(claim.id, "none")
    if (
        claim.state == "registered"
        and node is not None
        and node.ready
        and _startup_taints_gone(node, startup_taints)
    ):
        return LifecycleDecision(
            claim.id,
            "initialize",
            instance_id=claim.instance_id,
            node_name=node.name,
            metric=telemetry.NODES_INITIALIZED,
        )
    return LifecycleDecision(claim.id, "none")


def decide_orphans(
    instances: Iterable[CloudInstance],
    claims: Iterable[NodeClaim],
    now: float,
    grace_s: float = ORPHAN_GRACE_S,
) -> tuple[CloudInstance, ...]:
    """Live instances tagged for the cluster that no claim owns (by instance id or claim tag), older than the grace.

    An instance whose claim tag names an existing claim that has no instance yet is never an orphan: that claim
    adopts it. One whose claim already records another instance (a duplicate launch) is an orphan.
    """
    claim_list = tuple(claims)
    owned_ids = {c.instance_id for c in claim_list if c.instance_id}
    claim_ids = {c.id for c in claim_list if not c.instance_id}
    return tuple(
        i
        for i in instances
        if i.alive
        and i.instance_id not in owned_ids
        and (i.claim_id is None or i.claim_id not in claim_ids)
        and now - i.created_at >= grace_s
    )
