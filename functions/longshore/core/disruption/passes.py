"""The state one planner pass shares between its methods: budgets, decided nodes, receivers, reasons.

Theory of operation: `PassState` is the part of a pass every method uses (`planner` for expiry, emptiness
and drift, `consolidation` for consolidation). It records the decisions taken so far, the nodes that take
evicted pods (*receivers*), and, for every node left alone, the first reason found. `simulate` asks the
packing engine where the pods of some nodes would go with those nodes (and the ones already decided) gone;
with `cooldown=True` (consolidation only) the evicted pods may not land on a node still inside its pool's
`consolidateAfter` window, as Karpenter's consolidation simulation refuses (see `cooling_nodes`). Simulations
offer the node classes' placement groups (`DisruptionInput.placement_groups`); a pool whose node class's group
could not be looked up offers no new claim (`DisruptionInput.placement_unresolved`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from longshore.core.disruption import budgets
from longshore.core.disruption.decisions import Decision, PassedOverKind
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import NodePool, Taint
from longshore.core.pods import Pod
from longshore.core.scheduling import solve
from longshore.core.scheduling.inputs import ExistingNode, SchedulingInput
from longshore.core.scheduling.plan import ClaimPlan, Plan
from longshore.core.taints import Toleration

COOLDOWN_TAINT: Final = "longshore.io/consolidate-after-cooldown"
"""A taint the consolidation simulation (never the cluster) puts on nodes inside their `consolidateAfter`
window, so the candidates' pods cannot be planned onto them; pending pods tolerate it."""


def cooling_nodes(inp: DisruptionInput, pools: dict[str, NodePool]) -> frozenset[str]:
    """Managed nodes still inside their pool's `consolidateAfter` window (Karpenter `IsUnderConsolidateAfter`,
    kubernetes-sigs/karpenter `pkg/utils/disruption/disruption.go`): initialized, the pool's `consolidateAfter`
    is neither `Never` nor 0, and the node's last pod event (else its initialization) is more recent than that.
    Karpenter's consolidation simulation does not place candidate pods on them (`scheduler.go`
    `addToExistingNode`, from v1.14.0); pending pods are exempt."""
    out: set[str] = set()
    for node in inp.nodes:
        pool = pools.get(node.nodepool)
        after = pool.disruption.consolidate_after_seconds if pool is not None else None
        if not after or node.initialized_at is None:
            continue
        if inp.now - node.idle_since() < after:
            out.add(node.name)
    return frozenset(out)


def replacements(plan: Plan, removed: Sequence[ManagedNode]) -> tuple[ClaimPlan, ...]:
    """The new claims that take pods of `removed` (claims only for pending pods are the provisioner's)."""
    moved = {p.key for n in removed for p in n.reschedulable_pods()}
    return tuple(c for c in plan.new_claims if any(p in moved for p in c.pods))


def _tolerating_cooldown(pod: Pod) -> Pod:
    return replace(pod, tolerations=(*pod.tolerations, Toleration(key=COOLDOWN_TAINT, operator="Exists")))


