"""The interruption policy table: what Longshore does about one EC2 interruption event, decided without I/O.

Theory of operation: the edge (`longshore.adapters.events`) turns an EventBridge message into an
`InterruptionEvent`: its kind, the instance ids it names, its time and, when the source says so, the moment
the capacity goes away. The interruption service looks every named instance up among this cluster's node
claims and hands `decide` an `OwnedInstance` for each one it owns. `decide` applies the table below and
returns a `Plan`: one `InstanceDecision` per named instance (an action name and the commands that carry it
out) and whether the provisioner must run. The service executes the commands; nothing here has effects.

| event                                           | action      | commands                                       |
|-------------------------------------------------|-------------|------------------------------------------------|
| spot interruption warning                       | `interrupt` | mark (type, zone, spot) unavailable 3 min; urgent `interruption` disruption, deadline = reclaim time; provisioner |
| health scheduledChange, stopping, shutting-down, capacity reservation interruption | `drain` | urgent `interruption` disruption, deadline (a scheduled change: its start - 15 min); provisioner |
| stopped, terminated                             | `clean-up`  | delete node and claim (terminate if stopped); provisioner |
| ... while the claim is already being disrupted  | `defer`     | provisioner only (the running workflow owns the node) |
| rebalance recommendation, pool says `ignore`    | `ignore`    | none                                           |
| rebalance recommendation, pool says `notify`    | `notify`    | a Kubernetes Event (plus the log and metric)   |
| rebalance recommendation, pool says `replace`   | `replace`   | `rebalance` disruption that launches a replacement first |
| other states (pending, running), unknown events | `ignore`    | none                                           |
| instance with neither a claim nor this cluster's tag | `foreign` | none                                        |

Idempotency: every warning-like event for a node (spot, health, stopping, shutting-down, capacity
reservation) starts the disruption workflow with the same reason, `interruption`, so the execution name
(instance + reason) is the same and the workflow port starts at most one execution per node however many
such events arrive and in whatever order. Stopped/terminated events do not start a workflow: if the claim is
already `deleting`, the running workflow is left alone (it owns the node and the claim and must tolerate an
instance that is already gone), otherwise the node and claim are removed directly. A terminated event that
arrives before the warning removes the claim, and the late warning then finds no claim and is a no-op.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from longshore.core.commands import DisruptionCommand, DisruptionReason
from longshore.core.model import RebalancePolicy
from longshore.core.offerings import UNAVAILABLE_TTL_S

EventKind = Literal[
    "spot-interruption",
    "rebalance-recommendation",
    "state-change",
    "scheduled-change",
    "capacity-reservation-interruption",
    "unknown",
]
Action = Literal["interrupt", "drain", "clean-up", "defer", "notify", "replace", "ignore", "foreign"]
IgnoreReason = Literal[
    "foreign", "unknown-kind", "no-op-state", "rebalance-ignored", "duplicate", "no-instances"
]

SPOT: Final = "spot"
NOTICE_SECONDS: Final = 120.0
"""Spot and capacity-reservation warnings come two minutes before the instance is reclaimed."""

SCHEDULED_CHANGE_GRACE_SECONDS: Final = 15 * 60.0
"""A scheduled change's drain deadline is its start time minus this: pods a PDB or `do-not-disrupt` protects
are honoured until then, and forced out (with their grace period) only after it, so the node is empty and
terminated before AWS starts the maintenance."""

DRAIN_STATES: Final = frozenset({"stopping", "shutting-down"})
GONE_STATES: Final = frozenset({"stopped", "terminated"})

ACTION_DESCRIPTIONS: Final[Mapping[str, str]] = {
    "interrupt": "mark (type, zone, spot) unavailable for 3 min; cordon and drain now (urgent, "
    "bounded by the reclaim time); trigger the provisioner",
    "drain": "cordon and drain now (urgent, bounded by the deadline); trigger the provisioner",
    "clean-up": "delete the node and its claim; trigger the provisioner for the pods that go pending",
    "defer": "a disruption workflow already owns the node; trigger the provisioner",
    "notify": "log, count and post a Kubernetes Event on the node; nothing else",
    "replace": "launch a replacement first, then cordon and drain",
    "ignore": "nothing (acknowledged)",
    "foreign": "nothing: the instance is not one of this cluster's node claims",
    "per-pool": "per node pool: ignore (default), notify, or replace",
}


@dataclass(frozen=True, slots=True)
class InterruptionEvent:
    """One EventBridge message, reduced to what the policy needs. Times are epoch seconds.

    `deadline` is when the capacity goes away, when the event says so (spot and capacity-reservation
    warnings: two minutes after the event; health events: the scheduled start time). `state` is set for
    state-change notifications. `note` explains, for humans, why an event is a no-op.
    """

    kind: EventKind
    event_id: str
    detail_type: str
    time: float
    instance_ids: tuple[str, ...] = ()
    state: str | None = None
    deadline: float | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class OwnedInstance:
    """An instance this cluster launched: its claim, node and offering, and its pool's rebalance policy."""

    instance_id: str
    claim_id: str  # "" when the instance is ours by its cluster tag but no claim records it yet
    nodepool: str
    instance_type: str
    zone: str
    capacity_type: str
    node_name: str | None = None
    disrupting: bool = False  # the claim is already `deleting`: a disruption workflow owns the node
    rebalance: RebalancePolicy = "ignore"


