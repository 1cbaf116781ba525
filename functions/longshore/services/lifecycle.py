"""Node lifecycle, once per provisioner pass: registration, initialization, timeouts, lost instances and orphans.

Theory of operation: `reconcile_lifecycle` reads every claim (store), every instance tagged for the cluster
(`Instances.list_owned`, one DescribeInstances) and the Nodes of the pass's snapshot (as
`services.node_observations` reads them), asks the pure `core.claims.decide_lifecycle` what to do next for
each claim and `decide_orphans` which instances nobody owns, and carries the decisions out through the ports:

    adopt                 a `launching` claim whose instance exists (a run died after CreateFleet): record it
    register              the Node with the claim's providerID appeared: label the Node
                          (`karpenter.sh/registered`, pool and class labels, and the partition EC2 picked
                          for a node of a partition placement group launched without one) and remove the
                          `karpenter.sh/unregistered` taint in one patch, then record the node and the time
    initialize            the Node is Ready and its startup and ephemeral taints are gone: record the time and
                          label the Node `karpenter.sh/initialized=true`
    launch_timeout        no instance 5 min after the claim was written: forget the claim
    registration_timeout  no Node 15 min after launch: terminate the instance, forget the claim
    instance_gone         the instance died under us: forget the claim (and delete its Node if one is left)
    node_deleted          the Node has a deletionTimestamp (`kubectl delete node`; the `karpenter.sh/termination`
                          finalizer, added at registration, holds it): start the disruption workflow with
                          reason `deleted` (drain, PDB-safe; terminate; delete the Node and release the finalizer)
    node_gone             the Node vanished anyway while the instance runs (confirmed by a direct read): terminate
                          the instance and forget the claim, at most max(1, 10 %) per pass
    orphan                a live instance tagged for the cluster that no claim owns (`core.orphans`): with a
                          live Node it is re-adopted (its claim rebuilt from tags and the Node); without one
                          it is terminated once older than the registration timeout, at most max(1, 10 %)
                          per pass; more unclaimed instances than that: none is collected, an error is
                          logged and `OrphansMassDetected` emitted

Store writes are conditional on the claim's version (compare-and-put, and `delete_if` when a claim is
forgotten), so a concurrent launcher (or another run) that changed a claim wins and the decision waits for
the next pass: a claim registered by another run a moment before is never deleted, nor its instance
terminated. Forgetting a claim is what makes its pods plannable again. Every action logs
one line (Karpenter's wording: "registered nodeclaim", "initialized nodeclaim", "deleted nodeclaim") and counts
one metric from `core.telemetry`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from longshore.core import labels as wk
from longshore.core import telemetry
from longshore.core.claims import (
    ORPHAN_GRACE_S,
    REGISTRATION_TIMEOUT_S,
    CloudInstance,
    LifecycleDecision,
    NodeClaim,
    NodeObservation,
    decide_lifecycle,
    instance_id_of,
    provider_id,
    transition,
)
from longshore.core.commands import DisruptionCommand, DisruptionReason
from longshore.core.model import ClusterConfig, Taint
from longshore.core.orphans import adopted_claim, collection_bound, plan_orphans
from longshore.core.taints import UNREGISTERED_TAINT
from longshore.ports.cloud import Instances
from longshore.ports.kube import Cluster, NodePatch
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore
from longshore.ports.workflow import DisruptionWorkflow
from longshore.services.node_observations import observe_all
from longshore.services.reservation_sync import relabel_left_reservations

log = logging.getLogger(__name__)

FORGETTING = frozenset({"launch_timeout", "registration_timeout", "instance_gone"})
_GONE: Final = frozenset({"node_gone"})


@dataclass(frozen=True, slots=True)
class LifecycleOutcome:
    """What one lifecycle pass did (claim ids per action, instance ids terminated) and the claims after it."""

    actions: tuple[tuple[str, str], ...] = ()  # (action, claim id)
    terminated: tuple[str, ...] = ()
    orphans: tuple[str, ...] = ()
    claims: tuple[NodeClaim, ...] = ()
    cloud_checked: bool = False

    def claim_ids(self, action: str) -> tuple[str, ...]:
        return tuple(claim for done, claim in self.actions if done == action)


def needs_cloud(claims: Iterable[NodeClaim], now: float) -> bool:
    """Whether some claim's next decision depends on EC2: a launch to adopt or a timeout that is due."""
    for claim in claims:
        if claim.state == "launching":
            return True
        since = claim.launched_at if claim.launched_at is not None else claim.created_at
        if claim.state == "launched" and now - since >= REGISTRATION_TIMEOUT_S:
            return True
    return False