class PassState:
    def __init__(self, inp: DisruptionInput) -> None:
        self.inp = inp
        self.pools = {p.name: p for p in inp.config.node_pools}
        self.budgets = budgets.PassBudgets(inp)
        self.decided: set[str] = set()
        # nodes that may not take moved pods yet: Karpenter's "would schedule against an uninitialized node"
        self.booting = {n.name for n in inp.nodes if not n.node.initialized} | {
            n.name for n in inp.unmanaged if not n.initialized
        }
        self.cooling = cooling_nodes(inp, self.pools)
        self.receivers: dict[str, str] = {}  # node -> the decided node whose evicted pods it takes
        self.passed: dict[str, tuple[str, PassedOverKind]] = {}
        self.retry_at: dict[str, float] = {}

    def pool_of(self, node: ManagedNode) -> NodePool | None:
        return self.pools.get(node.nodepool)

    def pass_over(
        self, node: ManagedNode, reason: str, kind: PassedOverKind, retry_at: float | None = None
    ) -> None:
        """Record why `node` stays (the first reason a pass finds is the one it keeps)."""
        if node.name in self.passed:
            return
        self.passed[node.name] = (reason, kind)
        if retry_at is not None:
            self.retry_at[node.name] = retry_at

    def static(self, node: ManagedNode, pool: NodePool) -> bool:
        """Pass over a node of a static pool (`replicas`): never consolidated, empty or not (core.static_pools)."""
        if pool.replicas is not None:
            self.pass_over(node, f"pool {pool.name} is static (replicas)", PassedOverKind.UNCONSOLIDATABLE)
        return pool.replicas is not None

    def open_nodes(self) -> list[ManagedNode]:
        return [n for n in self.inp.nodes if n.name not in self.decided]

    def receiving(self, node: ManagedNode, why: str) -> bool:
        """Pass over `node` if a decision of this pass plans to put evicted pods on it."""
        source = self.receivers.get(node.name)
        if source is None:
            return False
        self.pass_over(
            node,
            f"{why}, but it takes pods evicted from {source} in this pass; next pass",
            PassedOverKind.BLOCKED,
        )
        return True

    def simulate(self, removed: Sequence[ManagedNode], *, cooldown: bool = False) -> Plan:
        """Where the removed nodes' pods (and the pending ones) would go with those nodes gone.

        The nodes already decided in this pass are gone too, and their pods are rescheduled alongside. With
        `cooldown` (consolidation), the removed nodes' pods may not land on a node inside its `consolidateAfter`
        window (`cooling_nodes`); pending pods and the pods of the nodes already decided may.
        """
        gone = {n.name for n in removed} | self.decided
        decided_pods = tuple(
            replace(p, node_name="", nominated_node_name="")
            for n in self.inp.nodes
            if n.name in self.decided
            for p in n.reschedulable_pods()
        )
        pods = tuple(
            replace(p, node_name="", nominated_node_name="") for n in removed for p in n.reschedulable_pods()
        )
        pending = self.inp.pending
        others: list[ExistingNode] = [
            n.node for n in self.inp.nodes if n.name not in gone and not n.disrupting
        ]
        cooling = self.cooling - gone if cooldown else frozenset()
        if cooling:
            taint = Taint(key=COOLDOWN_TAINT, effect="NoSchedule")
            others = [replace(n, taints=(*n.taints, taint)) if n.name in cooling else n for n in others]
            pending = tuple(_tolerating_cooldown(p) for p in pending)
            decided_pods = tuple(_tolerating_cooldown(p) for p in decided_pods)
        others.extend(self.inp.unmanaged)
        unresolved = self.inp.placement_unresolved
        return solve(
            SchedulingInput(
                pods=(*pending, *decided_pods, *pods),
                pools=tuple(p for p in self.inp.config.pools_by_weight() if p.node_class not in unresolved),
                node_classes=self.inp.config.node_classes,
                catalog=self.inp.catalog,
                nodes=tuple(others),
                in_flight=self.inp.in_flight,
                daemonsets=self.inp.daemonsets,
                unavailable=self.inp.unavailable,
                settings=self.inp.config.settings,
                placement_groups=self.inp.placement_groups,
            )
        )

    def stranded(self, plan: Plan, removed: Sequence[ManagedNode]) -> str | None:
        """Why the removed nodes' pods would not all run at once elsewhere: one with nowhere to go, or one
        that would wait for a node not initialized yet (an in-flight claim, a booting node), as Karpenter's
        disruption simulation refuses (kubernetes-sigs/karpenter pkg/controllers/disruption/helpers.go)."""
        moved = {p.key for n in removed for p in n.reschedulable_pods()}
        for pod, reason in plan.unschedulable:
            if pod in moved:
                return f"pod {pod} would have nowhere to go ({reason})"
        for placement in plan.existing:
            if placement.in_flight or placement.node in self.booting:
                waiting = next((p for p in placement.pods if p in moved), None)
                if waiting is not None:
                    return f"pod {waiting} would wait for node {placement.node}, not initialized yet"
        return None

    def decide(self, decision: Decision, plan: Plan | None = None) -> Decision:
        """Record `decision`; `plan` is its simulation, whose existing nodes that take pods become receivers."""
        for node in decision.nodes:
            self.decided.add(node.name)
            self.passed.pop(node.name, None)
            self.retry_at.pop(node.name, None)
        if plan is not None:
            moved = {p.key: n.name for n in decision.nodes for p in n.reschedulable_pods()}
            for placement in plan.existing:
                sources = sorted({moved[p] for p in placement.pods if p in moved})
                if sources and not placement.in_flight:
                    self.receivers.setdefault(placement.node, ", ".join(sources))
        return decision