@dataclass(frozen=True, slots=True)
class MarkUnavailable:
    instance_type: str
    zone: str
    capacity_type: str
    until_epoch: float


@dataclass(frozen=True, slots=True)
class StartDisruption:
    command: DisruptionCommand


@dataclass(frozen=True, slots=True)
class CleanUp:
    """Delete the Kubernetes node (when it registered) and the node claim of an instance that is gone.

    A stopped instance still exists (and keeps its volumes): it is terminated too, as Karpenter does.
    """

    instance_id: str
    claim_id: str
    node_name: str | None
    terminate_instance: bool = False


@dataclass(frozen=True, slots=True)
class Notify:
    """Post a Kubernetes Event on the node (and nothing else)."""

    instance_id: str
    node_name: str | None
    reason: str
    message: str


Command = MarkUnavailable | StartDisruption | CleanUp | Notify


@dataclass(frozen=True, slots=True)
class InstanceDecision:
    instance_id: str | None  # None when the event names no instance
    action: Action
    commands: tuple[Command, ...] = ()
    ignore_reason: IgnoreReason | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    event: InterruptionEvent
    decisions: tuple[InstanceDecision, ...]
    trigger_provisioner: bool

    @property
    def acted(self) -> bool:
        return any(d.commands for d in self.decisions) or self.trigger_provisioner


def kind_action(event: InterruptionEvent) -> Action | Literal["per-pool"]:
    """The table row for an event, before ownership and pools are known (what `longshore event` shows)."""
    if event.kind == "spot-interruption":
        return "interrupt"
    if event.kind in ("scheduled-change", "capacity-reservation-interruption"):
        return "drain"
    if event.kind == "state-change":
        if event.state in DRAIN_STATES:
            return "drain"
        if event.state in GONE_STATES:
            return "clean-up"
        return "ignore"
    if event.kind == "rebalance-recommendation":
        return "per-pool"
    return "ignore"


def deadline_of(event: InterruptionEvent) -> float:
    """When pods that cannot be evicted in time are deleted: the event's deadline, else two minutes after it.

    A scheduled change's deadline is its start time minus `SCHEDULED_CHANGE_GRACE_SECONDS` when that is still
    ahead of the event (a start closer than the grace keeps the start itself). However far it is (two weeks),
    it is never shortened further: the workflow chains executions to wait that long.
    """
    if event.deadline is not None and event.deadline > event.time:
        if event.kind == "scheduled-change" and event.deadline - SCHEDULED_CHANGE_GRACE_SECONDS > event.time:
            return event.deadline - SCHEDULED_CHANGE_GRACE_SECONDS
        return event.deadline
    return event.time + NOTICE_SECONDS


