"""Node auto-repair: replace a node whose bad health outlasts its toleration, unless its pool is too sick.

Rules (Karpenter's node health controller, kubernetes-sigs/karpenter `pkg/controllers/node/health/controller.go`,
with the AWS provider's `RepairPolicies`):

- A **signal** is a Node condition matching a `RepairPolicy` (type and status), or a failed EC2 status check
  (DescribeInstanceStatus: system or instance check `impaired`, from its `ImpairedSince`), or a scheduled EC2
  event that stops the instance (`instance-retirement`, `instance-stop`). The status checks and events are
  Longshore's additions: Karpenter reads Node conditions only.
- A node is **due** for repair once `since + toleration` has passed for one of its signals (the earliest one
  decides, as upstream). Before that it is passed over as "not yet", with the instant it becomes due.
- **Pool health**: when more of a pool's nodes have a signal (due or not) than 20 % of its nodes, rounded up,
  no node of that pool is repaired this pass; each due node is passed over with `REPAIR_BLOCKED` and the pool
  is reported (`RepairBlocked`: an Event `NodeRepairBlocked` on the node, a metric and an alarm).
- A repair is **forceful** like expiry: no disruption budget, no pod guard at decision time, and the node's
  `do-not-disrupt` annotation does not stop it (upstream's controller does not read it). Longshore does not
  delete pods at once as Karpenter does (Karpenter stamps the NodeClaim's termination timestamp to now): the
  removal runs the disruption workflow, whose drain honours PDBs and `do-not-disrupt` until the pool's
  `terminationGracePeriod` (or, for a scheduled EC2 event, 15 minutes before it starts) and leaves pods stuck
  terminating on a dead kubelet after 60 s. Replacements for its pods are launched first.
- Only initialized nodes are repaired; a node that never became ready is the lifecycle's (registration and
  initialization timeouts), and a node already being disrupted is left to that disruption.

Pure: the planner pass (`planner._Pass`) calls `repairs`; everything comes from the `DisruptionInput`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from longshore.core.commands import DisruptionReason
from longshore.core.disruption.decisions import Decision, PassedOverKind, RepairBlocked
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import NodePool
from longshore.core.scheduling.plan import ClaimPlan, Plan


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    condition_type: str
    status: str
    toleration_s: float


REPAIR_POLICIES: Final = (
    # aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go RepairPolicies: kubelet ...
    RepairPolicy("Ready", "False", 30 * 60.0),
    RepairPolicy("Ready", "Unknown", 30 * 60.0),
    # ... and the EKS node monitoring agent's conditions.
    RepairPolicy("AcceleratedHardwareReady", "False", 10 * 60.0),
    RepairPolicy("StorageReady", "False", 30 * 60.0),
    RepairPolicy("NetworkingReady", "False", 30 * 60.0),
    RepairPolicy("KernelReady", "False", 30 * 60.0),
    RepairPolicy("ContainerRuntimeReady", "False", 30 * 60.0),
)
STATUS_CHECK_TOLERATION_S: Final = 10 * 60.0
"""A failed EC2 status check tolerated this long (Longshore's choice: EC2's own auto-recovery acts sooner)."""
STOPPING_EVENTS: Final = frozenset({"instance-retirement", "instance-stop"})
"""Scheduled EC2 events after which the instance no longer runs (reboots and maintenance keep the node)."""
EVENT_DRAIN_MARGIN_S: Final = 15 * 60.0
"""A repair ahead of a scheduled event drains by its start minus this (as a Health scheduled change)."""
ALLOWED_UNHEALTHY_FRACTION: Final = 0.2


@dataclass(frozen=True, slots=True)
class Signal:
    """One reason a node is unhealthy: what, since when, and how long it is tolerated."""

    what: str
    since: float
    toleration_s: float
    deadline: float | None = None
    immediate: bool = False  # a scheduled event: due as soon as seen

    @property
    def due_at(self) -> float:
        return -math.inf if self.immediate else self.since + self.toleration_s

    def describe(self, now: float) -> str:
        if self.immediate:
            return self.what
        return f"{self.what} for {now - self.since:.0f}s (tolerated {self.toleration_s:.0f}s)"


def signals(node: ManagedNode) -> tuple[Signal, ...]:
    """Every repair signal of `node` (see the module rules)."""
    found: list[Signal] = []
    for condition in node.conditions:
        for policy in REPAIR_POLICIES:
            if (condition.type, condition.status) == (policy.condition_type, policy.status):
                what = f"condition {condition.type}={condition.status}"
                found.append(Signal(what, condition.since, policy.toleration_s))
    status = node.instance_status
    if status is not None:
        failed = [
            name
            for name, value in (("system", status.system), ("instance", status.instance))
            if value == "impaired"
        ]
        if failed and status.impaired_since is not None:
            what = f"EC2 {' and '.join(failed)} status check impaired"
            found.append(Signal(what, status.impaired_since, STATUS_CHECK_TOLERATION_S))
        for code, not_before in status.events:
            if code in STOPPING_EVENTS:
                deadline = not_before - EVENT_DRAIN_MARGIN_S
                what = f"EC2 scheduled event {code} at {not_before:.0f}"
                found.append(Signal(what, not_before, 0.0, deadline, immediate=True))
    return tuple(found)


def earliest(node: ManagedNode) -> Signal | None:
    """The signal that makes `node` due first (upstream requeues on the same one)."""
    found = signals(node)
    return min(found, key=lambda s: (s.due_at, s.what)) if found else None


def allowed_unhealthy(nodes: int) -> int:
    """How many of a pool's `nodes` may be unhealthy with repair still going on: 20 %, rounded up."""
    return math.ceil(ALLOWED_UNHEALTHY_FRACTION * nodes)


