"""A planner test world: the workflow tests' in-memory cluster and instances, the claim store, a launcher whose replacements
become nodes on the virtual clock, and the real workflows run by the virtual-time ASL executor.

Theory of operation: `PlannerWorld` wires `DisruptionService` exactly as the Lambda does, but on fakes that
keep state: a node is a Kubernetes-shaped dict with `status.allocatable` and Karpenter's labels, its claim
is in the `MemoryClaimStore`, its instance in `FakeInstances`. `FakeLauncher` writes the claim `launching`
and, `ready_after` virtual seconds later, adds the node and marks the claim `initialized` (or forgets it when
`fail` is set). `run(seconds)` alternates planner passes (every 10 s, as the Lambda loops) with clock
advances, during which the disruption executions progress. Tests assert on what the cluster, the store, the
executions and the metrics show.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from longshore.adapters.memory import MemoryOfferingAvailability
from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.claims import LaunchRequest, LaunchResult, NodeClaim, provider_id
from longshore.core.model import Budget, ClusterConfig, Disruption, Expiry, NodePool
from longshore.services.disruption import DisruptionService, PassReport, PlannerPorts
from longshore_sim.sfn_workflows import SimulatedWorkflows, steps_invoker
from longshore_sim.stepfunctions import StepFunctionsSimulator
from tests.builders import catalog, instance_type, node_class, pod_manifest, pool
from tests.workflow.fakes import START, World, new_world, stamp

TYPES = catalog(
    instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096),
    instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192),
    instance_type("m5.2xlarge", vcpus=8, memory_gib=32, price=0.384),
)
ALLOCATABLE = {
    "m5.large": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
    "m5.xlarge": {"cpu": "3920m", "memory": "14Gi", "pods": "58"},
    "m5.2xlarge": {"cpu": "7910m", "memory": "29Gi", "pods": "58"},
}
PRICES = {"m5.large": 0.096, "m5.xlarge": 0.192, "m5.2xlarge": 0.384}


def a_pool(
    name: str = "default",
    *,
    policy: str = "WhenEmptyOrUnderutilized",
    after: int | None = 0,
    budgets: tuple[Budget, ...] = (Budget(nodes="100%"),),
    grace: int | None = None,
    **fields: Any,
) -> NodePool:
    return replace(
        pool(name, **fields),
        disruption=Disruption(policy, after, budgets),  # type: ignore[arg-type]
        expiry=Expiry(after_seconds=None),
        termination_grace_period_seconds=grace,
    )


def cluster_config(*pools: NodePool) -> ClusterConfig:
    return ClusterConfig("demo-cluster", "us-east-1", "1.31", tuple(pools or (a_pool(),)), (node_class(),))


def node_manifest(
    name: str,
    instance_id: str,
    *,
    type_name: str = "m5.xlarge",
    pool_name: str = "default",
    zone: str = "us-east-1a",
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    labels = {
        wk.NODEPOOL: pool_name,
        wk.INSTANCE_TYPE: type_name,
        wk.ZONE: zone,
        wk.CAPACITY_TYPE: "on-demand",
        wk.HOSTNAME: name,
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.INITIALIZED: "true",
        wk.NODECLASS: "default",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": labels,
            "annotations": dict(annotations or {}),
        },
        "spec": {"providerID": provider_id(zone, instance_id), "taints": []},
        "status": {
            "allocatable": ALLOCATABLE[type_name],
            "capacity": ALLOCATABLE[type_name],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def running_pod(name: str, node: str, *, bound_at: float = START - 3600, **options: Any) -> dict[str, Any]:
    manifest = pod_manifest(name, node_name=node, **options)
    manifest["metadata"]["creationTimestamp"] = stamp(bound_at)
    manifest["spec"]["terminationGracePeriodSeconds"] = options.get("grace", 30) if "grace" in options else 30
    manifest["status"] = {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(bound_at)}],
    }
    return manifest


@dataclass
class FakeLauncher:
    """`ports.cloud.Launcher`: the claim is written `launching`; `ready_after` s later its node exists."""

    world: World
    ready_after: float = 60.0
    fail: bool = False
    requests: list[LaunchRequest] = field(default_factory=list)
    _counter: int = 0

    def launch(self, request: LaunchRequest, now: float) -> LaunchResult:
        self.requests.append(request)
        if self.fail:
            return LaunchResult(request.claim.id, "failed", reason="InsufficientInstanceCapacity")
        claims = self.world.claims
        if not claims.create_if_absent(replace(request.claim, state="launching", created_at=now)):
            return LaunchResult(request.claim.id, "exists", claims.get(request.claim.id))
        self._counter += 1
        instance_id = f"i-new{self._counter}"
        option = request.options[0]
        name = f"new-{self._counter}"

        def ready() -> None:
            stored = claims.get(request.claim.id)
            if stored is None:
                return
            at = self.world.clock.now()
            self.world.cluster.add_node(
                node_manifest(
                    name,
                    instance_id,
                    type_name=option.instance_type,
                    pool_name=stored.nodepool,
                    zone=option.zone,
                )
            )
            self.world.instances.add(instance_id, pool=stored.nodepool)
            claims.put(
                replace(
                    stored,
                    state="initialized",
                    instance_id=instance_id,
                    node_name=name,
                    provider_id=provider_id(option.zone, instance_id),
                    instance_type=option.instance_type,
                    zone=option.zone,
                    capacity_type=option.capacity_type,
                    price=option.price,
                    launched_at=now,
                    registered_at=at,
                    initialized_at=at,
                )
            )

        self.world.clock.call_later(self.ready_after, ready)
        return LaunchResult(request.claim.id, "launched", claims.get(request.claim.id))


class PlannerWorld:
    """The fakes, the simulator and the service, wired together. With `containers = "cold"` (the suite runs
    the planner's service tests both ways) every pass runs in a new service, as after a cold start."""

    containers = "warm"

    def __init__(self, config: ClusterConfig | None = None, *, the_catalog: Catalog = TYPES) -> None:
        self.world = new_world()
        self.config = config or cluster_config()
        self.world.grace_periods = {
            p.name: p.termination_grace_period_seconds for p in self.config.node_pools
        }
        self.metrics = MemoryMetricsSink()
        self.simulator = StepFunctionsSimulator(
            self.world.clock, steps_invoker(self.world.ports, self.metrics)
        )
        self.workflows = SimulatedWorkflows(self.simulator)
        self.launcher = FakeLauncher(self.world)
        self.offerings = MemoryOfferingAvailability()
        self.the_catalog = the_catalog
        self.service = self.new_service()
        self.reports: list[PassReport] = []
        self.cold = PlannerWorld.containers == "cold"

    def new_service(self) -> DisruptionService:
        """A planner service with nothing in memory: what a cold Lambda container starts with."""
        return DisruptionService(
            self.config,
            self.the_catalog,
            PlannerPorts(
                cluster=self.world.cluster,
                claims=self.world.claims,
                offerings=self.offerings,
                workflow=self.workflows,
                launcher=self.launcher,
                clock=self.world.clock,
                metrics=self.metrics,
            ),
            logging.getLogger("tests.planner"),
        )

    @property
    def cluster(self) -> Any:
        return self.world.cluster

    @property
    def clock(self) -> Any:
        return self.world.clock

    def add_node(
        self,
        name: str,
        *,
        type_name: str = "m5.xlarge",
        pool_name: str = "default",
        created: float = START - 7200,
        annotations: dict[str, str] | None = None,
        image_id: str | None = None,
        zone: str = "us-east-1a",
    ) -> str:
        instance_id = f"i-{name}"
        self.world.cluster.add_node(
            node_manifest(
                name,
                instance_id,
                type_name=type_name,
                pool_name=pool_name,
                annotations=annotations,
                zone=zone,
            )
        )
        self.world.instances.add(instance_id, pool=pool_name)
        self.world.claims.put(
            NodeClaim(
                id=f"claim-{name}",
                nodepool=pool_name,
                node_class="default",
                instance_type=type_name,
                zone=zone,
                capacity_type="on-demand",
                price=PRICES[type_name],
                instance_id=instance_id,
                node_name=name,
                provider_id=provider_id(zone, instance_id),
                state="initialized",
                launched_at=created,
                registered_at=created + 30,
                initialized_at=created + 60,
                created_at=created,
                image_id=image_id,
            )
        )
        return instance_id

    def add_pod(self, name: str, node: str, **options: Any) -> None:
        self.world.cluster.add_pod(running_pod(name, node, **options))

    def run_pass(self) -> PassReport:
        if self.cold and self.reports and self.reports[-1].pending is None:
            # a new container, with the same outside world: what a cold start between invocations gives
            # (an invocation that holds a consolidation awaiting re-validation keeps its container)
            self.service = DisruptionService(
                self.config, self.the_catalog, self.service.ports, self.service.log
            )
        report = self.service.run_pass()
        self.reports.append(report)
        return report

    def run(self, seconds: float, *, every: float = 10.0) -> None:
        """Planner passes every `every` s for `seconds`, executions progressing in between."""
        end = self.clock.now() + seconds
        while self.clock.now() < end:
            self.run_pass()
            self.clock.advance(every)

    def events(self, node: str | None = None, reason: str | None = None) -> list[Any]:
        return [
            e
            for e in self.world.cluster.events
            if (node is None or e.involved.name == node) and (reason is None or e.reason == reason)
        ]