def decide(event: InterruptionEvent, owned: Mapping[str, OwnedInstance], now: float) -> Plan:
    """Apply the policy table to every instance the event names.

    `owned` maps the instance ids this cluster owns to their claims; ids missing from it are `foreign`.
    """
    row = kind_action(event)
    if row == "ignore" or not event.instance_ids:
        reason: IgnoreReason = (
            "no-instances"
            if row != "ignore"
            else ("no-op-state" if event.kind == "state-change" else "unknown-kind")
        )
        ids: tuple[str | None, ...] = event.instance_ids or (None,)
        return Plan(
            event,
            tuple(InstanceDecision(i, "ignore", ignore_reason=reason, note=event.note) for i in ids),
            trigger_provisioner=False,
        )
    decisions = []
    for instance_id in event.instance_ids:
        instance = owned.get(instance_id)
        if instance is None:
            decisions.append(
                InstanceDecision(
                    instance_id, "foreign", ignore_reason="foreign", note="no node claim in this cluster"
                )
            )
        else:
            decisions.append(_decide_owned(event, row, instance, now))
    trigger = any(d.action in ("interrupt", "drain", "clean-up", "defer") for d in decisions)
    return Plan(event, tuple(decisions), trigger_provisioner=trigger)


def _decide_owned(
    event: InterruptionEvent, row: Action | Literal["per-pool"], instance: OwnedInstance, now: float
) -> InstanceDecision:
    if row in ("interrupt", "drain"):
        commands: list[Command] = []
        if row == "interrupt" and instance.capacity_type == SPOT and instance.instance_type and instance.zone:
            commands.append(
                MarkUnavailable(instance.instance_type, instance.zone, SPOT, now + UNAVAILABLE_TTL_S)
            )
        commands.append(StartDisruption(_interruption_command(event, instance)))
        return InstanceDecision(instance.instance_id, row, tuple(commands))
    if row == "clean-up":
        if instance.disrupting:
            return InstanceDecision(
                instance.instance_id, "defer", note="the claim is already being disrupted"
            )
        stopped = event.state == "stopped"
        cleanup = CleanUp(
            instance.instance_id, instance.claim_id, instance.node_name, terminate_instance=stopped
        )
        return InstanceDecision(instance.instance_id, "clean-up", (cleanup,))
    # rebalance recommendation: the pool decides
    if instance.rebalance == "notify":
        message = (
            f"EC2 recommends rebalancing instance {instance.instance_id} ({instance.instance_type}, "
            f"{instance.zone}, {instance.capacity_type}): its capacity is at elevated risk of interruption"
        )
        notify = Notify(instance.instance_id, instance.node_name, "RebalanceRecommendation", message)
        return InstanceDecision(instance.instance_id, "notify", (notify,))
    if instance.rebalance == "replace":
        command = DisruptionCommand(
            instance_id=instance.instance_id,
            reason=DisruptionReason.REBALANCE,
            node_name=instance.node_name,
            claim_id=instance.claim_id or None,
            urgent=False,
            replace=True,
            deadline_epoch=None,
            requested_at=event.time,
        )
        return InstanceDecision(instance.instance_id, "replace", (StartDisruption(command),))
    return InstanceDecision(
        instance.instance_id,
        "ignore",
        ignore_reason="rebalance-ignored",
        note=f"node pool {instance.nodepool} ignores rebalance recommendations",
    )


def _interruption_command(event: InterruptionEvent, instance: OwnedInstance) -> DisruptionCommand:
    return DisruptionCommand(
        instance_id=instance.instance_id,
        reason=DisruptionReason.INTERRUPTION,
        node_name=instance.node_name,
        claim_id=instance.claim_id or None,
        urgent=True,
        replace=False,
        deadline_epoch=deadline_of(event),
        requested_at=event.time,
    )


def replacement_lead_time(warning_time: float, replacement_ready_time: float) -> float:
    """Seconds from the warning to the replacement's Ready (the REPLACEMENT_LEAD_TIME_S metric)."""
    return replacement_ready_time - warning_time
