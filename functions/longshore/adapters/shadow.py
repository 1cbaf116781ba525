"""Shadow mode (`-c mode=shadow`): every decision is made, logged and measured, and nothing is changed.

Rules:
- The functions run unchanged on these stand-ins for the ports that change the world. Reads go to the real
  cluster and cloud; every EC2 and Kubernetes write is replaced by a log line (`shadow: would ...`) and a metric
  (`core.telemetry.SHADOW_*`, with the $/h the action would cost or save), so Longshore can run for a week beside
  Karpenter or Cluster Autoscaler and be compared with what they did.
- A would-be launch answers `failed` with reason `shadow`, so the provisioner keeps no claim and plans the
  same pods again next pass, as it would while a real launch failed: counts of would-launch decisions are per
  pass, not per node. A would-be disruption answers "not started", so nothing is tainted or drained.
- The claim table is Longshore's own state, not the world's: leases and planner state are still written.
- Instances are read and never terminated or tagged; Karpenter's objects (NodePool, EC2NodeClass and NodeClaim
  status, NodeClaims) are read and never written.
- `wiring.runtime.Runtime` puts these in front of the real adapters when the function's `LONGSHORE_MODE` is
  `shadow` (`cdk deploy -c mode=shadow` sets it on every function), so every function's `build_*` gets them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from longshore.core import telemetry
from longshore.core.claims import CloudInstance, LaunchRequest, LaunchResult
from longshore.core.commands import DisruptionCommand, RotationRequest
from longshore.ports.cloud import Instances
from longshore.ports.karpenter import KarpenterObjects, Kind
from longshore.ports.kube import Cluster, EvictionResult, KubeEvent, Manifest, NodePatch
from longshore.ports.metrics import MetricsSink
from longshore.ports.workflow import StartResult

log = logging.getLogger(__name__)


class ShadowLauncher:
    """`ports.cloud.Launcher` that launches nothing and reports what it would have launched."""

    def __init__(self, metrics: MetricsSink) -> None:
        self._metrics = metrics

    def launch(self, request: LaunchRequest, now: float) -> LaunchResult:
        cheapest = min(request.options, key=lambda o: o.price, default=None)
        price = cheapest.price if cheapest is not None else 0.0
        log.info(
            "shadow: would launch node claim",
            extra={
                "claim": request.claim.id,
                "nodepool": request.claim.nodepool,
                "instance_type": cheapest.instance_type if cheapest else None,
                "zone": cheapest.zone if cheapest else None,
                "capacity_type": cheapest.capacity_type if cheapest else None,
                "price_per_hour": price,
            },
        )
        pool = {"NodePool": request.claim.nodepool}
        self._metrics.emit(telemetry.SHADOW_WOULD_LAUNCH, 1, "Count", pool)
        self._metrics.emit(telemetry.SHADOW_WOULD_LAUNCH_COST, price, "None", pool)
        return LaunchResult(request.claim.id, "failed", reason="shadow")


class ShadowWorkflow:
    """`ports.workflow.DisruptionWorkflow` that starts nothing and reports what it would have disrupted."""

    def __init__(self, metrics: MetricsSink) -> None:
        self._metrics = metrics

    def start(self, command: DisruptionCommand) -> StartResult:
        log.info("shadow: would disrupt node", extra={"command": repr(command)})
        self._metrics.emit(telemetry.SHADOW_WOULD_DISRUPT, 1, "Count", {"Reason": str(command.reason)})
        return StartResult(started=False, execution_name=f"shadow-{command.execution_name()}")

    def start_surge(
        self, command: DisruptionCommand, replacement_claim_id: str, give_up_at: float | None
    ) -> StartResult:
        log.info(
            "shadow: would disrupt node after its replacement",
            extra={"command": repr(command), "replacement": replacement_claim_id},
        )
        return self.start(command)

    def start_rotation(self, request: RotationRequest) -> StartResult:
        log.info("shadow: would rotate nodes", extra={"nodes": list(request.nodes)})
        self._metrics.emit(
            telemetry.SHADOW_WOULD_DISRUPT, len(request.nodes), "Count", {"Reason": "rotation"}
        )
        return StartResult(started=False, execution_name="shadow-rotation")


class ShadowInstances:
    """`ports.cloud.Instances` (and `InstanceTags`) that reads the real instances and terminates or tags none."""

    def __init__(self, real: Instances) -> None:
        self._real = real

    def describe(self, instance_ids: Iterable[str]) -> tuple[CloudInstance, ...]:
        return self._real.describe(instance_ids)

    def list_owned(self) -> tuple[CloudInstance, ...]:
        return self._real.list_owned()

    def find_by_claim(self, claim_id: str) -> CloudInstance | None:
        return self._real.find_by_claim(claim_id)

    def terminate(self, instance_ids: Iterable[str]) -> None:
        log.info("shadow: would terminate instances", extra={"instances": sorted(instance_ids)})

    def tag(self, instance_ids: Iterable[str], tags: Iterable[tuple[str, str]]) -> None:
        log.info("shadow: would tag instances", extra={"instances": sorted(instance_ids), "tags": dict(tags)})


class ShadowKarpenterObjects:
    """`ports.karpenter.KarpenterObjects` that reads the cluster's objects and writes none."""

    def __init__(self, real: KarpenterObjects) -> None:
        self._real = real

    def list_objects(self, kind: Kind) -> tuple[dict[str, Any], ...]:
        return self._real.list_objects(kind)

    def write_status(self, kind: Kind, name: str, status: Mapping[str, Any]) -> None:
        log.debug("shadow: would write status", extra={"kind": kind, "name": name})

    def apply(self, kind: Kind, obj: Mapping[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name")
        log.debug("shadow: would apply object", extra={"kind": kind, "name": name})

    def release_object(self, kind: Kind, name: str) -> None:
        log.info("shadow: would release object", extra={"kind": kind, "name": name})


class ShadowCluster:
    """`ports.kube.Cluster` that reads the real cluster and writes nothing."""

    def __init__(self, real: Cluster) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:  # every read goes to the real cluster
        return getattr(self._real, name)

    def patch_node(self, name: str, patch: NodePatch) -> Manifest | None:
        log.info("shadow: would patch node", extra={"node": name, "patch": repr(patch)})
        return self._real.get_node(name)

    def evict_pod(self, namespace: str, name: str, *, uid: str | None = None) -> EvictionResult:
        log.info("shadow: would evict pod", extra={"pod": f"{namespace}/{name}"})
        return EvictionResult("blocked", "shadow mode: nothing is evicted")

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> bool:
        log.info("shadow: would delete pod", extra={"pod": f"{namespace}/{name}"})
        return False

    def delete_node(self, name: str) -> bool:
        log.info("shadow: would delete node", extra={"node": name})
        return False

    def post_event(self, event: KubeEvent) -> None:
        log.info("shadow: would post event", extra={"reason": event.reason, "event_message": event.message})

    def write_buffer_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        log.info("shadow: would write CapacityBuffer status", extra={"buffer": f"{namespace}/{name}"})
