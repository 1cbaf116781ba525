"""Node lifecycle, carried out: registration, initialization, launch and registration timeouts, orphans.

Theory of operation: one `reconcile` pass reads every claim from the store, every instance tagged for the
cluster from EC2 (one DescribeInstances), and the nodes the caller observed in Kubernetes, then asks the pure
`core.claims.decide_lifecycle` what to do with each claim and `decide_orphans` which instances nobody owns.
It carries the decisions out against the ports (store writes with compare-and-put, so a concurrent launcher
or another pass wins cleanly; EC2 terminations), logs one line per action, and returns what it did with the
metric points to emit. Changes to Kubernetes objects are returned, not made (`NodeRegistration`: labels to add
and the unregistered taint to remove), because this module does not talk to the API server; the caller that
holds the Kubernetes client applies them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from longshore.core import labels as wellknown
from longshore.core import telemetry
from longshore.core.claims import (
    ORPHAN_GRACE_S,
    CloudInstance,
    LifecycleDecision,
    MetricPoint,
    NodeClaim,
    NodeObservation,
    decide_lifecycle,
    decide_orphans,
    instance_id_of,
    provider_id,
    registration_taints_to_remove,
    transition,
)
from longshore.core.model import ClusterConfig, Taint
from longshore.ports.cloud import Instances
from longshore.ports.store import ClaimStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NodeRegistration:
    """What registration changes on the Node: labels to set and taints to remove."""

    node_name: str
    claim_id: str
    labels: tuple[tuple[str, str], ...]
    remove_taints: tuple[Taint, ...]


@dataclass(frozen=True, slots=True)
class LifecycleReport:
    decisions: tuple[LifecycleDecision, ...] = ()
    registrations: tuple[NodeRegistration, ...] = ()
    terminated: tuple[str, ...] = ()  # instance ids
    forgotten: tuple[str, ...] = ()  # claim ids
    orphans: tuple[str, ...] = ()  # instance ids terminated as orphans
    metrics: tuple[MetricPoint, ...] = ()

    def actions(self, action: str) -> tuple[str, ...]:
        """Claim ids that got `action` in this pass."""
        return tuple(d.claim_id for d in self.decisions if d.action == action)


def _startup_taints(config: ClusterConfig, claim: NodeClaim) -> tuple[Taint, ...]:
    try:
        return config.pool(claim.nodepool).startup_taints
    except KeyError:
        return ()


def _pool_labels(config: ClusterConfig, claim: NodeClaim) -> tuple[tuple[str, str], ...]:
    labels = {
        wellknown.NODEPOOL: claim.nodepool,
        wellknown.NODECLASS: claim.node_class,
        wellknown.REGISTERED: "true",
    }
    with contextlib.suppress(KeyError):
        labels = {**dict(config.pool(claim.nodepool).labels), **labels}
    return tuple(sorted(labels.items()))


def reconcile(
    store: ClaimStore,
    instances: Instances,
    nodes: Iterable[NodeObservation],
    config: ClusterConfig,
    now: float,
    orphan_grace_s: float | None = None,
) -> LifecycleReport:
    """One lifecycle pass over every claim and every instance tagged for the cluster."""
    claims = store.list()
    owned = instances.list_owned()
    by_id = {i.instance_id: i for i in owned}
    by_claim = {i.claim_id: i for i in owned if i.claim_id}
    node_by_instance = {instance_id_of(n.provider_id): n for n in nodes}

    decisions: list[LifecycleDecision] = []
    registrations: list[NodeRegistration] = []
    terminated: list[str] = []
    forgotten: list[str] = []
    metrics: list[MetricPoint] = []
    survivors: list[NodeClaim] = []

    for claim in claims:
        instance: CloudInstance | None = (
            by_id.get(claim.instance_id) if claim.instance_id else by_claim.get(claim.id)
        )
        node = node_by_instance.get(claim.instance_id) if claim.instance_id else None
        decision = decide_lifecycle(claim, node, instance, now, _startup_taints(config, claim))
        done = _carry_out(store, instances, claim, decision, instance, node, config, now, registrations)
        if not done:
            survivors.append(claim)
            continue
        decisions.append(decision)
        if decision.metric:
            metrics.append(MetricPoint(decision.metric))
        if decision.action in ("launch_timeout", "registration_timeout", "instance_gone"):
            forgotten.append(claim.id)
            if decision.action == "registration_timeout" and claim.instance_id:
                terminated.append(claim.instance_id)
        else:
            survivors.append(claim)

    grace = ORPHAN_GRACE_S if orphan_grace_s is None else orphan_grace_s
    orphan_list = decide_orphans(owned, survivors, now, grace)
    # A claim adopted or written during this pass owns its instance: re-read before killing anything.
    orphans = [o for o in orphan_list if o.claim_id is None or store.get(o.claim_id) is None]
    if orphans:
        instances.terminate(o.instance_id for o in orphans)
        for orphan in orphans:
            log.warning(
                "terminated orphan instance",
                extra={
                    "instance": orphan.instance_id,
                    "claim": orphan.claim_id,
                    "age_s": now - orphan.created_at,
                },
            )
        metrics.append(MetricPoint(telemetry.ORPHANS_TERMINATED, float(len(orphans))))
    return LifecycleReport(
        decisions=tuple(decisions),
        registrations=tuple(registrations),
        terminated=tuple(terminated),
        forgotten=tuple(forgotten),
        orphans=tuple(o.instance_id for o in orphans),
        metrics=tuple(metrics),
    )


def _carry_out(
    store: ClaimStore,
    instances: Instances,
    claim: NodeClaim,
    decision: LifecycleDecision,
    instance: CloudInstance | None,
    node: NodeObservation | None,
    config: ClusterConfig,
    now: float,
    registrations: list[NodeRegistration],
) -> bool:
    """Apply one decision; False when nothing was done (no-op, or the claim changed under us)."""
    action = decision.action
    if action == "none":
        return False
    if action == "adopt" and instance is not None:
        adopted = transition(
            claim,
            "launched",
            instance_id=instance.instance_id,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            provider_id=provider_id(instance.zone, instance.instance_id),
            image_id=instance.image_id,
            launched_at=instance.created_at or now,
            attempt_until=None,
        )
        if store.compare_and_put(adopted) is None:
            return False
        log.info(
            "adopted instance for node claim", extra={"claim": claim.id, "instance": instance.instance_id}
        )
        return True
    if action == "register" and node is not None:
        if (
            store.compare_and_put(transition(claim, "registered", node_name=node.name, registered_at=now))
            is None
        ):
            return False
        registrations.append(
            NodeRegistration(
                node.name, claim.id, _pool_labels(config, claim), registration_taints_to_remove(node)
            )
        )
        log.info("registered nodeclaim", extra={"claim": claim.id, "node": node.name})
        return True
    if action == "initialize":
        if store.compare_and_put(transition(claim, "initialized", initialized_at=now)) is None:
            return False
        log.info("initialized nodeclaim", extra={"claim": claim.id, "node": decision.node_name})
        return True
    if action == "registration_timeout" and claim.instance_id:
        instances.terminate([claim.instance_id])
    if action in ("launch_timeout", "registration_timeout", "instance_gone"):
        current = store.get(claim.id)
        if current is None or current.version != claim.version:
            return False
        store.delete(claim.id)
        log.warning(
            "deleted nodeclaim",
            extra={"claim": claim.id, "reason": decision.action, "detail": decision.reason},
        )
        return True
    return False
