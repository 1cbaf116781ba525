"""Keep Karpenter's objects in the cluster in step with what Longshore knows (decide in `core.karpenter_objects`,
act through `ports.karpenter`).

Rules:
- Pools and classes: every object the merge judged gets the status its verdict says, written only when it
  differs from what the object shows; an object that becomes invalid (or is first seen invalid) also gets a
  Warning Event `InvalidNodePool` / `InvalidEC2NodeClass` carrying the message that names field and value.
- Claims: every launched claim record has a NodeClaim object labelled `longshore.io/managed-by`; it is written
  when it differs. A managed NodeClaim object without a record is released (finalizer removed, deleted): the
  record is the source of truth and is only removed once the instance is gone. Objects without the label
  (Karpenter's own, before a takeover) are never touched.
- A managed NodeClaim being deleted (`deletionTimestamp` set while its record lives) is reported in
  `ClaimSync.deleting`: the caller disrupts its node as Karpenter does (`disrupt_deleted`: the `deleted`
  workflow of `kubectl delete node`, started again on every call while the object lingers, which the workflow
  port makes a no-op while it runs), and the object goes once the record does.
- Reads happen once per call; a failed write is left for the next pass (each write is idempotent).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longshore.core.claims import NodeClaim
from longshore.core.karpenter_objects import (
    MANAGED_BY,
    ClaimFlags,
    ObjectVerdict,
    PoolUsage,
    deletion_commands,
    nodeclaim_object,
    pool_status,
)
from longshore.core.reservations import Reservation
from longshore.ports.clock import Clock
from longshore.ports.karpenter import KarpenterObjects, Kind
from longshore.ports.kube import KubeEvent, ObjectRef
from longshore.ports.workflow import DisruptionWorkflow, StartResult

log = logging.getLogger(__name__)

MIRRORED_STATES = frozenset({"launched", "registered", "initialized", "deleting"})


@dataclass(frozen=True, slots=True)
class ClaimSync:
    written: tuple[str, ...] = ()
    released: tuple[str, ...] = ()
    deleting: tuple[str, ...] = ()  # claim ids whose NodeClaim object a user deleted


def _status_differs(current: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    return (current or {}).get("status") != wanted


def _ready(obj: Mapping[str, Any] | None) -> bool:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


class KarpenterObjectSync:
    def __init__(self, objects: KarpenterObjects, events: Any, clock: Clock) -> None:
        """`events` is anything with `post_event(KubeEvent)` (`ports.kube.Cluster`)."""
        self._objects = objects
        self._events = events
        self._clock = clock

    def publish_pools(
        self,
        verdicts: Sequence[ObjectVerdict],
        usage: Mapping[str, PoolUsage],
        reserved: Mapping[str, tuple[Reservation, ...]] | None = None,
        reservation_failures: Mapping[str, str] | None = None,
    ) -> int:
        """Write the status of every judged pool and class (with the capacity reservations of the classes in
        `reserved`, and `CapacityReservationsReady` False for those in `reservation_failures`); returns how many
        statuses were written."""
        now = self._clock.now()
        current: dict[tuple[str, str], dict[str, Any]] = {}
        kinds: tuple[Kind, ...] = ("NodePool", "EC2NodeClass")
        for kind in kinds:
            for listed in self._objects.list_objects(kind):
                current[(kind, str((listed.get("metadata") or {}).get("name")))] = listed
        classes_ok = {v.name for v in verdicts if v.kind == "EC2NodeClass" and v.valid}
        written = 0
        for verdict in verdicts:
            obj = current.get((verdict.kind, verdict.name))
            if obj is None or verdict.kind not in ("NodePool", "EC2NodeClass"):
                continue
            class_ready = None
            if verdict.kind == "NodePool":
                ref = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get(
                    "nodeClassRef"
                ) or {}
                name = str(ref.get("name", ""))
                class_ready = name in classes_ok or _ready(current.get(("EC2NodeClass", name)))
            status = pool_status(
                verdict.valid,
                verdict.message,
                class_ready,
                obj,
                now,
                usage.get(verdict.name) if class_ready is not None else None,
                (reserved or {}).get(verdict.name) if verdict.kind == "EC2NodeClass" else None,
                (reservation_failures or {}).get(verdict.name, "") if verdict.kind == "EC2NodeClass" else "",
            )
            if not _status_differs(obj, status):
                continue
            self._objects.write_status(verdict.kind, verdict.name, status)  # type: ignore[arg-type]
            written += 1
            if not verdict.valid and (_ready(obj) or not (obj.get("status") or {}).get("conditions")):
                self._warn(verdict)
        return written

    def _warn(self, verdict: ObjectVerdict) -> None:
        api_version = "karpenter.sh/v1" if verdict.kind == "NodePool" else "karpenter.k8s.aws/v1"
        self._events.post_event(
            KubeEvent(
                involved=ObjectRef(kind=verdict.kind, name=verdict.name, api_version=api_version),
                reason=f"Invalid{verdict.kind}",
                message=verdict.message[:1000],
                type="Warning",
            )
        )
        log.warning("invalid %s not used", verdict.ref, extra={"reason": verdict.message})

    def publish_claims(
        self, claims: Sequence[NodeClaim], flags: Mapping[str, ClaimFlags] | None = None
    ) -> ClaimSync:
        """Mirror launched claim records as NodeClaim objects (see the module rules). `flags` None: a writer
        that does not know the planner's flags (the provisioner) keeps the ones each object shows."""
        now = self._clock.now()
        kind: Kind = "NodeClaim"
        existing = {str((o.get("metadata") or {}).get("name")): o for o in self._objects.list_objects(kind)}
        live = {c.id: c for c in claims if c.state in MIRRORED_STATES}
        written, released, deleting = [], [], []
        for claim in live.values():
            previous = existing.get(claim.id)
            if previous is not None and (previous.get("metadata") or {}).get("deletionTimestamp"):
                deleting.append(claim.id)
            known = None if flags is None else flags.get(claim.id, ClaimFlags())
            wanted = nodeclaim_object(claim, known, previous, now)
            if previous is None or _differs(previous, wanted):
                self._objects.apply(kind, wanted)
                written.append(claim.id)
        for name, obj in existing.items():
            managed = ((obj.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY) == "longshore"
            if managed and name not in live:
                self._objects.release_object(kind, name)
                released.append(name)
        return ClaimSync(tuple(written), tuple(released), tuple(deleting))


def publish(
    sync: KarpenterObjectSync,
    claims: Sequence[NodeClaim],
    verdicts: Sequence[ObjectVerdict],
    workflow: DisruptionWorkflow | None,
    now: float,
    reserved: Mapping[str, tuple[Reservation, ...]] | None = None,
    reservation_failures: Mapping[str, str] | None = None,
) -> ClaimSync:
    """One provisioner invocation's update of Karpenter's objects: pool and class status (with each pool's
    node count), a NodeClaim per launched claim, and the disruption of every NodeClaim a user deleted
    (`workflow` None: no state machine, deleted objects wait)."""
    usage: dict[str, PoolUsage] = {}
    for claim in claims:
        if claim.state in ("launched", "registered", "initialized"):
            seen = usage.get(claim.nodepool, PoolUsage())
            usage[claim.nodepool] = PoolUsage(seen.nodes + 1, seen.cpu_millis, seen.memory_bytes)
    sync.publish_pools(verdicts, usage, reserved, reservation_failures)
    synced = sync.publish_claims(claims)
    if synced.deleting and workflow is not None:  # `kubectl delete nodeclaim`
        disrupt_deleted(workflow, claims, synced.deleting, now)
    return synced


def disrupt_deleted(
    workflow: DisruptionWorkflow, claims: Sequence[NodeClaim], deleting: Sequence[str], now: float
) -> tuple[StartResult, ...]:
    """`kubectl delete nodeclaim`: start the `deleted` disruption of each deleted object's node."""
    results = []
    for command in deletion_commands(claims, deleting, now):
        result = workflow.start(command)
        results.append(result)
        if result.started:
            log.warning(
                "nodeclaim deleted: draining its node and terminating its instance",
                extra={
                    "claim": command.claim_id,
                    "node": command.node_name,
                    "execution": result.execution_name,
                },
            )
    return tuple(results)


def _differs(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    meta, want_meta = current.get("metadata") or {}, wanted.get("metadata") or {}
    return (
        current.get("spec") != wanted.get("spec")
        or current.get("status") != wanted.get("status")
        or any(meta.get(k) != want_meta.get(k) for k in ("labels", "annotations", "finalizers"))
    )
