"""The interruption use case: from one parsed EventBridge event to cordon, drain, clean-up and replacement.

Theory of operation: `InterruptionService.handle` does three things in order.
1. *Ownership.* Each instance the event names is looked up in this cluster's claim store
   (`ClaimStore.by_instance`). EC2 events carry no cluster field and one account can hold several clusters.
   Rule: an instance that carries this cluster's `longshore.io/cluster` tag is never foreign, claim or not:
   a warning can arrive before its claim records the instance (a provisioner run that died between
   CreateFleet and the record, or the store's eventually consistent instance index), and dropping it would
   let AWS take the node with its pods still on it. Such an instance is resolved through its EC2 tags
   (`Instances.list_owned`), logged at WARNING, and acted on like any other; the workflow finds its Node by
   providerID. Only an instance without a claim and without the tag is foreign (or already cleaned up).
2. *Decision.* `core.interruption.decide` applies the policy table to the owned instances, using each
   claim's node pool to pick the rebalance policy.
3. *Execution.* The commands run against the ports, each of them idempotent: an offering mark only extends
   a TTL; before an urgent `interruption` workflow starts, its claim moves to `deleting` (so the provisioner
   plans capacity for its pods and a later stopped/terminated event leaves the workflow alone); the
   workflow port refuses a second execution with the same name (instance + reason), which turns duplicate
   and out-of-order warnings into `duplicate` no-ops; deleting a node, claim or instance that is already gone
   does nothing. Then the provisioner is triggered once per message when the plan asks for it. A warning for
   a node a voluntary disruption is already draining still starts its `interruption` workflow: that workflow
   takes the node over and drains it by the reclaim deadline, and the voluntary one yields
   (`workflow.steps`), so the reclaim deadline always applies.

Any exception from a port is left to propagate: the SQS handler reports that message alone as failed and
SQS redelivers it; after the queue's maxReceiveCount it moves to the dead-letter queue. Re-running a
partly-executed message is safe because every step is idempotent. The result (`MessageOutcome`) says per
instance what happened, so the handler can log one line and emit the metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from longshore.core.claims import CloudInstance, NodeClaim, transition
from longshore.core.commands import DisruptionReason
from longshore.core.interruption import (
    Action,
    CleanUp,
    IgnoreReason,
    InstanceDecision,
    InterruptionEvent,
    MarkUnavailable,
    Notify,
    OwnedInstance,
    StartDisruption,
    decide,
)
from longshore.core.model import ClusterConfig, RebalancePolicy
from longshore.ports.clock import Clock
from longshore.ports.cloud import Instances
from longshore.ports.kube import Cluster, KubeEvent, ObjectRef
from longshore.ports.store import ClaimStore, OfferingAvailability
from longshore.ports.triggers import ProvisionerTrigger
from longshore.ports.workflow import DisruptionWorkflow

_CLAIM_WRITE_ATTEMPTS: Final = 3

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InstanceOutcome:
    """What happened to one instance named by an event."""

    instance_id: str | None
    action: Action
    acted: bool
    ignore_reason: IgnoreReason | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class MessageOutcome:
    event: InterruptionEvent
    instances: tuple[InstanceOutcome, ...]
    provisioner_triggered: bool = False

    @property
    def acted(self) -> bool:
        """True when at least one instance was acted on; False for an acknowledged no-op."""
        return any(outcome.acted for outcome in self.instances)


def rebalance_policies(config: ClusterConfig) -> Callable[[str], RebalancePolicy]:
    """The rebalance policy of a node pool by name; pools no longer in the config get the cluster default."""
    by_pool = {pool.name: pool.rebalance for pool in config.node_pools}
    default = config.interruption.rebalance_default
    return lambda nodepool: by_pool.get(nodepool, default)


class InterruptionService:
    def __init__(
        self,
        *,
        claims: ClaimStore,
        offerings: OfferingAvailability,
        workflow: DisruptionWorkflow,
        cluster: Cluster,
        instances: Instances,
        provisioner: ProvisionerTrigger,
        clock: Clock,
        rebalance_policy: Callable[[str], RebalancePolicy],
    ) -> None:
        self._claims = claims
        self._offerings = offerings
        self._workflow = workflow
        self._cluster = cluster
        self._instances = instances
        self._provisioner = provisioner
        self._clock = clock
        self._rebalance_policy = rebalance_policy

    def owned_instances(self, instance_ids: tuple[str, ...]) -> dict[str, OwnedInstance]:
        """The instances among `instance_ids` that belong to this cluster's claims."""
        owned: dict[str, OwnedInstance] = {}
        for instance_id in instance_ids:
            claim = self._claims.by_instance(instance_id)
            if claim is not None:
                owned[instance_id] = self._owned(instance_id, claim)
        unlinked = [i for i in instance_ids if i not in owned]
        if unlinked:
            tagged = {i.instance_id: i for i in self._instances.list_owned()}
            for instance_id in unlinked:
                instance = tagged.get(instance_id)
                if instance is not None:
                    owned[instance_id] = self._owned_by_tag(instance)
        return owned

    def _owned_by_tag(self, instance: CloudInstance) -> OwnedInstance:
        """An instance tagged for this cluster whose claim does not (yet) record it: resolved from its tags."""
        claim = self._claims.get(instance.claim_id) if instance.claim_id else None
        log.warning(
            "interruption for a cluster instance without a linked node claim; acting on its EC2 tags",
            extra={"instance": instance.instance_id, "claim": instance.claim_id, "claim_found": bool(claim)},
        )
        nodepool = instance.nodepool or (claim.nodepool if claim else "")
        return OwnedInstance(
            instance_id=instance.instance_id,
            claim_id=claim.id
            if claim is not None and claim.instance_id in (None, instance.instance_id)
            else "",
            nodepool=nodepool,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            node_name=None,
            disrupting=claim is not None and claim.state == "deleting",
            rebalance=self._rebalance_policy(nodepool),
        )

    def handle(self, event: InterruptionEvent) -> MessageOutcome:
        plan = decide(event, self.owned_instances(event.instance_ids), self._clock.now())
        outcomes = tuple(self._execute(event, decision) for decision in plan.decisions)
        if plan.trigger_provisioner:
            named = ",".join(o.instance_id for o in outcomes if o.instance_id and o.action != "foreign")
            self._provisioner.trigger(f"{event.kind} {named}".strip())
        return MessageOutcome(event, outcomes, provisioner_triggered=plan.trigger_provisioner)

    def _owned(self, instance_id: str, claim: NodeClaim) -> OwnedInstance:
        return OwnedInstance(
            instance_id=instance_id,
            claim_id=claim.id,
            nodepool=claim.nodepool,
            instance_type=claim.instance_type or "",
            zone=claim.zone or "",
            capacity_type=claim.capacity_type or "",
            node_name=claim.node_name,
            disrupting=claim.state == "deleting",
            rebalance=self._rebalance_policy(claim.nodepool),
        )

    def _execute(self, event: InterruptionEvent, decision: InstanceDecision) -> InstanceOutcome:
        if not decision.commands:
            acted = decision.action == "defer"
            return InstanceOutcome(
                decision.instance_id, decision.action, acted, decision.ignore_reason, decision.note
            )
        details: list[str] = []
        for command in decision.commands:
            if isinstance(command, MarkUnavailable):
                self._offerings.mark_unavailable(
                    command.instance_type, command.zone, command.capacity_type, command.until_epoch
                )
                details.append(
                    f"marked {command.instance_type}/{command.zone}/{command.capacity_type} unavailable"
                )
            elif isinstance(command, StartDisruption):
                if command.command.reason == DisruptionReason.INTERRUPTION and command.command.claim_id:
                    self._mark_deleting(command.command.claim_id, event)
                result = self._workflow.start(command.command)
                if not result.started:
                    detail = f"workflow {result.execution_name} already exists"
                    return InstanceOutcome(decision.instance_id, decision.action, False, "duplicate", detail)
                details.append(f"started workflow {result.execution_name}")
            elif isinstance(command, CleanUp):
                self._clean_up(command)
                details.append(f"deleted node {command.node_name or '(none)'} and claim {command.claim_id}")
            elif isinstance(command, Notify):
                if command.node_name:
                    self._cluster.post_event(
                        KubeEvent(ObjectRef("Node", command.node_name), command.reason, command.message)
                    )
                details.append(f"notified ({command.reason})")
        return InstanceOutcome(decision.instance_id, decision.action, True, None, "; ".join(details))

    def _mark_deleting(self, claim_id: str, event: InterruptionEvent) -> None:
        """Move the claim to `deleting` (compare-and-put, re-read on a lost race); gone or deleting: done."""
        for _ in range(_CLAIM_WRITE_ATTEMPTS):
            claim = self._claims.get(claim_id)
            if claim is None or claim.state == "deleting":
                return
            if self._claims.compare_and_put(
                transition(claim, "deleting", reason=f"interruption: {event.detail_type}")
            ):
                return
        raise RuntimeError(f"node claim {claim_id}: could not mark it deleting (it kept changing)")

    def _clean_up(self, command: CleanUp) -> None:
        if command.terminate_instance:
            self._instances.terminate((command.instance_id,))
        if command.node_name:
            self._cluster.delete_node(command.node_name)
        if command.claim_id:
            self._claims.delete(command.claim_id)