class PassView(Protocol):
    """What repair needs from the planner pass (`planner._Pass`)."""

    inp: DisruptionInput

    def pool_of(self, node: ManagedNode) -> NodePool | None: ...
    def open_nodes(self) -> list[ManagedNode]: ...
    def simulate(self, removed: Sequence[ManagedNode]) -> Plan: ...
    def decide(self, decision: Decision, plan: Plan | None = None) -> Decision: ...
    def pass_over(
        self, node: ManagedNode, reason: str, kind: PassedOverKind, retry_at: float | None = None
    ) -> None: ...


def repairs(view: PassView, replacements_of: ReplacementsOf) -> tuple[list[Decision], list[RepairBlocked]]:
    """This pass's repair decisions, and the pools too unhealthy to repair (see the module rules)."""
    inp = view.inp
    pool_nodes: dict[str, int] = {}
    pool_sick: dict[str, int] = {}
    for node in inp.nodes:
        pool_nodes[node.nodepool] = pool_nodes.get(node.nodepool, 0) + 1
        if signals(node):
            pool_sick[node.nodepool] = pool_sick.get(node.nodepool, 0) + 1
    out: list[Decision] = []
    blocked: dict[str, RepairBlocked] = {}
    for node in sorted(view.open_nodes(), key=lambda n: (n.created_at, n.name)):
        signal = earliest(node)
        pool = view.pool_of(node)
        if signal is None or pool is None or node.initialized_at is None or node.disrupting:
            continue
        if inp.now < signal.due_at:
            left = signal.due_at - inp.now
            view.pass_over(
                node,
                f"unhealthy ({signal.what}); repaired if it lasts {left:.0f}s more",
                PassedOverKind.TRANSIENT,
                signal.due_at,
            )
            continue
        sick, total = pool_sick.get(pool.name, 0), pool_nodes.get(pool.name, 0)
        allowed = allowed_unhealthy(total)
        if sick > allowed:
            blocked[pool.name] = RepairBlocked(pool.name, sick, total, allowed)
            view.pass_over(
                node,
                f"unhealthy ({signal.what}) but {sick} of the {total} nodes of pool {pool.name} are unhealthy, "
                f"more than 20% ({allowed}): repair is held off",
                PassedOverKind.REPAIR_BLOCKED,
            )
            continue
        plan = view.simulate([node])
        decision = Decision(
            DisruptionReason.UNHEALTHY,
            (node,),
            signal.describe(inp.now),
            replacements=replacements_of(plan, [node]),
            forceful=True,
            deadline=signal.deadline,
        )
        out.append(view.decide(decision, plan))
    return out, sorted(blocked.values(), key=lambda b: b.pool)


class ReplacementsOf(Protocol):
    def __call__(self, plan: Plan, removed: Sequence[ManagedNode]) -> tuple[ClaimPlan, ...]: ...
