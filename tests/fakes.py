"""The stateful in-memory fakes the service, workflow and handler tests share: one per port.

Theory of operation: each fake keeps state and applies the rules the real system applies, so tests assert on
outcomes (pods left, taints, events, instance states, executions started), not on calls.

- `FakeCluster` (`ports.kube.Cluster`) honours PDBs and grace periods: a PDB refuses an eviction that would
  leave fewer healthy pods than it requires; an evicted or deleted pod stays `terminating` until its grace
  period ends on the clock; a repeated Event is counted, not added (as the port says).
- `FakeInstances` (`ports.cloud.Instances`): a terminated instance goes through `shutting-down` for 20 s; an
  instance can be made to refuse termination or to hang in `shutting-down`.
- `FakeReplacements` (`ports.workflow.ReplacementLauncher`), `FakeWorkflow` (`ports.workflow.DisruptionWorkflow`,
  with Step Functions' one-start-per-name rule), `FakeTrigger` (`ports.triggers` provisioner/planner wake).
- `Metrics` is `adapters.memory_metrics.MemoryMetricsSink` that also refuses a metric name `core.telemetry`
  does not define.

The one clock of the tests is the simulation's `longshore_sim.clock.VirtualClock` (`now()`, `sleep()`,
`advance()`, timers); every fake here takes it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from longshore.adapters.memory import MemoryClaimStore
from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.core import telemetry
from longshore.core.claims import CloudInstance, NodeClaim
from longshore.core.commands import DisruptionCommand
from longshore.core.drain import parse_timestamp
from longshore.ports.kube import (
    ClusterUnavailableError,
    EvictionResult,
    KubeEvent,
    Manifest,
    NodePatch,
    event_name,
)
from longshore.ports.metrics import Dimensions
from longshore.ports.workflow import StartResult
from longshore_sim.clock import VirtualClock


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeCluster:
    """`ports.kube.Cluster` in memory, on a virtual clock (see the module doc)."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.nodes: dict[str, Manifest] = {}
        self.pods: dict[tuple[str, str], Manifest] = {}
        self.pdbs: list[Manifest] = []
        self.daemonsets: list[Manifest] = []
        self.pvcs: list[Manifest] = []
        self.pvs: list[Manifest] = []
        self.storage_classes: list[Manifest] = []
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

    def list_nodes_and_pods(self) -> tuple[list[Manifest], list[Manifest]]:
        return self.list_nodes(), self.list_pods()

    def get_node(self, name: str) -> Manifest | None:
        with self._lock:
            self._maybe_fail("get_node")
            node = self.nodes.get(name)
            return copy.deepcopy(node) if node is not None else None

    def list_daemonsets(self) -> list[Manifest]:
        return list(self.daemonsets)

    def list_pdbs(self) -> list[Manifest]:
        return copy.deepcopy(self.pdbs)

    def list_persistent_volume_claims(self) -> list[Manifest]:
        return copy.deepcopy(self.pvcs)

    def list_persistent_volumes(self) -> list[Manifest]:
        return copy.deepcopy(self.pvs)

    def list_storage_classes(self) -> list[Manifest]:
        return copy.deepcopy(self.storage_classes)

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
        self.owned: set[str] = set()  # tagged for this cluster
        self.terminated: set[str] = set()  # every id TerminateInstances was asked for (known or not)
        self._terminated_at: dict[str, float] = {}
        self.refuse_terminate: set[str] = set()  # EC2 answers TerminateInstances for these with an error
        self.stuck_shutting_down: set[str] = set()  # these never get past `shutting-down`
        self._lock = threading.RLock()  # rotations run disruptions on several interpreter threads

    def add(
        self,
        instance_id: str,
        *,
        owned: bool = True,
        pool: str = "default",
        capacity_type: str = "on-demand",
        claim_id: str | None = None,
    ) -> None:
        with self._lock:
            self.instances[instance_id] = CloudInstance(
                instance_id,
                "running",
                "m5.large",
                "us-east-1a",
                capacity_type,
                claim_id=claim_id,
                nodepool=pool,
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
            self.terminated.update(ids)
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

    def top_up(
        self, claim: NodeClaim | None, node: Manifest | None, reason: str, now: float, after: str
    ) -> str | None:
        return None  # the fake's replacements have room for every pod


class FakeWorkflow:
    """Step Functions semantics: a name can be used once; a second start with it is refused."""

    def __init__(self) -> None:
        self.executions: dict[str, DisruptionCommand] = {}
        self.commands: list[DisruptionCommand] = []  # every start that reached the service, in order
        self.failures_left = 0
        self.attempts = 0

    def start(self, command: DisruptionCommand) -> StartResult:
        self.attempts += 1
        if self.failures_left:
            self.failures_left -= 1
            raise ConnectionError("states.us-east-1.amazonaws.com: throttled")
        self.commands.append(command)
        name = command.execution_name()
        if name in self.executions:
            return StartResult(False, name)
        self.executions[name] = command
        return StartResult(True, name, f"arn:aws:states:us-east-1:123456789012:execution:disruption:{name}")


class FakeTrigger:
    """A function to wake (`ports.triggers`): records each reason; with `fail`, every wake raises."""

    def __init__(self, fail: bool = False) -> None:
        self.reasons: list[str] = []
        self.fail = fail

    def trigger(self, reason: str) -> None:
        assert isinstance(reason, str)
        if self.fail:
            raise RuntimeError("Lambda said no")
        self.reasons.append(reason)


class Metrics(MemoryMetricsSink):
    """`MemoryMetricsSink` that fails the test on a metric name `core.telemetry` does not define."""

    def emit(
        self, name: str, value: float, unit: str = "Count", dimensions: Dimensions | None = None
    ) -> None:
        assert name in telemetry.ALL_METRICS, name
        super().emit(name, value, unit, dimensions)

    def count(self, name: str, **dimensions: str) -> int:
        """How many points of `name` carry every `dimensions` pair."""
        return len(self.named(name, **dimensions))

    def emitted(self, name: str, value: float, dimensions: Mapping[str, str] | None = None) -> bool:
        """Whether a point of `name` with exactly this value and these dimensions was emitted."""
        wanted = tuple(sorted((dimensions or {}).items()))
        return any(p.value == value and p.dimensions == wanted for p in self.named(name))
