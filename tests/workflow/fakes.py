"""The workflow steps' test world: the shared fakes (`tests.fakes`) wired as `StepPorts`, and builders for
nodes, pods and PDBs.

Theory of operation: the fakes keep state and apply the same rules the real systems apply (PDBs, grace
periods on the virtual clock, instances shutting down; see `tests.fakes`), so tests assert on outcomes (pods
left, taints, events, instance states), not on calls. `run_clock` drives the virtual-time ASL executor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from longshore.adapters.memory import MemoryClaimStore
from longshore.core.claims import NodeClaim, provider_id
from longshore.ports.kube import Manifest
from longshore.workflow.context import StepPorts, WorkflowLimits
from longshore_sim.clock import VirtualClock
from longshore_sim.stepfunctions import StepFunctionsSimulator
from tests.fakes import FakeCluster, FakeInstances, FakeReplacements, stamp

__all__ = [
    "CLUSTER",
    "START",
    "World",
    "make_node",
    "make_pdb",
    "make_pod",
    "new_world",
    "run_clock",
    "stamp",
]

CLUSTER = "demo-cluster"
START = 1_767_225_600.0


def make_node(name: str, instance_id: str, pool: str = "default", zone: str = "us-east-1a") -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {"karpenter.sh/nodepool": pool},
            "annotations": {},
        },
        "spec": {"providerID": provider_id(zone, instance_id), "taints": []},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def make_pod(
    name: str,
    node: str | None,
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    owner_kind: str = "ReplicaSet",
    annotations: Mapping[str, str] | None = None,
    grace: int = 30,
    priority_class: str = "",
    tolerations: Iterable[Mapping[str, str]] = (),
    created: float = START - 3600,
    phase: str = "Running",
) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner_kind, "name": f"{name}-owner"}],
            "creationTimestamp": stamp(created),
        },
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": grace,
            "priorityClassName": priority_class,
            "tolerations": [dict(t) for t in tolerations],
        },
        "status": {"phase": phase},
    }


def make_pdb(
    name: str,
    match_labels: Mapping[str, str],
    *,
    min_available: int | None = None,
    max_unavailable: int | None = None,
    namespace: str = "default",
) -> Manifest:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(match_labels)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


@dataclass
class World:
    """One test's fakes, wired as `StepPorts`."""

    clock: VirtualClock
    cluster: FakeCluster
    claims: MemoryClaimStore
    instances: FakeInstances
    replacements: FakeReplacements
    grace_periods: dict[str, int | None] = field(default_factory=dict)
    limits: WorkflowLimits = field(default_factory=WorkflowLimits)

    @property
    def ports(self) -> StepPorts:
        return StepPorts(
            cluster_name=CLUSTER,
            cluster=self.cluster,
            claims=self.claims,
            instances=self.instances,
            replacements=self.replacements,
            clock=self.clock,
            termination_grace_periods=self.grace_periods,
            limits=self.limits,
        )

    def add_node(
        self, name: str, instance_id: str, *, pool: str = "default", claimed: bool = True, owned: bool = True
    ) -> None:
        """A node with its instance; `claimed` writes its NodeClaim, `owned` tags the instance for the cluster."""
        self.cluster.add_node(make_node(name, instance_id, pool))
        self.instances.add(instance_id, owned=owned, pool=pool)
        if claimed:
            self.claims.put(
                NodeClaim(
                    id=f"claim-{name}",
                    nodepool=pool,
                    node_class="default",
                    instance_id=instance_id,
                    node_name=name,
                    state="initialized",
                )
            )


def new_world(start: float = START) -> World:
    clock = VirtualClock(start)
    claims = MemoryClaimStore()
    return World(clock, FakeCluster(clock), claims, FakeInstances(clock), FakeReplacements(clock, claims))


def run_clock(clock: VirtualClock, simulator: StepFunctionsSimulator, *, limit_s: float = 48 * 3600) -> None:
    """Advance the clock from timer to timer until no execution runs (or the virtual limit passes)."""
    end = clock.now() + limit_s
    while simulator.running():
        due = clock.next_due()
        if due is None or due > end:
            break
        clock.advance_to(due)
