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
"""

from __future__ import annotations

import logging
from typing import Any

from longshore.core import telemetry
from longshore.core.claims import LaunchRequest, LaunchResult
from longshore.core.commands import DisruptionCommand
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
