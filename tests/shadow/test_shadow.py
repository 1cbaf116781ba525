"""Shadow mode: decisions are reported with their $/h, and nothing is written to EC2 or Kubernetes."""

from __future__ import annotations

from typing import Any

import pytest

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.adapters.shadow import ShadowCluster, ShadowLauncher, ShadowWorkflow
from longshore.core import telemetry
from longshore.core.claims import LaunchOption, LaunchRequest, NodeClaim
from longshore.core.commands import DisruptionCommand
from longshore.ports.kube import KubeEvent, NodePatch, ObjectRef


class RecordingCluster:
    """A cluster that fails the test on any write; reads answer from a dict."""

    def __init__(self) -> None:
        self.nodes = {"n1": {"metadata": {"name": "n1"}}}

    def get_node(self, name: str) -> Any:
        return self.nodes.get(name)

    def list_nodes(self, **_: Any) -> list[Any]:
        return list(self.nodes.values())

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"shadow mode called the real cluster's {name}")


def test_a_would_be_launch_is_measured_and_launches_nothing() -> None:
    sink = MemoryMetricsSink()
    request = LaunchRequest(
        claim=NodeClaim(id="general-1", nodepool="general", node_class="default"),
        options=(
            LaunchOption("m5.xlarge", "us-east-1a", "on-demand", 0.192),
            LaunchOption("m5.large", "us-east-1b", "spot", 0.035),
        ),
    )
    result = ShadowLauncher(sink).launch(request, 0.0)
    assert result.status == "failed" and result.reason == "shadow" and not result.ok
    assert [p.value for p in sink.named(telemetry.SHADOW_WOULD_LAUNCH, NodePool="general")] == [1]
    assert [p.value for p in sink.named(telemetry.SHADOW_WOULD_LAUNCH_COST, NodePool="general")] == [0.035]


def test_a_would_be_disruption_starts_nothing() -> None:
    sink = MemoryMetricsSink()
    started = ShadowWorkflow(sink).start(
        DisruptionCommand(instance_id="i-1", reason="empty", requested_at=10.0)
    )
    assert not started.started
    assert [p.value for p in sink.named(telemetry.SHADOW_WOULD_DISRUPT, Reason="empty")] == [1]


def test_the_shadow_cluster_reads_but_never_writes(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")  # every would-be write is logged
    cluster = ShadowCluster(RecordingCluster())  # type: ignore[arg-type]
    assert cluster.list_nodes() == [{"metadata": {"name": "n1"}}]
    assert cluster.patch_node("n1", NodePatch(unschedulable=True)) == {"metadata": {"name": "n1"}}
    assert cluster.evict_pod("default", "web").outcome == "blocked"
    assert cluster.delete_pod("default", "web") is False
    assert cluster.delete_node("n1") is False
    cluster.post_event(KubeEvent(ObjectRef("Node", "n1"), "Test", "nothing"))
    cluster.write_buffer_status("default", "warm", {"replicas": 1})
    assert [r.getMessage() for r in caplog.records] == [
        "shadow: would patch node",
        "shadow: would evict pod",
        "shadow: would delete pod",
        "shadow: would delete node",
        "shadow: would post event",
        "shadow: would write CapacityBuffer status",
    ]


def test_every_write_of_the_kube_adapter_is_replaced_in_shadow_mode() -> None:
    from longshore.adapters.kube.cluster import KubeCluster

    writes = {
        name
        for name in vars(KubeCluster)
        if name.startswith(("patch_", "delete_", "evict_", "post_", "write_", "create_", "replace_"))
    }
    assert writes and writes <= set(vars(ShadowCluster)), writes - set(vars(ShadowCluster))