def _assumed_alive(claim: NodeClaim) -> CloudInstance | None:
    """Between cloud checks, a launched claim's instance is taken to be alive (Karpenter's GC also looks only
    every few minutes); the next check finds out if it is not."""
    if not claim.instance_id:
        return None
    return CloudInstance(
        instance_id=claim.instance_id,
        state="running",
        instance_type=claim.instance_type or "",
        zone=claim.zone or "",
        capacity_type=claim.capacity_type or "",
        claim_id=claim.id,
        nodepool=claim.nodepool,
        created_at=claim.launched_at or claim.created_at,
    )


def _startup_taints(config: ClusterConfig, claim: NodeClaim) -> tuple[Taint, ...]:
    try:
        return config.pool(claim.nodepool).startup_taints
    except KeyError:
        return ()


def _registration_labels(config: ClusterConfig, claim: NodeClaim) -> tuple[tuple[str, str | None], ...]:
    labels: dict[str, str] = {}
    with contextlib.suppress(KeyError):
        labels.update(dict(config.pool(claim.nodepool).labels))
    labels.update({wk.NODEPOOL: claim.nodepool, wk.NODECLASS: claim.node_class, wk.REGISTERED: "true"})
    return tuple(sorted(labels.items()))


class Lifecycle:
    """Carries out lifecycle decisions against the ports (see the module docstring)."""

    def __init__(
        self,
        *,
        store: ClaimStore,
        instances: Instances,
        cluster: Cluster,
        config: ClusterConfig,
        metrics: MetricsSink,
        orphan_grace_s: float = ORPHAN_GRACE_S,
        workflow: DisruptionWorkflow | None = None,
    ) -> None:
        self._workflow = workflow
        self._gone_budget = 0
        self._store = store
        self._instances = instances
        self._cluster = cluster
        self._config = config
        self._metrics = metrics
        self._orphan_grace_s = orphan_grace_s

    def reconcile(
        self,
        nodes: Iterable[Mapping[str, Any]],
        now: float,
        *,
        claims: Iterable[NodeClaim] | None = None,
        check_cloud: bool = True,
    ) -> LifecycleOutcome:
        """One pass over every claim; `check_cloud=False` skips EC2 (no adoption, loss or orphan checks) when
        `needs_cloud` says no decision depends on it."""
        observed = observe_all(nodes)
        node_by_instance = {instance_id_of(n.provider_id): n for n in observed if n.provider_id}
        current = tuple(claims) if claims is not None else self._store.list()
        owned = self._instances.list_owned() if check_cloud else ()
        by_id = {i.instance_id: i for i in owned}
        by_claim = {i.claim_id: i for i in owned if i.claim_id}
        actions: list[tuple[str, str]] = []
        terminated: list[str] = []
        survivors: list[NodeClaim] = []
        changed = False
        self._gone_budget = collection_bound(len(current))
        for claim in current:
            if claim.state == "deleting":
                survivors.append(claim)  # the disruption workflow owns it now
                continue
            if check_cloud:
                instance = by_id.get(claim.instance_id) if claim.instance_id else by_claim.get(claim.id)
                if instance is None and claim.instance_id:
                    # list_owned leaves out shutting-down instances; describe says what really happened.
                    instance = next(iter(self._instances.describe([claim.instance_id])), None)
            else:
                instance = _assumed_alive(claim)
            node = node_by_instance.get(claim.instance_id) if claim.instance_id else None
            decision = decide_lifecycle(claim, node, instance, now, _startup_taints(self._config, claim))
            done = self._carry_out(claim, decision, instance, node, now)
            changed = changed or done or decision.action != "none"
            if done:
                actions.append((decision.action, claim.id))
                if decision.metric:
                    self._metrics.emit(decision.metric, 1.0)
                if decision.action in ("registration_timeout", "node_gone") and claim.instance_id:
                    terminated.append(claim.instance_id)
            if not (done and decision.action in FORGETTING | _GONE):
                survivors.append(claim)
        orphans = self._collect_orphans(owned, survivors, node_by_instance, now) if check_cloud else ()
        if check_cloud:
            self._release_abandoned(observed, current, owned)
            relabel_left_reservations(self._cluster, self._store, observed, by_id, survivors)
        after = self._store.list() if changed else current
        return LifecycleOutcome(tuple(actions), tuple(terminated), orphans, after, check_cloud)

    # -- decisions, carried out ---------------------------------------------------------------------------

    def _carry_out(
        self,
        claim: NodeClaim,
        decision: LifecycleDecision,
        instance: CloudInstance | None,
        node: NodeObservation | None,
        now: float,
    ) -> bool:
        action = decision.action
        if action == "adopt" and instance is not None:
            return self._adopt(claim, instance, now)
        if action == "register" and node is not None:
            return self._register(claim, node, now, instance)
        if action == "initialize" and node is not None:
            return self._initialize(claim, node, now)
        if action in FORGETTING:
            return self._forget(claim, decision, node)
        if action == "node_deleted" and node is not None:
            return self._drain_deleted(claim, node, now)
        if action == "node_gone":
            return self._node_gone(claim, decision)
        if node is not None and not node.deleting and claim.state in ("registered", "initialized"):
            self._ensure_finalizer(node)
        return False

    def _release_abandoned(
        self, observed: Iterable[NodeObservation], claims: Iterable[NodeClaim], owned: Iterable[CloudInstance]
    ) -> None:
        """A Node being deleted that holds our finalizer but has neither a claim nor a live instance (its
        instance went and its claim was forgotten before the Node was deleted): release it, or it never goes."""
        claimed = {c.instance_id for c in claims if c.instance_id}
        alive = {i.instance_id for i in owned if i.alive}
        for node in observed:
            instance = instance_id_of(node.provider_id)
            if (
                node.deleting
                and wk.TERMINATION_FINALIZER in node.finalizers
                and instance not in claimed
                and instance not in alive
            ):
                self._cluster.delete_node(node.name)

    def _ensure_finalizer(self, node: NodeObservation) -> None:
        """Nodes registered before the finalizer existed (or that lost it) get it back."""
        if wk.TERMINATION_FINALIZER not in node.finalizers:
            self._cluster.patch_node(node.name, NodePatch(add_finalizers=(wk.TERMINATION_FINALIZER,)))

    def _drain_deleted(self, claim: NodeClaim, node: NodeObservation, now: float) -> bool:
        """`kubectl delete node`: the finalizer holds the Node; drain it and terminate its instance through the
        workflow, which releases the finalizer at the end. Started on every pass while the Node lingers: the
        workflow port makes a running start a no-op and restarts a failed one (a PDB that outlasted one
        execution), so the drain goes on, PDB-safe, until it completes."""
        if self._workflow is None or not claim.instance_id:
            log.warning(
                "node is being deleted but no disruption workflow is configured to drain it",
                extra={"claim": claim.id, "node": node.name},
            )
            return False
        command = DisruptionCommand(
            instance_id=claim.instance_id,
            reason=DisruptionReason.DELETED,
            node_name=node.name,
            claim_id=claim.id,
            requested_at=now,
        )
        result = self._workflow.start(command)
        if result.started:
            log.warning(
                "node deleted: draining it and terminating its instance",
                extra={"claim": claim.id, "node": node.name, "execution": result.execution_name},
            )
        return result.started

    def _node_gone(self, claim: NodeClaim, decision: LifecycleDecision) -> bool:
        """The Node vanished (its finalizer was removed by hand) while the instance runs: nothing else would
        ever stop it. Confirmed by a direct read, bounded per pass like orphan collection."""
        if (
            self._gone_budget <= 0
            or not claim.node_name
            or self._cluster.get_node(claim.node_name) is not None
        ):
            return False
        if not self._store.delete_if(claim.id, claim.version):
            return False
        self._gone_budget -= 1
        if claim.instance_id:
            self._instances.terminate([claim.instance_id])
        log.warning(
            "deleted nodeclaim",
            extra={
                "claim": claim.id,
                "reason": decision.action,
                "detail": decision.reason,
                "instance": claim.instance_id,
            },
        )
        return True

    def _adopt(self, claim: NodeClaim, instance: CloudInstance, now: float) -> bool:
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
        if self._store.compare_and_put(adopted) is None:
            return False
        log.info(
            "adopted instance for nodeclaim",
            extra={"claim": claim.id, "instance": instance.instance_id, "provider_id": adopted.provider_id},
        )
        return True

    def _register(
        self, claim: NodeClaim, node: NodeObservation, now: float, instance: CloudInstance | None
    ) -> bool:
        # The Node first: a patch that fails leaves the claim `launched`, so the next pass registers it again
        # (recorded first, a registered claim is never patched again and keeps its unregistered taint).
        remaining = tuple(
            t for t in node.taints if (t.key, t.effect) != (UNREGISTERED_TAINT.key, UNREGISTERED_TAINT.effect)
        )
        self._cluster.patch_node(
            node.name,
            NodePatch(
                labels=_registration_labels(self._config, claim)
                + self._partition_label(claim, node, instance),
                taints=remaining if remaining != node.taints else None,
                add_finalizers=(wk.TERMINATION_FINALIZER,),
            ),
        )
        written = self._store.compare_and_put(
            transition(claim, "registered", node_name=node.name, registered_at=now)
        )
        if written is None:
            return False
        log.info(
            "registered nodeclaim",
            extra={
                "claim": claim.id,
                "node": node.name,
                "provider_id": node.provider_id,
                "seconds_since_launch": round(now - (claim.launched_at or claim.created_at), 3),
            },
        )
        return True

    def _partition_label(
        self, claim: NodeClaim, node: NodeObservation, instance: CloudInstance | None
    ) -> tuple[tuple[str, str | None], ...]:
        """The partition EC2 picked for a node of a partition placement group launched without one (its claim
        has the partition requirement, its node no label), read from the instance (Karpenter's
        `PlacementGroupRegistrationHook`); () when it has its label, is in no partition group, or EC2 does not
        say."""
        partitioned = any(r.key == wk.PLACEMENT_GROUP_PARTITION for r in claim.requirements)
        if not partitioned or wk.PLACEMENT_GROUP_PARTITION in dict(node.labels) or not claim.instance_id:
            return ()
        if instance is None or instance.partition is None:  # between cloud checks the instance is assumed
            instance = next(iter(self._instances.describe([claim.instance_id])), None)
        if instance is None or instance.partition is None:
            return ()
        return ((wk.PLACEMENT_GROUP_PARTITION, str(instance.partition)),)

    def _initialize(self, claim: NodeClaim, node: NodeObservation, now: float) -> bool:
        if self._store.compare_and_put(transition(claim, "initialized", initialized_at=now)) is None:
            return False
        self._cluster.patch_node(node.name, NodePatch(labels=((wk.INITIALIZED, "true"),)))
        log.info(
            "initialized nodeclaim",
            extra={
                "claim": claim.id,
                "node": node.name,
                "seconds_since_launch": round(now - (claim.launched_at or claim.created_at), 3),
            },
        )
        return True

    def _forget(self, claim: NodeClaim, decision: LifecycleDecision, node: NodeObservation | None) -> bool:
        # Conditional on the version decided from: a claim another run changed meanwhile (registered it,
        # adopted an instance, took a launch over) is kept, and the next pass decides again. The instance is
        # terminated only after the claim is gone; if that call fails the instance is an orphan, collected later.
        if not self._store.delete_if(claim.id, claim.version):
            return False
        if decision.action == "registration_timeout" and claim.instance_id:
            self._instances.terminate([claim.instance_id])
        if decision.action == "instance_gone" and node is not None:
            self._cluster.delete_node(node.name)
        log.warning(
            "deleted nodeclaim",
            extra={
                "claim": claim.id,
                "reason": decision.action,
                "detail": decision.reason,
                "instance": claim.instance_id,
            },
        )
        return True

    def _collect_orphans(
        self,
        owned: Iterable[CloudInstance],
        survivors: Iterable[NodeClaim],
        nodes: Mapping[str | None, NodeObservation],
        now: float,
    ) -> tuple[str, ...]:
        by_instance = {k: v for k, v in nodes.items() if k}
        plan = plan_orphans(owned, survivors, by_instance, now, self._orphan_grace_s)
        for instance, node in plan.adopt:
            self._readopt(instance, node, now)
        if plan.mass:
            log.error(
                "mass orphans: more never-registered instances tagged for the cluster have no claim than one "
                "pass may collect; collecting none (check the claim table and the instance tags)",
                extra={"candidates": plan.candidates, "bound": plan.bound, "readopted": len(plan.adopt)},
            )
            self._metrics.emit(telemetry.ORPHANS_MASS_DETECTED, float(plan.candidates))
            return ()
        # A claim written after we listed (a concurrent launch) owns its instance: look again before killing.
        orphans = [
            o
            for o in plan.collect
            if (o.claim_id is None or _no_adopter(self._store.get(o.claim_id)))
            and self._store.by_instance(o.instance_id) is None
        ]
        if not orphans:
            return ()
        self._instances.terminate(o.instance_id for o in orphans)
        for orphan in orphans:
            log.warning(
                "terminated orphan instance (it never registered a node)",
                extra={
                    "instance": orphan.instance_id,
                    "claim": orphan.claim_id,
                    "age_s": round(now - orphan.created_at, 3),
                },
            )
        self._metrics.emit(telemetry.ORPHANS_TERMINATED, float(len(orphans)))
        return tuple(o.instance_id for o in orphans)

    def _readopt(self, instance: CloudInstance, node: NodeObservation, now: float) -> None:
        """Rebuild the claim of an unclaimed instance whose Node is live (its tagged id when that is free)."""
        tagged = instance.claim_id
        free = tagged is not None and self._store.get(tagged) is None
        claim_id = tagged if free and tagged else f"adopted-{instance.instance_id}"
        pool = instance.nodepool or dict(node.labels).get(wk.NODEPOOL, "")
        try:
            node_class = self._config.pool(pool).node_class
        except KeyError:
            node_class = ""
        claim = adopted_claim(instance, node, claim_id, node_class, now)
        if self._store.by_instance(instance.instance_id) is None and self._store.create_if_absent(claim):
            log.warning(
                "re-adopted instance with a live node and no claim",
                extra={"instance": instance.instance_id, "node": node.name, "claim": claim_id},
            )


def _no_adopter(claim: NodeClaim | None) -> bool:
    """No claim will adopt an instance tagged with this claim's id: it is gone or records another instance."""
    return claim is None or bool(claim.instance_id)
