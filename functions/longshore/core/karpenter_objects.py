"""Karpenter's objects as Longshore writes them: NodeClaims that mirror claim records, and pool/class status.

Rules:
- The claim record (DynamoDB) stays the source of truth for launching (idempotency, fencing); the
  `karpenter.sh/v1` NodeClaim object mirrors it for people and tools (`kubectl get nodeclaims`). A record
  gets an object once it is launched; the object is rewritten whenever what it should say differs, and removed
  when its record is gone.
- NodeClaim conditions follow `kubernetes-sigs/karpenter` `pkg/apis/v1/nodeclaim_status.go`: `Launched`,
  `Registered`, `Initialized` (true from the record's timestamps), `Ready` (= Initialized), `Drifted`,
  `Consolidatable` and `Disrupting` (from what the planner and the workflow say), each with the time it last
  changed: a condition whose status did not change keeps its `lastTransitionTime`, so rewriting is idempotent.
- Pool and class status follow Karpenter's readiness: `ValidationSucceeded` (the verdict of
  `config.cluster_objects`), `NodeClassReady` for pools, `CapacityReservationsReady` for classes, and `Ready`,
  true only when every other condition is. A NodePool's `status.resources` holds the `nodes` count and the
  cpu and memory of its nodes.
- `CapacityReservationsReady` (aws/karpenter-provider-aws `pkg/controllers/nodeclass/capacityreservation.go`,
  reason `CapacityReservationsReady`) is True once the class's `capacityReservationSelectorTerms` were
  resolved, also when there are none or they select nothing; False with reason
  `CapacityReservationResolutionFailed` and the failed term and EC2 error as message while a lookup fails
  (Karpenter leaves the condition as it was and retries; Longshore says so, and the class is then not Ready).
- Deleting a NodeClaim disrupts its node as Karpenter does (its `karpenter.sh/termination` finalizer holds the
  object): `deletion_commands` turns each deleted object whose claim has an instance into the `deleted`
  disruption that `kubectl delete node` starts (cordon, drain honouring PDBs, terminate, delete the Node, forget
  the claim); the object goes once its record does.
- Pure: every function returns new dicts shaped like `kubectl get -o json`; times come in as epoch seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from longshore.core import labels as wk
from longshore.core.claims import NodeClaim, instance_id_of
from longshore.core.commands import DisruptionCommand
from longshore.core.model import Requirement
from longshore.core.reservations import Reservation

NODECLAIM_API_VERSION = "karpenter.sh/v1"
TERMINATION_FINALIZER = "karpenter.sh/termination"
#: Set on a NodeClaim by Karpenter when `minValuesPolicy: BestEffort` lowered a minValues to launch it.
MIN_VALUES_RELAXED = "karpenter.sh/nodeclaim-min-values-relaxed"
MANAGED_BY = "longshore.io/managed-by"
CAPACITY_RESERVATIONS_READY = "CapacityReservationsReady"
RESERVATION_RESOLUTION_FAILED = "CapacityReservationResolutionFailed"
"""Label on every NodeClaim object Longshore writes (objects without it, such as Karpenter's, are left alone)."""


@dataclass(frozen=True, slots=True)
class ObjectVerdict:
    """Whether one cluster object is used, and if not, why (the message names object, field and value)."""

    kind: str
    name: str
    valid: bool
    message: str = ""
    used: bool = True

    @property
    def ref(self) -> str:
        return f"{RESOURCE_OF_KIND.get(self.kind, self.kind)}/{self.name}"


RESOURCE_OF_KIND = {
    "NodePool": "nodepools.karpenter.sh",
    "EC2NodeClass": "ec2nodeclasses.karpenter.k8s.aws",
    "Provisioner": "provisioners.karpenter.sh",
    "AWSNodeTemplate": "awsnodetemplates.karpenter.k8s.aws",
    "NodeOverlay": "nodeoverlays.karpenter.sh",
}


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: bool
    reason: str
    message: str = ""
    since: float | None = None  # when it became what it is, if known (else: now, unless unchanged)


def conditions(
    wanted: Sequence[Condition], previous: Iterable[Mapping[str, Any]], now: float
) -> list[dict[str, Any]]:
    """Kubernetes conditions for `wanted`; one whose status is unchanged keeps its `lastTransitionTime`."""
    before = {str(c.get("type")): c for c in previous if isinstance(c, Mapping)}
    out = []
    for condition in wanted:
        status = "True" if condition.status else "False"
        old = before.get(condition.type)
        if old is not None and old.get("status") == status and old.get("lastTransitionTime"):
            stamp = str(old["lastTransitionTime"])
        else:
            stamp = rfc3339(condition.since if condition.since is not None else now)
        out.append(
            {
                "type": condition.type,
                "status": status,
                "reason": condition.reason,
                "message": condition.message,
                "lastTransitionTime": stamp,
            }
        )
    return out


@dataclass(frozen=True, slots=True)
class ClaimFlags:
    """What the planner and the workflow know about a claim's node beyond its record."""

    drifted: str = ""  # the drift reason, "" when not drifted
    consolidatable_since: float | None = None
    disrupting: str = ""  # the disruption reason, "" when not being disrupted


def _flags_of(previous: Mapping[str, Any] | None) -> ClaimFlags:
    """The planner's flags as the object shows them (what a writer that does not know them keeps)."""
    shown = {
        str(c.get("type")): c
        for c in ((previous or {}).get("status") or {}).get("conditions") or ()
        if isinstance(c, Mapping) and c.get("status") == "True"
    }
    consolidatable = shown.get("Consolidatable")
    return ClaimFlags(
        drifted=str(shown["Drifted"].get("message") or "Drifted") if "Drifted" in shown else "",
        consolidatable_since=_epoch(consolidatable.get("lastTransitionTime")) if consolidatable else None,
        disrupting=str(shown["Disrupting"].get("reason") or "Disrupting") if "Disrupting" in shown else "",
    )


def nodeclaim_object(
    claim: NodeClaim,
    flags: ClaimFlags | None,
    previous: Mapping[str, Any] | None,
    now: float,
    *,
    capacity: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The NodeClaim object for a launched claim (see the module rules); `flags` None keeps what it shows."""
    flags = flags if flags is not None else _flags_of(previous)
    labels = {MANAGED_BY: "longshore", wk.NODEPOOL: claim.nodepool}
    for key, value in (
        (wk.INSTANCE_TYPE, claim.instance_type),
        (wk.ZONE, claim.zone),
        (wk.CAPACITY_TYPE, claim.capacity_type),
        (wk.CAPACITY_RESERVATION_ID, claim.reservation_id),
        (wk.CAPACITY_RESERVATION_TYPE, claim.reservation_type),
    ):
        if value:
            labels[key] = value
    if claim.reservation_interruptible is not None:  # launched into a reservation, as its node is labelled
        labels[wk.CAPACITY_RESERVATION_INTERRUPTIBLE] = str(claim.reservation_interruptible).lower()
    wanted = [
        Condition("Launched", claim.launched_at is not None, "Launched", since=claim.launched_at),
        Condition("Registered", claim.registered_at is not None, "Registered", since=claim.registered_at),
        Condition("Initialized", claim.initialized_at is not None, "Initialized", since=claim.initialized_at),
        Condition(
            "Drifted", bool(flags.drifted), "Drifted" if flags.drifted else "NotDrifted", flags.drifted
        ),
        Condition(
            "Consolidatable",
            flags.consolidatable_since is not None,
            "Consolidatable" if flags.consolidatable_since is not None else "NotConsolidatable",
            since=flags.consolidatable_since,
        ),
        Condition("Disrupting", bool(flags.disrupting), flags.disrupting or "NotDisrupting"),
    ]
    wanted.append(
        Condition(
            "Ready", claim.initialized_at is not None, "Ready" if claim.initialized_at else "NotInitialized"
        )
    )
    old_status = (previous or {}).get("status") or {}
    status: dict[str, Any] = {
        "conditions": conditions(wanted, old_status.get("conditions") or (), now),
    }
    if claim.provider_id:
        status["providerID"] = claim.provider_id
    if claim.node_name:
        status["nodeName"] = claim.node_name
    if claim.image_id:
        status["imageID"] = claim.image_id
    if capacity:
        status["capacity"] = dict(capacity)
    if allocatable:
        status["allocatable"] = dict(allocatable)
    requirements = [
        {"key": r.key, "operator": r.operator, "values": list(r.values)} for r in claim.requirements
    ]
    annotations: dict[str, str] = {"longshore.io/claim-state": claim.state}
    if claim.min_values_relaxed is not None:
        annotations[MIN_VALUES_RELAXED] = "true" if claim.min_values_relaxed else "false"
    return {
        "apiVersion": NODECLAIM_API_VERSION,
        "kind": "NodeClaim",
        "metadata": {
            "name": claim.id,
            "labels": labels,
            "annotations": annotations,
            "finalizers": [TERMINATION_FINALIZER],
        },
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": claim.node_class},
            "requirements": requirements,
        },
        "status": status,
    }


def deletion_commands(
    claims: Iterable[NodeClaim], deleting: Iterable[str], now: float
) -> tuple[DisruptionCommand, ...]:
    """The disruption each deleted NodeClaim object asks for: reason `deleted`, as for `kubectl delete node`
    (same execution name per instance, so a Node and its NodeClaim both deleted start one drain). A claim
    without an instance yet has nothing to drain: the lifecycle adopts or forgets it, and the object follows."""
    wanted = set(deleting)
    return tuple(
        DisruptionCommand(
            instance_id=claim.instance_id,
            reason="deleted",
            node_name=claim.node_name,
            claim_id=claim.id,
            requested_at=now,
        )
        for claim in claims
        if claim.id in wanted and claim.instance_id
    )


@dataclass(frozen=True, slots=True)
class PoolUsage:
    nodes: int = 0
    cpu_millis: int = 0
    memory_bytes: int = 0


def pool_status(
    valid: bool,
    message: str,
    class_ready: bool | None,
    previous: Mapping[str, Any] | None,
    now: float,
    usage: PoolUsage | None = None,
    reservations: tuple[Reservation, ...] | None = None,
    reservation_failure: str = "",
) -> dict[str, Any]:
    """The status of a NodePool (`class_ready` given) or an EC2NodeClass (`class_ready` None), with the
    `capacityReservations` an EC2NodeClass selects when `reservations` is given and why they could not be
    read (`reservation_failure`, "" when they were)."""
    wanted = [
        Condition("ValidationSucceeded", valid, "Valid" if valid else "Invalid", message if not valid else "")
    ]
    if class_ready is None:
        wanted.append(
            Condition(
                CAPACITY_RESERVATIONS_READY,
                not reservation_failure,
                CAPACITY_RESERVATIONS_READY if not reservation_failure else RESERVATION_RESOLUTION_FAILED,
                reservation_failure,
            )
        )
    if class_ready is not None:
        wanted.append(
            Condition(
                "NodeClassReady",
                class_ready,
                "NodeClassReady" if class_ready else "NodeClassNotReady",
                "" if class_ready else "the EC2NodeClass it names is missing or invalid",
            )
        )
    ready = all(c.status for c in wanted)
    problem = next((c.message or c.type for c in wanted if not c.status), "")
    wanted.append(Condition("Ready", ready, "Ready" if ready else "NotReady", problem))
    old = ((previous or {}).get("status") or {}).get("conditions") or ()
    status: dict[str, Any] = {"conditions": conditions(wanted, old, now)}
    if reservations is not None:  # an EC2NodeClass that selects capacity reservations (Karpenter's status)
        status["capacityReservations"] = [_reservation_status(r) for r in reservations]
    if usage is not None:
        status["resources"] = {
            "nodes": str(usage.nodes),
            "cpu": f"{usage.cpu_millis // 1000}" if usage.cpu_millis % 1000 == 0 else f"{usage.cpu_millis}m",
            "memory": f"{usage.memory_bytes // 1024**2}Mi",
        }
    return status


def _reservation_status(reservation: Reservation) -> dict[str, Any]:
    entry = reservation.status()
    if reservation.end_time is not None:
        entry["endTime"] = datetime.fromtimestamp(reservation.end_time, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return entry


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def claim_from_nodeclaim(obj: Mapping[str, Any]) -> NodeClaim | None:
    """The claim record a NodeClaim object stands for (Karpenter's or Longshore's own), for read-only views and
    for adopting a cluster Karpenter ran; None when the object names no pool. Karpenter's drift hashes are
    not Longshore's, so an adopted claim carries none (it is never drifted by hash, only by AMI or
    requirements)."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    pool = labels.get(wk.NODEPOOL)
    if not pool:
        return None
    by_type = {str(c.get("type")): c for c in status.get("conditions") or () if isinstance(c, Mapping)}

    def since(kind: str) -> float | None:
        condition = by_type.get(kind)
        if condition is None or condition.get("status") != "True":
            return None
        return _epoch(condition.get("lastTransitionTime")) or _epoch(meta.get("creationTimestamp"))

    launched, registered, initialized = since("Launched"), since("Registered"), since("Initialized")
    state = (
        "deleting"
        if meta.get("deletionTimestamp")
        else "initialized"
        if initialized is not None
        else "registered"
        if registered is not None
        else "launched"
        if launched is not None
        else "launching"
    )
    provider = str(status.get("providerID") or "")
    return NodeClaim(
        id=str(meta.get("name")),
        nodepool=str(pool),
        node_class=str((spec.get("nodeClassRef") or {}).get("name", "")),
        requirements=tuple(
            Requirement(
                str(r.get("key")), r.get("operator", "In"), tuple(str(v) for v in r.get("values") or ())
            )
            for r in spec.get("requirements") or ()
            if isinstance(r, Mapping)
        ),
        instance_type=labels.get(wk.INSTANCE_TYPE),
        zone=labels.get(wk.ZONE),
        capacity_type=labels.get(wk.CAPACITY_TYPE),
        instance_id=instance_id_of(provider),
        provider_id=provider or None,
        node_name=status.get("nodeName") or None,
        state=state,  # type: ignore[arg-type]
        launched_at=launched,
        registered_at=registered,
        initialized_at=initialized,
        created_at=_epoch(meta.get("creationTimestamp")) or 0.0,
        image_id=status.get("imageID") or None,
    )
