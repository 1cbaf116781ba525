"""Pending -> CreateFleet at scale: the warm provisioner's pass that handles a new batch of 100 pods in the
benchmark's big cluster (`bench.scale`), timed on the simulated run's clock with the pass's CPU time counted.

Theory of operation. The pass is the product's: `services.provisioner.ProvisionerService.run_pass` over the
shipped Kubernetes adapter (`KubeCluster` with the container's watch cache, warm from the read passes run
before it in the same process), the product's launcher (`services.launch.ClaimLauncher`: the claim record,
then the fleet call) and the offline EC2 catalog of us-east-1 (`adapters.aws.instance_types`). Not the
product's: the claim store, lease and offering availability are the in-memory adapters (`adapters.memory`,
DynamoDB's conditions without the network), and `BenchFleet` notes the instant of each CreateFleet call and
answers with an instance at once, so the figure ends at the call.

Time (`CpuClock`) is the simulated run's, as in `longshore simulate` (waiting costs no wall time), plus the CPU
time of this process, which is what grows with the cluster: now = the CPU seconds this process spent since the
batch arrived + what the code slept on the injected clock (the 1 s batch window) + `quiet_s` (0.15 s) for each
catch-up of the watch cache (a read timeout, spent idle; the plan's catch-ups of nodes and pods run at once
and share one, `informer.read_together`, unless the pods had to be caught up again). Wall time on the shared 2-core machine is not used:
it measures the other work on the machine (a read of 1.6 s of CPU took 10.7 s of wall under load). A CPU
second is a second of a function with one vCPU (1769 MB, `-c functionMemoryMb=1769`); the shipped 1024 MB
gets 0.58 of one, so there the CPU part takes 1.73 times as long. Not counted: the admission webhook's
trigger (the invocation starts when the pods are created), the API server's own time (another process), and
the DynamoDB and EC2 round trips (each claim's CreateFleet call waits for the ones before it in the pass).

A pod's latency runs from its creation (all 100 of a batch at once, as a Deployment scaled by 100 does within
a moment) to the CreateFleet call of the claim it is planned on. The cluster is full (every node holds 30
pods of 520m on 15.89 vCPU), so the batch needs new nodes. Between batches the pods are deleted and the
claims forgotten (their nodes never join this server), so every batch meets the same cluster.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from kubernetes import client as k8s

from longshore.adapters.aws.instance_types import offline_catalog
from longshore.adapters.kube.cluster import KubeCluster
from longshore.adapters.kube.informer import ClusterCache, Manifest
from longshore.adapters.memory import MemoryClaimStore, MemoryLease, MemoryOfferingAvailability
from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.config import load_cluster_text
from longshore.core.claims import CloudInstance, FleetOutcome, LaunchOption, NodeClaim
from longshore.core.model import NodeClass, NodePool
from longshore.services.launch import ClaimLauncher
from longshore.services.provisioner import ProvisionerService

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
EPOCH = 1_795_000_000.0  # the simulated run's start (2026-11-18)
CONFIG = """apiVersion: longshore.io/v1alpha1
kind: Cluster
metadata: {name: bench}
spec: {region: us-east-1}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand, spot]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-bench
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: bench}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: bench}}]
"""


class CpuClock:
    """`ports.clock.Clock`: the simulated run's time, with this process's CPU time counted (module docstring)."""

    def __init__(self) -> None:
        self.restart(EPOCH)

    def restart(self, at: float) -> None:
        self._at, self._cpu, self.slept, self.waited = at, time.process_time(), 0.0, 0.0

    def now(self) -> float:
        return self._at + (time.process_time() - self._cpu) + self.slept + self.waited

    def sleep(self, seconds: float) -> None:
        self.slept += max(0.0, seconds)

    @property
    def cpu_s(self) -> float:
        return time.process_time() - self._cpu


class TimedCluster(KubeCluster):
    """The shipped adapter; a read the watch cache answers with a catch-up costs the clock its quiet wait."""

    def __init__(self, api: k8s.ApiClient, cache: ClusterCache, clock: CpuClock) -> None:
        super().__init__(api, cache=cache, now=clock.now, sleep=clock.sleep)
        self._watched, self._clock = cache, clock

    def list_pods(self, *, node_name: str | None = None, label_selector: str | None = None) -> list[Manifest]:
        if node_name is None and label_selector is None and self._watched.pods.version is not None:
            self._clock.waited += self._watched.pods.quiet_s
        return super().list_pods(node_name=node_name, label_selector=label_selector)

    def list_nodes(self, *, label_selector: str | None = None) -> list[Manifest]:
        if label_selector is None and self._watched.nodes.version is not None:
            self._clock.waited += self._watched.nodes.quiet_s
        return super().list_nodes(label_selector=label_selector)

    def list_nodes_and_pods(self) -> tuple[list[Manifest], list[Manifest]]:
        """Both catch-ups at once: one quiet wait, or one more for each time the pods had to be caught up
        again after the nodes (`informer.read_together`)."""
        pods = self._watched.pods
        warm = pods.version is not None and self._watched.nodes.version is not None
        before = pods.catch_ups
        found = super().list_nodes_and_pods()
        if warm:
            self._clock.waited += pods.quiet_s * max(1, pods.catch_ups - before)
        return found


class BenchInstances:
    """`ports.cloud.Instances` over the instances `BenchFleet` started."""

    def __init__(self) -> None:
        self.by_id: dict[str, CloudInstance] = {}

    def describe(self, instance_ids: Iterable[str]) -> tuple[CloudInstance, ...]:
        return tuple(self.by_id[i] for i in instance_ids if i in self.by_id)

    def terminate(self, instance_ids: Iterable[str]) -> None:
        for instance_id in instance_ids:
            self.by_id.pop(instance_id, None)

    def list_owned(self) -> tuple[CloudInstance, ...]:
        return tuple(self.by_id.values())

    def find_by_claim(self, claim_id: str) -> CloudInstance | None:
        return next((i for i in self.by_id.values() if i.claim_id == claim_id), None)


class BenchFleet:
    """`ports.cloud.Fleet` that notes when each CreateFleet call is made and starts the first option at once."""

    def __init__(self, clock: CpuClock, instances: BenchInstances) -> None:
        self._clock, self._instances = clock, instances
        self.calls: list[tuple[float, tuple[str, ...]]] = []  # (instant, pods of the claim)

    def zones(self, node_class: NodeClass) -> frozenset[str]:
        return frozenset(ZONES)

    def create(
        self,
        claim: NodeClaim,
        pool: NodePool,
        node_class: NodeClass,
        labels: Iterable[tuple[str, str]],
        options: Sequence[LaunchOption],
        now: float,
    ) -> FleetOutcome:
        self.calls.append((self._clock.now(), claim.pods))
        first = options[0]
        instance_id = f"i-{len(self._instances.by_id) + 1:017x}"
        self._instances.by_id[instance_id] = CloudInstance(
            instance_id,
            "pending",
            first.instance_type,
            first.zone,
            first.capacity_type,
            claim.id,
            pool.name,
            now,
        )
        return FleetOutcome(instance_id, first.instance_type, first.zone, "lt-bench", (), "ami-bench")


class FleetBench:
    """One warm container's provisioner, for batch after batch (`batch()` is one invocation's pass)."""

    def __init__(self, api: k8s.ApiClient, cache: ClusterCache) -> None:
        self.clock = CpuClock()
        self.cluster = TimedCluster(api, cache, self.clock)
        self.config = load_cluster_text(CONFIG, "bench.scale_fleet")
        catalog = offline_catalog("us-east-1").restricted_to_zones(ZONES)  # the subnets of the node class
        self.catalog = lambda: catalog
        self.invocations = 0

    def batch(self) -> dict[str, Any]:
        """One invocation's first pass, started when the batch was created; the latency of each pod placed."""
        self.invocations += 1
        self.clock.restart(EPOCH + 3600.0 * self.invocations)
        created = self.clock.now()
        store, offerings, instances = MemoryClaimStore(), MemoryOfferingAvailability(), BenchInstances()
        fleet = BenchFleet(self.clock, instances)
        service = ProvisionerService(
            cluster=self.cluster,
            store=store,
            offerings=offerings,
            lease=MemoryLease(),
            launcher=ClaimLauncher(
                fleet=fleet,
                config=self.config,
                store=store,
                offerings=offerings,
                instances=instances,
                clock=self.clock,
            ),
            instances=instances,
            catalog=self.catalog,
            config=self.config,
            clock=self.clock,
            metrics=MemoryMetricsSink(),
            owner=f"bench-{self.invocations}",
        )
        result = service.run_pass()
        done = self.clock.now()
        failed = sorted({o.reason for o in result.launches if o.status == "failed"})
        latencies = sorted(at - created for at, pods in fleet.calls for _ in pods)
        return {
            "status": result.status,
            "pending": result.pending,
            "claims": len(fleet.calls),
            "unschedulable": len(result.unschedulable),
            "latencies_s": [round(s, 3) for s in latencies],
            "pass_s": round(done - created, 3),
            "cpu_s": round(self.clock.cpu_s, 3),
            "batch_window_s": round(self.clock.slept, 3),
            "watch_waits_s": round(self.clock.waited, 3),
            "decision_ms": round(result.decision_ms, 1),
            **({"failed": failed} if failed else {}),
        }
