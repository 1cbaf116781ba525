"""In-memory fakes behind the workflow steps: a cluster that honours PDBs and grace periods, EC2 instances,
a replacement launcher, and builders for nodes and pods.

Theory of operation: the fakes keep state and apply the same rules the real systems apply (a PDB refuses an
eviction that would leave fewer healthy pods than it requires; an evicted or deleted pod stays
`terminating` until its grace period ends on the virtual clock; a terminated instance goes through
`shutting-down`; an instance can be made to refuse termination or to hang in `shutting-down`), so tests assert on outcomes (pods left, taints, events, instance states), not on calls.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from longshore.adapters.memory import MemoryClaimStore
from longshore.core.claims import CloudInstance, NodeClaim, provider_id
from longshore.core.drain import parse_timestamp
from longshore.ports.kube import (
    ClusterUnavailableError,
    EvictionResult,
    KubeEvent,
    Manifest,
    NodePatch,
    event_name,
)
from longshore.workflow.context import StepPorts, WorkflowLimits
from longshore_sim.clock import VirtualClock
from longshore_sim.stepfunctions import StepFunctionsSimulator

CLUSTER = "demo-cluster"
START = 1_767_225_600.0


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


class FakeCluster:
    """`ports.kube.Cluster` in memory, on a virtual clock."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.nodes: dict[str, Manifest] = {}
        self.pods: dict[tuple[str, str], Manifest] = {}
        self.pdbs: list[Manifest] = []
        self.events: list[KubeEvent] = []
        self.event_counts: dict[str, int] = {}  # event name -> times posted
        self.evicted: list[str] = []
        self.blocked: list[str] = []
        self.deleted: list[tuple[str, int | None]] = []
        self.deleted_nodes: list[str] = []
        self.fail_calls: dict[str, int] = {}  # method name -> how many more calls fail
        self.log: list[
            tuple[float, str, str]
        ] = []  # (virtual time, what, object): taint/untaint/evict/delete...
        self.max_tainted = 0
        self._lock = threading.RLock()

    # -- setup
    def add_node(self, node: Manifest) -> None:
        self.nodes[node["metadata"]["name"]] = copy.deepcopy(node)

    def add_pod(self, pod: Manifest) -> None:
        self.pods[(pod["metadata"]["namespace"], pod["metadata"]["name"])] = copy.deepcopy(pod)

    def _maybe_fail(self, method: str) -> None:
        remaining = self.fail_calls.get(method, 0)
        if remaining:
            self.fail_calls[method] = remaining - 1
            raise ClusterUnavailableError(f"{method}: injected failure")

    def _purge(self) -> None:
        now = self.clock.now()
        for key, pod in list(self.pods.items()):
            gone_at = parse_timestamp(pod["metadata"].get("deletionTimestamp"))
            if gone_at is not None and gone_at <= now:
                del self.pods[key]

    def _terminate(self, key: tuple[str, str], grace: int) -> None:
        pod = self.pods[key]
        now = self.clock.now()
        if grace <= 0:
            del self.pods[key]
            return
        current = parse_timestamp(pod["metadata"].get("deletionTimestamp"))
        if current is None or now + grace < current:
            pod["metadata"]["deletionTimestamp"] = stamp(now + grace)

    # -- queries used by tests
    def pods_on(self, node: str) -> list[str]:
        with self._lock:
            self._purge()
            return sorted(
                f"{ns}/{n}" for (ns, n), p in self.pods.items() if p["spec"].get("nodeName") == node
            )

    def taints(self, node: str) -> list[tuple[str, str]]:
        return [(t["key"], t["effect"]) for t in self.nodes[node]["spec"].get("taints") or []]

    def event_reasons(self, name: str | None = None) -> list[str]:
        return [e.reason for e in self.events if name is None or e.involved.name == name]

    # -- Cluster port
    def list_pods(self, *, node_name: str | None = None, label_selector: str | None = None) -> list[Manifest]:
        with self._lock:
            self._maybe_fail("list_pods")
            self._purge()
            return [
                copy.deepcopy(p)
                for p in self.pods.values()
                if node_name is None or p["spec"].get("nodeName") == node_name
            ]

    def list_pending_pods(self) -> list[Manifest]:
        with self._lock:
            return [copy.deepcopy(p) for p in self.pods.values() if not p["spec"].get("nodeName")]

    def list_nodes(self, *, label_selector: str | None = None) -> list[Manifest]:
        with self._lock:
            return [copy.deepcopy(n) for n in self.nodes.values()]

    def get_node(self, name: str) -> Manifest | None:
        with self._lock:
            self._maybe_fail("get_node")
            node = self.nodes.get(name)
            return copy.deepcopy(node) if node is not None else None

    def list_daemonsets(self) -> list[Manifest]:
        return []

    def list_pdbs(self) -> list[Manifest]:
        return copy.deepcopy(self.pdbs)

    def patch_node(self, name: str, patch: NodePatch) -> Manifest | None:
        with self._lock:
            self._maybe_fail("patch_node")
            node = self.nodes.get(name)
            if node is None:
                return None
            finalizers = node["metadata"].setdefault("finalizers", [])
            finalizers.extend(f for f in patch.add_finalizers if f not in finalizers)
            node["metadata"]["finalizers"] = [f for f in finalizers if f not in patch.remove_finalizers]
            for section, changes in (("labels", patch.labels), ("annotations", patch.annotations)):
                target = node["metadata"].setdefault(section, {})
                for key, value in changes:
                    if value is None:
                        target.pop(key, None)
                    else:
                        target[key] = value
            was = self._disrupted(node)
            if patch.taints is not None:
                node["spec"]["taints"] = [
                    {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
                    for t in patch.taints
                ]
            if patch.unschedulable is not None:
                node["spec"]["unschedulable"] = patch.unschedulable
            now_tainted = self._disrupted(node)
            if now_tainted != was:
                self.log.append((self.clock.now(), "taint" if now_tainted else "untaint", name))
            self.max_tainted = max(self.max_tainted, sum(self._disrupted(n) for n in self.nodes.values()))
            return copy.deepcopy(node)

    @staticmethod
    def _disrupted(node: Manifest) -> bool:
        return any(t.get("key") == "karpenter.sh/disrupted" for t in node["spec"].get("taints") or [])

    def times(self, what: str, name: str) -> list[float]:
        return [t for t, w, n in self.log if w == what and n == name]

    def _pdb_allows(self, pod: Manifest) -> bool:
        labels = pod["metadata"].get("labels") or {}
        for pdb in self.pdbs:
            if pdb["metadata"]["namespace"] != pod["metadata"]["namespace"]:
                continue
            selector = pdb["spec"]["selector"]["matchLabels"]
            if not all(labels.get(k) == v for k, v in selector.items()):
                continue
            matching = [
                p
                for p in self.pods.values()
                if p["metadata"]["namespace"] == pdb["metadata"]["namespace"]
                and all((p["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
            ]
            healthy = [
                p
                for p in matching
                if "deletionTimestamp" not in p["metadata"] and p["status"]["phase"] == "Running"
            ]
            if "minAvailable" in pdb["spec"]:
                allowed = len(healthy) - int(pdb["spec"]["minAvailable"])
            else:
                allowed = int(pdb["spec"]["maxUnavailable"]) - (len(matching) - len(healthy))
            if allowed <= 0:
                return False
        return True

    def evict_pod(self, namespace: str, name: str, *, uid: str | None = None) -> EvictionResult:
        with self._lock:
            self._maybe_fail("evict_pod")
            self._purge()
            pod = self.pods.get((namespace, name))
            if pod is None or (uid and pod["metadata"]["uid"] != uid):
                return EvictionResult("not-found")
            if "deletionTimestamp" in pod["metadata"]:
                return EvictionResult("evicted")
            if not self._pdb_allows(pod):
                self.blocked.append(f"{namespace}/{name}")
                return EvictionResult(
                    "blocked", "Cannot evict pod as it would violate the pod's disruption budget."
                )
            self.evicted.append(f"{namespace}/{name}")
            self.log.append((self.clock.now(), "evict", f"{namespace}/{name}"))
            self._terminate((namespace, name), int(pod["spec"].get("terminationGracePeriodSeconds", 30)))
            return EvictionResult("evicted")

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> bool:
        with self._lock:
            self._purge()
            pod = self.pods.get((namespace, name))
            if pod is None:
                return False
            self.deleted.append((f"{namespace}/{name}", grace_period_seconds))
            self.log.append((self.clock.now(), "delete-pod", f"{namespace}/{name}"))
            grace = (
                grace_period_seconds
                if grace_period_seconds is not None
                else int(pod["spec"].get("terminationGracePeriodSeconds", 30))
            )
            self._terminate((namespace, name), grace)
            return True

    def kubectl_delete_node(self, name: str) -> None:
        """A person's delete: the node stays, marked, while a finalizer holds it (Longshore's releases it)."""
        with self._lock:
            node = self.nodes[name]
            if node["metadata"].get("finalizers"):
                node["metadata"]["deletionTimestamp"] = stamp(self.clock.now())
            else:
                del self.nodes[name]

    def delete_node(self, name: str) -> bool:
        """The port's delete: deletes and releases Longshore's finalizer, so the node is gone."""
        with self._lock:
            self.deleted_nodes.append(name)
            self.log.append((self.clock.now(), "delete-node", name))
            return self.nodes.pop(name, None) is not None

    def post_event(self, event: KubeEvent) -> None:
        """As the port says: a repeat (same object, reason, message up to numbers) is counted, not added."""
        with self._lock:
            key = event_name(event)
            if key in self.event_counts:
                self.event_counts[key] += 1
                return
            self.event_counts[key] = 1
            self.events.append(event)


class FakeInstances:
    """`ports.cloud.Instances` in memory: terminate -> shutting-down -> terminated 20 s later."""

    SHUTDOWN_SECONDS = 20.0

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.instances: dict[str, CloudInstance] = {}
        self.owned: set[str] = set()
        self._terminated_at: dict[str, float] = {}
        self.refuse_terminate: set[str] = set()  # EC2 answers TerminateInstances for these with an error
        self.stuck_shutting_down: set[str] = set()  # these never get past `shutting-down`
        self._lock = threading.RLock()  # rotations run disruptions on several interpreter threads

    def add(self, instance_id: str, *, owned: bool = True, pool: str = "default") -> None:
        with self._lock:
            self.instances[instance_id] = CloudInstance(
                instance_id, "running", "m5.large", "us-east-1a", "on-demand", nodepool=pool
            )
            if owned:
                self.owned.add(instance_id)

    def _refresh(self) -> None:
        now = self.clock.now()
        for instance_id, when in self._terminated_at.items():
            if now >= when and instance_id not in self.stuck_shutting_down:
                self.instances[instance_id] = replace(self.instances[instance_id], state="terminated")

    def state(self, instance_id: str) -> str:
        with self._lock:
            self._refresh()
            return self.instances[instance_id].state

    def describe(self, instance_ids: Iterable[str]) -> tuple[CloudInstance, ...]:
        with self._lock:
            self._refresh()
            return tuple(self.instances[i] for i in instance_ids if i in self.instances)

    def terminate(self, instance_ids: Iterable[str]) -> None:
        with self._lock:
            ids = list(instance_ids)
            refused = sorted(self.refuse_terminate.intersection(ids))
            if refused:
                raise ClientError(
                    {
                        "Error": {
                            "Code": "UnauthorizedOperation",
                            "Message": f"not allowed to terminate {refused}",
                        }
                    },
                    "TerminateInstances",
                )
            for instance_id in ids:
                if instance_id in self.instances and instance_id not in self._terminated_at:
                    self.instances[instance_id] = replace(self.instances[instance_id], state="shutting-down")
                    self._terminated_at[instance_id] = self.clock.now() + self.SHUTDOWN_SECONDS

    def list_owned(self) -> tuple[CloudInstance, ...]:
        with self._lock:
            self._refresh()
            return tuple(
                i for k, i in sorted(self.instances.items()) if k in self.owned and i.state != "terminated"
            )

    def find_by_claim(self, claim_id: str) -> CloudInstance | None:
        with self._lock:
            return next((i for i in self.instances.values() if i.claim_id == claim_id), None)


@dataclass
class FakeReplacements:
    """`ports.workflow.ReplacementLauncher`: writes a `launching` claim that becomes `initialized` (or is
    forgotten, when `fail` is set) `ready_after` virtual seconds later."""

    clock: VirtualClock
    claims: MemoryClaimStore
    ready_after: float = 60.0
    fail: bool = False
    launched: list[str] = field(default_factory=list)

    def launch_replacement(
        self, claim: NodeClaim | None, node: Manifest | None, reason: str, now: float
    ) -> str:
        base = claim.id if claim else "node"
        claim_id = f"{base}-replacement-{reason}"
        pool = claim.nodepool if claim else "default"
        if self.claims.create_if_absent(
            NodeClaim(id=claim_id, nodepool=pool, node_class="default", state="launching", created_at=now)
        ):
            self.launched.append(claim_id)

            def settle() -> None:
                stored = self.claims.get(claim_id)
                if stored is None:
                    return
                if self.fail:
                    self.claims.delete(claim_id)
                else:
                    self.claims.put(replace(stored, state="initialized", initialized_at=self.clock.now()))

            self.clock.call_later(self.ready_after, settle)
        return claim_id


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
