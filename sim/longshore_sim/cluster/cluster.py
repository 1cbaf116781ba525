"""`SimulatedCluster`: the API emulator, a virtual clock, moto's EC2 and the simulated controllers, run together.

Theory of operation: time is virtual. `step(dt)` (or `run_until(t)`) moves the clock forward in jumps to the
next instant where something happens — a node finishing its boot, a pod's start delay, a grace period ending,
a PDB... — and at each such instant runs a reconcile pass: sync EC2 (when a launch/termination hook fired or the
poll interval passed), then the Deployment, ReplicaSet and DaemonSet controllers, the pod garbage collector,
the scheduler and the kubelets' pod starts, repeated until the store stops changing. Passes are skipped while
nothing changed, so an idle hour costs nothing, and a 30 s boot costs no wall time.

Observers: `observe(callback)` is called with a `Sample` (virtual time, pending/running pods, nodes, ready
nodes) after every pass that changed those counts and at the end of every step; `samples` keeps them all.

Wiring: pass the boto3 EC2 client the cluster should read (moto), and hand every EC2 client that launches or
terminates instances (the provisioner's) to `watch_ec2_client` — its botocore `after-call` hooks tell the
kubelets the exact virtual launch time and trigger an immediate sync instead of waiting for the next poll.
EC2 is also polled every `ec2_poll_interval` virtual seconds (None: never, after the first look); a long
simulation whose launching clients are all watched should turn polling off, since each poll is a real
DescribeInstances call against moto.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from longshore_sim.clock import VirtualClock
from longshore_sim.cluster import matching
from longshore_sim.cluster.bootstrap import BootstrapReader
from longshore_sim.cluster.kubelet import KubeletSettings, SimulatedKubelet
from longshore_sim.cluster.scheduler import SimpleScheduler, is_pending
from longshore_sim.cluster.workloads import (
    DaemonSetController,
    DeploymentController,
    PodGarbageCollector,
    ReplicaSetController,
)
from longshore_sim.kubeapi import KubeApiEmulator
from longshore_sim.kubeapi.meta import JSON, metadata

MAX_PASSES = 20
DEFAULT_KUBELET = KubeletSettings()


@dataclass(frozen=True, slots=True)
class Sample:
    """Counts at one virtual instant."""

    time: float
    pending_pods: int
    running_pods: int
    nodes: int
    ready_nodes: int


class SimulatedCluster:
    """A Kubernetes cluster on moto and a virtual clock (see the module docstring)."""

    def __init__(
        self,
        *,
        ec2: Any,
        cluster_name: str,
        clock: VirtualClock | None = None,
        emulator: KubeApiEmulator | None = None,
        kubelet: KubeletSettings = DEFAULT_KUBELET,
        bootstrap_reader: BootstrapReader | None = None,
        ec2_poll_interval: float | None = 30.0,
        kubernetes_version: str = "1.31",
    ) -> None:
        self.clock = clock or VirtualClock()
        self.emulator = emulator or KubeApiEmulator(clock=self.clock, kubernetes_version=kubernetes_version)
        self.store = self.emulator.store
        self.cluster_name = cluster_name
        self.ec2_poll_interval = ec2_poll_interval
        if kubelet is DEFAULT_KUBELET:
            kubelet = dataclasses.replace(kubelet, kubelet_version=f"v{kubernetes_version}.0-eks")
        self.kubelet = SimulatedKubelet(
            self.store,
            self.clock,
            ec2,
            cluster_name,
            settings=kubelet,
            reader=bootstrap_reader,
            wake=self._wake,
        )
        self.scheduler = SimpleScheduler(self.store, self.clock)
        self.deployments = DeploymentController(self.store)
        self.replicasets = ReplicaSetController(self.store)
        self.daemonsets = DaemonSetController(self.store)
        self.pod_gc = PodGarbageCollector(self.store, self.clock)
        self.samples: list[Sample] = []
        self._observers: list[Callable[[Sample], None]] = []
        self._ec2_dirty = True
        self._last_poll: float | None = None
        self._dirty = True
        self._reconciled_rv = -1
        self._wakeups: set[float] = set()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> SimulatedCluster:
        self.emulator.start()
        return self

    def close(self) -> None:
        self.emulator.stop()

    def __enter__(self) -> SimulatedCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def api_client(self, token: str | None = None) -> Any:
        """A kubernetes `ApiClient` for the cluster's API server."""
        return self.emulator.api_client(token)

    # ------------------------------------------------------------------ wiring

    def watch_ec2_client(self, client: Any) -> None:
        """Learn about launches and terminations made through `client` (a boto3 client, or a boto3/botocore
        session, whose future clients inherit the hooks) the moment they happen."""
        meta = getattr(client, "meta", None)
        events = meta.events if meta is not None else client.events
        events.register("after-call.ec2.CreateFleet", self._after_create_fleet)
        events.register("after-call.ec2.RunInstances", self._after_run_instances)
        events.register("after-call.ec2.TerminateInstances", self._after_terminate)

    def _after_create_fleet(self, parsed: dict[str, Any], **_: Any) -> None:
        for entry in parsed.get("Instances") or []:
            spec = (entry.get("LaunchTemplateAndOverrides") or {}).get("LaunchTemplateSpecification") or {}
            template = spec.get("LaunchTemplateName")
            self.kubelet.note_launch(entry.get("InstanceIds") or [], self.clock.now(), template)
        self._ec2_dirty = True

    def _after_run_instances(self, parsed: dict[str, Any], **_: Any) -> None:
        self.kubelet.note_launch([i["InstanceId"] for i in parsed.get("Instances") or []], self.clock.now())
        self._ec2_dirty = True

    def _after_terminate(self, **_: Any) -> None:
        self._ec2_dirty = True

    def observe(self, callback: Callable[[Sample], None]) -> None:
        self._observers.append(callback)

    # ------------------------------------------------------------------ time

    def now(self) -> float:
        return self.clock.now()

    def step(self, dt: float) -> None:
        """Advance virtual time by `dt` seconds, running everything that falls due on the way."""
        self.run_until(self.clock.now() + dt)

    def run_until(self, target: float) -> None:
        """Advance virtual time to `target`, reconciling at every instant something happens."""
        while True:
            self.reconcile()
            now = self.clock.now()
            if now >= target:
                break
            candidates = [target]
            for due in (self._next_poll(), self.clock.next_due(), self.store.next_deadline()):
                if due is not None:
                    candidates.append(due)
            self.clock.advance_to(max(min(candidates), now))
            self.store.process_due()
        self._record(force=True)

    def reconcile(self) -> None:
        """Run the controllers at the current instant until the store stops changing."""
        if self._ec2_dirty or self._poll_due():
            self._ec2_dirty = False
            self._last_poll = self.clock.now()
            self.kubelet.sync_instances()
            self._dirty = True
        if not self._dirty and self._reconciled_rv == self.store.resource_version:
            return
        for _ in range(MAX_PASSES):
            before = self.store.resource_version
            self._dirty = False
            self.deployments.reconcile()
            self.replicasets.reconcile()
            self.daemonsets.reconcile()
            self._wake_at(self.pod_gc.reconcile())
            self.scheduler.schedule()
            self._wake_at(self.kubelet.start_pods())
            if self.store.resource_version == before and not self._dirty:
                break
        self._reconciled_rv = self.store.resource_version
        self._record(force=False)

    def _poll_due(self) -> bool:
        if self._last_poll is None:
            return True
        return (
            self.ec2_poll_interval is not None
            and self.clock.now() - self._last_poll >= self.ec2_poll_interval
        )

    def _next_poll(self) -> float | None:
        if self.ec2_poll_interval is None:
            return None
        return (self._last_poll if self._last_poll is not None else self.clock.now()) + self.ec2_poll_interval

    def sync_ec2(self) -> None:
        """Look at EC2 at the next reconcile (for launches made through clients that are not watched)."""
        self._ec2_dirty = True

    def _wake(self) -> None:
        self._dirty = True

    def _wake_at(self, when: float | None) -> None:
        if when is None or when in self._wakeups:
            return
        self._wakeups.add(when)

        def fire() -> None:
            self._wakeups.discard(when)
            self._dirty = True

        self.clock.call_at(when, fire)

    # ------------------------------------------------------------------ observation

    def sample(self) -> Sample:
        pods = self.store.view("pods")
        nodes = self.store.view("nodes")
        return Sample(
            time=self.clock.now(),
            pending_pods=sum(1 for p in pods if is_pending(p)),
            running_pods=sum(
                1
                for p in pods
                if (p.get("status") or {}).get("phase") == "Running"
                and not metadata(p).get("deletionTimestamp")
            ),
            nodes=len(nodes),
            ready_nodes=sum(1 for n in nodes if matching.is_node_ready(n)),
        )

    def _record(self, *, force: bool) -> None:
        current = self.sample()
        last = self.samples[-1] if self.samples else None
        changed = last is None or (last.pending_pods, last.running_pods, last.nodes, last.ready_nodes) != (
            current.pending_pods,
            current.running_pods,
            current.nodes,
            current.ready_nodes,
        )
        if not changed and not force:
            return
        if last is not None and last.time == current.time:
            self.samples[-1] = current
        else:
            self.samples.append(current)
        for observer in self._observers:
            observer(current)

    # ------------------------------------------------------------------ conveniences

    def apply(self, manifest: JSON) -> JSON:
        """Create an object from a manifest dict (its kind picks the resource), like `kubectl create -f`."""
        plural = _PLURALS.get(str(manifest.get("kind")))
        if plural is None:
            raise ValueError(
                f"kind {manifest.get('kind')!r} is not served by the emulator (known: {sorted(_PLURALS)})"
            )
        self._dirty = True
        return self.store.create(plural, manifest, metadata(manifest).get("namespace"))

    def scale(self, deployment: str, replicas: int, namespace: str = "default") -> None:
        """`kubectl scale deployment/<name> --replicas=<n>`."""
        self.store.modify("deployments", deployment, namespace, lambda d: d["spec"].update(replicas=replicas))
        self._dirty = True

    def pods(self, namespace: str | None = None) -> list[JSON]:
        return self.store.list("pods", namespace)

    def nodes(self) -> list[JSON]:
        return self.store.list("nodes")


_PLURALS = {
    "Pod": "pods",
    "Node": "nodes",
    "Namespace": "namespaces",
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "DaemonSet": "daemonsets",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "ConfigMap": "configmaps",
    "Event": "events",
    "PodTemplate": "podtemplates",
    "StatefulSet": "statefulsets",
    "CapacityBuffer": "capacitybuffers",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses",
}
